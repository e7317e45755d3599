//! Which records of a thread a resume sends: the leaf, the walk back from it (progress records
//! bridged, a parent never written and a progress fork re-attached), the cut at the last
//! compaction, and the lines of a parallel call batch put back. Every record of the thread the
//! path does not take is reported as a branch.

use std::collections::{HashMap, HashSet};

use super::record::{Record, RecordKind};
use super::report::{Branch, CompactCut, ConversationReport, Rescue, RescueKind};

/// A thread's path through the records.
pub(crate) struct Path {
    /// The records sent, by index into the records, in order.
    pub(crate) sent: Vec<usize>,
    /// The records of the walk itself (the rest of `sent` was put back as a call batch).
    pub(crate) walked: HashSet<usize>,
    pub(crate) report: ConversationReport,
}

/// The path of `thread` (`None`: the main thread; a subagent by its `agentId`).
pub(crate) fn path(records: &[Record], thread: Option<&str>) -> Path {
    let index: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .map(|(at, record)| (&*record.uuid, at))
        .collect();
    let mut report = ConversationReport::default();
    let (parents, rescued) = parents(records, &index);
    let in_thread = |at: usize| records[at].thread() == thread;
    let Some(leaf) = leaf(records, &parents, &in_thread) else {
        report.rescues = rescue_reports(records, &parents, &rescued, &[], &index, &in_thread);
        report.branches = branches(records, &parents, &HashSet::new(), &in_thread);
        return Path {
            sent: Vec::new(),
            walked: HashSet::new(),
            report,
        };
    };
    report.leaf_line = Some(records[leaf].line);
    let mut walk = vec![leaf];
    let mut on_walk = HashSet::from([leaf]);
    while let Some(up) = parents[*walk.last().unwrap_or(&leaf)] {
        if !on_walk.insert(up) {
            break;
        }
        walk.push(up);
    }
    walk.reverse();
    report.rescues = rescue_reports(records, &parents, &rescued, &walk, &index, &in_thread);
    let mut compacted: HashSet<usize> = HashSet::new();
    let kept = match walk
        .iter()
        .rposition(|&at| records[at].is_system("compact_boundary"))
    {
        Some(boundary) => {
            // What the compaction summarized (never sent; counted, and no branch): the walk on
            // from the boundary's logical parent, or from the thread's record before the
            // boundary where the file does not hold that parent, with its call batches.
            let at_boundary = walk[boundary];
            let mut up = records[at_boundary]
                .logical_parent
                .as_deref()
                .and_then(|uuid| index.get(uuid).copied())
                .or_else(|| {
                    (0..at_boundary).rev().find(|&at| {
                        records[at].kind != RecordKind::Progress
                            && records[at].thread() == records[at_boundary].thread()
                    })
                });
            let mut summarized = Vec::new();
            while let Some(at) = up {
                if on_walk.contains(&at) || !compacted.insert(at) {
                    break;
                }
                summarized.push(at);
                up = parents[at];
            }
            summarized.reverse();
            let batches = put_back_batches(records, &parents, &summarized, &compacted);
            compacted.extend(batches.into_iter().filter(|at| !on_walk.contains(at)));
            report.cut = Some(CompactCut {
                line: records[at_boundary].line,
                records_before: boundary as u64 + compacted.len() as u64,
            });
            &walk[boundary + 1..]
        }
        None => &walk[..],
    };
    let with_batches = put_back_batches(records, &parents, kept, &on_walk);
    let walked = on_walk.clone();
    let mut on_path: HashSet<usize> = on_walk;
    on_path.extend(with_batches.iter().copied());
    on_path.extend(compacted);
    report.branches = branches(records, &parents, &on_path, &in_thread);
    let sent = with_batches
        .into_iter()
        .filter(|&at| records[at].is_talk())
        .collect();
    Path {
        sent,
        walked,
        report,
    }
}

/// A re-attachment made while resolving parents: the record, why, and the uuid it named.
struct Rescued {
    at: usize,
    kind: RescueKind,
    named: Box<str>,
}

