//! What the targets' tool conversions share: the function a local shell call is sent as, and the
//! specs a conversion leaves out.

use serde::Serialize;
use serde_json::{Map, Value, json};

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

/// The kinds of Responses tool specs a target converts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolKind {
    /// A `function` tool.
    Function,
    /// A `custom` tool (free-form input).
    Custom,
    /// The `local_shell` tool, named [`LOCAL_SHELL_FUNCTION`].
    LocalShell,
}

/// Converts `specs` for a target: `convert` makes the target's tool of a function, custom or
/// local shell spec (given its kind, name and spec), or refuses it (`None`); with `namespaces`,
/// the function and custom members of a `namespace` are converted by their own names. Every
/// spec not converted is listed (a spec that is not an object with an empty type).
pub(crate) fn convert_tools(
    specs: &[Value],
    namespaces: bool,
    mut convert: impl FnMut(ToolKind, &str, &Map<String, Value>) -> Option<Value>,
) -> (Vec<Value>, Vec<DroppedTool>) {
    let (mut tools, mut dropped) = (Vec::new(), Vec::new());
    let mut one = |index, spec: &Map<String, Value>, member: bool| {
        let tool_type = spec.get("type").and_then(Value::as_str).unwrap_or("");
        let mut name = spec.get("name").and_then(Value::as_str);
        let converted = match (tool_type, name) {
            ("function", Some(name)) => convert(ToolKind::Function, name, spec),
            ("custom", Some(name)) => convert(ToolKind::Custom, name, spec),
            ("local_shell", _) if !member => {
                name = Some(LOCAL_SHELL_FUNCTION);
                convert(ToolKind::LocalShell, LOCAL_SHELL_FUNCTION, spec)
            }
            _ => None,
        };
        match converted {
            Some(tool) => tools.push(tool),
            None => dropped.push(DroppedTool {
                index,
                tool_type: tool_type.to_owned(),
                name: name.map(str::to_owned),
            }),
        }
    };
    for (index, spec) in specs.iter().enumerate() {
        match spec.as_object() {
            None => one(index, &Map::new(), false),
            Some(spec) if namespaces && spec.get("type") == Some(&json!("namespace")) => {
                let members = spec.get("tools").and_then(Value::as_array).into_iter();
                for member in members.flatten().filter_map(Value::as_object) {
                    one(index, member, true);
                }
            }
            Some(spec) => one(index, spec, false),
        }
    }
    (tools, dropped)
}
