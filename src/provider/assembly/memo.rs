//! The assemblies a history keeps, shared by every version of it, and how a projection finds
//! the one to start from.
//!
//! An assembly ([`Memo`]) is kept with the entries of the version it was made for (an O(1)
//! clone of the persistent vector) and a few checkpoints: places where nothing before pairs or
//! batches with anything after, each with everything the assembly knew there. Its checkpoints
//! belong to that persistent structure, not to one line of versions: a checkpoint at position
//! `p` serves every version whose first `p` slots are the same entries with the same Responses
//! repairs, which a walk over the shared leaves of two vectors tells (`History::shared_prefix`).
//! So the next step of an agent loop, a fork of a projected version (several branches, each
//! appending something else), a reader behind the writer and a rollback all resume near where
//! they differ. The last few checkpoints are kept, and fewer further back (each gap at most the
//! distance from its end to the version's end), so that resuming before a place that a new item
//! pairs across costs at most about twice what it must.

use std::sync::{Arc, Mutex, PoisonError};

use imbl::Vector;

use crate::history::History;
use crate::item::Entry;
use crate::projection::Projection;

use super::super::report::{TargetProjectionError, TargetRepair};
use super::Format;
use super::build;
use super::counters;
use super::fragments::Fragment;
use super::naming::Ids;
use super::pairing::{Edge, Paired, pair_calls, reaches_back};
use super::units::{self, Unit};

/// How many assemblies a history keeps for one target: enough for two option sets each
/// projected at two versions (a writer and a reader behind it), four option sets at one
/// version, or the branches of a fork.
const KEPT: usize = 4;

/// How many of the last checkpoints an assembly keeps before it thins them out.
const LAST_CHECKPOINTS: usize = 8;

/// A place an assembly can be resumed at: the slots before `position` pair and batch with
/// nothing from it on, and everything the assembly knew there.
#[derive(Debug)]
pub(super) struct Checkpoint<F: Format> {
    /// The first slot after it.
    pub(super) position: usize,
    /// How many fragments, bytes, repairs and hoisted items come before it.
    pub(super) fragments: usize,
    pub(super) bytes: u64,
    pub(super) repairs: usize,
    pub(super) hoisted: usize,
    /// The message builder's state there.
    pub(super) state: F::State,
    /// What is known of the call ids before it.
    pub(super) ids: Ids,
    /// The edge of the last unit before it that sends something.
    pub(super) last: Option<Edge>,
}

impl<F: Format> Default for Checkpoint<F> {
    /// The start of a history.
    fn default() -> Self {
        Checkpoint {
            position: 0,
            fragments: 0,
            bytes: 0,
            repairs: 0,
            hoisted: 0,
            state: F::State::default(),
            ids: Ids::default(),
            last: None,
        }
    }
}

/// The assembly of one version of a history for one target and key.
#[derive(Debug)]
pub(crate) struct Memo<F: Format> {
    pub(super) key: F::Key,
    /// The live entries of the version assembled.
    pub(super) entries: Vector<Entry>,
    /// Its Responses projection's replaced slots: (position, sends nothing).
    pub(super) replaced: Vec<(usize, bool)>,
    pub(super) fragments: Vector<Fragment<F::Item>>,
    pub(super) bytes: u64,
    pub(super) repairs: Vector<TargetRepair>,
    pub(super) hoisted: Vector<Arc<F::Item>>,
    /// The checkpoints kept, by position; the last is the version's end.
    pub(super) checkpoints: Vec<Arc<Checkpoint<F>>>,
    /// The position of the checkpoint before the first call sent under a new id (kept however
    /// far back it is).
    pub(super) anchor: Option<usize>,
}

impl<F: Format> Memo<F> {
    /// The checkpoint at the version's end.
    pub(super) fn end(&self) -> &Checkpoint<F> {
        // Every memo is built with its end checkpoint.
        self.checkpoints
            .last()
            .map_or_else(|| unreachable_end(), |checkpoint| &**checkpoint)
    }

    /// Whether it was made for exactly this version.
    fn is_of(&self, history: &History, replaced: &[(usize, bool)]) -> bool {
        self.entries.ptr_eq(history.entries()) && self.replaced == replaced
    }
}

