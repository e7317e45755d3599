//! The assemblies a history keeps (shared by all its versions), how a projection finds the one to
//! start from, and how it resumes it.
//!
//! An assembly ([`Memo`]) keeps the entries of the version it was made for (an O(1) clone) and a
//! few checkpoints. A checkpoint is a place where nothing before pairs or batches with anything
//! after, with all the assembly knew there. It serves every version whose first slots up to it
//! are the same entries with the same Responses repairs; a walk over the shared leaves of the
//! two vectors tells. So the next step, a fork's branches, a reader behind the writer and a
//! rollback all resume near where they differ. [`keep`] says which checkpoints are kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use imbl::Vector;

use crate::history::History;
use crate::item::Entry;
use crate::projection::Projection;

use super::super::report::{TargetProjectionError, TargetRepair};
use super::fragments::Fragment;
use super::naming::{Ids, Naming};
use super::pairing::{Edge, Paired, Step, cuts, pair_calls, reaches_back};
use super::units::{self, PairRole, Rendered, Unit};
use super::{BuildStep, Format, Out, Source, counters, partition_point};

/// How many assemblies a history keeps for one target: two option sets each at two versions
/// (a writer and a reader behind it), four option sets, or the branches of a fork.
const KEPT: usize = 4;

/// How many of the last checkpoints an assembly keeps before it thins them out.
const LAST_CHECKPOINTS: usize = 8;

/// How much of an assembly comes before a checkpoint.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counts {
    fragments: usize,
    bytes: u64,
    repairs: usize,
    hoisted: usize,
}

/// A place an assembly can be resumed at: the slots before `position` pair and batch with
/// nothing from it on.
#[derive(Debug)]
pub(super) struct Checkpoint<F: Format> {
    position: usize,
    counts: Counts,
    /// The message builder's state there.
    pub(super) state: F::State,
    /// What is known of the call ids before it.
    ids: Ids,
    /// The edge of the last unit before it that sends something.
    last: Option<Edge>,
}

/// The assembly of one version of a history for one target and key.
#[derive(Debug)]
pub(crate) struct Memo<F: Format> {
    key: F::Key,
    /// The live entries of the version assembled, and its projection's replaced slots.
    entries: Vector<Entry>,
    replaced: Vec<(usize, bool)>,
    pub(super) fragments: Vector<Fragment<F::Item>>,
    pub(super) bytes: u64,
    pub(super) repairs: Vector<TargetRepair>,
    pub(super) hoisted: Vector<Arc<F::Item>>,
    /// The checkpoints kept, by position: the first is the start, the last the version's end.
    checkpoints: Vec<Arc<Checkpoint<F>>>,
    /// The position of the checkpoint before the first renamed call, kept however far back:
    /// a later call whose own id is a name minted there sends an assembly back before it.
    anchor: Option<usize>,
}

impl<F: Format> Memo<F> {
    /// The assembly of an empty history: the start alone.
    fn empty(key: F::Key) -> Self {
        let start = Checkpoint {
            position: 0,
            counts: Counts::default(),
            state: F::State::default(),
            ids: Ids::default(),
            last: None,
        };
        Memo {
            key,
            entries: Vector::new(),
            replaced: Vec::new(),
            fragments: Vector::new(),
            bytes: 0,
            repairs: Vector::new(),
            hoisted: Vector::new(),
            checkpoints: vec![Arc::new(start)],
            anchor: None,
        }
    }

    /// The checkpoint at the version's end.
    pub(super) fn end(&self) -> &Checkpoint<F> {
        let Some(end) = self.checkpoints.last() else {
            unreachable!("an assembly has its end checkpoint")
        };
        end
    }

    /// Whether it was made for exactly this version.
    fn is_of(&self, history: &History, replaced: &[(usize, bool)]) -> bool {
        self.entries.ptr_eq(history.entries()) && self.replaced == replaced
    }
}

/// The assemblies a history keeps for target `F`, the most recently used first.
pub(crate) struct Kept<F: Format>(Mutex<Vec<Arc<Memo<F>>>>);

impl<F: Format> Default for Kept<F> {
    fn default() -> Self {
        Kept(Mutex::new(Vec::new()))
    }
}

