//! What the targets' tool conversions share: the function a local shell call is sent as, and the
//! specs a conversion leaves out.

use serde::Serialize;
use serde_json::{Value, json};

/// The name a `local_shell_call` is sent under as a function call, and the tool a `local_shell`
/// spec becomes.
pub const LOCAL_SHELL_FUNCTION: &str = "local_shell";

/// The description of the [`LOCAL_SHELL_FUNCTION`] tool.
pub(crate) const LOCAL_SHELL_DESCRIPTION: &str = "Runs a command on the local machine.";

/// The JSON schema of a local shell call's `action`, as the [`LOCAL_SHELL_FUNCTION`] tool takes
/// it (every target sends the action as the call's arguments).
pub(crate) fn local_shell_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["exec"]},
            "command": {"type": "array", "items": {"type": "string"}},
            "timeout_ms": {"type": ["integer", "null"]},
            "working_directory": {"type": ["string", "null"]},
            "env": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
            "user": {"type": ["string", "null"]},
        },
        "required": ["type", "command"],
    })
}

/// A Responses tool spec that a target has no equivalent for (or refuses) and that was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedTool {
    /// Its position in the specs.
    pub index: usize,
    /// Its `type`.
    #[serde(rename = "type")]
    pub tool_type: String,
    /// Its `name`, when it has one.
    pub name: Option<String>,
}
