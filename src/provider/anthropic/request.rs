//! The Anthropic Messages request body: `model`, `max_tokens`, `system`, `messages`, `tools`,
//! `tool_choice`, `stream`.

use std::io::{self, Write};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::request::{ModelRequest, ToolChoice, ToolPlan};

use super::super::chat::LOCAL_SHELL_FUNCTION;
use super::super::target::{TargetProjectionError, TargetRepair};
use super::AnthropicMessages;
use super::render::CUSTOM_TOOL_INPUT_KEY;

/// The `max_tokens` sent when none is set: the Messages API requires the field and has no
/// default of its own.
pub const DEFAULT_ANTHROPIC_MAX_TOKENS: u32 = 8192;

/// Settings of an Anthropic request that the Responses request does not carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnthropicSettings {
    /// `max_tokens`: the most tokens the answer may have.
    pub max_tokens: u32,
}

impl Default for AnthropicSettings {
    fn default() -> Self {
        AnthropicSettings {
            max_tokens: DEFAULT_ANTHROPIC_MAX_TOKENS,
        }
    }
}

/// A tool spec, or a `tool_choice`, that has no Anthropic equivalent and was not sent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DroppedTool {
    /// The spec's position in the tool plan (`None` for the `tool_choice`).
    pub index: Option<usize>,
    /// Its `type` (or the tool choice's JSON).
    pub tool_type: String,
    /// Its name, when it has one.
    pub name: Option<String>,
}

/// A complete Anthropic Messages request: the projection and what surrounds it.
#[derive(Debug, Clone)]
pub struct AnthropicRequest {
    /// `model`.
    pub model: String,
    /// `max_tokens`.
    pub max_tokens: u32,
    /// The base instructions, first in `system`.
    pub base_instructions: Arc<str>,
    /// The projection: `messages` and the `system` texts hoisted from the history.
    pub messages: AnthropicMessages,
    /// What the projection repaired for Anthropic.
    pub repairs: Vec<TargetRepair>,
    /// `tools`: `{name, description?, input_schema}` each.
    pub tools: Vec<Value>,
    /// `tool_choice`; `None` leaves it out (no tools, or a choice without equivalent).
    pub tool_choice: Option<Value>,
    /// `stream`.
    pub stream: bool,
    /// The tool specs (and tool choice) that were not sent.
    pub dropped_tools: Vec<DroppedTool>,
}

impl AnthropicRequest {
    /// The `system` text blocks: the base instructions (when not empty), then the hoisted texts.
    pub fn system(&self) -> Vec<Value> {
        Some(&*self.base_instructions)
            .filter(|text| !text.trim().is_empty())
            .into_iter()
            .chain(self.messages.system_texts())
            .map(|text| json!({"type": "text", "text": text}))
            .collect()
    }