/// The assembly of `projection` of `history` for `key`: a kept one as it is when it was made
/// for this version, else the one that shares the most with it resumed, kept for next time.
///
/// # Errors
///
/// [`TargetProjectionError::UnreadableItem`] when an item does not parse.
pub(super) fn assembly<F: Format>(
    history: &History,
    projection: &Projection,
    key: F::Key,
) -> Result<Arc<Memo<F>>, TargetProjectionError> {
    let kept = history.memo::<Kept<F>>();
    let memos = kept
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let replaced: Vec<(usize, bool)> = projection.replaced_slots().collect();
    let mine = memos.iter().filter(|memo| memo.key == key);
    if let Some(memo) = mine.clone().find(|memo| memo.is_of(history, &replaced)) {
        store(&kept, memo, Some(memo));
        return Ok(Arc::clone(memo));
    }
    // The kept assembly that shares the most with this version (the most recent on a tie).
    let mut source: Option<(&Arc<Memo<F>>, usize)> = None;
    for memo in mine {
        let shared = history
            .shared_prefix(&memo.entries)
            .min(first_difference(&memo.replaced, &replaced).unwrap_or(usize::MAX));
        if source.is_none_or(|(_, most)| shared > most) {
            source = Some((memo, shared));
        }
    }
    let memo = Arc::new(match source {
        Some((source, shared)) => resume(source, history, projection, replaced, shared)?,
        None => resume(&Memo::empty(key), history, projection, replaced, 0)?,
    });
    store(&kept, &memo, source.map(|(source, _)| source));
    Ok(memo)
}

/// The first position where `before` and `now` (replaced slots, sorted) differ.
fn first_difference(before: &[(usize, bool)], now: &[(usize, bool)]) -> Option<usize> {
    let differ = before.iter().zip(now).find(|(a, b)| a != b);
    differ.map(|(a, b)| a.0.min(b.0)).or_else(|| {
        let longer = if before.len() > now.len() {
            before
        } else {
            now
        };
        longer.get(before.len().min(now.len())).map(|slot| slot.0)
    })
}

/// `source` resumed for `history` at its last checkpoint at or before `shared` that the new
/// units cannot pair or batch across (the start at the latest). Each slot is collected once:
/// moving back a checkpoint collects only the slots before those collected.
fn resume<F: Format>(
    source: &Memo<F>,
    history: &History,
    projection: &Projection,
    replaced: Vec<(usize, bool)>,
    shared: usize,
) -> Result<Memo<F>, TargetProjectionError> {
    let mut units: Vec<Unit<F::Item>> = Vec::new();
    let mut collected_from = None;
    let candidates = source.checkpoints.iter().enumerate().rev();
    for (k, checkpoint) in candidates.filter(|(_, c)| c.position <= shared) {
        let mut earlier = units::collect(projection, checkpoint.position, collected_from)?;
        earlier.append(&mut units);
        units = earlier;
        collected_from = Some(checkpoint.position);
        let paired = pair_calls(&units);
        if checkpoint.position > 0 && !usable(checkpoint, &units, &paired) {
            continue;
        }
        if source.entries.len() > history.len() && checkpoint.position > 0 {
            counters::older_version_resumed();
        }
        return Ok(build(source, k, history, replaced, units, paired));
    }
    unreachable!("the start is always usable")
}

/// Whether the assembly kept at `checkpoint` stays right when `units` follow it: no call
/// batches across it, nothing pairs across it, and the names chosen before it are still those a
/// whole assembly chooses.
fn usable<F: Format>(checkpoint: &Checkpoint<F>, units: &[Unit<F::Item>], paired: &Paired) -> bool {
    let batches_across =
        checkpoint.last == Some(Edge::Call) && units.iter().find_map(Edge::of) == Some(Edge::Call);
    let ids = &checkpoint.ids;
    !batches_across
        && ids.hold_for(units)
        && !reaches_back(
            units,
            &paired.call_of,
            |id| ids.used(id),
            |id| ids.loose(id),
        )
}

