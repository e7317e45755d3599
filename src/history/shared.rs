//! One writer, many readers: a history published through an atomically swapped `Arc`.
//!
//! A [`History`] is a persistent value, so sharing it between threads needs no lock around the
//! history itself, only an atomic pointer to the latest complete version. [`HistoryPublisher`]
//! (one, owned by the writer) swaps a new [`Published`] version in; [`SharedHistory`] handles
//! (any number, on any thread) load the current one. Both sides are lock-free (`arc-swap`): a
//! reader never waits for the writer, the writer never waits for a reader, and a version a reader
//! holds stays valid — and unchanged — for as long as it holds it.

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::History;

/// One published version of a shared history: the history as the writer published it, and the
/// sequence number of that publication.
///
/// Sequence numbers identify publications: the first version (given to
/// [`HistoryPublisher::new`]) is 0 and each [`HistoryPublisher::publish`] adds one, so two loads
/// with the same `seq` return the same version, and the `seq`s one reader loads never decrease.
/// ([`History::version`] moves only on replacements, so it does not identify a state.)
#[derive(Debug)]
pub struct Published {
    seq: u64,
    history: History,
}

impl Published {
    /// The sequence number of this publication: 0 for the first, one more for each later one.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The history as published. Clone it (O(1)) to keep or edit it past this version.
    pub fn history(&self) -> &History {
        &self.history
    }
}

/// The writer's end of a shared history: publishes complete versions for [`SharedHistory`]
/// readers.
///
/// There is one publisher per shared history (it is not `Clone`, and [`publish`] takes
/// `&mut self`), so the sequence numbers it hands out are ordered by construction. The writer
/// keeps editing its own [`History`] and publishes a clone (O(1)) whenever it has a state readers
/// may see: a reader sees only what was published, never a half-applied edit. Dropping the
/// publisher leaves readers with the last version published.
///
/// [`publish`]: HistoryPublisher::publish
///
/// # Examples
///
/// ```
/// use std::thread;
/// use agent_history::{History, HistoryPublisher, ProjectionOptions};
///
/// let mut history = History::new();
/// let mut publisher = HistoryPublisher::new(history.clone());
/// let reader = publisher.share();
///
/// let ui = thread::spawn(move || {
///     // Whatever version is current when it loads: complete, and unchanged while it is held.
///     let published = reader.load();
///     let request_input = published.history().project(&ProjectionOptions::default())?;
///     Ok::<_, agent_history::Error>((published.seq(), published.history().len()))
/// });
///
/// history.record_json(r#"{"type":"function_call","name":"ls","arguments":"{}","call_id":"c1"}"#)?;
/// history.record_json(r#"{"type":"function_call_output","call_id":"c1","output":"a b"}"#)?;
/// let seq = publisher.publish(history.clone()); // call and output together
///
/// // The reader saw the history before both items or after both, never the call alone.
/// let (seen, len) = ui.join().expect("the reader does not panic")?;
/// assert!((seen, len) == (0, 0) || (seen, len) == (seq, 2));
/// # Ok::<(), agent_history::Error>(())
/// ```
pub struct HistoryPublisher {
    current: Arc<ArcSwap<Published>>,
    seq: u64,
}

impl HistoryPublisher {
    /// A shared history whose first version, sequence number 0, is `history`.
    pub fn new(history: History) -> HistoryPublisher {
        let first = Published { seq: 0, history };
        HistoryPublisher {
            current: Arc::new(ArcSwap::from_pointee(first)),
            seq: 0,
        }
    }

    /// Publishes `history` as the current version and returns its sequence number. Readers'
    /// next loads return it; versions they loaded before stay as they were.
    ///
    /// Time: O(1) plus one allocation; lock-free, whatever the readers do. The previous version
    /// is freed here unless a reader still holds it (then the last reader to let go frees it).
    pub fn publish(&mut self, history: History) -> u64 {
        // 2^64 publications do not happen; saturating keeps the order even if they did.
        self.seq = self.seq.saturating_add(1);
        self.current.store(Arc::new(Published {
            seq: self.seq,
            history,
        }));
        self.seq
    }

    /// The sequence number of the last version published.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// A reader's handle on this shared history (clone it for more readers).
    pub fn share(&self) -> SharedHistory {
        SharedHistory {
            current: Arc::clone(&self.current),
        }
    }
}

impl fmt::Debug for HistoryPublisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HistoryPublisher")
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

/// A reader's handle on a shared history: cheap to clone, `Send + Sync`, and every
/// [`load`](SharedHistory::load) returns the latest version the writer's [`HistoryPublisher`]
/// published.
#[derive(Clone)]
pub struct SharedHistory {
    current: Arc<ArcSwap<Published>>,
}

impl SharedHistory {
    /// The current version: a consistent, complete history that no later publication changes
    /// (keep the `Arc` as long as needed; load again for a newer version). Without a publication
    /// in between, two loads return the same `Arc`.
    ///
    /// Time: O(1): lock-free (and almost always wait-free) even while the writer publishes; no
    /// history is copied.
    pub fn load(&self) -> Arc<Published> {
        self.current.load_full()
    }
}

impl fmt::Debug for SharedHistory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let current = self.current.load();
        f.debug_struct("SharedHistory")
            .field("seq", &current.seq)
            .field("len", &current.history.len())
            .finish()
    }
}

// The handles exist to cross threads: a change that makes a history `!Send` or `!Sync` must
// not compile.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<SharedHistory>();
    send_sync::<HistoryPublisher>();
    send_sync::<Published>();
};
