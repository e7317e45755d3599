//! One Responses item converted for Chat Completions, independently of its neighbours (cached
//! per entry): the text of a message's content, a `tool_calls` entry, or a whole `tool`
//! message; the message builder (`messages.rs`) merges them.
//!
//! Conversions (`docs/providers.md` has the table):
//! * `message` system / developer → a `system` / `developer` message (developer is sent as
//!   `system` unless [`DeveloperRole::Developer`](crate::DeveloperRole)); user → a `user`
//!   message with `text` and `image_url` parts (`detail: original` → `high`); assistant → an
//!   `assistant` message, merged with the calls that follow it.
//! * `function_call` → a `tool_calls` entry (`id` = `call_id`, empty arguments → `{}`);
//!   `custom_tool_call` → a function call whose arguments are `{"input": <input>}`;
//!   `local_shell_call` → a function call named `local_shell` whose arguments are the action.
//!   Consecutive calls form one `tool_calls` array.
//! * outputs → `tool` messages with text content; images of a tool output → a placeholder in the
//!   tool message and a `user` message with the images after the batch's tool messages.
//! * `agent_message` → a `user` message with its text.
//! * reasoning, tool search, web search, image generation, compactions, additional tools and
//!   unknown items → not sent, reported.

use serde_json::{Value, json};

use crate::item::{
    AgentContentItem, ContentItem, ImageDetail, ImagePart, ItemError, OutputContentItem,
    OutputPayload, ResponseItem, Role, parse_item,
};

use super::super::Target;
use super::super::assembly::{PairRole, RENDERING_CELLS, Rendered};
use super::super::report::TargetRepairKind;
use super::super::tools::LOCAL_SHELL_FUNCTION;

/// The name a call with an empty tool name is sent under (Chat Completions refuses an empty
/// `function.name`).
pub const UNNAMED_TOOL_FUNCTION: &str = "unnamed_tool";

/// The text that replaces the images of a tool output in its `tool` message; the images follow
/// in a `user` message after the batch's tool messages.
pub const TOOL_IMAGE_PLACEHOLDER: &str = "[image: sent in the next user message]";

/// The entry's cache cell of the Chat Completions rendering.
const CELL: usize = 0;
const _: () = assert!(CELL < RENDERING_CELLS);

/// Text 0 of a rendering: a message's content, a call's `tool_calls` entry, an output's whole
/// `tool` message.
pub(super) const TEXT: u32 = 0;
/// Text 1 of a call or an output: its `tool_calls` entry or `tool` message after the id (after
/// a mapped id).
pub(super) const AFTER_ID: u32 = 1;
/// Text 2 of an output: the JSON of its image parts, comma-separated.
pub(super) const IMAGES: u32 = 2;

/// A message's role as Chat Completions takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MessageRole {
    System,
    Developer,
    User,
}

/// What one item becomes.
#[derive(Debug)]
pub(super) enum Piece {
    /// A `system`, `developer` or `user` message; `content` is the JSON of its content.
    Message {
        role: MessageRole,
        content: Box<str>,
    },
    /// An assistant message's content (JSON), merged with the calls that follow.
    Assistant { content: Box<str> },
    /// One `tool_calls` entry (JSON; `json[after_id..]` follows its id).
    Call {
        id: Box<str>,
        json: Box<str>,
        after_id: u32,
    },
    /// A whole `tool` message (`message[after_id..]` is the part after its `tool_call_id`) and
    /// the image parts moved out of it (the JSON of each `image_url` part, comma-separated;
    /// empty when none).
    Output {
        id: Box<str>,
        message: Box<str>,
        after_id: u32,
        images: Box<str>,
    },
    /// Not sent.
    Nothing,
}

/// One item converted for Chat Completions, with what the conversion lost or changed.
#[derive(Debug)]
pub(crate) struct ChatItem {
    pub(super) piece: Piece,
    notes: Box<[TargetRepairKind]>,
}

impl Rendered for ChatItem {
    const CELL: usize = CELL;
    const TARGET: Target = Target::ChatCompletions;

    fn render(json: &str) -> Result<Self, ItemError> {
        let item = parse_item(json)?;
        let mut notes = Vec::new();
        let piece = convert(item, &mut notes);
        Ok(ChatItem {
            piece,
            notes: notes.into_boxed_slice(),
        })
    }

