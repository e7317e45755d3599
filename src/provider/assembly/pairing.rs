//! Positional pairing, once for every target: the order in which a target sends its units (each
//! batch of consecutive calls followed by one output per call), where an assembly can be cut,
//! and whether the units after a place can pair with something before it.

use std::collections::{HashMap, HashSet, VecDeque};

use super::super::report::{TargetRepair, TargetRepairKind};
use super::units::{PairRole, Rendered, Unit};

/// One step of a target's input: a unit, or an `aborted` output for a call with none left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send unit `i`.
    Unit(usize),
    /// Answer the call of unit `i` with [`ABORTED_OUTPUT`](crate::ABORTED_OUTPUT).
    Synthetic(usize),
}

/// The order in which a target sends its units, and the repairs that ordering made.
#[derive(Debug, Default)]
pub(crate) struct Paired {
    /// The steps, in order.
    pub(crate) steps: Vec<Step>,
    /// What the ordering moved, dropped or synthesized.
    pub(crate) repairs: Vec<TargetRepair>,
    /// For each output unit sent, the call unit it answers.
    pub(crate) call_of: HashMap<usize, usize>,
}

/// Orders `units` for a target with positional pairing: every batch of consecutive calls is
/// followed by one output per call before anything else.
///
/// An output answers the earliest unanswered call of its id in the nearest batch before it that
/// has calls of that id. An output that finds none is taken by a later call of its id that
/// nothing answers, or dropped ([`TargetRepairKind::DroppedDuplicateOutput`]). Outputs right
/// after their batch stay; the others move there ([`TargetRepairKind::MovedOutput`]). A call
/// with no output gets a synthetic one ([`TargetRepairKind::SynthesizedOutput`]). Units that
/// send nothing, and the projection's synthetic outputs, do not split a batch.
/// `docs/providers.md` ("Call grouping") tells why. O(n).
pub(crate) fn pair_calls<R: Rendered>(units: &[Unit<R>]) -> Paired {
    // Which output each call takes, and which call takes each.
    let mut output_of: HashMap<usize, usize> = HashMap::new();
    let mut taken: HashMap<usize, usize> = HashMap::new();
    // For each call id, the calls of the last batch that has calls of that id (the batch's
    // number and its calls no output answers yet, in order), and the outputs that answer no
    // call before them, in order.
    let mut open: HashMap<&str, (usize, VecDeque<usize>)> = HashMap::new();
    let mut unanswering: HashMap<&str, VecDeque<usize>> = HashMap::new();
    let (mut batch, mut in_batch) = (0, false);
    for (i, unit) in units.iter().enumerate() {
        match unit.pairing() {
            PairRole::Call(id) => {
                if !in_batch {
                    batch += 1;
                    in_batch = true;
                }
                let calls = open.entry(id).or_insert_with(|| (batch, VecDeque::new()));
                if calls.0 != batch {
                    // An earlier batch's calls left unanswered stay so: no later output
                    // answers them.
                    *calls = (batch, VecDeque::new());
                }
                calls.1.push_back(i);
            }
            PairRole::Output(id) => {
                // The projection's synthetic output stands in for one the call lacks: the calls
                // of a batch left unanswered (a crashed turn) stay one batch.
                in_batch &= unit.synthetic;
                match open.get_mut(id).and_then(|(_, calls)| calls.pop_front()) {
                    Some(call) => {
                        taken.insert(i, call);
                        output_of.insert(call, i);
                    }
                    None => unanswering.entry(id).or_default().push_back(i),
                }
            }
            PairRole::Other => in_batch = false,
            PairRole::Nothing => {}
        }
    }
    // A call no output after it answers takes the first output of its id before it that
    // answers no call before that output.
    for (i, unit) in units.iter().enumerate() {
        let PairRole::Call(id) = unit.rendered.pairing() else {
            continue;
        };
        if output_of.contains_key(&i) {
            continue;
        }
        let Some(outputs) = unanswering.get_mut(id) else {
            continue;
        };
        if let Some(&o) = outputs.front()
            && o < i
        {
            outputs.pop_front();
            taken.insert(o, i);
            output_of.insert(i, o);
        }
    }
    let mut paired = Paired::default();
    let mut sent = vec![false; units.len()];
    let mut i = 0;
    while i < units.len() {
        match units[i].pairing() {
            PairRole::Nothing => i += 1,
            PairRole::Other => {
                paired.steps.push(Step::Unit(i));
                i += 1;
            }
            PairRole::Output(_) => {
                if !taken.contains_key(&i) {
                    paired.repairs.push(TargetRepair {
                        kind: TargetRepairKind::DroppedDuplicateOutput,
                        at: units[i].at.clone(),
                    });
                }
                // A taken output not sent yet belongs to a later call: moved there.
                i += 1;
            }
            PairRole::Call(_) => {
                // The batch: consecutive calls, items that send nothing between them skipped
                // (a reasoning item between two parallel calls does not split their batch).
                // The projection's synthetic outputs between them do not split it either: they
                // follow the whole batch.
                let mut batch = Vec::new();
                let mut synthetic = Vec::new();
                while i < units.len() {
                    match units[i].pairing() {
                        PairRole::Call(_) => {
                            paired.steps.push(Step::Unit(i));
                            batch.push(i);
                        }
                        PairRole::Output(_) if units[i].synthetic => synthetic.push(i),
                        PairRole::Nothing => {}
                        PairRole::Output(_) | PairRole::Other => break,
                    }
                    i += 1;
                }
                // Every call between the batch's first and last is in the batch.
                let (first, last) = (
                    batch.first().copied().unwrap_or(i),
                    batch.last().copied().unwrap_or(i),
                );
                let in_batch = |call: usize| (first..=last).contains(&call);
                for output in synthetic {
                    if taken.get(&output).is_some_and(|call| in_batch(*call)) {
                        sent[output] = true;
                        paired.steps.push(Step::Unit(output));
                    } else {
                        paired.repairs.push(TargetRepair {
                            kind: TargetRepairKind::DroppedDuplicateOutput,
                            at: units[output].at.clone(),
                        });
                    }
                }
                // Outputs right after the batch, answering its calls, stay where they are.
                while i < units.len() {
                    match units[i].pairing() {
                        PairRole::Output(_)
                            if taken.get(&i).is_some_and(|call| in_batch(*call)) =>
                        {
                            sent[i] = true;
                            paired.steps.push(Step::Unit(i));
                            i += 1;
                        }
                        PairRole::Nothing => i += 1,
                        _ => break,
                    }
                }
                for call in batch {
                    match output_of.get(&call) {
                        Some(&output) if sent[output] => {}
                        Some(&output) => {
                            sent[output] = true;
                            paired.steps.push(Step::Unit(output));
                            paired.repairs.push(TargetRepair {
                                kind: TargetRepairKind::MovedOutput {
                                    call_position: units[call].at.position,
                                    before_call: output < call,
                                },
                                at: units[output].at.clone(),
                            });
                        }
                        None => {
                            paired.steps.push(Step::Synthetic(call));
                            paired.repairs.push(TargetRepair {
                                kind: TargetRepairKind::SynthesizedOutput,
                                at: units[call].at.clone(),
                            });
                        }
                    }
                }
            }
        }
    }
    paired.repairs.sort_by_key(|repair| repair.at.position);
    paired.call_of = taken;
    paired
}

