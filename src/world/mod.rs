//! The world-state layer: what an agent shows the model about its runtime (instructions,
//! environment, apps, sections an application adds), kept as a snapshot per section so that a
//! step renders only what changed since the last one (`docs/world-state.md`).
//!
//! This module holds the snapshot map and its RFC 7386 merge patches ([`WorldSnapshot`]): the
//! baseline a [`History`](crate::History) keeps, and the `state` of a rollout's `world_state`
//! lines.

mod error;
mod snapshot;

pub use error::WorldStateError;
pub use snapshot::{WorldSnapshot, WorldStateChange, merge_patch, remove_null_fields};