    fn pairing(&self) -> PairRole<'_> {
        match &self.piece {
            Piece::Call { id, .. } => PairRole::Call(id),
            Piece::Output { id, .. } => PairRole::Output(id),
            Piece::Message { .. } | Piece::Assistant { .. } => PairRole::Other,
            Piece::Nothing => PairRole::Nothing,
        }
    }

    fn notes(&self) -> &[TargetRepairKind] {
        &self.notes
    }

    fn part(&self, index: u32) -> &str {
        match (&self.piece, index) {
            (Piece::Message { content, .. } | Piece::Assistant { content }, TEXT) => content,
            (Piece::Call { json: text, .. } | Piece::Output { message: text, .. }, TEXT) => text,
            (
                Piece::Call {
                    json: text,
                    after_id,
                    ..
                }
                | Piece::Output {
                    message: text,
                    after_id,
                    ..
                },
                AFTER_ID,
            ) => text.get(*after_id as usize..).unwrap_or(""),
            (Piece::Output { images, .. }, IMAGES) => images,
            _ => "",
        }
    }
}

/// Converts one item.
fn convert(item: ResponseItem, notes: &mut Vec<TargetRepairKind>) -> Piece {
    match item {
        ResponseItem::Message(message) => {
            if message.encrypted_content.is_some() {
                notes.push(dropped("encrypted_content"));
            }
            let role = match message.role {
                Role::System => MessageRole::System,
                Role::Developer => MessageRole::Developer,
                Role::User => MessageRole::User,
                Role::Assistant => {
                    let content = content_json(&message.content, notes);
                    return Piece::Assistant {
                        content: content.into_boxed_str(),
                    };
                }
            };
            Piece::Message {
                role,
                content: content_json(&message.content, notes).into_boxed_str(),
            }
        }
        ResponseItem::AgentMessage(message) => {
            notes.push(TargetRepairKind::MappedRole {
                from: "agent_message".into(),
                to: "user".into(),
            });
            let mut texts = Vec::new();
            let mut lost = Vec::new();
            for part in &message.content {
                match part {
                    AgentContentItem::InputText { text } => texts.push(text_part(text)),
                    AgentContentItem::EncryptedContent { .. } => lost.push("encrypted_content"),
                    _ => lost.push("unknown part"),
                }
            }
            if !lost.is_empty() {
                notes.push(dropped(&lost.join(", ")));
            }
            Piece::Message {
                role: MessageRole::User,
                content: parts_json(texts, true).into_boxed_str(),
            }
        }
        ResponseItem::Reasoning(_) => {
            notes.push(TargetRepairKind::ReasoningNotSent);
            Piece::Nothing
        }
        ResponseItem::FunctionCall(call) => {
            if call.namespace.is_some() {
                notes.push(dropped("namespace"));
            }
            if call.encrypted_content.is_some() || call.encrypted_function_args.is_some() {
                notes.push(dropped("encrypted_content"));
            }
            let arguments = if call.arguments.trim().is_empty() {
                notes.push(TargetRepairKind::EmptyArguments);
                "{}".to_owned()
            } else {
                call.arguments
            };
            tool_call(call.call_id.as_str(), &call.name, arguments, notes)
        }
        ResponseItem::CustomToolCall(call) => {
            notes.push(TargetRepairKind::MappedCall {
                name: call.name.clone(),
            });
            if call.namespace.is_some() {
                notes.push(dropped("namespace"));
            }
            let arguments = json!({ "input": call.input }).to_string();
            tool_call(call.call_id.as_str(), &call.name, arguments, notes)
        }
        ResponseItem::LocalShellCall(call) => {
            let Some(call_id) = call.call_id else {
                notes.push(TargetRepairKind::DroppedCallWithoutId);
                return Piece::Nothing;
            };
            notes.push(TargetRepairKind::MappedCall {
                name: LOCAL_SHELL_FUNCTION.into(),
            });
            // The action is a typed value; serializing it cannot fail.
            let arguments = serde_json::to_string(&call.action).unwrap_or_else(|_| "{}".into());
            tool_call(call_id.as_str(), LOCAL_SHELL_FUNCTION, arguments, notes)
        }
        ResponseItem::FunctionCallOutput(output) => match output.call_id {
            Some(call_id) => tool_output(call_id.as_str(), &output.output, notes),
            None => {
                notes.push(TargetRepairKind::NoEquivalent);
                Piece::Nothing
            }
        },
        ResponseItem::CustomToolCallOutput(output) => {
            tool_output(output.call_id.as_str(), &output.output, notes)
        }
        ResponseItem::ToolSearchCall(_)
        | ResponseItem::ToolSearchOutput(_)
        | ResponseItem::WebSearchCall(_)
        | ResponseItem::ImageGenerationCall(_)
        | ResponseItem::Compaction(_)
        | ResponseItem::ContextCompaction(_)
        | ResponseItem::AdditionalTools(_)
        | ResponseItem::CompactionTrigger
        | ResponseItem::Other => {
            notes.push(TargetRepairKind::NoEquivalent);
            Piece::Nothing
        }
    }
}

/// A [`TargetRepairKind::DroppedParts`].
fn dropped(what: &str) -> TargetRepairKind {
    TargetRepairKind::DroppedParts { what: what.into() }
}