    /// Writes the request body: `model`, `max_tokens`, `system` (left out when empty),
    /// `messages`, `tools` and `tool_choice` (left out without tools), `stream`.
    ///
    /// # Errors
    ///
    /// Whatever the writer returns.
    pub fn write_body<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        let string = |text: &str| Value::String(text.to_owned()).to_string();
        write!(
            out,
            r#"{{"model":{},"max_tokens":{}"#,
            string(&self.model),
            self.max_tokens
        )?;
        let system = self.system();
        if !system.is_empty() {
            write!(out, r#","system":{}"#, Value::Array(system))?;
        }
        out.write_all(br#","messages":"#)?;
        self.messages.write_json(out)?;
        if !self.tools.is_empty() {
            write!(out, r#","tools":{}"#, Value::Array(self.tools.clone()))?;
            if let Some(choice) = &self.tool_choice {
                write!(out, r#","tool_choice":{choice}"#)?;
            }
        }
        write!(out, r#","stream":{}}}"#, self.stream)
    }

    /// The request body as bytes.
    pub fn body(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to a vector cannot fail.
        let _ = self.write_body(&mut out);
        out
    }
}

impl ModelRequest {
    /// This request for the Anthropic Messages API: its projection rendered for Anthropic
    /// (each entry's rendering cached and shared, as [`History::project_for`] does), the base
    /// instructions first in `system`, its tools converted, its `tool_choice` mapped,
    /// `max_tokens` from `settings`.
    ///
    /// [`History::project_for`]: crate::History::project_for
    ///
    /// # Errors
    ///
    /// [`TargetProjectionError::UnreadableItem`] when an item does not parse (only an entry of
    /// a crafted snapshot can).
    pub fn to_anthropic(
        &self,
        settings: AnthropicSettings,
    ) -> Result<AnthropicRequest, TargetProjectionError> {
        let (messages, repairs) = super::project(&self.prompt.input)?;
        let (tools, mut dropped_tools) = convert_tools(&self.prompt.tools);
        let tool_choice = if tools.is_empty() {
            None
        } else {
            let choice =
                map_tool_choice(&self.response.tool_choice, self.prompt.parallel_tool_calls);
            if choice.is_none() {
                dropped_tools.push(DroppedTool {
                    index: None,
                    tool_type: serde_json::to_string(&self.response.tool_choice)
                        .unwrap_or_default(),
                    name: None,
                });
            }
            choice
        };
        Ok(AnthropicRequest {
            model: self.settings.model.clone(),
            max_tokens: settings.max_tokens,
            base_instructions: Arc::clone(&self.prompt.base_instructions),
            messages,
            repairs,
            tools,
            tool_choice,
            stream: self.response.stream,
            dropped_tools,
        })
    }
}

/// `tool_choice`: `auto` → `{type: auto}`, `none` → `{type: none}`, `required` → `{type: any}`,
/// a named function or custom tool → `{type: tool, name}`; with parallel calls off,
/// `disable_parallel_tool_use: true` (except for `none`). `None` when there is no equivalent.
fn map_tool_choice(choice: &ToolChoice, parallel: bool) -> Option<Value> {
    let mut mapped = match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => return Some(json!({"type": "none"})),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Other(value) => {
            let kind = value.get("type").and_then(Value::as_str)?;
            let name = value.get("name").and_then(Value::as_str)?;
            match kind {
                "function" | "custom" => json!({"type": "tool", "name": name}),
                _ => return None,
            }
        }
    };
    if !parallel {
        mapped["disable_parallel_tool_use"] = Value::Bool(true);
    }
    Some(mapped)
}

/// An Anthropic tool `{name, description?, input_schema}`.
fn tool(name: &str, description: Option<&Value>, input_schema: Value) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), Value::String(name.to_owned()));
    if let Some(description) = description.filter(|d| d.as_str().is_some_and(|d| !d.is_empty())) {
        tool.insert("description".into(), description.clone());
    }
    tool.insert("input_schema".into(), input_schema);
    Value::Object(tool)
}

fn function_tool(spec: &Map<String, Value>, name: &str) -> Value {
    let schema = match spec.get("parameters") {
        Some(schema @ Value::Object(_)) => schema.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    tool(name, spec.get("description"), schema)
}

fn custom_tool(spec: &Map<String, Value>, name: &str) -> Value {
    tool(
        name,
        spec.get("description"),
        json!({
            "type": "object",
            "properties": {CUSTOM_TOOL_INPUT_KEY: {"type": "string"}},
            "required": [CUSTOM_TOOL_INPUT_KEY],
        }),
    )
}

/// The schema of a local shell call's `action`, as [`LOCAL_SHELL_FUNCTION`]'s input.
fn local_shell_tool() -> Value {
    tool(
        LOCAL_SHELL_FUNCTION,
        Some(&json!("Runs a command on the local machine.")),
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
        }),
    )
}

