//! [`Error`]: any error of this crate.
//!
//! Each layer defines its errors beside its operations ([`ItemError`] in the item layer,
//! [`WorldStateError`] in world,
//! [`ProjectionError`] in projection, [`RequestError`], [`ToolPlanError`] and [`ToolsError`] in
//! request, [`SnapshotError`] in snapshot, [`RolloutError`] and [`RolloutWriteError`] in
//! rollout); this module only aggregates them, for callers — and the session layer — that do
//! several kinds of work.

use crate::item::ItemError;
use crate::projection::ProjectionError;
use crate::request::{RequestError, ToolPlanError, ToolsError};
use crate::rollout::{RolloutError, RolloutWriteError};
use crate::snapshot::SnapshotError;
use crate::stream::StreamError;
use crate::world::WorldStateError;

/// Any error of this crate. Its message and source are those of the error it holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// See [`ItemError`].
    #[error(transparent)]
    Item(#[from] ItemError),
    /// See [`WorldStateError`].
    #[error(transparent)]
    WorldState(#[from] WorldStateError),
    /// See [`ProjectionError`].
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    /// See [`RequestError`].
    #[error(transparent)]
    Request(#[from] RequestError),
    /// See [`ToolPlanError`].
    #[error(transparent)]
    ToolPlan(#[from] ToolPlanError),
    /// See [`ToolsError`].
    #[error(transparent)]
    Tools(#[from] ToolsError),
    /// See [`StreamError`].
    #[error(transparent)]
    Stream(#[from] StreamError),
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

#[cfg(test)]
mod tests {
    use std::error::Error as _;
    use std::path::PathBuf;

    use super::*;
    use crate::rollout::WriteStep;
    use crate::snapshot::SnapshotStep;

    fn io() -> std::io::Error {
        std::io::Error::other("the disk is on fire")
    }

    fn json() -> serde_json::Error {
        serde_json::from_str::<serde_json::Value>("{").expect_err("invalid")
    }

    fn item() -> ItemError {
        ItemError::InvalidJson {
            item_type: Some("message".into()),
            source: json(),
        }
    }

    /// Every error that has a source: its message says what failed, and leaves the cause to the
    /// source, so that printing the chain (`{:#}`) shows each once.
    #[test]
    fn no_message_repeats_its_source() {
        let path = PathBuf::from("x.jsonl");
        let errors: Vec<Error> = vec![
            item().into(),
            ItemError::Serialize(json()).into(),
            ProjectionError::UnreadableItem {
                position: 3,
                source: item(),
            }
            .into(),
            RequestError::Io(io()).into(),
            RequestError::Serialize {
                field: "tools",
                source: json(),
            }
            .into(),
            ToolsError::Io {
                path: path.clone(),
                source: io(),
            }
            .into(),
            ToolsError::Json {
                path: path.clone(),
                source: json(),
            }
            .into(),
            ToolsError::Plan {
                path: path.clone(),
                source: ToolPlanError::Serialize { source: json() },
            }
            .into(),
            ToolPlanError::Serialize { source: json() }.into(),
            StreamError::Malformed {
                event: 4,
                source: json(),
            }
            .into(),
            StreamError::Item {
                event: 9,
                output_index: 1,
                source: item(),
            }
            .into(),
            SnapshotError::Io {
                path: path.clone(),
                step: SnapshotStep::Map,
                source: io(),
            }
            .into(),
            RolloutError::Io {
                path: path.clone(),
                source: io(),
            }
            .into(),
            RolloutError::Replay {
                path: path.clone(),
                line: 7,
                source: item(),
            }
            .into(),
            RolloutWriteError {
                path: path.clone(),
                step: WriteStep::Sync,
                source: io(),
            }
            .into(),
            RolloutWriteError {
                path: path.clone(),
                step: WriteStep::Locked,
                source: std::io::ErrorKind::WouldBlock.into(),
            }
            .into(),
            RolloutWriteError {
                path,
                step: WriteStep::SyncDirectory,
                source: io(),
            }
            .into(),
        ];
        for error in errors {
            let source = error.source().expect("every one of these has a source");
            let message = error.to_string();
            assert!(
                !message.contains(&source.to_string()),
                "{message:?} repeats its source {source}"
            );
            assert!(!message.is_empty());
        }
    }
}
