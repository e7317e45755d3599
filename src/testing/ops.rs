//! The one description of history operations that the model tests, the pairing-index test and
//! the fuzz targets share: [`HistoryOp`] (what is done to one history) and [`ForkOp`] (the same
//! on one of several forks, and making forks), with their `Arbitrary` front end here and their
//! proptest strategies in [`strategies`](super::strategies).
//!
//! The item of a [`HistoryOp::Record`] is a type parameter: item JSON (`String`, the default) for
//! the kit's generators and property tests, a fuzzer's own bounded description of an item for
//! a fuzz target. Each test interprets the operations itself (against its model, with its
//! checks after every step); [`apply_ops_to`] is the plain interpretation on one history.

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{Value, json};

use crate::history::{Compacted, History, Recorded, summary_text};
use crate::item::{Entry, ItemError};
use crate::projection::{Modalities, ProjectionOptions, RepairMode, UnknownItems};

/// The most forks a sequence of [`ForkOp`]s keeps by default ([`place_fork`]).
pub const MAX_FORKS: usize = 4;

/// The most positions a [`Selection::Picks`] takes.
pub const MAX_PICKS: usize = 8;

/// One operation on a history.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryOp<I = String> {
    /// Record this item ([`History::record_json`] for item JSON).
    Record(I),
    /// Project with these options ([`History::project`]); the history does not change.
    Project(ProjectionOptions),
    /// [`History::remove_first_item`].
    RemoveFirst,
    /// [`History::drop_last_n_user_turns`] of this many turns.
    Rollback(usize),
    /// [`History::replace`] with the entries `keep` selects, then `new` when there is one.
    Replace {
        /// Which of the current entries the replacement keeps, in which order.
        keep: Selection,
        /// An item added after them.
        new: Option<I>,
    },
    /// [`History::compact`] with this summary.
    Compact(String),
    /// [`History::set_reference_context_item`] with this value.
    SetReferenceContext(Option<Value>),
}

/// Which entries of a history a [`HistoryOp::Replace`] keeps.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Arbitrary)]
pub enum Selection {
    /// The entries at the positions whose bit is set (positions below 64), in order.
    Mask(u64),
    /// The entries at these positions taken modulo the length (the first [`MAX_PICKS`]), in
    /// this order: entries can come twice or change places. None of an empty history.
    Picks(Vec<u8>),
}

impl Selection {
    /// The positions selected in a sequence of `len` items.
    pub fn positions(&self, len: usize) -> Vec<usize> {
        match self {
            Selection::Mask(bits) => (0..len.min(64))
                .filter(|position| bits & (1 << position) != 0)
                .collect(),
            Selection::Picks(picks) if len > 0 => picks
                .iter()
                .take(MAX_PICKS)
                .map(|pick| usize::from(*pick) % len)
                .collect(),
            Selection::Picks(_) => Vec::new(),
        }
    }

    /// The selected items of `items`, in the selection's order.
    pub fn pick<T: Clone>(&self, items: &[T]) -> Vec<T> {
        self.positions(items.len())
            .into_iter()
            .map(|position| items[position].clone())
            .collect()
    }
}

/// One operation on a set of forks of a history.
#[derive(Debug, Clone, PartialEq)]
pub enum ForkOp<I = String> {
    /// `op` on the fork at `fork` modulo the number of forks.
    On {
        /// The fork (taken modulo the number of forks).
        fork: usize,
        /// The operation.
        op: HistoryOp<I>,
    },
    /// A new fork of the fork at `from` (modulo the number of forks): a clone, or with
    /// `before_turn` the history before that user turn ([`History::before_user_turn`]); placed
    /// by [`place_fork`].
    Fork {
        /// The fork it is made from (taken modulo the number of forks).
        from: usize,
        /// The user turn (counted from 1) before which the new fork is cut, if any.
        before_turn: Option<usize>,
    },
}

/// Puts `fork`, made from the fork at `from` (modulo the number of forks), among `forks`:
/// appended while there are fewer than `max`, else in place of the fork after `from`.
pub fn place_fork<S>(forks: &mut Vec<S>, from: usize, fork: S, max: usize) {
    let len = forks.len();
    if len < max {
        forks.push(fork);
    } else {
        forks[(from % len + 1) % len] = fork;
    }
}