/// The plan's specs as Anthropic tools: function tools (members of a namespace too, by their
/// own name), custom tools with one string property, the local shell; the others are dropped.
fn convert_tools(plan: &ToolPlan) -> (Vec<Value>, Vec<DroppedTool>) {
    let mut tools = Vec::new();
    let mut dropped = Vec::new();
    let mut names = std::collections::HashSet::new();
    let mut add = |tools: &mut Vec<Value>,
                   dropped: &mut Vec<DroppedTool>,
                   index,
                   kind: &str,
                   name: &str,
                   tool| {
        if names.insert(name.to_owned()) {
            tools.push(tool);
        } else {
            // Anthropic wants unique names; a namespace member may repeat a top-level one.
            dropped.push(DroppedTool {
                index: Some(index),
                tool_type: kind.to_owned(),
                name: Some(name.to_owned()),
            });
        }
    };
    for (index, spec) in plan.specs().iter().enumerate() {
        let Some(spec) = spec.as_object() else {
            continue;
        };
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
        let name = spec.get("name").and_then(Value::as_str);
        match (kind, name) {
            ("function", Some(name)) => {
                add(
                    &mut tools,
                    &mut dropped,
                    index,
                    kind,
                    name,
                    function_tool(spec, name),
                );
            }
            ("custom", Some(name)) => {
                add(
                    &mut tools,
                    &mut dropped,
                    index,
                    kind,
                    name,
                    custom_tool(spec, name),
                );
            }
            ("local_shell", _) => add(
                &mut tools,
                &mut dropped,
                index,
                kind,
                LOCAL_SHELL_FUNCTION,
                local_shell_tool(),
            ),
            ("namespace", _) => {
                for member in spec
                    .get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let Some(member) = member.as_object() else {
                        continue;
                    };
                    let member_kind = member.get("type").and_then(Value::as_str).unwrap_or("");
                    match (member_kind, member.get("name").and_then(Value::as_str)) {
                        ("function", Some(name)) => add(
                            &mut tools,
                            &mut dropped,
                            index,
                            member_kind,
                            name,
                            function_tool(member, name),
                        ),
                        ("custom", Some(name)) => add(
                            &mut tools,
                            &mut dropped,
                            index,
                            member_kind,
                            name,
                            custom_tool(member, name),
                        ),
                        (_, name) => dropped.push(DroppedTool {
                            index: Some(index),
                            tool_type: member_kind.to_owned(),
                            name: name.map(str::to_owned),
                        }),
                    }
                }
            }
            _ => dropped.push(DroppedTool {
                index: Some(index),
                tool_type: kind.to_owned(),
                name: name.map(str::to_owned),
            }),
        }
    }
    (tools, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_choices_map_where_they_have_an_equivalent() {
        assert_eq!(
            map_tool_choice(&ToolChoice::Required, true),
            Some(json!({"type": "any"}))
        );
        assert_eq!(
            map_tool_choice(&ToolChoice::Auto, false),
            Some(json!({"type": "auto", "disable_parallel_tool_use": true}))
        );
        assert_eq!(
            map_tool_choice(
                &ToolChoice::Other(json!({"type": "function", "name": "shell"})),
                true
            ),
            Some(json!({"type": "tool", "name": "shell"}))
        );
        assert_eq!(
            map_tool_choice(&ToolChoice::Other(json!({"type": "web_search"})), true),
            None
        );
    }

    #[test]
    fn specs_convert_or_are_dropped() {
        let plan = ToolPlan::new(vec![
            json!({"type": "function", "name": "shell", "description": "Run", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}),
            json!({"type": "custom", "name": "apply_patch", "description": "Patch", "format": {"type": "grammar"}}),
            json!({"type": "web_search"}),
        ])
        .unwrap();
        let (tools, dropped) = convert_tools(&plan);
        assert_eq!(
            tools,
            vec![
                json!({"name": "shell", "description": "Run", "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}),
                json!({"name": "apply_patch", "description": "Patch", "input_schema": {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}}),
            ]
        );
        assert_eq!(
            dropped,
            vec![DroppedTool {
                index: Some(2),
                tool_type: "web_search".into(),
                name: None
            }]
        );
    }
}