/// How a unit that sends something takes part in call batching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Edge {
    /// A call: a call right after it joins its batch.
    Call,
    /// Anything else that is sent.
    Other,
}

impl Edge {
    /// The edge of a unit (`None`: it sends nothing, or is the projection's synthetic output,
    /// and batches across it).
    pub(crate) fn of<R: Rendered>(unit: &Unit<R>) -> Option<Edge> {
        match unit.pairing() {
            PairRole::Output(_) if unit.synthetic => None,
            PairRole::Call(_) => Some(Edge::Call),
            PairRole::Output(_) | PairRole::Other => Some(Edge::Other),
            PairRole::Nothing => None,
        }
    }
}

/// The places in `units` (unit indices, after the first) where an assembly can be cut, each with
/// the edge of the last unit before it that sends something (`last` before them all). No pair
/// of `call_of` spans a place, and no call batch. The unit after it sends something. Two units
/// at one position (a call and its synthetic output) are never cut apart: an assembly is
/// resumed by position.
pub(crate) fn cuts<R: Rendered>(
    units: &[Unit<R>],
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
        let this = Edge::of(unit);
        if i > 0
            && i > reach
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

/// Whether a unit of `units` (the units from some place on; `call_of` as [`pair_calls`] paired
/// them) could pair with a unit before that place, as far as the assembly kept there knows
/// what is before it: `used_before(id)`, a call or an output of `id` is before;
/// `loose_before(id)`, an output of `id` before answers no call.
///
/// True when, of an id used before, the first unit from the place on is not a call: an output
/// could answer a call before the place (this rejects more than it must). True too when a call
/// from the place on that nothing after it answers has the id of a loose output before: it
/// would take that output. When false, and nothing paired across the place in the version
/// assembled, nothing pairs across it in this one either. A call id reused every turn
/// (`call_0`) thus keeps a place usable as long as each new turn starts with its call.
pub(crate) fn reaches_back<R: Rendered>(
    units: &[Unit<R>],
    call_of: &HashMap<usize, usize>,
    used_before: impl Fn(&str) -> bool,
    loose_before: impl Fn(&str) -> bool,
) -> bool {
    let answered_after: HashSet<usize> = call_of
        .iter()
        .filter(|&(output, call)| output > call)
        .map(|(_, &call)| call)
        .collect();
    // The ids used before whose first unit from the place on has been seen.
    let mut seen: HashSet<&str> = HashSet::new();
    units.iter().enumerate().any(|(i, unit)| {
        let (id, call) = match unit.pairing() {
            PairRole::Call(id) => (id, true),
            PairRole::Output(id) => (id, false),
            PairRole::Other | PairRole::Nothing => return false,
        };
        if call && !answered_after.contains(&i) && loose_before(id) {
            return true;
        }
        used_before(id) && seen.insert(id) && !call
    })
}
