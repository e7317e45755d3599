//! Per-thread counts of the assembly's work (the `testing` feature; nothing otherwise), with
//! which tests check that a cost stays O(changes) by counting work rather than timing it.

/// For each counter: the cell, the public reader (`testing` feature) and the crate's counter.
macro_rules! counters {
    ($($(#[$doc:meta])* $cell:ident: $read:ident, $count:ident;)*) => {
        #[cfg(feature = "testing")]
        thread_local! {
            $(static $cell: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };)*
        }
        $(
            $(#[$doc])*
            #[cfg(feature = "testing")]
            pub fn $read() -> u64 {
                $cell.with(std::cell::Cell::get)
            }

            pub(crate) fn $count() {
                #[cfg(feature = "testing")]
                $cell.with(|count| count.set(count.get() + 1));
            }
        )*
    };
}

counters! {
    /// How many slots of a Responses projection this thread's target assemblies visited: a
    /// projection for Chat Completions or Anthropic Messages assembles only what changed since
    /// a projection of another version of the history.
    SLOTS: target_slots_assembled, slot_assembled;
    /// How many items this thread converted for a target other than Responses: each entry's
    /// conversion is computed once and shared.
    RENDERINGS: target_renderings, rendered;
    /// How many names this thread's target assemblies tried while giving calls new ids: one per
    /// renamed call unless a name is taken.
    NAMES: target_names_tried, name_tried;
    /// How many target projections on this thread resumed the kept assembly of a longer version
    /// (a reader behind a writer).
    OLDER: target_older_versions_resumed, older_version_resumed;
    /// How many texts this thread's target assemblies made beside the cached renderings (mapped
    /// ids, synthetic outputs, trimmed texts): writing a projection makes none.
    TEXTS: target_texts_made, text_made;
}
