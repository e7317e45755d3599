//! The Chat Completions target: each Responses item converted to a part of a `messages` array
//! (cached per entry), and the writer that merges them into messages.
//!
//! Conversions (`docs/providers.md` has the table):
//! * `message` system / developer → a `system` / `developer` message (developer is sent as
//!   `system` unless [`DeveloperRole::Developer`]); user → a `user` message with `text` and
//!   `image_url` parts (`detail: original` → `high`); assistant → an `assistant` message, merged
//!   with the calls that follow it.
//! * `function_call` → a `tool_calls` entry (`id` = `call_id`, empty arguments → `{}`);
//!   `custom_tool_call` → a function call whose arguments are `{"input": <input>}`;
//!   `local_shell_call` → a function call named `local_shell` whose arguments are the action.
//!   Consecutive calls form one `tool_calls` array.
//! * outputs → `tool` messages with text content; images of a tool output → a placeholder in the
//!   tool message and a `user` message with the images after the batch's tool messages.
//! * `agent_message` → a `user` message with its text.
//! * reasoning, tool search, web search, image generation, compactions, additional tools and
//!   unknown items → not sent, reported.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::item::{
    AgentContentItem, ContentItem, ImageDetail, ImagePart, ItemError, OutputContentItem,
    OutputPayload, ResponseItem, Role, parse_item,
};
use crate::projection::Projection;

use super::Target;
use super::target::{
    CHAT_CELL, DeveloperRole, PairRole, Rendered, Step, TARGET_ABORTED_OUTPUT, TargetOptions,
    TargetProjectionError, TargetRepair, TargetRepairKind, Unit, Units, merge_repairs, pair_calls,
};

/// The name a `local_shell_call` is sent under as a function call.
pub const LOCAL_SHELL_FUNCTION: &str = "local_shell";

/// The name a call with an empty tool name is sent under (Chat Completions refuses an empty
/// `function.name`).
pub const UNNAMED_TOOL_FUNCTION: &str = "unnamed_tool";

/// The text that replaces the images of a tool output in its `tool` message; the images follow
/// in a `user` message after the batch's tool messages.
pub const TOOL_IMAGE_PLACEHOLDER: &str = "[image: sent in the next user message]";

/// A message's role as Chat Completions takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageRole {
    System,
    Developer,
    User,
}

/// What one item becomes.
#[derive(Debug)]
enum Piece {
    /// A `system`, `developer` or `user` message; `content` is the JSON of its content.
    Message {
        role: MessageRole,
        content: Box<str>,
    },
    /// An assistant message's content (JSON), merged with the calls that follow.
    Assistant { content: Box<str> },
    /// One `tool_calls` entry (JSON).
    Call { id: Box<str>, json: Box<str> },
    /// A `tool` message: its content (a JSON string) and the image parts moved out of it (the
    /// JSON of each `image_url` part, comma-separated; empty when none).
    Output {
        id: Box<str>,
        content: Box<str>,
        images: Box<str>,
    },
    /// Not sent.
    Nothing,
}

/// One item converted for Chat Completions, with what the conversion lost or changed.
#[derive(Debug)]
pub(crate) struct ChatItem {
    piece: Piece,
    notes: Box<[TargetRepairKind]>,
}

