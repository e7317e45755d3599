//! Counts of work the current thread did, with the `testing` feature: the item conversions
//! (JSON parses of an item, entry builds) and the entry reads (an entry's header or text read
//! through its accessors). Tests check that a cost grows as documented by counting work, not by
//! timing it. Without the feature, counting compiles to nothing.

#[cfg(feature = "testing")]
thread_local! {
    static CONVERSIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static TURN_STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `steps` user-turn boundaries visited to count a history's turns (see [`turn_steps`]).
#[inline]
pub(crate) fn count_turn_steps(steps: usize) {
    #[cfg(feature = "testing")]
    TURN_STEPS.with(|count| count.set(count.get() + steps as u64));
    #[cfg(not(feature = "testing"))]
    let _ = steps;
}

/// How many user-turn boundaries this thread visited so far to count turns (the turns a
/// rollback can undo, across compactions). Compare two readings around an operation.
#[cfg(feature = "testing")]
pub fn turn_steps() -> u64 {
    TURN_STEPS.with(std::cell::Cell::get)
}

/// Counts one item conversion.
#[inline]
pub(crate) fn count_conversion() {
    #[cfg(feature = "testing")]
    CONVERSIONS.with(|count| count.set(count.get() + 1));
}

/// Counts one read of an entry's header or text (see [`entry_reads`]).
#[inline]
pub(crate) fn count_read() {
    #[cfg(feature = "testing")]
    READS.with(|count| count.set(count.get() + 1));
}

/// How many item conversions (a JSON parse of an item, the build of an entry) this thread did
/// so far. Compare two readings around an operation.
#[cfg(feature = "testing")]
pub fn item_conversions() -> u64 {
    CONVERSIONS.with(std::cell::Cell::get)
}

/// How many times this thread read an entry's header or text through its accessors so far
/// (`Entry::kind`, `role`, `call_id`, `item_id`, `flags`, `tokens`, `byte_len`, `json` and the
/// crate's own payload and body accessors). Not counted: the caches an entry carries (its
/// per-target renderings, its stripped media forms) and `is_mapped`; so an operation that looks
/// at every entry's header or text counts at least one read per entry, one that only visits
/// those caches does not: tests compare two readings around an operation, at two history
/// sizes, to show that it touches only the entries it names (`tests/complexity.rs`).
#[cfg(feature = "testing")]
pub fn entry_reads() -> u64 {
    READS.with(std::cell::Cell::get)
}