/// A memo always ends with its end checkpoint; this is never reached.
fn unreachable_end<'a, F: Format>() -> &'a Checkpoint<F> {
    unreachable!("an assembly is built with its end checkpoint")
}

/// The assemblies a history keeps for target `F`, the most recently used first; one per
/// history and its versions (`History::memo`).
pub(crate) struct Kept<F: Format> {
    memos: Mutex<Vec<Arc<Memo<F>>>>,
}

impl<F: Format> Default for Kept<F> {
    fn default() -> Self {
        Kept {
            memos: Mutex::new(Vec::new()),
        }
    }
}

/// The assembly of `projection` of `history` for `key`: a kept one as it is when it was made for
/// this version, else the kept one that shares the most with it resumed at its last usable
/// checkpoint, else a new one; kept for the next projection.
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
        .memos
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let replaced: Vec<(usize, bool)> = projection.replaced_slots().collect();
    let mine = memos.iter().filter(|memo| memo.key == key);
    if let Some(memo) = mine.clone().find(|memo| memo.is_of(history, &replaced)) {
        let memo = Arc::clone(memo);
        store(&kept, &memo, Some(&memo));
        return Ok(memo);
    }
    // The kept assembly that shares the most with this version (the most recent on a tie).
    let source = mine
        .map(|memo| (memo, shared(memo, history, &replaced)))
        .fold(
            None,
            |best: Option<(&Arc<Memo<F>>, usize)>, (memo, changed)| match best {
                Some((_, most)) if most >= changed => best,
                _ => Some((memo, changed)),
            },
        );
    let memo = match source {
        Some((source, changed)) => resume(source, history, projection, &replaced, changed)?,
        None => whole(history, projection, key, replaced)?,
    };
    let memo = Arc::new(memo);
    store(&kept, &memo, source.map(|(source, _)| source));
    Ok(memo)
}

