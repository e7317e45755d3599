//! The units of a projection put together into one Anthropic request's `messages`.
//!
//! The shared call grouping (`pair_calls`) orders the units: each batch of consecutive calls
//! followed by one output per call. What is Anthropic's is done here: the pieces merge into
//! alternating `user`/`assistant` messages (the results of a batch open the next user message),
//! tool ids are mapped to the id syntax and kept unique, a user message is put first when the
//! history starts with the assistant, and the final assistant text is trimmed.
//!
//! The assembly is kept in the history's lineage ([`AnthropicMemo`]), up to four of them, for
//! option sets and versions ([`AnthropicMemos`]): a projection of a later version with the same
//! options resumes at the last place the changes leave alone, so that after k appends it visits
//! the last message or call batch and the k new slots, not the whole history; a projection of an
//! older version (a reader behind the writer) resumes at the last such place at or before its
//! end, and its assembly is kept beside the longer one. Call ids that need mapping are mapped
//! from that place on against the mapping kept with it, unless a new valid id equals a form
//! chosen before it. A call id used on both sides of a place (a model that names every call
//! `call_0`) does not keep it from serving, as long as the first new item of that id is a call
//! and no new call that goes unanswered has the id of an output before the place that answers
//! nothing (it would take that output).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use imbl::Vector;
use serde_json::Value;

use crate::history::History;
use crate::projection::{Location, Projection, ProjectionOptions};

use super::super::target::{
    ANTHROPIC_CELL, KeptAssembly, PairRole, Paired, Rendered, Step, TargetProjectionError,
    TargetRepair, TargetRepairKind, Unit, Units, count_older_version_resumed, merge_repairs,
    nearest_kept, pair_calls, reaches_back, read_kept, store_kept,
};
use super::render::{AnthropicItem, Sent};
use super::{ANTHROPIC_LEADING_USER_TEXT, AnthropicMessages, Block, Message, Role};

/// Whether `id` matches `^[a-zA-Z0-9_-]+$`.
pub(crate) fn is_valid_tool_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// `id` with every character outside `[a-zA-Z0-9_-]` replaced by `_`, then `_` and the first
/// `hash_len` hex digits of the BLAKE3 hash of `key`.
fn mapped_tool_id(id: &str, key: &str, hash_len: usize) -> String {
    let mut mapped: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    mapped.push('_');
    mapped.push_str(&blake3::hash(key.as_bytes()).to_hex()[..hash_len]);
    mapped
}

/// What the calls before a place did with their ids: how many calls use each id (a valid id
/// among them is sent as it is by its first call), the mapped forms chosen, and whether a mapped
/// form is not its first choice (8 hex digits).
#[derive(Debug, Clone, Default)]
struct Mapping {
    uses: imbl::HashMap<Arc<str>, usize>,
    mapped: imbl::HashSet<Arc<str>>,
    skipped: bool,
}

/// The id each call of the request is sent as, by unit, in call order, after calls that did
/// `before`, and the units whose mapped form is not its first choice.
///
/// A valid id is kept the first time it is used, so it never changes. Any other (an invalid id,
/// or the n-th call of an id already used, n ≥ 2, counting the calls of `before`) gets
/// [`mapped_tool_id`] of the id (keyed by the id, or by `id#n`) with 8 hex digits, more when that
/// would equal an id taken in this request, then a counter. The same call gets the same id in
/// every request that holds the same calls before it; only a crafted collision makes it depend
/// on later ones. Mapping a request's calls after a place with `before` the mapping of the calls
/// before it gives each call the id mapping all of them at once gives, when no valid id after
/// the place equals a form mapped before it.
fn map_tool_ids(
    calls: &[(usize, &str)],
    before: &Mapping,
) -> (HashMap<usize, Arc<str>>, HashSet<usize>) {
    let taken: HashSet<&str> = calls
        .iter()
        .map(|(_, id)| *id)
        .filter(|id| is_valid_tool_id(id))
        .collect();
    let mut skipped = HashSet::new();
    let mut mapped_taken: HashSet<String> = HashSet::new();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    let mut map = HashMap::new();
    for &(unit, id) in calls {
        let n = {
            let count = uses
                .entry(id)
                .or_insert_with(|| before.uses.get(id).copied().unwrap_or(0));
            *count += 1;
            *count
        };
        if n == 1 && is_valid_tool_id(id) {
            map.insert(unit, Arc::from(id));
            continue;
        }
        let key = if n == 1 {
            id.to_owned()
        } else {
            format!("{id}#{n}")
        };
        let free = |candidate: &String| {
            !taken.contains(candidate.as_str())
                && !mapped_taken.contains(candidate)
                && !before.uses.contains_key(candidate.as_str())
                && !before.mapped.contains(candidate.as_str())
        };
        let sent = [8, 16, 32, 64]
            .into_iter()
            .map(|hash_len| mapped_tool_id(id, &key, hash_len))
            .find(free)
            .unwrap_or_else(|| {
                let base = mapped_tool_id(id, &key, 64);
                (2u64..)
                    .map(|k| format!("{base}_{k}"))
                    .find(free)
                    .unwrap_or(base)
            });
        if sent != mapped_tool_id(id, &key, 8) {
            skipped.insert(unit);
        }
        mapped_taken.insert(sent.clone());
        map.insert(unit, Arc::from(sent));
    }
    (map, skipped)
}