/// Applying operations failed (for generated operations, a bug of the generator or of the
/// history: generated items are valid).
#[derive(Debug, thiserror::Error)]
#[error("generated operation {position} ({operation}) failed")]
pub struct ApplyError {
    /// The index of the operation in the sequence.
    pub position: usize,
    /// `record`, `remove first`, `rollback`, `replace` or `compact`.
    pub operation: &'static str,
    /// What the history said.
    #[source]
    pub source: ItemError,
}

/// Applies `ops` to `history` in order. A projection is made and dropped (a strict one may
/// fail, which is not an error here); a replacement's new item that is not a storable item is
/// left out.
///
/// # Errors
///
/// [`ApplyError`] naming the first operation that failed; the operations before it stay applied.
pub fn apply_ops_to(history: &mut History, ops: &[HistoryOp]) -> Result<(), ApplyError> {
    for (position, op) in ops.iter().enumerate() {
        let (operation, result) = match op {
            HistoryOp::Record(json) => (
                "record",
                history.record_json(json.as_str()).map(|_: Recorded| ()),
            ),
            HistoryOp::Project(options) => {
                let _ = history.project(options);
                ("project", Ok(()))
            }
            HistoryOp::RemoveFirst => {
                history.remove_first_item();
                ("remove first", Ok(()))
            }
            HistoryOp::Rollback(turns) => ("rollback", history.drop_last_n_user_turns(*turns)),
            HistoryOp::Replace { keep, new } => {
                let entries: Vec<Entry> = history.iter().cloned().collect();
                let mut kept = keep.pick(&entries);
                kept.extend(
                    new.as_ref()
                        .and_then(|json| Entry::from_json(json.as_str()).ok()),
                );
                history.replace(kept);
                ("replace", Ok(()))
            }
            HistoryOp::Compact(summary) => {
                ("compact", history.compact(summary).map(|_: Compacted| ()))
            }
            HistoryOp::SetReferenceContext(value) => {
                history.set_reference_context_item(value.clone());
                ("set reference context", Ok(()))
            }
        };
        result.map_err(|source| ApplyError {
            position,
            operation,
            source,
        })?;
    }
    Ok(())
}

/// A new [`History`] with `ops` applied.
///
/// # Errors
///
/// As [`apply_ops_to`].
pub fn apply_ops(ops: &[HistoryOp]) -> Result<History, ApplyError> {
    let mut history = History::new();
    apply_ops_to(&mut history, ops)?;
    Ok(history)
}

/// The items that `ops` record, in order (the other operations left out).
pub fn recorded_items(ops: &[HistoryOp]) -> Vec<String> {
    ops.iter()
        .filter_map(|op| match op {
            HistoryOp::Record(json) => Some(json.clone()),
            _ => None,
        })
        .collect()
}

/// The projection options the four low bits of `bits` choose: image input, audio input, strict
/// repair, unknown items sent.
pub fn projection_options(bits: u8) -> ProjectionOptions {
    ProjectionOptions {
        modalities: Modalities {
            image: bits & 1 != 0,
            audio: bits & 2 != 0,
        },
        repair: if bits & 4 != 0 {
            RepairMode::Strict
        } else {
            RepairMode::Lenient
        },
        unknown_items: if bits & 8 != 0 {
            UnknownItems::Send
        } else {
            UnknownItems::HoldBack
        },
    }
}

/// The summaries a generated compaction uses: empty (compaction writes its default), plain,
/// a model's summary with Codex's prefix, multi-line, padded, long, non-ASCII with control
/// characters, and texts that look like what a harness injects (a contextual fragment, a skill
/// tag, an inter-agent message).
pub fn summaries() -> Vec<String> {
    vec![
        String::new(),
        "the plain summary".to_owned(),
        summary_text("the model's summary"),
        summary_text("s"),
        "first line\nsecond line".to_owned(),
        "  run the tests  ".to_owned(),
        "x".repeat(101),
        "ünï\u{2028}\"\\\n\t\u{0} ✓ \u{1F600}".to_owned(),
        "<environment_context>\n<cwd>/x</cwd>\n</environment_context>".to_owned(),
        "<skill>".to_owned(),
        r#"{"author":"/root","recipient":"/root/w","content":"go","trigger_turn":true}"#.to_owned(),
    ]
}

/// The reference context items a generated [`HistoryOp::SetReferenceContext`] sets: none, and
/// three values.
pub fn references() -> Vec<Option<Value>> {
    vec![
        None,
        Some(json!({"cwd": "/repo"})),
        Some(json!({"cwd": "/a"})),
        Some(json!({"cwd": "/b", "model": "m"})),
    ]
}

