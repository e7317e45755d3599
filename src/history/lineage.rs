//! [`Lineage`]: which versions of a history hold the same items at the same positions, so that
//! a later layer can reuse work done on an earlier version (the per-target assembly of the
//! provider layer does) after checking in O(1) that the earlier version is a prefix.
//!
//! A lineage starts with some items (a new history, a replace, a rollback, a removal: anything
//! but an append). Every history value holding the same lineage (clones share it, through the
//! rarely changing fields) descends from that state by appends only, and the lineage lets one
//! append happen at each length: appending to a history of length `n` takes the lineage's tip
//! from `n` to `n + 1` when it is `n`, else (another clone appended at `n` already, or this one
//! is an older version) the history starts a lineage of its own. So two histories of one lineage
//! hold the same entries at every position both have: whatever was computed from a version of
//! length `m` holds for the first `m` positions of every version of the lineage at least that
//! long.
//!
//! A lineage also holds memo cells for those later layers (one per user, typed by them), shared
//! by every version of the lineage. A history that leaves the lineage leaves its memos behind.

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What a memo cell holds: anything a later layer stores, typed by it.
pub(crate) type Memo = Arc<dyn Any + Send + Sync>;

/// How many memo cells a lineage has: one per target the provider layer assembles (cell 0: the
/// Chat Completions assemblies; cell 1: the Anthropic Messages assemblies, for option sets and
/// versions, with their cuts).
pub(crate) const MEMO_CELLS: usize = 2;

/// The list of `T` a memo cell holds, the way the provider layer keeps a few assemblies per
/// lineage: the cell holds a `Vec<Arc<T>>` (store one with `Some(Arc::new(list))`); empty when
/// the cell holds nothing or something else.
pub(crate) fn memo_list<T: Send + Sync + 'static>(stored: &Option<Memo>) -> Vec<Arc<T>> {
    stored
        .as_ref()
        .and_then(|memo| memo.downcast_ref::<Vec<Arc<T>>>())
        .cloned()
        .unwrap_or_default()
}

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct Lineage {
    /// The length of the longest history of this lineage: the only length an append may extend.
    tip: AtomicUsize,
    /// The memo cells.
    memos: [Mutex<Option<Memo>>; MEMO_CELLS],
}

impl Lineage {
    /// A lineage starting with `len` items.
    pub(crate) fn starting_at(len: usize) -> Arc<Lineage> {
        Arc::new(Lineage {
            tip: AtomicUsize::new(len),
            memos: Default::default(),
        })
    }

    /// Claims the append at length `len`: whether the history of length `len` appending stays in
    /// this lineage (the tip was `len` and is now `len + 1`). Time: O(1).
    pub(crate) fn extend(&self, len: usize) -> bool {
        self.tip
            .compare_exchange(len, len + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Memo cell `cell` (`None` past [`MEMO_CELLS`]).
    pub(crate) fn memo(&self, cell: usize) -> Option<&Mutex<Option<Memo>>> {
        self.memos.get(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_append_per_length() {
        let lineage = Lineage::starting_at(3);
        assert!(!lineage.extend(2), "an older version forks");
        assert!(lineage.extend(3));
        assert!(
            !lineage.extend(3),
            "a second append at the same length forks"
        );
        assert!(lineage.extend(4));
    }
}
