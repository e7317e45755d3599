//! [`Error`]: any error of this crate.
//!
//! Each layer defines its errors beside its operations ([`ItemError`] in the item layer,
//! [`ProjectionError`] in projection, [`RequestError`] in request, [`SnapshotError`] in snapshot,
//! [`RolloutError`] and [`RolloutWriteError`] in rollout); this module only aggregates them, for
//! callers — and the session layer — that do several kinds of work.

use crate::item::ItemError;
use crate::projection::ProjectionError;
use crate::request::RequestError;
use crate::rollout::{RolloutError, RolloutWriteError};
use crate::snapshot::SnapshotError;

/// Any error of this crate. Its message and source are those of the error it holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// See [`ItemError`].
    #[error(transparent)]
    Item(#[from] ItemError),
    /// See [`ProjectionError`].
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    /// See [`RequestError`].
    #[error(transparent)]
    Request(#[from] RequestError),
    /// See [`SnapshotError`].
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// See [`RolloutError`].
    #[error(transparent)]
    Rollout(#[from] RolloutError),
    /// See [`RolloutWriteError`].
    #[error(transparent)]
    RolloutWrite(#[from] RolloutWriteError),
}
