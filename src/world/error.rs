//! [`WorldStateError`]: a world-state value or patch was not of the shape it must have.

/// A world-state snapshot, section or patch was not of the shape it must have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorldStateError {
    /// A snapshot (the `state` of a `full` world-state line, a stored baseline) is not a JSON
    /// object of sections.
    #[error("a world-state snapshot must be a JSON object of sections, not {found}")]
    SnapshotNotAnObject {
        /// The kind of JSON value found (`an array`, `null`, …).
        found: &'static str,
    },
    /// A section's snapshot is `null`, which a merge patch could not tell from a deletion.
    #[error("the snapshot of world-state section `{section}` is null")]
    NullSection {
        /// The section's id.
        section: String,
    },
    /// A merge patch of a world-state snapshot is not a JSON object.
    #[error("a world-state merge patch must be a JSON object, not {found}")]
    PatchNotAnObject {
        /// The kind of JSON value found.
        found: &'static str,
    },
    /// A merge patch arrived when there was no baseline to apply it to.
    #[error("a world-state patch without a full snapshot before it")]
    PatchWithoutBaseline,
    /// Two sections of one world state have the same id.
    #[error("duplicate world-state section id `{id}`")]
    DuplicateSection {
        /// The repeated id.
        id: String,
    },
    /// An item of the history that world-state rendering had to read (a `user` or `developer`
    /// message, searched for a section's fragment) is not of a message's shape.
    #[error("history item {position} is not a readable message")]
    UnreadableItem {
        /// Its position in the history.
        position: usize,
    },
}