/// Keeps `memo`, made from `source`, as the most recently used. It takes the place of `source`
/// when that was of a shorter or the same version, and is kept beside it when it was of a
/// longer one (a reader behind the writer). It replaces an assembly of the same version and
/// key. The least recently used goes beyond [`KEPT`].
fn store<F: Format>(kept: &Kept<F>, memo: &Arc<Memo<F>>, source: Option<&Arc<Memo<F>>>) {
    let mut memos = kept.0.lock().unwrap_or_else(PoisonError::into_inner);
    let replaced = source.filter(|source| source.entries.len() <= memo.entries.len());
    memos.retain(|kept| {
        let same = kept.key == memo.key
            && kept.entries.ptr_eq(&memo.entries)
            && kept.replaced == memo.replaced;
        !(same || replaced.is_some_and(|source| Arc::ptr_eq(kept, source)))
    });
    memos.insert(0, Arc::clone(memo));
    memos.truncate(KEPT);
}

/// The assembly of `history`: `source` up to its checkpoint `k`, then `units` (the slots from
/// there on, ordered by `paired`) named and built, with checkpoints where they can be cut.
fn build<F: Format>(
    source: &Memo<F>,
    k: usize,
    history: &History,
    replaced: Vec<(usize, bool)>,
    units: Vec<Unit<F::Item>>,
    paired: Paired,
) -> Memo<F> {
    let from = &source.checkpoints[k];
    let end = history.len();
    let found = cuts(&units, &paired.call_of, from.last);
    let anchor = source
        .anchor
        .filter(|&anchor| anchor <= from.position)
        .or_else(|| anchor_of::<F>(from, &units, &found));
    // Which checkpoints to keep: of the source's up to `from`, of the new cuts, and the end.
    let old = &source.checkpoints[..=k];
    let mut positions: Vec<usize> = old.iter().map(|c| c.position).collect();
    positions.extend(found.iter().map(|&(at, _)| units[at].at.position));
    positions.push(end);
    positions.dedup();
    let keep = keep(&positions, anchor);
    let places: Vec<(usize, Option<Edge>)> = found
        .iter()
        .zip(&keep[old.len()..])
        .filter_map(|(&place, &keep)| keep.then_some(place))
        .collect();
    let tail = Tail {
        units: &units,
        paired: &paired,
        places: &places,
    };
    let named = tail.name(from, source.hoisted.take(from.counts.hoisted));
    let built = tail.build(source, from, &named.renamed);
    let mut tagged = named.tagged;
    tagged.extend(paired.repairs.iter().map(|r| (Source::Pairing, r.clone())));
    tagged.extend(built.repairs.into_iter().map(|r| (Source::Building, r)));
    // The repairs in position order, by source within a position (stable).
    let rank = |source: Source| F::REPAIR_ORDER.iter().position(|&s| s == source);
    tagged.sort_by_key(|(source, repair)| (repair.at.position, rank(*source)));
    let mut repairs = source.repairs.take(from.counts.repairs);
    let before = repairs.len();
    repairs.extend(tagged.into_iter().map(|(_, repair)| repair));

    let mut checkpoints: Vec<Arc<Checkpoint<F>>> = old
        .iter()
        .zip(&keep)
        .filter(|(_, keep)| **keep)
        .map(|(checkpoint, _)| Arc::clone(checkpoint))
        .collect();
    let places = places.iter().zip(named.known_at).zip(built.states);
    for ((&(at, last), (ids, hoisted)), (state, fragments, bytes)) in places {
        let position = units[at].at.position;
        let tail = repairs.skip(before);
        let repairs = before + partition_point(&tail, |r| r.at.position < position);
        let counts = Counts {
            fragments,
            bytes,
            repairs,
            hoisted,
        };
        checkpoints.push(Arc::new(Checkpoint {
            position,
            counts,
            state,
            ids,
            last,
        }));
    }
    let (fragments, bytes, hoisted) = (built.fragments, built.bytes, named.hoisted);
    if from.position < end {
        let counts = Counts {
            fragments: fragments.len(),
            bytes,
            repairs: repairs.len(),
            hoisted: hoisted.len(),
        };
        checkpoints.push(Arc::new(Checkpoint {
            position: end,
            counts,
            state: built.state,
            ids: named.ids.at(end),
            last: units.iter().rev().find_map(Edge::of).or(from.last),
        }));
    }
    Memo {
        key: source.key,
        entries: history.entries().clone(),
        replaced,
        fragments,
        bytes,
        repairs,
        hoisted,
        checkpoints,
        anchor,
    }
}

