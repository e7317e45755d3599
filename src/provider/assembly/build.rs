//! Assembling the units after a checkpoint: naming their calls, building their messages, and
//! keeping checkpoints where the new units can be cut.

use std::collections::HashMap;
use std::sync::Arc;

use imbl::Vector;

use crate::history::History;

use super::super::report::TargetRepair;
use super::fragments::Fragment;
use super::memo::{self, Checkpoint, Memo};
use super::naming::Naming;
use super::pairing::{Edge, Paired, Step, cuts};
use super::units::{PairRole, Rendered, Unit};
use super::{BuildStep, Format, Out, Source};

/// What comes before the units assembled now, from the assembly resumed.
pub(super) struct Prefix<F: Format> {
    pub(super) fragments: Vector<Fragment<F::Item>>,
    pub(super) repairs: Vector<TargetRepair>,
    pub(super) hoisted: Vector<Arc<F::Item>>,
    /// The checkpoints kept up to the one resumed at, which is the last.
    pub(super) checkpoints: Vec<Arc<Checkpoint<F>>>,
    /// The position of the checkpoint before the first call sent under a new id, when it is
    /// among them.
    pub(super) anchor: Option<usize>,
}

/// The assembly of `history` (its projection's replaced slots `replaced`): `prefix`, then
/// `units` (the slots from its last checkpoint on, ordered by `paired`) named and built, with
/// checkpoints kept where they can be cut.
pub(super) fn assemble<F: Format>(
    key: F::Key,
    history: &History,
    replaced: Vec<(usize, bool)>,
    prefix: Prefix<F>,
    units: Vec<Unit<F::Item>>,
    paired: Paired,
) -> Memo<F> {
    let Prefix {
        mut fragments,
        mut repairs,
        mut hoisted,
        checkpoints: mut kept,
        anchor,
    } = prefix;
    let Some(from) = kept.pop() else {
        unreachable!("an assembly resumes at a checkpoint");
    };
    let found = cuts(&units, &paired.call_of, from.last);
    let anchor = anchor.or_else(|| anchor_of::<F>(&from, &units, &found));
    let places = places(&kept, &from, &units, found, history.len(), anchor);

    // The units in position order: their names, what is known of their ids, the items
    // hoisted, and the repairs their conversions noted.
    let mut ids = from.ids.clone();
    let mut naming = Naming::<F>::new(&mut ids, &units);
    let mut renamed: HashMap<usize, Arc<str>> = HashMap::new();
    let mut tagged: Vec<(Source, TargetRepair)> = Vec::new();
    let mut known_at: Vec<(usize, super::naming::Ids, usize)> = Vec::with_capacity(places.len());
    let mut place = places.iter().peekable();
    for (i, unit) in units.iter().enumerate() {
        while let Some(&&(at, _)) = place.peek()
            && at <= i
        {
            let _ = place.next();
            known_at.push((at, naming_ids(&naming, unit.at.position), hoisted.len()));
        }
        let answered = match unit.pairing() {
            PairRole::Output(_) => paired.call_of.contains_key(&i),
            _ => true,
        };
        if let Some(name) = naming.record(unit, answered) {
            tagged.push((
                Source::Naming,
                repair(
                    super::TargetRepairKind::MappedId {
                        from: unit.pairing_id().unwrap_or("").to_owned(),
                        to: name.to_string(),
                    },
                    unit,
                ),
            ));
            renamed.insert(i, name);
        }
        for kind in unit.rendered.notes() {
            tagged.push((Source::Notes, repair(kind.clone(), unit)));
        }
        if F::hoisted(&unit.rendered) {
            hoisted.push_back(Arc::clone(&unit.rendered));
        }
    }
    drop(naming);
    tagged.extend(
        paired
            .repairs
            .iter()
            .map(|repair| (Source::Pairing, repair.clone())),
    );

    // The steps in pairing order, built into fragments; the state at each place kept.
    let mut state = from.state.clone();
    let mut bytes = from.bytes;
    let mut built: Vec<TargetRepair> = Vec::new();
    let mut states: Vec<(usize, F::State, usize, u64)> = Vec::with_capacity(places.len());
    let mut place = places.iter().map(|&(at, _)| at).peekable();
    let sent = |unit: usize| -> (&str, bool) {
        match renamed.get(&unit) {
            Some(name) => (&**name, true),
            None => (units[unit].pairing_id().unwrap_or(""), false),
        }
    };
    for step in &paired.steps {
        let (Step::Unit(i) | Step::Synthetic(i)) = *step;
        while let Some(at) = place.next_if(|&at| at <= i) {
            states.push((at, state.clone(), fragments.len(), bytes));
        }
        let build = match *step {
            Step::Synthetic(call) => {
                let (id, _) = sent(call);
                BuildStep::Synthetic { id }
            }
            Step::Unit(i) => match units[i].pairing() {
                PairRole::Call(_) => {
                    let (id, renamed) = sent(i);
                    BuildStep::Call {
                        unit: &units[i],
                        id,
                        renamed,
                    }
                }
                PairRole::Output(_) => {
                    let call = paired.call_of.get(&i).copied().unwrap_or(i);
                    let (id, renamed) = sent(call);
                    BuildStep::Output {
                        unit: &units[i],
                        id,
                        renamed,
                    }
                }
                PairRole::Other | PairRole::Nothing => BuildStep::Other(&units[i]),
            },
        };
        let mut out = Out {
            pieces: F::PIECES,
            fragments: &mut fragments,
            bytes: &mut bytes,
            repairs: &mut built,
        };
        F::build(&key, &mut state, build, &mut out);
    }
    for at in place {
        states.push((at, state.clone(), fragments.len(), bytes));
    }
    tagged.extend(built.into_iter().map(|repair| (Source::Building, repair)));

    // The tail's repairs in position order, by source within a position (stable).
    let rank = |source: Source| F::REPAIR_ORDER.iter().position(|&s| s == source);
    tagged.sort_by_key(|(source, repair)| (repair.at.position, rank(*source)));
    let tail: Vec<TargetRepair> = tagged.into_iter().map(|(_, repair)| repair).collect();
    let repairs_before = repairs.len();

    let last = units.iter().rev().find_map(Edge::of).or(from.last);
    let mut new: Vec<Arc<Checkpoint<F>>> = Vec::with_capacity(places.len() + 1);
    for (((at, edge), (_, ids, hoisted_before)), (_, state, fragments_before, bytes_before)) in
        places.iter().zip(known_at).zip(states)
    {
        let position = units[*at].at.position;
        new.push(Arc::new(Checkpoint {
            position,
            fragments: fragments_before,
            bytes: bytes_before,
            repairs: repairs_before + tail.partition_point(|r| r.at.position < position),
            hoisted: hoisted_before,
            state,
            ids,
            last: *edge,
        }));
    }
    repairs.extend(tail);
    kept.push(from);
    kept.extend(new);
    if kept
        .last()
        .is_some_and(|last| last.position == history.len())
    {
        // Nothing after the checkpoint resumed at: it is the end.
        return memo_of(
            (key, history, replaced, anchor),
            (fragments, bytes, repairs, hoisted),
            kept,
        );
    }
    let end = Checkpoint {
        position: history.len(),
        fragments: fragments.len(),
        bytes,
        repairs: repairs.len(),
        hoisted: hoisted.len(),
        state,
        ids: ids.at(history.len()),
        last,
    };
    kept.push(Arc::new(end));
    memo_of(
        (key, history, replaced, anchor),
        (fragments, bytes, repairs, hoisted),
        kept,
    )
}