impl Rendered for ChatItem {
    const CELL: usize = CHAT_CELL;
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
    let json = json!({
        "id": id,
        "type": "function",
        "function": { "name": name, "arguments": arguments },
    });
    Piece::Call {
        id: id.into(),
        json: json.to_string().into_boxed_str(),
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
    Piece::Output {
        id: call_id.into(),
        content: Value::String(text).to_string().into_boxed_str(),
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

/// The messages of a Chat Completions projection: the units in the order pairing chose, merged
/// into messages when written.
#[derive(Debug, Clone)]
pub(crate) struct ChatMessages {
    units: std::sync::Arc<[Unit<ChatItem>]>,
    steps: std::sync::Arc<[Step]>,
    developer_role: DeveloperRole,
    /// Call ids mapped to make them unique, by call and output unit.
    ids: std::sync::Arc<HashMap<usize, Box<str>>>,
    len: std::sync::Arc<OnceLock<usize>>,
}

/// Ids that make every call id of the request unique and non-empty: a call whose id is empty
/// or was used by an earlier call gets `<id>_<n>` (`call_<n>` for an empty one), the first such
/// name no call of the request has; its output uses the same id. Keyed by unit (calls and
/// outputs); reported as [`TargetRepairKind::MappedId`]. Only such calls cost anything.
fn unique_ids(
    units: &[Unit<ChatItem>],
    steps: &[Step],
    call_of: &HashMap<usize, usize>,
    repairs: &mut Vec<TargetRepair>,
) -> HashMap<usize, Box<str>> {
    let mut mapped = HashMap::new();
    let call_id = |i: usize| match &units[i].rendered.piece {
        Piece::Call { id, .. } => Some(&**id),
        _ => None,
    };
    let mut seen: HashSet<&str> = HashSet::new();
    let mut needs_mapping = Vec::new();
    for step in steps {
        let Step::Unit(i) = *step else { continue };
        if let Some(id) = call_id(i)
            && (id.is_empty() || !seen.insert(id))
        {
            needs_mapping.push(i);
        }
    }
    if needs_mapping.is_empty() {
        return mapped;
    }
    let mut taken: HashSet<String> = seen.iter().map(|id| (*id).to_owned()).collect();
    for call in needs_mapping {
        let id = call_id(call).unwrap_or("");
        let base = if id.is_empty() { "call" } else { id };
        let fresh = (2..)
            .map(|n| format!("{base}_{n}"))
            .find(|candidate| !taken.contains(candidate))
            .unwrap_or_default();
        taken.insert(fresh.clone());
        repairs.push(TargetRepair {
            kind: TargetRepairKind::MappedId {
                from: id.to_owned(),
                to: fresh.clone(),
            },
            at: units[call].at.clone(),
        });
        mapped.insert(call, Box::from(fresh.as_str()));
    }
    for (&output, call) in call_of {
        if let Some(id) = mapped.get(call) {
            mapped.insert(output, id.clone());
        }
    }
    mapped
}

/// Projects for Chat Completions.
pub(crate) fn project(
    projection: &Projection,
    options: &TargetOptions,
) -> Result<(ChatMessages, Vec<TargetRepair>), TargetProjectionError> {
    let Units { units, mut repairs } = Units::<ChatItem>::collect(projection)?;
    let paired = pair_calls(&units);
    if options.developer_role == DeveloperRole::System {
        for step in &paired.steps {
            let Step::Unit(i) = *step else { continue };
            if let Piece::Message {
                role: MessageRole::Developer,
                ..
            } = units[i].rendered.piece
            {
                repairs.push(TargetRepair {
                    kind: TargetRepairKind::MappedRole {
                        from: "developer".into(),
                        to: "system".into(),
                    },
                    at: units[i].at.clone(),
                });
            }
        }
    }
    let ids = unique_ids(&units, &paired.steps, &paired.call_of, &mut repairs);
    let repairs = merge_repairs(repairs, paired.repairs);
    Ok((
        ChatMessages {
            units: units.into(),
            steps: paired.steps.into(),
            developer_role: options.developer_role,
            ids: std::sync::Arc::new(ids),
            len: Default::default(),
        },
        repairs,
    ))
}

impl ChatMessages {
    /// Number of messages.
    pub(crate) fn len(&self) -> usize {
        *self.len.get_or_init(|| {
            let mut count = 0;
            // Writing to a sink cannot fail.
            let _ = self.walk(&mut io::sink(), &mut count);
            count
        })
    }

    /// Writes the `messages` array.
    pub(crate) fn write_json<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        let mut count = 0;
        self.walk(out, &mut count)
    }

    /// The piece of step `k`, if it is a unit.
    fn piece(&self, k: usize) -> Option<&Piece> {
        match self.steps.get(k)? {
            Step::Unit(i) => Some(&self.units[*i].rendered.piece),
            Step::Synthetic(_) => None,
        }
    }

    /// Whether step `k` is an output (a unit's or a synthetic one).
    fn is_output(&self, k: usize) -> bool {
        match self.steps.get(k) {
            Some(Step::Synthetic(_)) => true,
            Some(Step::Unit(_)) => matches!(self.piece(k), Some(Piece::Output { .. })),
            None => false,
        }
    }

    /// Writes every message, counting them.
    fn walk<W: Write + ?Sized>(&self, out: &mut W, count: &mut usize) -> io::Result<()> {
        out.write_all(b"[")?;
        let mut begin = |out: &mut W| -> io::Result<()> {
            if *count > 0 {
                out.write_all(b",")?;
            }
            *count += 1;
            Ok(())
        };
        // Image parts of the current batch's tool outputs, sent after its tool messages.
        let mut images: Vec<&str> = Vec::new();
        let mut k = 0;
        while k < self.steps.len() {
            match self.steps[k] {
                Step::Synthetic(call) => {
                    let id = match (&self.units[call].rendered.piece, self.ids.get(&call)) {
                        (_, Some(mapped)) => &**mapped,
                        (Piece::Call { id, .. }, None) => &**id,
                        _ => "",
                    };
                    begin(out)?;
                    write!(
                        out,
                        r#"{{"role":"tool","tool_call_id":{},"content":{}}}"#,
                        Value::from(id),
                        Value::from(TARGET_ABORTED_OUTPUT)
                    )?;
                    k += 1;
                }
                Step::Unit(i) => match &self.units[i].rendered.piece {
                    Piece::Message { role, content } => {
                        let role = match (role, self.developer_role) {
                            (MessageRole::System, _)
                            | (MessageRole::Developer, DeveloperRole::System) => "system",
                            (MessageRole::Developer, DeveloperRole::Developer) => "developer",
                            (MessageRole::User, _) => "user",
                        };
                        begin(out)?;
                        write!(out, r#"{{"role":"{role}","content":{content}}}"#)?;
                        k += 1;
                    }
                    Piece::Assistant { content } => {
                        begin(out)?;
                        write!(out, r#"{{"role":"assistant","content":{content}"#)?;
                        k += 1;
                        if matches!(self.piece(k), Some(Piece::Call { .. })) {
                            k = self.write_calls(out, k)?;
                        }
                        out.write_all(b"}")?;
                    }
                    Piece::Call { .. } => {
                        begin(out)?;
                        out.write_all(br#"{"role":"assistant","content":null"#)?;
                        k = self.write_calls(out, k)?;
                        out.write_all(b"}")?;
                    }
                    Piece::Output {
                        id,
                        content,
                        images: parts,
                    } => {
                        let id = self.ids.get(&i).unwrap_or(id);
                        begin(out)?;
                        write!(
                            out,
                            r#"{{"role":"tool","tool_call_id":{},"content":{content}}}"#,
                            Value::from(&**id)
                        )?;
                        if !parts.is_empty() {
                            images.push(parts);
                        }
                        k += 1;
                    }
                    Piece::Nothing => k += 1,
                },
            }
            if !images.is_empty() && !self.is_output(k) {
                begin(out)?;
                out.write_all(br#"{"role":"user","content":["#)?;
                for (n, parts) in images.drain(..).enumerate() {
                    if n > 0 {
                        out.write_all(b",")?;
                    }
                    out.write_all(parts.as_bytes())?;
                }
                out.write_all(b"]}")?;
            }
        }
        out.write_all(b"]")
    }

    /// Writes `,"tool_calls":[…]` for the consecutive calls from step `k`; the step after them.
    fn write_calls<W: Write + ?Sized>(&self, out: &mut W, mut k: usize) -> io::Result<usize> {
        out.write_all(br#","tool_calls":["#)?;
        let mut first = true;
        while let Some(Piece::Call { json, .. }) = self.piece(k) {
            if !first {
                out.write_all(b",")?;
            }
            first = false;
            let mapped = match self.steps[k] {
                Step::Unit(i) => self.ids.get(&i),
                Step::Synthetic(_) => None,
            };
            match mapped {
                None => out.write_all(json.as_bytes())?,
                Some(id) => {
                    // A mapped call (rare): its entry rewritten with the new id.
                    let mut call: Value = serde_json::from_str(json).map_err(io::Error::other)?;
                    call["id"] = Value::from(&**id);
                    write!(out, "{call}")?;
                }
            }
            k += 1;
        }
        out.write_all(b"]")?;
        Ok(k)
    }
}
