//! The Anthropic Messages request body: `model`, `max_tokens`, `system`, `messages`, `tools`,
//! `tool_choice`, `stream`.

use std::io::Write;

use serde_json::{Map, Value, json};

use crate::request::{ModelRequest, RequestError, ToolChoice};

use super::super::assembly::{Format, Messages};
use super::super::tools::{
    DroppedTool, LOCAL_SHELL_DESCRIPTION, ToolKind, convert_tools, local_shell_schema,
};
use super::render::AnthropicItem;
use super::render::CUSTOM_TOOL_INPUT_KEY;

/// The `max_tokens` sent when none is set: the Messages API requires the field and has no
/// default of its own.
pub const DEFAULT_ANTHROPIC_MAX_TOKENS: u32 = 8192;

/// Responses tool specs converted for Anthropic, and those left out.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnthropicTools {
    /// The Anthropic tools: `{name, description?, input_schema}`.
    pub tools: Vec<Value>,
    /// The specs with no equivalent (web search, tool search, image generation, file search,
    /// MCP, …) or whose name another tool already has.
    pub dropped: Vec<DroppedTool>,
}

/// Writes the body of `request` with `messages`, and `tools` (the converted tools' JSON array,
/// empty when none is left): `model`, `max_tokens` (the request's maximum output tokens, else
/// [`DEFAULT_ANTHROPIC_MAX_TOKENS`]), `system` (the base instructions, then the texts hoisted
/// from the history; left out when there is none), `messages`, `tools` with `tool_choice` (when
/// the choice has an equivalent), `stream`.
///
/// # Errors
///
/// [`RequestError::Io`] from the writer.
pub(super) fn write_body<F: Format<Item = AnthropicItem>, W: Write + ?Sized>(
    request: &ModelRequest,
    messages: &Messages<F>,
    tools: &str,
    out: &mut W,
) -> Result<(), RequestError> {
    let settings = &request.settings;
    write!(
        out,
        r#"{{"model":{},"max_tokens":{}"#,
        Value::from(&*settings.model),
        settings
            .max_output_tokens
            .unwrap_or(DEFAULT_ANTHROPIC_MAX_TOKENS)
    )?;
    let instructions = &*request.prompt.base_instructions;
    let system: Vec<Value> = Some(instructions)
        .filter(|text| !text.trim().is_empty())
        .into_iter()
        .chain(super::system_texts(messages))
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    if !system.is_empty() {
        write!(out, r#","system":{}"#, Value::Array(system))?;
    }
    out.write_all(br#","messages":"#)?;
    messages.write_json(out)?;
    if !tools.is_empty() {
        write!(out, r#","tools":{tools}"#)?;
        if let Some(choice) = anthropic_tool_choice(
            &request.response.tool_choice,
            request.prompt.parallel_tool_calls,
        ) {
            write!(out, r#","tool_choice":{choice}"#)?;
        }
    }
    write!(out, r#","stream":{}}}"#, request.response.stream)?;
    Ok(())
}

/// `tool_choice`: `auto` → `{type: auto}`, `none` → `{type: none}`, `required` → `{type: any}`,
/// a named function or custom tool → `{type: tool, name}`; with parallel calls off,
/// `disable_parallel_tool_use: true` (except for `none`). `None` when there is no equivalent.
pub fn anthropic_tool_choice(choice: &ToolChoice, parallel: bool) -> Option<Value> {
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

/// Whether Anthropic takes `name` as a tool name: 1 to 64 characters of `[a-zA-Z0-9_-]` (the
/// pattern its documentation gives; a longer limit has been reported, so 64 is the safe side).
fn tool_name_ok(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// Converts Responses tool specs: a `function` becomes a tool with its `parameters` as
/// `input_schema` (members of a `namespace` too, by their own name); a `custom` tool becomes a
/// tool taking `{"input": string}` (as custom calls are sent); `local_shell` becomes the tool
/// [`LOCAL_SHELL_FUNCTION`](crate::LOCAL_SHELL_FUNCTION) taking the exec action (as its calls are sent). Anything else, or a
/// name already taken or outside the name pattern `^[a-zA-Z0-9_-]{1,64}$` (Anthropic wants
/// unique names of that form), and any spec that is not an object (listed with an empty type),
/// is left out and listed.
pub fn anthropic_tools(specs: &[Value]) -> AnthropicTools {
    let mut names = std::collections::HashSet::new();
    let (tools, dropped) = convert_tools(specs, true, |kind, name, spec| {
        // Names of 1 to 64 characters of `[a-zA-Z0-9_-]`, each used once (a namespace member
        // may repeat a top-level one).
        if !tool_name_ok(name) || !names.insert(name.to_owned()) {
            return None;
        }
        let description = spec.get("description");
        Some(match kind {
            ToolKind::Function => {
                let schema = match spec.get("parameters") {
                    Some(schema @ Value::Object(_)) => schema.clone(),
                    _ => json!({"type": "object", "properties": {}}),
                };
                tool(name, description, schema)
            }
            ToolKind::Custom => tool(
                name,
                description,
                json!({
                    "type": "object",
                    "properties": {CUSTOM_TOOL_INPUT_KEY: {"type": "string"}},
                    "required": [CUSTOM_TOOL_INPUT_KEY],
                }),
            ),
            ToolKind::LocalShell => tool(
                name,
                Some(&Value::from(LOCAL_SHELL_DESCRIPTION)),
                local_shell_schema(),
            ),
        })
    });
    AnthropicTools { tools, dropped }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_the_api_would_refuse_are_left_out_and_listed() {
        let long = "t".repeat(65);
        let specs = [
            json!({"type": "function", "name": "mcp.server/tool", "parameters": {}}),
            json!({"type": "function", "name": "", "parameters": {}}),
            json!({"type": "function", "name": long, "parameters": {}}),
            json!("not a spec"),
            json!({"type": "function", "name": "ok_name-1", "parameters": {}}),
        ];
        let converted = anthropic_tools(&specs);
        let kept: Vec<&Value> = converted.tools.iter().map(|tool| &tool["name"]).collect();
        assert_eq!(kept, vec![&json!("ok_name-1")]);
        let dropped: Vec<(usize, &str, Option<&str>)> = converted
            .dropped
            .iter()
            .map(|tool| (tool.index, tool.tool_type.as_str(), tool.name.as_deref()))
            .collect();
        assert_eq!(
            dropped,
            vec![
                (0, "function", Some("mcp.server/tool")),
                (1, "function", Some("")),
                (2, "function", Some(long.as_str())),
                (3, "", None),
            ]
        );
    }

    #[test]
    fn tool_choices_map_where_they_have_an_equivalent() {
        assert_eq!(
            anthropic_tool_choice(&ToolChoice::Required, true),
            Some(json!({"type": "any"}))
        );
        assert_eq!(
            anthropic_tool_choice(&ToolChoice::Auto, false),
            Some(json!({"type": "auto", "disable_parallel_tool_use": true}))
        );
        assert_eq!(
            anthropic_tool_choice(
                &ToolChoice::Other(json!({"type": "function", "name": "shell"})),
                true
            ),
            Some(json!({"type": "tool", "name": "shell"}))
        );
        assert_eq!(
            anthropic_tool_choice(&ToolChoice::Other(json!({"type": "web_search"})), true),
            None
        );
    }

    #[test]
    fn specs_convert_or_are_dropped() {
        let specs = vec![
            json!({"type": "function", "name": "shell", "description": "Run", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}),
            json!({"type": "custom", "name": "apply_patch", "description": "Patch", "format": {"type": "grammar"}}),
            json!({"type": "web_search"}),
        ];
        let AnthropicTools { tools, dropped } = anthropic_tools(&specs);
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
                index: 2,
                tool_type: "web_search".into(),
                name: None
            }]
        );
    }
}
