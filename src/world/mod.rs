//! The world-state layer: what an agent shows the model about its runtime (instructions,
//! environment, apps, sections an application adds), kept as a snapshot per section so that a
//! step renders only what changed since the last one (`docs/world-state.md`).
//!
//! * `snapshot.rs`: the snapshot map and its RFC 7386 merge patches ([`WorldSnapshot`]), the
//!   baseline a [`History`](crate::History) keeps and the `state` of a rollout's `world_state`
//!   lines ([`WorldStateChange`]);
//! * `section.rs`: the [`Section`] trait applications implement, and [`JsonSection`];
//! * `state.rs`: [`WorldState`], its sections in order, rendered in full or against a stored
//!   snapshot and a history ([`RenderedWorld`]);
//! * `fragment.rs`: [`ContextualFragment`], rendered and recognised by its markers;
//! * `role.rs`: [`FragmentRole`], the role of the message a fragment goes in;
//! * `update.rs`: [`ContextUpdate`] and how updates become messages ([`merge_updates`]);
//! * `hash.rs`: [`WorldStateHash`].

mod error;
mod fragment;
mod hash;
mod role;
mod section;
mod snapshot;
mod state;
mod update;

pub use error::WorldStateError;
pub use fragment::{ContextualFragment, FragmentMarkers, FragmentMatcher};
pub use hash::WorldStateHash;
pub use role::FragmentRole;
pub use section::{JsonSection, Previous, Section};
pub use snapshot::{WorldSnapshot, WorldStateChange, merge_patch, remove_null_fields};
pub use state::{RenderedWorld, WorldState};
pub use update::{ContextUpdate, Placement, UpdateContent, merge_updates, split_prefix_updates};
