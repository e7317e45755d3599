//! The options of a projection for a target.

use serde::Serialize;

use crate::projection::ProjectionOptions;

use super::Target;

/// Whether a Chat Completions projection keeps `developer` messages as `developer` or sends
/// them as `system`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeveloperRole {
    /// `developer` messages are sent as `system` messages (the default: older OpenAI models and
    /// many compatible servers reject the `developer` role; every server takes `system`).
    #[default]
    System,
    /// `developer` messages keep their role (OpenAI's newer models prefer it).
    Developer,
}

/// Options of [`History::project_for`](crate::History::project_for): the target, the Responses
/// projection's options (the repairs every target starts from) and the options particular to
/// one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TargetOptions {
    /// The API the projection is for.
    pub target: Target,
    /// Modalities, repair mode and unknown items, as for [`History::project`](crate::History::project).
    pub projection: ProjectionOptions,
    /// Chat Completions: how `developer` messages are sent (default: as `system`).
    pub developer_role: DeveloperRole,
}

impl TargetOptions {
    /// Options for `target` with the default projection options.
    pub fn new(target: Target) -> Self {
        TargetOptions {
            target,
            ..TargetOptions::default()
        }
    }

    /// The same options with these projection options.
    pub fn with_projection(self, projection: ProjectionOptions) -> Self {
        TargetOptions { projection, ..self }
    }
}
