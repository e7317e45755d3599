//! Per-thread counts of the assembly's work (the `testing` feature; nothing otherwise), with
//! which tests check that a cost stays O(changes) by counting work rather than timing it.

#[cfg(feature = "testing")]
thread_local! {
    static SLOTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static RENDERINGS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static NAMES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static OLDER: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static TEXTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(feature = "testing")]
fn bump(counter: &'static std::thread::LocalKey<std::cell::Cell<u64>>) {
    counter.with(|count| count.set(count.get() + 1));
}

/// How many slots of a Responses projection this thread's target assemblies visited: a
/// projection for Chat Completions or Anthropic Messages assembles only what changed since a
/// projection of another version of the history.
#[cfg(feature = "testing")]
pub fn target_slots_assembled() -> u64 {
    SLOTS.with(std::cell::Cell::get)
}

/// How many items this thread converted for a target other than Responses: each entry's
/// conversion is computed once and shared.
#[cfg(feature = "testing")]
pub fn target_renderings() -> u64 {
    RENDERINGS.with(std::cell::Cell::get)
}

/// How many names this thread's target assemblies tried while giving calls new ids: one per
/// renamed call unless a name is taken, however many calls reuse an id.
#[cfg(feature = "testing")]
pub fn target_names_tried() -> u64 {
    NAMES.with(std::cell::Cell::get)
}

/// How many target projections on this thread resumed the kept assembly of a longer version
/// (a reader behind a writer).
#[cfg(feature = "testing")]
pub fn target_older_versions_resumed() -> u64 {
    OLDER.with(std::cell::Cell::get)
}

/// How many texts this thread's target assemblies made (mapped ids, synthetic outputs, trimmed
/// texts) beside the cached renderings: writing a projection makes none.
#[cfg(feature = "testing")]
pub fn target_texts_made() -> u64 {
    TEXTS.with(std::cell::Cell::get)
}

/// Counts one slot visited.
pub(crate) fn slot_assembled() {
    #[cfg(feature = "testing")]
    bump(&SLOTS);
}

/// Counts one item converted.
pub(crate) fn rendered() {
    #[cfg(feature = "testing")]
    bump(&RENDERINGS);
}

/// Counts one name tried.
pub(crate) fn name_tried() {
    #[cfg(feature = "testing")]
    bump(&NAMES);
}

/// Counts one projection of an older version resumed from a longer one's assembly.
pub(crate) fn older_version_resumed() {
    #[cfg(feature = "testing")]
    bump(&OLDER);
}

/// Counts one text made by an assembly.
pub(crate) fn text_made() {
    #[cfg(feature = "testing")]
    bump(&TEXTS);
}