/// The version an assembly is made for: the key, the history, its projection's replaced slots,
/// and the position of its checkpoint before the first renamed call.
type Version<'a, F> = (
    <F as Format>::Key,
    &'a History,
    Vec<(usize, bool)>,
    Option<usize>,
);

/// The assembly of `history` with what was built and the checkpoints kept, thinned.
fn memo_of<F: Format>(
    (key, history, replaced, anchor): Version<'_, F>,
    (fragments, bytes, repairs, hoisted): Built<F>,
    checkpoints: Vec<Arc<Checkpoint<F>>>,
) -> Memo<F> {
    Memo {
        key,
        entries: history.entries().clone(),
        replaced,
        fragments,
        bytes,
        repairs,
        hoisted,
        checkpoints: thin(checkpoints, anchor),
        anchor,
    }
}

/// The position of the last place at or before the first unit of `units` whose call is sent
/// under a new id (`from`, or one of the cuts `found`), if a call is: a later call whose own id
/// is a name minted there, or that a search there passed over, sends an assembly back before
/// it, so it is kept however far back it is.
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

/// What an assembly built: fragments, their bytes, repairs, hoisted items.
type Built<F> = (
    Vector<Fragment<<F as Format>::Item>>,
    u64,
    Vector<TargetRepair>,
    Vector<Arc<<F as Format>::Item>>,
);

/// The knowledge of the names so far, for a checkpoint at `position`.
fn naming_ids<F: Format>(naming: &Naming<'_, F>, position: usize) -> super::naming::Ids {
    naming.ids().at(position)
}

/// The places among `units` where a checkpoint is made: the cuts of the new units that the
/// thinning keeps together with the checkpoints kept before them (`kept`, then `from`, where
/// the units start), each a unit index with the edge before it.
fn places<F: Format>(
    kept: &[Arc<Checkpoint<F>>],
    from: &Checkpoint<F>,
    units: &[Unit<F::Item>],
    found: Vec<(usize, Option<Edge>)>,
    end: usize,
    anchor: Option<usize>,
) -> Vec<(usize, Option<Edge>)> {
    let mut positions: Vec<usize> = kept.iter().map(|checkpoint| checkpoint.position).collect();
    positions.push(from.position);
    let old = positions.len();
    positions.extend(found.iter().map(|&(at, _)| units[at].at.position));
    if positions.last().is_none_or(|&last| last < end) {
        positions.push(end);
    }
    let keep = memo::keep(&positions, anchor);
    found
        .into_iter()
        .zip(&keep[old..])
        .filter(|(_, keep)| **keep)
        .map(|(place, _)| place)
        .collect()
}

/// `checkpoints` (sorted by position, the last the end) thinned as [`memo::keep`] says.
fn thin<F: Format>(
    checkpoints: Vec<Arc<Checkpoint<F>>>,
    anchor: Option<usize>,
) -> Vec<Arc<Checkpoint<F>>> {
    let positions: Vec<usize> = checkpoints.iter().map(|c| c.position).collect();
    let keep = memo::keep(&positions, anchor);
    checkpoints
        .into_iter()
        .zip(keep)
        .filter(|(_, keep)| *keep)
        .map(|(checkpoint, _)| checkpoint)
        .collect()
}

/// A repair of `kind` at `unit`.
fn repair<R>(kind: super::TargetRepairKind, unit: &Unit<R>) -> TargetRepair {
    TargetRepair {
        kind,
        at: unit.at.clone(),
    }
}
