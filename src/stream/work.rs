//! A count of the event bytes the accumulators parsed on the current thread, with the `testing`
//! feature: tests check that each event is parsed once and earlier events never again. Without
//! the feature, counting compiles to nothing.

#[cfg(feature = "testing")]
thread_local! {
    static PARSED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `bytes` of JSON parsed.
#[inline]
pub(crate) fn count_parsed(bytes: usize) {
    #[cfg(feature = "testing")]
    PARSED.with(|count| count.set(count.get() + bytes as u64));
    #[cfg(not(feature = "testing"))]
    let _ = bytes;
}

/// How many bytes of event JSON the stream accumulators parsed on this thread so far (an
/// event's data, and an `added` item's text read for its type and id). Compare two readings
/// around an operation.
#[cfg(feature = "testing")]
pub fn stream_bytes_parsed() -> u64 {
    PARSED.with(std::cell::Cell::get)
}