/// The positions from `from` on where the Responses projection synthesized an output: a
/// `tool_result` it synthesized is sent with `is_error: true`. O(k) for the projection's k
/// replaced slots; it does not list the report's repairs, which would list every media repair
/// (O(m log n) for m media items) on every projection.
fn synthesized_positions(projection: &Projection, from: usize) -> HashSet<usize> {
    projection.synthesized_outputs_from(from).collect()
}

/// How a unit that sends something takes part in call batching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edge {
    /// A call: a call right after it joins its batch.
    Call,
    /// Anything else that is sent.
    Other,
}

/// The edge of a unit (`None`: it sends nothing).
fn edge(unit: &Unit<AnthropicItem>) -> Option<Edge> {
    match unit.rendered.pairing() {
        PairRole::Call(_) => Some(Edge::Call),
        PairRole::Output(_) | PairRole::Other => Some(Edge::Other),
        PairRole::Nothing => None,
    }
}

/// The call id of a call or an output.
fn pairing_id(unit: &Unit<AnthropicItem>) -> Option<&str> {
    match unit.rendered.pairing() {
        PairRole::Call(id) | PairRole::Output(id) => Some(id),
        PairRole::Other | PairRole::Nothing => None,
    }
}

/// The history's call id of a call (empty for anything else).
fn call_id(unit: &Unit<AnthropicItem>) -> &str {
    match &unit.rendered.piece {
        Sent::ToolUse { call_id, .. } => call_id,
        _ => "",
    }
}

/// The messages built so far and the open call batch: its calls (unit, answered) and the
/// results collected for the next user message.
#[derive(Debug, Clone, Default)]
struct State {
    messages: Vector<Message>,
    calls: Vec<(usize, bool)>,
    results: Vec<Block>,
}

impl State {
    /// Appends blocks to the last message when it has `role`, else starts one.
    fn push(&mut self, role: Role, blocks: impl IntoIterator<Item = Block>) {
        let mut blocks = blocks.into_iter().peekable();
        if blocks.peek().is_none() {
            return;
        }
        match self.messages.back_mut() {
            Some(last) if last.role == role => last.blocks.extend(blocks),
            _ => self.messages.push_back(Message {
                role,
                blocks: blocks.collect(),
            }),
        }
    }

    /// Sends the open batch's results as a user message.
    fn close(&mut self, ids: &Ids<'_>) {
        // Every call of a batch has its output step (`pair_calls`); should one be missing,
        // it is answered as aborted all the same.
        for (unit, answered) in std::mem::take(&mut self.calls) {
            if !answered {
                self.results.push(Block::Result {
                    unit: None,
                    id: ids.sent(unit),
                    is_error: true,
                });
            }
        }
        let results = std::mem::take(&mut self.results);
        self.push(Role::User, results);
    }
}

/// The ids the calls are sent under: those of the units assembled now by their index from
/// `offset` ([`map_tool_ids`]), a kept unit's as mapped before (`kept`) or its own.
struct Ids<'a> {
    units: &'a Vector<Unit<AnthropicItem>>,
    offset: usize,
    tail: HashMap<usize, Arc<str>>,
    kept: &'a imbl::OrdMap<usize, Arc<str>>,
}

impl Ids<'_> {
    fn sent(&self, unit: usize) -> Arc<str> {
        unit.checked_sub(self.offset)
            .and_then(|j| self.tail.get(&j))
            .or_else(|| self.kept.get(&unit))
            .cloned()
            .unwrap_or_else(|| Arc::from(self.units.get(unit).map_or("", call_id)))
    }
}

