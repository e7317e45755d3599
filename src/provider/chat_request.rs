//! The Chat Completions request body: `model`, `messages` (the base instructions first, as a
//! `system` message), `tools` converted from Responses tool specs, `tool_choice`,
//! `parallel_tool_calls`, `stream`, `reasoning_effort`.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::request::ToolChoice;

use super::Target;
use super::chat::LOCAL_SHELL_FUNCTION;
use super::target::TargetProjection;

/// The settings of a Chat Completions request body beside its messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// `model`.
    pub model: String,
    /// The base instructions, sent as the first message (`system`); none when empty.
    pub instructions: String,
    /// The tools, as Responses tool specs (converted by [`chat_tools`]).
    pub tools: Vec<Value>,
    /// `tool_choice` (a Responses `{"type":"function","name":…}` is converted; sent only with
    /// tools).
    pub tool_choice: ToolChoice,
    /// `parallel_tool_calls` (sent only with tools).
    pub parallel_tool_calls: bool,
    /// `stream`.
    pub stream: bool,
    /// `reasoning_effort`, when set.
    pub reasoning_effort: Option<String>,
}

/// A Responses tool spec that has no Chat Completions equivalent and was left out.
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
/// becomes the function [`LOCAL_SHELL_FUNCTION`] taking the exec action (as its calls are sent);
/// anything else is left out and listed.
pub fn chat_tools(specs: &[Value]) -> ChatTools {
    let mut converted = ChatTools::default();
    for (index, spec) in specs.iter().enumerate() {
        let tool_type = spec.get("type").and_then(Value::as_str).unwrap_or("");
        let name = spec.get("name").and_then(Value::as_str);
        let function = match (tool_type, name) {
            ("function", Some(name)) if !name.is_empty() => {
                let mut function = Map::new();
                function.insert("name".into(), name.into());
                for key in ["description", "parameters", "strict"] {
                    if let Some(value) = spec.get(key) {
                        function.insert(key.into(), value.clone());
                    }
                }
                Some(Value::Object(function))
            }
            ("custom", Some(name)) if !name.is_empty() => {
                let mut function = Map::new();
                function.insert("name".into(), name.into());
                if let Some(description) = spec.get("description") {
                    function.insert("description".into(), description.clone());
                }
                function.insert(
                    "parameters".into(),
                    json!({
                        "type": "object",
                        "properties": {"input": {"type": "string"}},
                        "required": ["input"],
                        "additionalProperties": false,
                    }),
                );
                Some(Value::Object(function))
            }
            ("local_shell", _) => Some(json!({
                "name": LOCAL_SHELL_FUNCTION,
                "description": "Runs a command on the local machine.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string", "enum": ["exec"]},
                        "command": {"type": "array", "items": {"type": "string"}},
                        "timeout_ms": {"type": ["integer", "null"]},
                        "working_directory": {"type": ["string", "null"]},
                        "env": {"type": ["object", "null"]},
                        "user": {"type": ["string", "null"]},
                    },
                    "required": ["type", "command"],
                },
            })),
            _ => None,
        };
        match function {
            Some(function) => converted
                .tools
                .push(json!({"type": "function", "function": function})),
            None => converted.dropped.push(DroppedTool {
                index,
                tool_type: tool_type.to_owned(),
                name: name.map(str::to_owned),
            }),
        }
    }
    converted
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

/// A Chat Completions request body could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChatRequestError {
    /// The projection is for another target.
    #[error("the projection is for {0}, not chat")]
    WrongTarget(Target),
    /// The writer failed.
    #[error("cannot write the request body")]
    Io(#[from] io::Error),
}

impl TargetProjection {
    /// Writes the whole Chat Completions request body of this projection: `model`, `messages`
    /// (the base instructions first as a `system` message, then the projection's messages),
    /// `tools` converted by [`chat_tools`] with `tool_choice` and `parallel_tool_calls` (when
    /// any tool is left), `stream`, and `reasoning_effort` when set. Returns the converted tools
    /// (what was left out is in [`ChatTools::dropped`]).
    ///
    /// # Errors
    ///
    /// [`ChatRequestError::WrongTarget`] for a projection for another target;
    /// [`ChatRequestError::Io`] when the writer fails.
    pub fn write_chat_request<W: Write + ?Sized>(
        &self,
        request: &ChatRequest,
        out: &mut W,
    ) -> Result<ChatTools, ChatRequestError> {
        if self.target() != Target::ChatCompletions {
            return Err(ChatRequestError::WrongTarget(self.target()));
        }
        let tools = chat_tools(&request.tools);
        write!(
            out,
            r#"{{"model":{},"messages":"#,
            Value::from(&*request.model)
        )?;
        if request.instructions.is_empty() {
            self.write_json(out)?;
        } else {
            write!(
                out,
                r#"[{{"role":"system","content":{}}}"#,
                Value::from(&*request.instructions)
            )?;
            let mut messages = Vec::new();
            self.write_json(&mut messages)?;
            // `messages` is a JSON array: `[]` or `[…]`; its elements follow the system message.
            if messages.len() > 2 {
                out.write_all(b",")?;
                out.write_all(&messages[1..])?;
            } else {
                out.write_all(b"]")?;
            }
        }
        if !tools.tools.is_empty() {
            write!(
                out,
                r#","tools":{},"tool_choice":{},"parallel_tool_calls":{}"#,
                Value::Array(tools.tools.clone()),
                chat_tool_choice(&request.tool_choice),
                request.parallel_tool_calls
            )?;
        }
        write!(out, r#","stream":{}"#, request.stream)?;
        if let Some(effort) = &request.reasoning_effort {
            write!(out, r#","reasoning_effort":{}"#, Value::from(&**effort))?;
        }
        out.write_all(b"}")?;
        Ok(tools)
    }
}