/// Each record's parent as the walk follows it: a progress parent bridged to its nearest
/// ancestor that is no progress record; a parent never written re-attached to the nearest
/// earlier record of the same thread (the thread's first record keeps no parent: the file
/// starts mid-session); a record that hangs from a progress fork re-attached to the last record
/// written since under the same ancestor.
fn parents(records: &[Record], index: &HashMap<&str, usize>) -> (Vec<Option<usize>>, Vec<Rescued>) {
    let mut parents = vec![None; records.len()];
    let mut rescued = Vec::new();
    // The latest record of each thread so far (no progress record), for a missing parent.
    let mut latest: HashMap<Option<&str>, usize> = HashMap::new();
    for at in 0..records.len() {
        let record = &records[at];
        let mut named = record.parent.as_deref();
        let mut bridged: Option<usize> = None;
        let mut steps = 0;
        let parent = loop {
            let Some(uuid) = named else { break None };
            match index.get(uuid) {
                None => {
                    let earlier = latest.get(&record.thread()).copied();
                    if earlier.is_some() && record.kind != RecordKind::Progress {
                        rescued.push(Rescued {
                            at,
                            kind: RescueKind::MissingParent,
                            named: uuid.into(),
                        });
                    }
                    break earlier;
                }
                Some(&up) if records[up].kind == RecordKind::Progress && steps <= records.len() => {
                    bridged.get_or_insert(up);
                    named = records[up].parent.as_deref();
                    steps += 1;
                }
                Some(&up) => break Some(up),
            }
        };
        parents[at] = parent;
        // A progress record is re-attached too (unreported: it is never sent), so that the
        // walk back from it reaches the record it was written after.
        if let (Some(progress), Some(ancestor)) = (bridged, parent)
            && let Some(last) = last_under(records, &parents, ancestor, at)
        {
            parents[at] = Some(last);
            if record.kind != RecordKind::Progress {
                rescued.push(Rescued {
                    at,
                    kind: RescueKind::ProgressFork,
                    named: records[progress].uuid.clone(),
                });
            }
        }
        if record.kind != RecordKind::Progress {
            latest.insert(record.thread(), at);
        }
    }
    (parents, rescued)
}

/// The last record before `at`, of its thread and no progress record, that descends from
/// `ancestor`: where a record bridged past a progress fork continues.
fn last_under(
    records: &[Record],
    parents: &[Option<usize>],
    ancestor: usize,
    at: usize,
) -> Option<usize> {
    (ancestor + 1..at).rev().find(|&other| {
        records[other].kind != RecordKind::Progress
            && records[other].thread() == records[at].thread()
            && descends(parents, other, ancestor)
    })
}

/// Whether `from`'s parents lead to `ancestor`.
fn descends(parents: &[Option<usize>], mut from: usize, ancestor: usize) -> bool {
    for _ in 0..parents.len() {
        match parents[from] {
            Some(up) if up == ancestor => return true,
            Some(up) => from = up,
            None => return false,
        }
    }
    false
}

/// The leaf: of the thread's records nobody points at, each walked back to its nearest user or
/// assistant record, the latest by timestamp; a tie goes to the record read first (a record
/// written again keeps its first place).
fn leaf(
    records: &[Record],
    parents: &[Option<usize>],
    in_thread: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    let mut has_child = vec![false; records.len()];
    for parent in parents.iter().flatten() {
        has_child[*parent] = true;
    }
    let message = |at: usize| matches!(records[at].kind, RecordKind::User | RecordKind::Assistant);
    let mut best: Option<usize> = None;
    for end in (0..records.len()).filter(|&at| !has_child[at] && in_thread(at)) {
        let mut at = end;
        let mut steps = 0;
        while !message(at) {
            match parents[at] {
                Some(up) if steps < records.len() => at = up,
                _ => break,
            }
            steps += 1;
        }
        if !message(at) {
            continue;
        }
        // The latest; of two records of one timestamp, the one read first.
        let better =
            best.is_none_or(|best| (&records[at].timestamp, best) > (&records[best].timestamp, at));
        if better {
            best = Some(at);
        }
    }
    best
}

/// The path with each parallel call batch put back: after the path's last line of an assistant
/// message id come the lines of that id off the path and the tool results hanging from them,
/// in timestamp order (then in the order read).
fn put_back_batches(
    records: &[Record],
    parents: &[Option<usize>],
    path: &[usize],
    on_walk: &HashSet<usize>,
) -> Vec<usize> {
    let mut by_message: HashMap<&str, Vec<usize>> = HashMap::new();
    for (at, record) in records.iter().enumerate() {
        if let Some(id) = record.message_id.as_deref() {
            by_message.entry(id).or_default().push(at);
        }
    }
    let mut results_under: HashMap<usize, Vec<usize>> = HashMap::new();
    for (at, record) in records.iter().enumerate() {
        if record.kind == RecordKind::User
            && record.holds_results()
            && !on_walk.contains(&at)
            && let Some(parent) = parents[at]
        {
            results_under.entry(parent).or_default().push(at);
        }
    }
    let mut last_of_id: HashMap<&str, usize> = HashMap::new();
    for (position, &at) in path.iter().enumerate() {
        if let Some(id) = records[at].message_id.as_deref() {
            last_of_id.insert(id, position);
        }
    }
    let mut out = Vec::with_capacity(path.len());
    let mut taken: HashSet<usize> = HashSet::new();
    for (position, &at) in path.iter().enumerate() {
        out.push(at);
        let Some(id) = records[at].message_id.as_deref() else {
            continue;
        };
        if last_of_id.get(id) != Some(&position) {
            continue;
        }
        let lines = &by_message[id];
        let mut back: Vec<usize> = lines
            .iter()
            .copied()
            .filter(|other| !on_walk.contains(other))
            .collect();
        for line in lines {
            back.extend(results_under.get(line).into_iter().flatten().copied());
        }
        back.retain(|other| taken.insert(*other));
        back.sort_by(|&a, &b| (&records[a].timestamp, a).cmp(&(&records[b].timestamp, b)));
        out.extend(back);
    }
    out
}