/// Where an assembly can be resumed: the units before `unit` (at positions before `position`)
/// pair and batch with nothing from `unit` on, and `state` is the builder's before the first
/// step of `unit`.
#[derive(Debug, Clone, Default)]
struct Cut {
    /// The first unit re-assembled.
    unit: usize,
    /// Its position (0 for the first unit).
    position: usize,
    state: State,
    /// How many repairs and `system` units come before it.
    repairs: usize,
    system: usize,
    /// The call ids of the calls and outputs before it.
    ids: imbl::HashSet<Arc<str>>,
    /// The call ids of the outputs before it that answer no call (dropped): a call after it
    /// left unanswered would take such an output.
    loose: imbl::HashSet<Arc<str>>,
    /// The edge of the last unit before it that sends something.
    last: Option<Edge>,
    /// What the calls before it did with their ids.
    mapping: Mapping,
}

/// How many places to resume at an assembly keeps: the last ones.
const KEPT_CUTS: usize = 8;

/// What the projection of one version of a history for Anthropic Messages assembled, kept in
/// the history's lineage (shared by every version holding the same entries at the same
/// positions) so that a projection of another version, later or older, re-assembles only its
/// tail.
///
/// The memo keeps the last few [`Cut`]s: places where nothing before pairs or batches with
/// anything after (no call and output paired across it, no call batch across it, not between a
/// call and its synthetic output), each with the builder's state there: the messages so far (the last
/// one still open to merge the next same-role piece) and the results of the last call batch
/// not sent yet. Another version re-assembles from the last cut it can, which puts the same
/// steps after the same state, so the messages are the same as from scratch. A cut can be used
/// when
///
/// * it is at or before the end of the version projected (an older version, a prefix of this
///   one, resumes at or before its end: the units before such a cut pair and batch with nothing
///   after it, in this version and so in the older one);
/// * the Responses projection replaced the same slots before it in both versions (a call
///   answered since, or an orphan output whose call came, changes a slot: an earlier cut is
///   taken);
/// * no call from the cut on joins a batch before it; of each call id used before the cut, the
///   first unit from the cut on is a call, which starts a new batch, so that no output from the
///   cut on answers a call before it; and no call from the cut on that no output after it
///   answers has the call id of an output before the cut that answers no call (it would take
///   that output). A session whose model names every call alike (`call_0` every turn) thus
///   resumes at the last turn, answered or not;
/// * no valid call id from the cut on equals the mapped form of an id before it, and every id
///   mapped before it got its first choice: a mapped form must differ from every valid id of
///   the request, a later one included, so only then are the ids sent before the cut those a
///   whole assembly chooses. The ids after it are mapped against the mapping kept with the cut:
///   how many calls before it use each id (the n-th call of an id, n ≥ 2, is mapped, keyed by
///   n) and the forms mapped before it (call ids need mapping when invalid, or used again).
///
/// When none can (an older version that ends before every cut kept, the last [`KEPT_CUTS`]), the
/// whole projection is assembled. The leading user message and the trimmed
/// final text are applied to each projection's copy, not kept.
#[derive(Debug)]
struct AnthropicMemo {
    options: ProjectionOptions,
    /// The length of the history version assembled.
    len: usize,
    /// The Responses projection's replaced slots of that version: (position, sends nothing).
    replaced: Vec<(usize, bool)>,
    /// The ids the calls were sent under where they differ from their own, by unit.
    sent: imbl::OrdMap<usize, Arc<str>>,
    units: Vector<Unit<AnthropicItem>>,
    system: Vector<usize>,
    /// The messages, without the leading user message and the final trim.
    messages: Vector<Message>,
    /// The repairs, without those two.
    repairs: Vector<TargetRepair>,
    /// The last [`KEPT_CUTS`] cuts, in order.
    cuts: Vec<Cut>,
}

/// How many assemblies a lineage keeps for Anthropic Messages ([`AnthropicMemos`]): enough for
/// two option sets each projected at two versions (a writer and a reader behind it), or four
/// option sets at one version (a runtime sending to models that take different inputs), as for
/// Chat Completions. An assembly built in full keeps about 316 bytes per entry
/// (`tests/complexity.rs`); one resumed from another shares all but a few kilobytes with it.
const ANTHROPIC_MEMOS: usize = 4;