/// The first position where `memo`'s version and `history` (with `replaced`) may differ: the
/// end of the entries they share, the first replaced slot that differs, or the shorter end.
fn shared<F: Format>(memo: &Memo<F>, history: &History, replaced: &[(usize, bool)]) -> usize {
    let entries = history.shared_prefix(&memo.entries);
    first_difference(&memo.replaced, replaced)
        .unwrap_or(usize::MAX)
        .min(entries)
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

/// `source` resumed for `history` at its last checkpoint at or before `changed` that the new
/// units cannot pair or batch across (the start at the latest). Each slot is collected once:
/// moving back a checkpoint collects only the slots before the ones already collected.
fn resume<F: Format>(
    source: &Memo<F>,
    history: &History,
    projection: &Projection,
    replaced: &[(usize, bool)],
    changed: usize,
) -> Result<Memo<F>, TargetProjectionError> {
    let start = Arc::new(Checkpoint::default());
    let candidates = source
        .checkpoints
        .iter()
        .rev()
        .filter(|checkpoint| checkpoint.position <= changed && checkpoint.position > 0)
        .chain(std::iter::once(&start));
    let mut units: Vec<Unit<F::Item>> = Vec::new();
    let mut collected_from: Option<usize> = None;
    for checkpoint in candidates {
        let mut earlier = units::collect(projection, checkpoint.position, collected_from)?;
        earlier.append(&mut units);
        units = earlier;
        collected_from = Some(checkpoint.position);
        let paired = pair_calls(&units);
        if checkpoint.position > 0 && !usable(checkpoint, &units, &paired) {
            continue;
        }
        let kept = source
            .checkpoints
            .iter()
            .take_while(|kept| kept.position < checkpoint.position)
            .cloned()
            .chain(std::iter::once(Arc::clone(checkpoint)))
            .collect();
        let prefix = build::Prefix {
            fragments: source.fragments.take(checkpoint.fragments),
            repairs: source.repairs.take(checkpoint.repairs),
            hoisted: source.hoisted.take(checkpoint.hoisted),
            checkpoints: kept,
            anchor: source
                .anchor
                .filter(|&anchor| anchor <= checkpoint.position),
        };
        if source.entries.len() > history.len() && checkpoint.position > 0 {
            counters::older_version_resumed();
        }
        return Ok(build::assemble(
            source.key,
            history,
            replaced.to_vec(),
            prefix,
            units,
            paired,
        ));
    }
    unreachable!("the start is always usable")
}

/// Whether the assembly kept at `checkpoint` stays right when `units` (paired as `paired`)
/// follow it: no call batches across it, nothing pairs across it, and the names chosen before
/// it are still the ones a whole assembly chooses.
fn usable<F: Format>(checkpoint: &Checkpoint<F>, units: &[Unit<F::Item>], paired: &Paired) -> bool {
    let batches_across =
        checkpoint.last == Some(Edge::Call) && units.iter().find_map(Edge::of) == Some(Edge::Call);
    !batches_across
        && checkpoint.ids.hold_for(units)
        && !reaches_back(
            units,
            &paired.call_of,
            |id| checkpoint.ids.used(id),
            |id| checkpoint.ids.loose(id),
        )
}

/// The assembly of the whole projection.
fn whole<F: Format>(
    history: &History,
    projection: &Projection,
    key: F::Key,
    replaced: Vec<(usize, bool)>,
) -> Result<Memo<F>, TargetProjectionError> {
    let units = units::collect(projection, 0, None)?;
    let paired = pair_calls(&units);
    let prefix = build::Prefix {
        fragments: Vector::new(),
        repairs: Vector::new(),
        hoisted: Vector::new(),
        checkpoints: vec![Arc::new(Checkpoint::default())],
        anchor: None,
    };
    Ok(build::assemble(
        key, history, replaced, prefix, units, paired,
    ))
}

/// Keeps `memo`, made from `source` (or in full), as the most recently used: it takes the place
/// of `source` when that was of a shorter or the same version, and is kept beside it when it
/// was of a longer one (a reader behind the writer), so that each finds its own next time; it
/// also replaces an assembly of the same version and key. The least recently used goes when
/// there are more than [`KEPT`]. Other projections may have stored theirs since this one read
/// the list: the rule is applied to what it holds now.
fn store<F: Format>(kept: &Kept<F>, memo: &Arc<Memo<F>>, source: Option<&Arc<Memo<F>>>) {
    let mut memos = kept.memos.lock().unwrap_or_else(PoisonError::into_inner);
    if memos.first().is_some_and(|first| Arc::ptr_eq(first, memo)) {
        return;
    }
    let replaced = source.filter(|source| source.entries.len() <= memo.entries.len());
    memos.retain(|kept| {
        let same = kept.key == memo.key
            && kept.entries.ptr_eq(&memo.entries)
            && kept.replaced == memo.replaced;
        let started_from = replaced.is_some_and(|source| Arc::ptr_eq(kept, source));
        !(same || started_from)
    });
    memos.insert(0, Arc::clone(memo));
    memos.truncate(KEPT);
}

/// Which of `positions` (sorted, distinct; the last is the version's end) an assembly keeps:
/// the end and the [`LAST_CHECKPOINTS`] before it, and further back the earliest one within
/// the distance from the last kept to the end of the last kept, so that the gaps between kept
/// checkpoints at most double going back: O(log n) of them, and for any place, one at most
/// about as far before it as it is before the end. And the one at `anchor`.
pub(super) fn keep(positions: &[usize], anchor: Option<usize>) -> Vec<bool> {
    let mut keep = vec![false; positions.len()];
    let Some(&end) = positions.last() else {
        return keep;
    };
    let mut last_kept = end;
    let mut kept = 0;
    let mut i = positions.len();
    while i > 0 {
        i -= 1;
        if kept <= LAST_CHECKPOINTS {
            keep[i] = true;
            last_kept = positions[i];
            kept += 1;
            continue;
        }
        // The earliest position within `end - last_kept` before the last kept one.
        let reach = last_kept.saturating_sub(end - last_kept);
        let mut j = i;
        while j > 0 && positions[j - 1] >= reach {
            j -= 1;
        }
        if positions[j] < reach {
            // Nothing within reach: the nearest one before it.
            j = i;
        }
        keep[j] = true;
        last_kept = positions[j];
        kept += 1;
        i = j;
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
        let keep = keep(&positions, None);
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
        for pair in kept.windows(2) {
            assert!(pair[1] - pair[0] <= (1000 - pair[1]).max(1), "{kept:?}");
        }
        assert_eq!(kept[0], 0, "the start is kept: {kept:?}");
    }
}