/// The thread's records off the path, as branches: each hangs from the first record of its
/// branch, which forks from a record of the path (or from nothing the path holds).
fn branches(
    records: &[Record],
    parents: &[Option<usize>],
    on_path: &HashSet<usize>,
    in_thread: &dyn Fn(usize) -> bool,
) -> Vec<Branch> {
    // A record with no user or assistant record at or under it (a stop hook's summary after
    // the last reply, say) is no branch: nothing of the conversation was left there.
    let mut talk_under = vec![false; records.len()];
    for at in (0..records.len()).filter(|&at| records[at].is_talk()) {
        let mut up = Some(at);
        while let Some(marked) = up.filter(|&marked| !talk_under[marked]) {
            talk_under[marked] = true;
            up = parents[marked];
        }
    }
    let off = |at: usize| {
        in_thread(at)
            && records[at].kind != RecordKind::Progress
            && talk_under[at]
            && !on_path.contains(&at)
    };
    // The first record of each off-path record's branch: the topmost off-path ancestor. Parents
    // mostly come before their records, so one pass in line order settles most of them.
    let mut root: Vec<Option<usize>> = vec![None; records.len()];
    let mut branches: Vec<(usize, u64)> = Vec::new();
    let mut branch_of: HashMap<usize, usize> = HashMap::new();
    for at in (0..records.len()).filter(|&at| off(at)) {
        let mut top = at;
        let mut steps = 0;
        while let Some(up) = parents[top] {
            if !off(up) || steps > records.len() {
                break;
            }
            if let Some(known) = root[up] {
                top = known;
                break;
            }
            top = up;
            steps += 1;
        }
        root[at] = Some(top);
        let branch = *branch_of.entry(top).or_insert_with(|| {
            branches.push((top, 0));
            branches.len() - 1
        });
        branches[branch].1 += 1;
    }
    branches.sort_by_key(|&(top, _)| records[top].line);
    branches
        .into_iter()
        .map(|(top, count)| Branch {
            line: records[top].line,
            uuid: records[top].uuid.to_string(),
            forks_from: parents[top]
                .filter(|up| on_path.contains(up))
                .map(|up| records[up].uuid.to_string()),
            records: count,
        })
        .collect()
}

/// The thread's rescues as reported: where each record now hangs, and how many more records
/// the walk holds for it (those on the walk between its new parent and the record it named).
fn rescue_reports(
    records: &[Record],
    parents: &[Option<usize>],
    rescued: &[Rescued],
    walk: &[usize],
    index: &HashMap<&str, usize>,
    in_thread: &dyn Fn(usize) -> bool,
) -> Vec<Rescue> {
    let position: HashMap<usize, usize> = walk
        .iter()
        .enumerate()
        .map(|(position, &at)| (at, position))
        .collect();
    rescued
        .iter()
        .filter(|rescue| in_thread(rescue.at))
        .filter_map(|rescue| {
            let under = parents[rescue.at]?;
            let brought_back = match (position.get(&rescue.at), rescue.kind) {
                // Without it the walk would have ended at the record.
                (Some(&at), RescueKind::MissingParent) => at as u64,
                // Without it the walk would have gone from the record to the fork's ancestor:
                // the records of the walk between them are what it brought back.
                (Some(&at), RescueKind::ProgressFork) => {
                    let ancestor = index.get(&*rescue.named).copied();
                    // A progress record's parent is resolved past progress records already (to
                    // one of them only in a cycle of them).
                    let ancestor = ancestor
                        .and_then(|progress| parents[progress])
                        .filter(|&up| records[up].kind != RecordKind::Progress);
                    match ancestor.and_then(|ancestor| position.get(&ancestor)) {
                        Some(&from) => at.saturating_sub(from + 1) as u64,
                        None => 0,
                    }
                }
                (None, _) => 0,
            };
            Some(Rescue {
                line: records[rescue.at].line,
                uuid: records[rescue.at].uuid.to_string(),
                kind: rescue.kind,
                named: rescue.named.to_string(),
                now_under: records[under].uuid.to_string(),
                brought_back,
            })
        })
        .collect()
}