/// The Anthropic Messages assemblies a lineage keeps: at most [`ANTHROPIC_MEMOS`], the most
/// recently used first. A projection starts from the kept assembly of its options whose version
/// is the nearest to its own (a shorter one on a tie): a later version resumes it at its last
/// usable cut, an older version (a prefix of it) at its last usable cut at or before the older
/// version's end, and either assembles in full when no kept cut can be used (see
/// [`AnthropicMemo`]). Its own assembly then takes the place of the one it started from when
/// that was of a shorter or the same version, and is kept beside it when it was of a longer one,
/// so that a writer appending and a reader projecting an older version each find their own. The
/// least recently used is dropped when a new one does not fit.
/// The cell holds them as such a vector, read, searched and stored by the rule both targets
/// share (`target::read_kept`, `target::nearest_kept`, `target::store_kept`).
type AnthropicMemos = Vec<Arc<AnthropicMemo>>;

impl KeptAssembly for AnthropicMemo {
    type Options = ProjectionOptions;

    fn version_len(&self) -> usize {
        self.len
    }

    fn options(&self) -> &ProjectionOptions {
        &self.options
    }
}

/// Projects for Anthropic Messages, re-assembling only what differs from a usable
/// [`AnthropicMemo`] left by the projection of a later or an older version of `history`'s
/// lineage with the same options ([`AnthropicMemos`]).
pub(crate) fn project(
    history: &History,
    projection: &Projection,
    options: &ProjectionOptions,
) -> Result<(AnthropicMessages, Vector<TargetRepair>), TargetProjectionError> {
    let cell = history.lineage_memo(ANTHROPIC_CELL);
    let replaced: Vec<(usize, bool)> = projection.replaced_slots().collect();
    let kept: AnthropicMemos = cell.map(read_kept).unwrap_or_default();
    let source = nearest_kept(&kept, options, history.len());
    let memo = match &source {
        // The same version (a warm projection): its assembly as it is.
        Some(source) if source.len == history.len() && source.replaced == replaced => {
            Arc::clone(source)
        }
        source => {
            let resumed = match source {
                Some(source) => extend(source, projection, &replaced, history.len())?,
                None => None,
            };
            let mut memo = match resumed {
                Some(memo) => {
                    if source
                        .as_ref()
                        .is_some_and(|source| source.len > history.len())
                    {
                        count_older_version_resumed();
                    }
                    memo
                }
                None => whole(projection, options)?,
            };
            memo.len = history.len();
            memo.replaced = replaced;
            Arc::new(memo)
        }
    };
    let result = finish(&memo);
    if let Some(cell) = cell {
        store_kept(cell, &memo, source.as_ref(), ANTHROPIC_MEMOS);
    }
    Ok(result)
}

/// Units to assemble after a cut, ordered by the shared call grouping, with the ids their
/// calls are sent under (by index in `units`), those whose mapped form is not its first choice,
/// and the repairs that mapping made.
struct Tail {
    units: Units<AnthropicItem>,
    paired: Paired,
    ids: HashMap<usize, Arc<str>>,
    skipped: HashSet<usize>,
    mapped: Vec<TargetRepair>,
}

impl Tail {
    /// The tail after calls that did `before` with their ids.
    fn new(units: Units<AnthropicItem>, before: &Mapping) -> Tail {
        let paired = pair_calls(&units.units);
        let calls: Vec<(usize, &str)> = paired
            .steps
            .iter()
            .filter_map(|step| match *step {
                Step::Unit(i) => match units.units[i].rendered.pairing() {
                    PairRole::Call(id) => Some((i, id)),
                    _ => None,
                },
                Step::Synthetic(_) => None,
            })
            .collect();
        let (ids, skipped) = map_tool_ids(&calls, before);
        let mapped = calls
            .iter()
            .filter_map(|&(unit, id)| {
                let sent = ids.get(&unit)?;
                (**sent != *id).then(|| TargetRepair {
                    kind: TargetRepairKind::MappedId {
                        from: id.to_owned(),
                        to: sent.to_string(),
                    },
                    at: units.units[unit].at.clone(),
                })
            })
            .collect();
        Tail {
            units,
            paired,
            ids,
            skipped,
            mapped,
        }
    }
}