/// A rollback's turns from a byte: 0 to 4, or `usize::MAX` (every turn).
fn turns(byte: u8) -> usize {
    if byte == u8::MAX {
        usize::MAX
    } else {
        usize::from(byte % 5)
    }
}

/// A fork index from a byte: fork 0 half of the time (so that one fork grows long), else any.
fn fork_index(byte: u8) -> usize {
    if byte < 128 { 0 } else { usize::from(byte) }
}

fn choose<T: Clone>(pool: &[T], byte: u8) -> T {
    pool[usize::from(byte) % pool.len()].clone()
}

/// Records most often (seven in sixteen), then removals from the front and rollbacks, then the
/// rest.
impl<'a, I: Arbitrary<'a>> Arbitrary<'a> for HistoryOp<I> {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(match u.int_in_range(0..=15u8)? {
            0..=6 => HistoryOp::Record(I::arbitrary(u)?),
            7 => HistoryOp::Project(projection_options(u.arbitrary()?)),
            8 | 9 => HistoryOp::RemoveFirst,
            10 | 11 => HistoryOp::Rollback(turns(u.arbitrary()?)),
            12 => HistoryOp::Replace {
                keep: Selection::arbitrary(u)?,
                new: Option::<I>::arbitrary(u)?,
            },
            13 => HistoryOp::Compact(choose(&summaries(), u.arbitrary()?)),
            _ => HistoryOp::SetReferenceContext(choose(&references(), u.arbitrary()?)),
        })
    }
}

/// An operation on a fork (fork 0 half of the time) seven times in eight, else a new fork (cut
/// before a user turn half of those times).
impl<'a, I: Arbitrary<'a>> Arbitrary<'a> for ForkOp<I> {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let fork = fork_index(u.arbitrary()?);
        Ok(if u.ratio(1, 8)? {
            let before_turn = if u.arbitrary()? {
                Some(usize::from(u.arbitrary::<u8>()? % 5))
            } else {
                None
            };
            ForkOp::Fork {
                from: fork,
                before_turn,
            }
        } else {
            ForkOp::On {
                fork,
                op: HistoryOp::arbitrary(u)?,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_keeps_masked_positions_in_order_and_picks_in_their_order() {
        let items = ["a", "b", "c"];
        assert_eq!(Selection::Mask(0b101).pick(&items), ["a", "c"]);
        assert_eq!(Selection::Mask(u64::MAX).pick(&items), ["a", "b", "c"]);
        assert_eq!(
            Selection::Picks(vec![2, 0, 3]).pick(&items),
            ["c", "a", "a"]
        );
        assert!(Selection::Picks(vec![1, 2]).pick::<&str>(&[]).is_empty());
        assert_eq!(Selection::Picks(vec![0; 20]).positions(1).len(), MAX_PICKS);
    }

    #[test]
    fn a_fork_is_appended_until_the_most_then_replaces_the_next() {
        let mut forks = vec![0];
        place_fork(&mut forks, 0, 1, 3);
        place_fork(&mut forks, 0, 2, 3);
        assert_eq!(forks, [0, 1, 2]);
        place_fork(&mut forks, 4, 3, 3);
        assert_eq!(forks, [0, 1, 3]);
        place_fork(&mut forks, 2, 4, 3);
        assert_eq!(forks, [4, 1, 3]);
    }

    #[test]
    fn the_options_bits_choose_every_combination() {
        let all: std::collections::HashSet<_> = (0..16u8)
            .map(|bits| format!("{:?}", projection_options(bits)))
            .collect();
        assert_eq!(all.len(), 16);
        assert_eq!(
            projection_options(0),
            ProjectionOptions::for_modalities(Modalities::TEXT)
        );
    }

    #[test]
    fn applying_every_kind_of_operation_keeps_the_invariants() {
        let user =
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}"#;
        let call = r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}"#;
        let ops = vec![
            HistoryOp::Record(user.to_owned()),
            HistoryOp::Record(call.to_owned()),
            HistoryOp::Project(projection_options(4)),
            HistoryOp::SetReferenceContext(Some(json!({"cwd": "/a"}))),
            HistoryOp::Replace {
                keep: Selection::Picks(vec![1, 0, 1]),
                new: Some(user.to_owned()),
            },
            HistoryOp::RemoveFirst,
            HistoryOp::Compact(String::new()),
            HistoryOp::Record(user.to_owned()),
            HistoryOp::Rollback(usize::MAX),
        ];
        let history = apply_ops(&ops).expect("applies");
        history.assert_invariants();
        assert_eq!(recorded_items(&ops), [user, call, user]);
    }
}