/// A `tool_calls` entry; an empty name is sent as [`UNNAMED_TOOL_FUNCTION`] and noted.
fn tool_call(id: &str, name: &str, arguments: String, notes: &mut Vec<TargetRepairKind>) -> Piece {
    let name = if name.is_empty() {
        notes.push(TargetRepairKind::EmptyToolName);
        UNNAMED_TOOL_FUNCTION
    } else {
        name
    };
    let head = format!(r#"{{"id":{}"#, Value::from(id));
    let after_id = u32::try_from(head.len()).unwrap_or(u32::MAX);
    let function = json!({ "name": name, "arguments": arguments });
    let json = format!(r#"{head},"type":"function","function":{function}}}"#);
    Piece::Call {
        id: id.into(),
        json: json.into_boxed_str(),
        after_id,
    }
}

/// A `tool` message for the output `payload` of `call_id`.
fn tool_output(call_id: &str, payload: &OutputPayload, notes: &mut Vec<TargetRepairKind>) -> Piece {
    let (text, images) = match payload {
        OutputPayload::Text(text) => (text.clone(), Vec::new()),
        OutputPayload::ContentItems(parts) => {
            let mut texts = Vec::new();
            let mut images = Vec::new();
            let mut lost = Vec::new();
            for part in parts {
                match part {
                    OutputContentItem::InputText { text } => texts.push(text.clone()),
                    OutputContentItem::InputImage(image) => match image_part(image, notes) {
                        Some(part) => {
                            texts.push(TOOL_IMAGE_PLACEHOLDER.to_owned());
                            images.push(part.to_string());
                        }
                        None => lost.push("image by file_id"),
                    },
                    OutputContentItem::InputAudio { .. } => lost.push("input_audio"),
                    OutputContentItem::EncryptedContent { .. } => lost.push("encrypted_content"),
                    _ => lost.push("unknown part"),
                }
            }
            if !lost.is_empty() {
                notes.push(dropped(&lost.join(", ")));
            }
            (texts.join("\n"), images)
        }
    };
    if !images.is_empty() {
        notes.push(TargetRepairKind::MovedToolOutputImages {
            images: images.len(),
        });
    }
    let head = format!(r#"{{"role":"tool","tool_call_id":{}"#, Value::from(call_id));
    let after_id = u32::try_from(head.len()).unwrap_or(u32::MAX);
    let message = format!(r#"{head},"content":{}}}"#, Value::String(text));
    Piece::Output {
        id: call_id.into(),
        message: message.into_boxed_str(),
        after_id,
        images: images.join(",").into_boxed_str(),
    }
}

/// A `text` part.
fn text_part(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

/// The `image_url` part of `image`; `None` for an image by file id (no equivalent).
fn image_part(image: &ImagePart, notes: &mut Vec<TargetRepairKind>) -> Option<Value> {
    let url = image.image_url.as_deref()?;
    let mut inner = serde_json::Map::new();
    inner.insert("url".into(), url.into());
    let detail = match image.detail {
        None => None,
        Some(ImageDetail::Auto) => Some("auto"),
        Some(ImageDetail::Low) => Some("low"),
        Some(ImageDetail::High) => Some("high"),
        Some(ImageDetail::Original) => {
            notes.push(TargetRepairKind::MappedImageDetail);
            Some("high")
        }
    };
    if let Some(detail) = detail {
        inner.insert("detail".into(), detail.into());
    }
    Some(json!({ "type": "image_url", "image_url": Value::Object(inner) }))
}

/// The JSON of a message's content: a string when it is one text part, else an array of parts
/// (`""` when nothing is left).
fn content_json(content: &[ContentItem], notes: &mut Vec<TargetRepairKind>) -> String {
    let mut parts = Vec::new();
    let mut only_text = true;
    let mut lost = Vec::new();
    for part in content {
        match part {
            ContentItem::InputText { text } | ContentItem::OutputText { text, .. } => {
                parts.push(text_part(text));
            }
            ContentItem::InputImage(image) => match image_part(image, notes) {
                Some(part) => {
                    only_text = false;
                    parts.push(part);
                }
                None => lost.push("image by file_id"),
            },
            ContentItem::InputAudio { .. } => lost.push("input_audio"),
            _ => lost.push("unknown part"),
        }
    }
    if !lost.is_empty() {
        notes.push(dropped(&lost.join(", ")));
    }
    parts_json(parts, only_text)
}

/// `parts` as content: a string when it is one text part, `""` when empty, else the array.
fn parts_json(mut parts: Vec<Value>, only_text: bool) -> String {
    if parts.is_empty() {
        return "\"\"".to_owned();
    }
    if only_text && parts.len() == 1 {
        if let Some(text) = parts
            .pop()
            .and_then(|mut part| part.get_mut("text").map(Value::take))
        {
            return text.to_string();
        }
        return "\"\"".to_owned();
    }
    Value::Array(parts).to_string()
}
