//! A count of the item conversions (JSON parses of an item, entry builds) the current thread
//! did, with the `testing` feature: tests check that a cost grows linearly with its input by
//! counting work, not by timing it. Without the feature, counting compiles to nothing.

#[cfg(feature = "testing")]
thread_local! {
    static CONVERSIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one item conversion.
#[inline]
pub(crate) fn count_conversion() {
    #[cfg(feature = "testing")]
    CONVERSIONS.with(|count| count.set(count.get() + 1));
}

/// How many item conversions (a JSON parse of an item, the build of an entry) this thread did
/// so far. Compare two readings around an operation.
#[cfg(feature = "testing")]
pub fn item_conversions() -> u64 {
    CONVERSIONS.with(std::cell::Cell::get)
}