/// The assembly of the whole projection.
fn whole(
    projection: &Projection,
    options: &ProjectionOptions,
) -> Result<AnthropicMemo, TargetProjectionError> {
    let tail = Tail::new(Units::collect(projection)?, &Mapping::default());
    let prefix = (
        Vector::new(),
        Vector::new(),
        Vector::new(),
        imbl::OrdMap::new(),
    );
    Ok(assemble(projection, options, &[], prefix, tail))
}

/// The first position where `before` and `now` (replaced slots, sorted) differ.
fn first_difference(before: &[(usize, bool)], now: &[(usize, bool)]) -> Option<usize> {
    before
        .iter()
        .zip(now)
        .find(|(a, b)| a != b)
        .map(|(a, b)| a.0.min(b.0))
        .or_else(|| {
            let (shorter, longer) = if before.len() < now.len() {
                (before, now)
            } else {
                (now, before)
            };
            longer.get(shorter.len()).map(|slot| slot.0)
        })
}

/// The assembly of a version of length `len` (later or older than `earlier`'s) from the last of
/// `earlier`'s cuts it can resume at, or `None` when there is none (see [`AnthropicMemo`]).
fn extend(
    earlier: &AnthropicMemo,
    projection: &Projection,
    replaced: &[(usize, bool)],
    len: usize,
) -> Result<Option<AnthropicMemo>, TargetProjectionError> {
    // A later version differs from its first appended slot on (after every cut), an older one
    // (a prefix) from its end on; both where the Responses repairs replaced a slot in one and
    // not the other.
    let changed = first_difference(&earlier.replaced, replaced)
        .unwrap_or(usize::MAX)
        .min(len);
    for (k, cut) in earlier.cuts.iter().enumerate().rev() {
        if cut.unit == 0 || cut.position > changed {
            continue;
        }
        if cut.mapping.skipped {
            continue;
        }
        let tail = Tail::new(Units::collect_from(projection, cut.position)?, &cut.mapping);
        let units = &tail.units.units;
        if reaches_back(
            units,
            &tail.paired.call_of,
            |id| cut.ids.contains(id),
            |id| cut.loose.contains(id),
        ) || (cut.last == Some(Edge::Call) && units.iter().find_map(edge) == Some(Edge::Call))
            || tail.ids.values().any(|id| cut.mapping.mapped.contains(id))
        {
            continue;
        }
        let prefix = (
            earlier.units.take(cut.unit),
            earlier.system.take(cut.system),
            earlier.repairs.take(cut.repairs),
            earlier.sent.split(&cut.unit).0,
        );
        return Ok(Some(assemble(
            projection,
            &earlier.options,
            &earlier.cuts[..=k],
            prefix,
            tail,
        )));
    }
    Ok(None)
}

/// Every index of `units` (after the first) where an assembly can be resumed, with the edge of
/// the last unit before it that sends something (`last` before them all): no call batch and no
/// pair of `call_of` (output to call, as `pair_calls` paired `units`) spans it, and it is not the
/// synthetic output of the call before it (both at one position: a place is resumed by
/// position, so the call would be collected again; the output answers that call or one before it
/// in its batch, so a pair spans the place anyway, and this only guards that).
fn cuts(
    units: &[Unit<AnthropicItem>],
    call_of: &HashMap<usize, usize>,
    last: Option<Edge>,
) -> Vec<(usize, Option<Edge>)> {
    // For the first unit of each pair, the other one.
    let mut partner: HashMap<usize, usize> = HashMap::with_capacity(call_of.len());
    for (&output, &call) in call_of {
        partner.insert(output.min(call), output.max(call));
    }
    // The last unit a pair begun so far reaches, and the edge of the last unit sent.
    let mut reach = 0;
    let mut previous = last;
    let mut found = Vec::new();
    for (i, unit) in units.iter().enumerate() {
        let this = edge(unit);
        if i > reach
            && this.is_some()
            && !(previous == Some(Edge::Call) && this == Some(Edge::Call))
            && units[i - 1].at.position != unit.at.position
        {
            found.push((i, previous));
        }
        if let Some(&other) = partner.get(&i) {
            reach = reach.max(other);
        }
        if this.is_some() {
            previous = this;
        }
    }
    found
}

/// The units, `system` units, repairs and ids sent under other than their own before a cut.
type Prefix = (
    Vector<Unit<AnthropicItem>>,
    Vector<usize>,
    Vector<TargetRepair>,
    imbl::OrdMap<usize, Arc<str>>,
);

