//! [`ProjectionError`]: a projection could not be made.

use crate::item::ItemError;

use super::report::Violation;

/// A projection could not be made; nothing was projected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectionError {
    /// A strict projection found every violation that Codex treats as a bug (`error_or_panic`),
    /// listed in history order.
    #[error("{} protocol violation(s) in history: {}", .0.len(), list(.0))]
    Violations(Vec<Violation>),
    /// An item whose media must be stripped does not parse. Entries built by this library always
    /// parse; this is an entry of a snapshot crafted to hold text that its writer never parsed
    /// (see [`Entry::to_item`](crate::item::Entry::to_item)). The item is not sent unstripped.
    #[error("item {position} cannot be read to strip its media")]
    UnreadableItem {
        /// Its position in the live history.
        position: usize,
        /// Why it cannot be read.
        #[source]
        source: ItemError,
    },
}

fn list(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
