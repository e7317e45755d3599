//! The Chat Completions request body: `model`, `messages` (the base instructions first, as a
//! `system` message), `tools` converted from Responses tool specs with `tool_choice` and
//! `parallel_tool_calls`, `stream`, `reasoning_effort`, `max_completion_tokens`.

use std::io::Write;

use serde_json::{Map, Value, json};

use crate::request::{ModelRequest, RequestError, ToolChoice};

use super::super::assembly::{Format, Messages};
use super::super::tools::{
    DroppedTool, LOCAL_SHELL_DESCRIPTION, ToolKind, convert_tools, local_shell_schema,
};
use super::convert::ChatItem;

/// Responses tool specs converted for Chat Completions, and those left out.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatTools {
    /// The Chat tools: `{"type":"function","function":{name, description, parameters, strict}}`.
    pub tools: Vec<Value>,
    /// The specs with no equivalent (web search, tool search, image generation, namespaces, …).
    pub dropped: Vec<DroppedTool>,
}

/// Converts Responses tool specs: a `function` becomes a Chat function tool; a `custom` tool
/// becomes a function taking `{"input": string}` (as custom calls are sent); `local_shell`
/// becomes the function [`LOCAL_SHELL_FUNCTION`](crate::LOCAL_SHELL_FUNCTION) taking the exec action (as its calls are sent);
/// anything else is left out and listed.
pub fn chat_tools(specs: &[Value]) -> ChatTools {
    let (tools, dropped) = convert_tools(specs, false, |kind, name, spec| {
        if name.is_empty() {
            return None;
        }
        let mut function = Map::new();
        function.insert("name".into(), name.into());
        let copied: &[&str] = match kind {
            ToolKind::Function => &["description", "parameters", "strict"],
            ToolKind::Custom => &["description"],
            ToolKind::LocalShell => &[],
        };
        for &key in copied {
            if let Some(value) = spec.get(key) {
                function.insert(key.into(), value.clone());
            }
        }
        match kind {
            ToolKind::Function => {}
            ToolKind::Custom => {
                let input = json!({
                    "type": "object",
                    "properties": {"input": {"type": "string"}},
                    "required": ["input"],
                    "additionalProperties": false,
                });
                function.insert("parameters".into(), input);
            }
            ToolKind::LocalShell => {
                function.insert("description".into(), LOCAL_SHELL_DESCRIPTION.into());
                function.insert("parameters".into(), local_shell_schema());
            }
        }
        Some(json!({"type": "function", "function": function}))
    });
    ChatTools { tools, dropped }
}

/// The Chat Completions `tool_choice` for a Responses one: the strings as they are, a
/// `{"type":"function","name":…}` as `{"type":"function","function":{"name":…}}`, any other
/// value as given.
pub fn chat_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Other(value) => {
            match (
                value.get("type").and_then(Value::as_str),
                value.get("name").and_then(Value::as_str),
            ) {
                (Some("function"), Some(name)) => {
                    json!({"type": "function", "function": {"name": name}})
                }
                _ => value.clone(),
            }
        }
    }
}

/// Writes the body of `request` with `messages`, and `tools` (the converted tools' JSON array,
/// empty when none is left).
///
/// # Errors
///
/// [`RequestError::Io`] from the writer.
pub(super) fn write_body<F: Format<Item = ChatItem>, W: Write + ?Sized>(
    request: &ModelRequest,
    messages: &Messages<F>,
    tools: &str,
    out: &mut W,
) -> Result<(), RequestError> {
    let settings = &request.settings;
    write!(
        out,
        r#"{{"model":{},"messages":["#,
        Value::from(&*settings.model)
    )?;
    let instructions = &*request.prompt.base_instructions;
    if !instructions.is_empty() {
        write!(
            out,
            r#"{{"role":"system","content":{}}}"#,
            Value::from(instructions)
        )?;
        if messages.len() > 0 {
            out.write_all(b",")?;
        }
    }
    messages.write_elements(out)?;
    out.write_all(b"]")?;
    if !tools.is_empty() {
        write!(
            out,
            r#","tools":{tools},"tool_choice":{},"parallel_tool_calls":{}"#,
            chat_tool_choice(&request.response.tool_choice),
            request.prompt.parallel_tool_calls
        )?;
    }
    write!(out, r#","stream":{}"#, request.response.stream)?;
    if let Some(effort) = settings
        .reasoning
        .as_ref()
        .and_then(|r| r.effort.as_deref())
    {
        write!(out, r#","reasoning_effort":{}"#, Value::from(effort))?;
    }
    if let Some(max) = settings.max_output_tokens {
        write!(out, r#","max_completion_tokens":{max}"#)?;
    }
    out.write_all(b"}")?;
    Ok(())
}