/// `prefix` (what comes before the last of `kept`, or nothing when `kept` is empty) followed by
/// `tail` (the units from there on) assembled from that cut's state.
fn assemble(
    projection: &Projection,
    options: &ProjectionOptions,
    kept: &[Cut],
    (mut units, mut system, mut repairs, mut sent): Prefix,
    tail: Tail,
) -> AnthropicMemo {
    let Tail {
        units: Units {
            units: tail_units,
            repairs: notes,
        },
        paired,
        ids,
        skipped,
        mapped,
    } = tail;
    let start = Cut::default();
    let from = kept.last().unwrap_or(&start);
    let offset = from.unit;
    let synthesized = synthesized_positions(projection, from.position);
    let mut own = mapped;

    // The new cuts kept, each with the call ids and the `system` units before it.
    let mut found = cuts(&tail_units, &paired.call_of, from.last);
    let room = KEPT_CUTS.min(found.len());
    found.drain(..found.len() - room);
    let is_system = |unit: &Unit<AnthropicItem>| matches!(&unit.rendered.piece, Sent::System(text) if !text.trim().is_empty());
    let mut new_cuts: Vec<Cut> = Vec::with_capacity(found.len());
    {
        let mut ids_before = from.ids.clone();
        let mut loose = from.loose.clone();
        let mut mapping = from.mapping.clone();
        let mut system_before = from.system;
        let mut next = found.iter().peekable();
        for (j, unit) in tail_units.iter().enumerate() {
            if let Some(&(_, last)) = next.next_if(|(at, _)| *at == j) {
                new_cuts.push(Cut {
                    unit: offset + j,
                    position: unit.at.position,
                    state: State::default(),
                    repairs: 0,
                    system: system_before,
                    ids: ids_before.clone(),
                    loose: loose.clone(),
                    last,
                    mapping: mapping.clone(),
                });
            }
            if next.peek().is_none() {
                break;
            }
            let key: Option<Arc<str>> = pairing_id(unit).map(Arc::from);
            if let Some(key) = &key {
                ids_before.insert(key.clone());
            }
            if let (PairRole::Output(_), Some(key)) = (unit.rendered.pairing(), &key)
                && !paired.call_of.contains_key(&j)
            {
                loose.insert(key.clone());
            }
            if let (PairRole::Call(id), Some(to), Some(key)) =
                (unit.rendered.pairing(), ids.get(&j), &key)
            {
                *mapping.uses.entry(key.clone()).or_insert(0) += 1;
                if **to != *id {
                    mapping.mapped.insert(to.clone());
                    mapping.skipped |= skipped.contains(&j);
                }
            }
            if is_system(unit) {
                system_before += 1;
            }
        }
    }
    for (j, unit) in tail_units.iter().enumerate() {
        if is_system(unit) {
            system.push_back(offset + j);
        }
    }
    units.extend(tail_units);
    for (&j, to) in &ids {
        if units.get(offset + j).map(call_id) != Some(&**to) {
            sent.insert(offset + j, to.clone());
        }
    }
    let ids = Ids {
        units: &units,
        offset,
        tail: ids,
        kept: &sent,
    };

    let mut state = from.state.clone();
    // The next new cut whose state is still to be taken.
    let mut pending = 0;
    for step in &paired.steps {
        let (Step::Unit(j) | Step::Synthetic(j)) = *step;
        let i = offset + j;
        while let Some(cut) = new_cuts.get_mut(pending)
            && cut.unit <= i
        {
            cut.state = state.clone();
            pending += 1;
        }
        match *step {
            Step::Synthetic(_) => {
                if let Some(entry) = state.calls.iter_mut().find(|c| c.0 == i && !c.1) {
                    entry.1 = true;
                    state.results.push(Block::Result {
                        unit: None,
                        id: ids.sent(i),
                        is_error: true,
                    });
                }
            }
            Step::Unit(_) => match &units[i].rendered.piece {
                Sent::Nothing | Sent::System(_) => {}
                Sent::User(blocks) => {
                    state.close(&ids);
                    state.push(Role::User, (0..blocks.len()).map(|b| Block::Unit(i, b)));
                }
                Sent::Assistant(blocks) => {
                    state.close(&ids);
                    state.push(
                        Role::Assistant,
                        (0..blocks.len()).map(|b| Block::Unit(i, b)),
                    );
                }
                Sent::ToolUse { .. } => {
                    if !state.results.is_empty() {
                        state.close(&ids);
                    }
                    state.push(
                        Role::Assistant,
                        [Block::ToolUse {
                            unit: i,
                            id: ids.sent(i),
                        }],
                    );
                    state.calls.push((i, false));
                }
                Sent::ToolResult { call_id: id, .. } => {
                    let call = state
                        .calls
                        .iter_mut()
                        .find(|(call, answered)| !answered && call_id(&units[*call]) == &**id);
                    match call {
                        Some(entry) => {
                            entry.1 = true;
                            let call = entry.0;
                            state.results.push(Block::Result {
                                unit: Some(i),
                                id: ids.sent(call),
                                is_error: synthesized.contains(&units[i].at.position)
                                    && units[i].at.item_kind != units[call].at.item_kind,
                            });
                        }
                        None => own.push(TargetRepair {
                            kind: TargetRepairKind::DroppedDuplicateOutput,
                            at: units[i].at.clone(),
                        }),
                    }
                }
            },
        }
    }
    for cut in new_cuts.iter_mut().skip(pending) {
        cut.state = state.clone();
    }
    state.close(&ids);

    let merged = merge_repairs(merge_repairs(notes, paired.repairs), own);
    let repairs_before = repairs.len();
    for cut in &mut new_cuts {
        cut.repairs =
            repairs_before + merged.partition_point(|repair| repair.at.position < cut.position);
    }
    repairs.extend(merged);
    let mut cuts: Vec<Cut> = kept.iter().cloned().chain(new_cuts).collect();
    cuts.drain(..cuts.len().saturating_sub(KEPT_CUTS));
    AnthropicMemo {
        options: *options,
        len: 0,
        replaced: Vec::new(),
        sent,
        units,
        system,
        messages: state.messages,
        repairs,
        cuts,
    }
}