/// The units assembled after a checkpoint, their pairing, and the places (unit index, edge
/// before) where a checkpoint is made.
struct Tail<'a, R> {
    units: &'a [Unit<R>],
    paired: &'a Paired,
    places: &'a [(usize, Option<Edge>)],
}

/// What naming the units found: the new names by unit, the repairs of the names and of the
/// conversions, what was known at each place and at the end, the items hoisted.
struct Named<R> {
    renamed: HashMap<usize, Arc<str>>,
    tagged: Vec<(Source, TargetRepair)>,
    known_at: Vec<(Ids, usize)>,
    ids: Ids,
    hoisted: Vector<Arc<R>>,
}

/// What building the steps made: the fragments and their bytes, the state at each place
/// (with the fragments and bytes before it) and at the end, the builder's repairs.
struct Built<F: Format> {
    fragments: Vector<Fragment<F::Item>>,
    bytes: u64,
    states: Vec<(F::State, usize, u64)>,
    state: F::State,
    repairs: Vec<TargetRepair>,
}

impl<R: Rendered> Tail<'_, R> {
    /// Names the calls of the units in position order, after `from`, and collects the notes
    /// and the hoisted items (after `hoisted`).
    fn name<F: Format<Item = R>>(
        &self,
        from: &Checkpoint<F>,
        mut hoisted: Vector<Arc<R>>,
    ) -> Named<R> {
        let mut ids = from.ids.clone();
        let mut naming = Naming::<F>::new(&mut ids, self.units);
        let (mut renamed, mut tagged) = (HashMap::new(), Vec::new());
        let mut known_at = Vec::with_capacity(self.places.len());
        let mut next = self.places.iter().peekable();
        for (i, unit) in self.units.iter().enumerate() {
            if next.next_if(|&&(at, _)| at == i).is_some() {
                known_at.push((naming.ids().at(unit.at.position), hoisted.len()));
            }
            let answered = !matches!(unit.pairing(), PairRole::Output(_))
                || self.paired.call_of.contains_key(&i);
            if let Some(name) = naming.record(unit, answered) {
                let from = unit.pairing_id().unwrap_or("").to_owned();
                let to = name.to_string();
                let kind = super::TargetRepairKind::MappedId { from, to };
                tagged.push((Source::Naming, repair(kind, unit)));
                renamed.insert(i, name);
            }
            let notes = unit.rendered.notes().iter();
            tagged.extend(notes.map(|kind| (Source::Notes, repair(kind.clone(), unit))));
            if F::hoisted(&unit.rendered) {
                hoisted.push_back(Arc::clone(&unit.rendered));
            }
        }
        drop(naming);
        Named {
            renamed,
            tagged,
            known_at,
            ids,
            hoisted,
        }
    }

    /// Builds the steps in pairing order after `from` into `source`'s fragments before it,
    /// with the state at each place.
    fn build<F: Format<Item = R>>(
        &self,
        source: &Memo<F>,
        from: &Checkpoint<F>,
        renamed: &HashMap<usize, Arc<str>>,
    ) -> Built<F> {
        let mut built = Built::<F> {
            fragments: source.fragments.take(from.counts.fragments),
            bytes: from.counts.bytes,
            states: Vec::with_capacity(self.places.len()),
            state: from.state.clone(),
            repairs: Vec::new(),
        };
        let sent = |unit: usize| match renamed.get(&unit) {
            Some(name) => (&**name, true),
            None => (self.units[unit].pairing_id().unwrap_or(""), false),
        };
        let mut next = self.places.iter().map(|&(at, _)| at).peekable();
        for step in &self.paired.steps {
            let (Step::Unit(i) | Step::Synthetic(i)) = *step;
            while next.next_if(|&at| at <= i).is_some() {
                let snapshot = (built.state.clone(), built.fragments.len(), built.bytes);
                built.states.push(snapshot);
            }
            let unit = &self.units[i];
            let step = match (*step, unit.pairing()) {
                (Step::Synthetic(_), _) => BuildStep::Synthetic { id: sent(i).0 },
                (Step::Unit(_), PairRole::Call(_)) => {
                    let (id, renamed) = sent(i);
                    BuildStep::Call { unit, id, renamed }
                }
                (Step::Unit(_), PairRole::Output(_)) => {
                    let call = self.paired.call_of.get(&i).copied().unwrap_or(i);
                    let (id, renamed) = sent(call);
                    BuildStep::Output { unit, id, renamed }
                }
                (Step::Unit(_), _) => BuildStep::Other(unit),
            };
            let mut out = Out {
                pieces: F::PIECES,
                fragments: &mut built.fragments,
                bytes: &mut built.bytes,
                repairs: &mut built.repairs,
            };
            F::build(&source.key, &mut built.state, step, &mut out);
        }
        // A place before units that send no step (a dropped output at the end): the end state.
        for _ in next {
            let snapshot = (built.state.clone(), built.fragments.len(), built.bytes);
            built.states.push(snapshot);
        }
        built
    }
}

