//! [`ArbitraryHistory`]: a history description for fuzzers (`arbitrary::Arbitrary`).

use arbitrary::{Arbitrary, Unstructured};

use super::ops::{ApplyError, HistoryOp, apply_ops, recorded_items};
use super::steps::{Step, build_ops};
use crate::history::History;

/// The most steps an [`ArbitraryHistory`] has: a fuzzer's input of any length describes a
/// history of bounded size, so that one run stays fast.
pub const MAX_ARBITRARY_STEPS: usize = 64;

/// A fuzz-friendly description of a history: at most [`MAX_ARBITRARY_STEPS`] [`Step`]s, each a
/// few bytes of small enums. Call ids are not free strings: a step's [`Fault`](super::Fault)
/// reuses an earlier id, empties it or answers with another family, so a fuzzer reaches
/// duplicate and colliding ids within a few bytes.
///
/// # Examples
///
/// ```
/// use agent_history::testing::ArbitraryHistory;
/// use arbitrary::{Arbitrary, Unstructured};
///
/// let bytes = [7u8; 64];
/// let description = ArbitraryHistory::arbitrary(&mut Unstructured::new(&bytes))?;
/// assert!(description.steps().len() <= agent_history::testing::MAX_ARBITRARY_STEPS);
/// let history = description.to_history().expect("generated items are valid");
/// history.assert_invariants();
/// # Ok::<(), arbitrary::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArbitraryHistory {
    steps: Vec<Step>,
}

impl<'a> Arbitrary<'a> for ArbitraryHistory {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut steps = Vec::new();
        while steps.len() < MAX_ARBITRARY_STEPS && !u.is_empty() {
            steps.push(Step::arbitrary(u)?);
        }
        Ok(ArbitraryHistory { steps })
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (0, None)
    }
}

impl ArbitraryHistory {
    /// A description made of these steps (the first [`MAX_ARBITRARY_STEPS`]).
    pub fn from_steps(mut steps: Vec<Step>) -> ArbitraryHistory {
        steps.truncate(MAX_ARBITRARY_STEPS);
        ArbitraryHistory { steps }
    }

    /// The steps.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The operations (record, compact, roll back) the steps stand for.
    pub fn operations(&self) -> Vec<HistoryOp> {
        build_ops(&self.steps)
    }

    /// The items the operations record, in order (compactions and rollbacks left out).
    pub fn items(&self) -> Vec<String> {
        recorded_items(&self.operations())
    }

    /// A new history with the operations applied.
    ///
    /// # Errors
    ///
    /// [`ApplyError`] naming the operation that failed (none should: generated items are
    /// valid, and a fuzz target treats an error as a finding).
    pub fn to_history(&self) -> Result<History, ApplyError> {
        apply_ops(&self.operations())
    }
}