/// The index of the first repair for which `before` is false (they are in position order).
fn partition_point(
    repairs: &Vector<TargetRepair>,
    before: impl Fn(&TargetRepair) -> bool,
) -> usize {
    let (mut low, mut high) = (0, repairs.len());
    while low < high {
        let mid = low + (high - low) / 2;
        if repairs.get(mid).is_some_and(&before) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    low
}

/// The projection a memo holds, with what is applied to each copy: a user message put first
/// when the history starts with the assistant, and the final assistant text trimmed.
fn finish(memo: &AnthropicMemo) -> (AnthropicMessages, Vector<TargetRepair>) {
    let units = &memo.units;
    let mut messages = memo.messages.clone();
    let mut repairs = memo.repairs.clone();
    // Each goes after every repair at its position (as the last repairs the assembly made).
    let insert = |repairs: &mut Vector<TargetRepair>, repair: TargetRepair| {
        let at = partition_point(repairs, |other| other.at.position <= repair.at.position);
        repairs.insert(at, repair);
    };
    if let Some(first) = messages.front()
        && first.role == Role::Assistant
    {
        insert(
            &mut repairs,
            TargetRepair {
                kind: TargetRepairKind::LeadingUserMessage,
                at: block_location(units, first.blocks.front()),
            },
        );
        messages.push_front(Message {
            role: Role::User,
            blocks: Vector::unit(Block::Text(
                serde_json::json!({"type": "text", "text": ANTHROPIC_LEADING_USER_TEXT})
                    .to_string()
                    .into(),
            )),
        });
    }
    let trimmed = messages
        .back()
        .filter(|last| last.role == Role::Assistant)
        .and_then(|last| match last.blocks.back() {
            Some(&Block::Unit(i, b)) => Some((i, b)),
            _ => None,
        })
        .and_then(|(i, b)| {
            let Sent::Assistant(blocks) = &units[i].rendered.piece else {
                return None;
            };
            let mut value = serde_json::from_str::<Value>(blocks.get(b)?).ok()?;
            let text = value.get("text").and_then(Value::as_str)?;
            if text.trim_end().len() == text.len() {
                return None;
            }
            // Rendering skips white-space-only texts, so something is left.
            value["text"] = Value::String(text.trim_end().to_owned());
            Some((units[i].at.clone(), value.to_string()))
        });
    if let Some((at, text)) = trimmed
        && let Some(last) = messages.back_mut()
        && let Some(block) = last.blocks.back_mut()
    {
        *block = Block::Text(text.into());
        insert(
            &mut repairs,
            TargetRepair {
                kind: TargetRepairKind::TrimmedFinalWhitespace,
                at,
            },
        );
    }
    (
        AnthropicMessages {
            units: memo.units.clone(),
            system: memo.system.clone(),
            messages,
        },
        repairs,
    )
}

/// Where the item a block comes from is.
fn block_location(units: &Vector<Unit<AnthropicItem>>, block: Option<&Block>) -> Location {
    let unit = match block {
        Some(Block::Unit(i, _) | Block::ToolUse { unit: i, .. }) => Some(*i),
        Some(Block::Result { unit, .. }) => *unit,
        Some(Block::Text(_)) | None => None,
    };
    unit.or_else(|| units.len().checked_sub(1))
        .and_then(|i| units.get(i))
        .map(|unit| unit.at.clone())
        .unwrap_or(Location {
            position: 0,
            item_kind: crate::item::ItemKind::Unknown,
            call_id: None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::history::History;

    #[test]
    fn cuts_fall_where_nothing_pairs_or_batches_across() {
        let mut history = History::new();
        for item in [
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"u"}]}"#,
            r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"a"}"#,
            r#"{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}"#,
            r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"b"}"#,
            r#"{"type":"function_call_output","call_id":"a","output":"ok"}"#,
            r#"{"type":"function_call_output","call_id":"b","output":"ok"}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}"#,
            r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}"#,
        ] {
            history.record_json(item).expect("valid");
        }
        let projection = history
            .project(&ProjectionOptions::default())
            .expect("projects");
        let units = Units::<AnthropicItem>::collect(&projection).expect("renders");
        // user, call a, reasoning, call b, output a, output b, assistant, call c, its synthetic
        // output: a cut before call a (its batch), none inside the batch or between the
        // outputs of its calls, one before the assistant text and one before call c, none
        // between call c and its synthetic output.
        assert_eq!(units.units.len(), 9);
        let found: Vec<usize> = cuts(&units.units, &pair_calls(&units.units).call_of, None)
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(found, [1, 6, 7]);
        // A call whose output came before it, then another call: one batch, no cut between
        // them though no id spans the place.
        let mut history = History::new();
        for item in [
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"u"}]}"#,
            r#"{"type":"function_call_output","call_id":"a","output":"ok"}"#,
            r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"a"}"#,
            r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"b"}"#,
            r#"{"type":"function_call_output","call_id":"b","output":"ok"}"#,
        ] {
            history.record_json(item).expect("valid");
        }
        let projection = history
            .project(&ProjectionOptions::default())
            .expect("projects");
        let units = Units::<AnthropicItem>::collect(&projection).expect("renders");
        assert_eq!(units.units.len(), 5);
        let found: Vec<usize> = cuts(&units.units, &pair_calls(&units.units).call_of, None)
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(found, [1]);
    }

    #[test]
    fn valid_ids_are_kept_and_others_mapped_stably_and_apart() {
        let calls = [
            (0, "call_1"),
            (1, "functions.eval:301"),
            (2, "functions_eval_301"),
            (3, ""),
            (4, "call_1"),
        ];
        let (map, skipped) = map_tool_ids(&calls, &Mapping::default());
        assert!(skipped.is_empty());
        assert_eq!(&*map[&0], "call_1");
        assert_eq!(&*map[&2], "functions_eval_301");
        let mapped = map[&1].to_string();
        assert!(mapped.starts_with("functions_eval_301_"), "{mapped}");
        assert_eq!(mapped.len(), "functions_eval_301_".len() + 8);
        assert!(is_valid_tool_id(&mapped) && is_valid_tool_id(&map[&3]));
        // A repeated id gets an id of its own.
        assert!(map[&4].starts_with("call_1_") && is_valid_tool_id(&map[&4]));
        // The same id maps alike whatever else the request holds.
        assert_eq!(
            map_tool_ids(&[(9, "functions.eval:301")], &Mapping::default()).0[&9].to_string(),
            mapped
        );
        // A valid id equal to the mapped form pushes the mapped one to a longer hash.
        let (map, skipped) = map_tool_ids(
            &[(0, "functions.eval:301"), (1, mapped.as_str())],
            &Mapping::default(),
        );
        assert!(skipped.contains(&0) && !skipped.contains(&1));
        assert_eq!(map[&1].to_string(), mapped);
        assert_ne!(map[&0].to_string(), mapped);
        assert!(is_valid_tool_id(&map[&0]));
    }
}