/// The position of the last place at or before the first unit of `units` whose call is sent
/// under a new id (`from`, or one of the cuts `found`), if a call is.
fn anchor_of<F: Format>(
    from: &Checkpoint<F>,
    units: &[Unit<F::Item>],
    found: &[(usize, Option<Edge>)],
) -> Option<usize> {
    let mut calls: HashMap<&str, u32> = HashMap::new();
    let renamed = units.iter().position(|unit| match unit.pairing() {
        PairRole::Call(id) => {
            let nth = calls.entry(id).or_insert_with(|| from.ids.calls(id));
            *nth += 1;
            F::needs_new_id(id, *nth)
        }
        _ => false,
    })?;
    let place = found.iter().rev().find(|&&(at, _)| at <= renamed);
    Some(place.map_or(from.position, |&(at, _)| units[at].at.position))
}

/// A repair of `kind` at `unit`.
fn repair<R>(kind: super::TargetRepairKind, unit: &Unit<R>) -> TargetRepair {
    TargetRepair {
        kind,
        at: unit.at.clone(),
    }
}

/// Which of `positions` (sorted, distinct; the last the version's end) an assembly keeps: the
/// end and the [`LAST_CHECKPOINTS`] before it, the start, and the one at `anchor`. Further
/// back, each kept one is the earliest within the distance from the last kept to the end. So
/// the gaps at most double going back: O(log n) are kept, and for any place one at most about
/// as far before it as it is before the end.
pub(super) fn keep(positions: &[usize], anchor: Option<usize>) -> Vec<bool> {
    let mut keep = vec![false; positions.len()];
    let end = positions.last().copied().unwrap_or(0);
    let (mut i, mut last_kept) = (positions.len(), end);
    while i > 0 {
        i -= 1;
        if positions.len() - i > LAST_CHECKPOINTS + 1 {
            let reach = last_kept.saturating_sub(end - last_kept);
            while i > 0 && positions[i - 1] >= reach {
                i -= 1;
            }
        }
        keep[i] = true;
        last_kept = positions[i];
    }
    if let Some(at) = anchor.and_then(|anchor| positions.binary_search(&anchor).ok()) {
        keep[at] = true;
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_checkpoints_are_kept_and_fewer_further_back() {
        let positions: Vec<usize> = (0..=1000).collect();
        let keep = keep(&positions, Some(5));
        let kept: Vec<usize> = positions
            .iter()
            .zip(&keep)
            .filter(|(_, keep)| **keep)
            .map(|(position, _)| *position)
            .collect();
        // The end and the eight before it.
        assert_eq!(
            kept[kept.len() - 9..],
            [992, 993, 994, 995, 996, 997, 998, 999, 1000]
        );
        // Logarithmically many, each gap at most the distance from its later end to the end.
        assert!(kept.len() <= 9 + 2 * 10, "{kept:?}");
        for pair in kept.windows(2).filter(|pair| pair[0] != 5) {
            assert!(pair[1] - pair[0] <= (1000 - pair[1]).max(1), "{kept:?}");
        }
        assert_eq!(kept[..2], [0, 5], "the start and the anchor: {kept:?}");
    }
}
