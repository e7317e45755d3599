//! One Responses item rendered for the Anthropic Messages API, independently of its neighbours.
//!
//! A rendering depends only on the item's JSON text, so it can be computed once per entry and
//! shared by every projection of every version that holds the entry. What depends on the whole
//! request (merging, pairing, the order of results, tool id mapping, the final-whitespace trim)
//! is done by the assembly (`assemble.rs`).

use serde_json::{Map, Value, json};

use crate::item::ItemError;
use crate::projection::{AUDIO_PLACEHOLDER, IMAGE_PLACEHOLDER};

use super::super::Target;
use super::super::assembly::{PairRole, RENDERING_CELLS, Rendered};
use super::super::report::{InputFallback, PlaceholderReason, TargetRepairKind};
use super::super::tools::LOCAL_SHELL_FUNCTION;

/// The entry's cache cell of the Anthropic Messages rendering.
const CELL: usize = 1;
const _: () = assert!(CELL < RENDERING_CELLS);

/// Text 0 of a rendering: a `system` text, a call's whole `tool_use` block, an output's whole
/// `tool_result` block (a user or assistant message's blocks are texts 0, 1, …).
pub(super) const TEXT: u32 = 0;
/// Text 1 of a call or an output: its block after the id (after a mapped id).
pub(super) const AFTER_ID: u32 = 1;

/// The `input` key a custom tool call's free-form string is wrapped under, and the single string
/// property of the tool a custom tool spec becomes.
pub const CUSTOM_TOOL_INPUT_KEY: &str = "input";

/// The key a function call's `arguments` text is kept under when it is not a JSON object.
pub const RAW_ARGUMENTS_KEY: &str = "arguments";

/// The key under which an item read from an Anthropic-shaped source (a Claude Code transcript)
/// keeps the block it was read from, when its Responses form would not render back to the same
/// block: the block is then sent as it was written.
pub const ANTHROPIC_BLOCK_KEY: &str = "anthropic_block";

/// The media types an Anthropic `base64` image source accepts.
const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// What one item contributes to an Anthropic request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    /// Nothing is sent (the reason is in the notes).
    Nothing,
    /// Text for the top-level `system` (a `system` or `developer` message, hoisted).
    System(String),
    /// Content blocks of a `user` message.
    User(Vec<Value>),
    /// Text blocks of an `assistant` message.
    Assistant(Vec<Value>),
    /// A `tool_use` block; `call_id` is the history's, mapped to a valid id by the assembly.
    ToolUse {
        call_id: String,
        name: String,
        input: Value,
    },
    /// The result of a call: the `content` of its `tool_result` (`None`: no content).
    ToolResult {
        call_id: String,
        content: Option<Value>,
    },
    /// A `tool_use` block the item keeps verbatim: its id, and its keys after `type` and `id`.
    KeptToolUse {
        call_id: String,
        rest: Map<String, Value>,
    },
    /// A `tool_result` block the item keeps verbatim: the id it answers, and its keys after
    /// `type` and `tool_use_id`.
    KeptToolResult {
        call_id: String,
        rest: Map<String, Value>,
    },
}

/// One item's Anthropic rendering, cached per entry: its piece with every block already
/// serialized, and what its conversion lost or changed.
#[derive(Debug)]
pub(crate) struct AnthropicItem {
    pub(crate) piece: Sent,
    notes: Box<[TargetRepairKind]>,
}

/// A [`Piece`] with its JSON written once.
#[derive(Debug)]
pub(crate) enum Sent {
    /// Nothing is sent.
    Nothing,
    /// Text for the top-level `system`.
    System(Box<str>),
    /// The JSON of each block of a `user` message.
    User(Box<[Box<str>]>),
    /// The JSON of each text block of an `assistant` message.
    Assistant(Box<[Box<str>]>),
    /// A call: its history call id, and its `tool_use` block sent under that id
    /// (`block[after_id..]` follows the id).
    ToolUse {
        call_id: Box<str>,
        block: Box<str>,
        after_id: u32,
    },
    /// An output: the call id it answers, and its `tool_result` block answering that id
    /// (`block[after_id..]` follows the id).
    ToolResult {
        call_id: Box<str>,
        block: Box<str>,
        after_id: u32,
    },
}

fn blocks_json(blocks: Vec<Value>) -> Box<[Box<str>]> {
    blocks
        .into_iter()
        .map(|block| block.to_string().into_boxed_str())
        .collect()
}

/// The rest of a block after its id: `,"key":value…}` for the keys of `rest`, `}` when none.
fn rest_json(rest: &Map<String, Value>) -> String {
    // Serializing a map of JSON values cannot fail.
    let object = serde_json::to_string(rest).unwrap_or_default();
    match object.strip_prefix('{') {
        Some(keys) if !rest.is_empty() => format!(",{keys}"),
        _ => "}".to_owned(),
    }
}

/// A block that starts with `head` and the JSON of `id`, then `rest`, and where the id ends.
fn with_id(head: &str, id: &str, rest: &str) -> (Box<str>, u32) {
    let start = format!("{head}{}", Value::String(id.to_owned()));
    let after_id = u32::try_from(start.len()).unwrap_or(u32::MAX);
    (format!("{start}{rest}").into_boxed_str(), after_id)
}

/// The head of a `tool_use` block, before its id.
pub(super) const TOOL_USE_HEAD: &str = r#"{"type":"tool_use","id":"#;
/// The head of a `tool_result` block, before its id.
pub(super) const TOOL_RESULT_HEAD: &str = r#"{"type":"tool_result","tool_use_id":"#;

impl Rendered for AnthropicItem {
    const CELL: usize = CELL;
    const TARGET: Target = Target::AnthropicMessages;

    fn render(json: &str) -> Result<Self, ItemError> {
        let Draft { piece, notes } = render_json(json)?;
        let piece = match piece {
            Piece::Nothing => Sent::Nothing,
            Piece::System(text) => Sent::System(text.into_boxed_str()),
            Piece::User(blocks) => Sent::User(blocks_json(blocks)),
            Piece::Assistant(blocks) => Sent::Assistant(blocks_json(blocks)),
            Piece::ToolUse {
                call_id,
                name,
                input,
            } => {
                let rest = format!(r#","name":{},"input":{input}}}"#, Value::String(name));
                let (block, after_id) = with_id(TOOL_USE_HEAD, &call_id, &rest);
                Sent::ToolUse {
                    call_id: call_id.into_boxed_str(),
                    block,
                    after_id,
                }
            }
            Piece::KeptToolUse { call_id, rest } => {
                let (block, after_id) = with_id(TOOL_USE_HEAD, &call_id, &rest_json(&rest));
                Sent::ToolUse {
                    call_id: call_id.into_boxed_str(),
                    block,
                    after_id,
                }
            }
            Piece::KeptToolResult { call_id, rest } => {
                let (block, after_id) = with_id(TOOL_RESULT_HEAD, &call_id, &rest_json(&rest));
                Sent::ToolResult {
                    call_id: call_id.into_boxed_str(),
                    block,
                    after_id,
                }
            }
            Piece::ToolResult { call_id, content } => {
                let rest = match content {
                    Some(content) => format!(r#","content":{content}}}"#),
                    None => "}".to_owned(),
                };
                let (block, after_id) = with_id(TOOL_RESULT_HEAD, &call_id, &rest);
                Sent::ToolResult {
                    call_id: call_id.into_boxed_str(),
                    block,
                    after_id,
                }
            }
        };
        Ok(AnthropicItem {
            piece,
            notes: notes.into_boxed_slice(),
        })
    }

    fn pairing(&self) -> PairRole<'_> {
        match &self.piece {
            Sent::ToolUse { call_id, .. } => PairRole::Call(call_id),
            Sent::ToolResult { call_id, .. } => PairRole::Output(call_id),
            Sent::User(blocks) | Sent::Assistant(blocks) if !blocks.is_empty() => PairRole::Other,
            // `system` texts are hoisted (read from the units, not the steps), so they do not
            // stand between a call and its output.
            Sent::User(_) | Sent::Assistant(_) | Sent::System(_) | Sent::Nothing => {
                PairRole::Nothing
            }
        }
    }

    fn notes(&self) -> &[TargetRepairKind] {
        &self.notes
    }

    fn part(&self, index: u32) -> &str {
        match &self.piece {
            Sent::System(text) if index == TEXT => text,
            Sent::User(blocks) | Sent::Assistant(blocks) => {
                blocks.get(index as usize).map_or("", |block| block)
            }
            Sent::ToolUse {
                block, after_id, ..
            }
            | Sent::ToolResult {
                block, after_id, ..
            } => match index {
                TEXT => block,
                AFTER_ID => block.get(*after_id as usize..).unwrap_or(""),
                _ => "",
            },
            _ => "",
        }
    }
}

/// An item's rendering and the repairs it took.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Draft {
    pub(crate) piece: Piece,
    pub(crate) notes: Vec<TargetRepairKind>,
}

impl Draft {
    fn new(piece: Piece) -> Draft {
        Draft {
            piece,
            notes: Vec::new(),
        }
    }

    fn dropped(kind: TargetRepairKind) -> Draft {
        Draft {
            piece: Piece::Nothing,
            notes: vec![kind],
        }
    }
}

/// Renders one Responses item given as JSON text.
pub(crate) fn render_json(json: &str) -> Result<Draft, ItemError> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(item)) => Ok(render(&item)),
        Ok(_) => Err(ItemError::InvalidJson {
            item_type: None,
            source: serde::de::Error::custom("an item must be a JSON object"),
        }),
        Err(source) => Err(ItemError::InvalidJson {
            item_type: None,
            source,
        }),
    }
}

fn str_field<'a>(item: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    item.get(key).and_then(Value::as_str)
}

/// The one block `json` renders to on its own (a `tool_use` or `tool_result` under its own id),
/// or `None` when it renders to nothing, to several blocks or to a `system` text: what a source
/// reader compares a block with to know whether the item must keep it
/// ([`ANTHROPIC_BLOCK_KEY`]).
pub(crate) fn rendered_block(json: &str) -> Option<Value> {
    let item = AnthropicItem::render(json).ok()?;
    let block = match &item.piece {
        Sent::User(blocks) | Sent::Assistant(blocks) if blocks.len() == 1 => &blocks[0],
        Sent::ToolUse { block, .. } | Sent::ToolResult { block, .. } => block,
        _ => return None,
    };
    serde_json::from_str(block).ok()
}

fn render(item: &Map<String, Value>) -> Draft {
    if let Some(Value::Object(block)) = item.get(ANTHROPIC_BLOCK_KEY) {
        return render_kept(item, block);
    }
    match str_field(item, "type").unwrap_or("message") {
        "message" => render_message(item),
        "agent_message" => render_agent_message(item),
        "function_call" => render_function_call(item),
        "custom_tool_call" => render_custom_call(item),
        "local_shell_call" => render_local_shell_call(item),
        "function_call_output" | "custom_tool_call_output" => render_output(item),
        // Encrypted content is bound to the provider that made it.
        "reasoning" => Draft::dropped(TargetRepairKind::ReasoningNotSent),
        // `web_search_call`: Anthropic's search is its own server tool, whose `srvtoolu_` ids
        // and encrypted results only Anthropic issues. `tool_search_*`: no client-side tool
        // search (Anthropic's is a server tool too). `image_generation_call`: no image
        // generation. `compaction`: an encrypted summary only OpenAI can read.
        // `additional_tools`: declarations, not messages. Unknown types: nothing to map.
        _ => Draft::dropped(TargetRepairKind::NoEquivalent),
    }
}

/// The block an item keeps, sent as written: a `tool_use` or `tool_result` under its id (mapped
/// by the assembly like any other), any other block in the message of the item's role (a
/// `reasoning` item's `thinking` goes with the assistant's blocks).
fn render_kept(item: &Map<String, Value>, block: &Map<String, Value>) -> Draft {
    let without = |keys: [&str; 2]| -> Map<String, Value> {
        block
            .iter()
            .filter(|(key, _)| !keys.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    };
    match str_field(block, "type") {
        Some("tool_use") => match str_field(block, "id") {
            Some(id) => Draft::new(Piece::KeptToolUse {
                call_id: id.to_owned(),
                rest: without(["type", "id"]),
            }),
            None => without_call_id(),
        },
        Some("tool_result") => match str_field(block, "tool_use_id") {
            Some(id) => Draft::new(Piece::KeptToolResult {
                call_id: id.to_owned(),
                rest: without(["type", "tool_use_id"]),
            }),
            None => Draft::dropped(TargetRepairKind::NoEquivalent),
        },
        _ => {
            let block = Value::Object(block.clone());
            let assistant = str_field(item, "type") == Some("reasoning")
                || str_field(item, "role") == Some("assistant");
            Draft::new(if assistant {
                Piece::Assistant(vec![block])
            } else {
                Piece::User(vec![block])
            })
        }
    }
}

/// A `text` block, or `None` (noted) when the text is empty or only white space: Anthropic
/// refuses empty text blocks and messages whose text is only white space.
fn text_block(text: &str, notes: &mut Vec<TargetRepairKind>) -> Option<Value> {
    if text.trim().is_empty() {
        notes.push(TargetRepairKind::SkippedEmptyText);
        None
    } else {
        Some(json!({"type": "text", "text": text}))
    }
}

fn placeholder_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// An `image` block for an `input_image` part, or the placeholder text (noted).
fn image_block(part: &Map<String, Value>, notes: &mut Vec<TargetRepairKind>) -> Value {
    let url = str_field(part, "image_url");
    let reason = match url {
        Some(url) if url.starts_with("data:") => match data_url_source(url) {
            Ok(source) => return json!({"type": "image", "source": source}),
            Err(reason) => reason,
        },
        Some(url) if url.starts_with("https://") || url.starts_with("http://") => {
            return json!({"type": "image", "source": {"type": "url", "url": url}});
        }
        Some(_) => PlaceholderReason::UnsupportedImageUrl,
        None if part.get("file_id").is_some_and(|id| !id.is_null()) => {
            PlaceholderReason::OpenAiFileId
        }
        None => PlaceholderReason::UnsupportedImageUrl,
    };
    notes.push(TargetRepairKind::ReplacedMedia { reason });
    placeholder_block(IMAGE_PLACEHOLDER)
}

/// `{type: base64, media_type, data}` from `data:<type>;base64,<data>`.
fn data_url_source(url: &str) -> Result<Value, PlaceholderReason> {
    let rest = &url["data:".len()..];
    let (header, data) = rest
        .split_once(',')
        .ok_or(PlaceholderReason::UnsupportedImageUrl)?;
    let mut params = header.split(';');
    let media_type = params.next().unwrap_or("").trim().to_ascii_lowercase();
    if !params.any(|param| param.trim().eq_ignore_ascii_case("base64")) || data.is_empty() {
        return Err(PlaceholderReason::UnsupportedImageUrl);
    }
    if !IMAGE_MEDIA_TYPES.contains(&media_type.as_str()) {
        return Err(PlaceholderReason::UnsupportedMediaType);
    }
    Ok(json!({"type": "base64", "media_type": media_type, "data": data}))
}

/// The blocks of a message's or an output's content parts.
fn content_blocks(parts: &[Value], notes: &mut Vec<TargetRepairKind>) -> Vec<Value> {
    let mut blocks = Vec::new();
    for part in parts {
        let Some(part) = part.as_object() else {
            notes.push(TargetRepairKind::DroppedParts {
                what: "(not an object)".into(),
            });
            continue;
        };
        match str_field(part, "type").unwrap_or("") {
            "input_text" | "output_text" | "text" => {
                blocks.extend(text_block(str_field(part, "text").unwrap_or(""), notes));
            }
            "refusal" => {
                blocks.extend(text_block(str_field(part, "refusal").unwrap_or(""), notes));
            }
            "input_image" => blocks.push(image_block(part, notes)),
            "input_audio" => {
                notes.push(TargetRepairKind::ReplacedMedia {
                    reason: PlaceholderReason::Audio,
                });
                blocks.push(placeholder_block(AUDIO_PLACEHOLDER));
            }
            other => notes.push(TargetRepairKind::DroppedParts { what: other.into() }),
        }
    }
    blocks
}

fn render_message(item: &Map<String, Value>) -> Draft {
    let mut notes = Vec::new();
    let role = str_field(item, "role").unwrap_or("user");
    let blocks = match item.get("content") {
        Some(Value::String(text)) => text_block(text, &mut notes).into_iter().collect(),
        Some(Value::Array(parts)) => content_blocks(parts, &mut notes),
        _ => Vec::new(),
    };
    let piece = match role {
        "system" | "developer" => {
            // Only text reaches `system`; an image there has no place.
            let mut texts = Vec::new();
            for block in &blocks {
                match block.get("text").and_then(Value::as_str) {
                    Some(text) if block.get("type") == Some(&json!("text")) => texts.push(text),
                    _ => notes.push(TargetRepairKind::DroppedParts {
                        what: "image in a system message".into(),
                    }),
                }
            }
            notes.push(TargetRepairKind::HoistedToSystem { role: role.into() });
            Piece::System(texts.join("\n"))
        }
        "assistant" => {
            // Assistant messages take text only: images become their placeholder text.
            let blocks = blocks
                .into_iter()
                .map(|block| {
                    if block.get("type") == Some(&json!("image")) {
                        notes.push(TargetRepairKind::ReplacedMedia {
                            reason: PlaceholderReason::ImageInAssistantMessage,
                        });
                        placeholder_block(IMAGE_PLACEHOLDER)
                    } else {
                        block
                    }
                })
                .collect();
            Piece::Assistant(blocks)
        }
        _ => Piece::User(blocks),
    };
    Draft { piece, notes }
}

fn render_agent_message(item: &Map<String, Value>) -> Draft {
    let mut notes = vec![TargetRepairKind::MappedRole {
        from: "agent_message".into(),
        to: "user".into(),
    }];
    let author = str_field(item, "author").unwrap_or("?");
    let recipient = str_field(item, "recipient").unwrap_or("?");
    let mut text = format!("[message from agent {author} to {recipient}]");
    if let Some(Value::Array(parts)) = item.get("content") {
        for part in parts {
            match part.get("text").and_then(Value::as_str) {
                Some(part_text) => {
                    text.push('\n');
                    text.push_str(part_text);
                }
                None => notes.push(TargetRepairKind::DroppedParts {
                    what: part
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("(untyped)")
                        .into(),
                }),
            }
        }
    }
    Draft {
        piece: Piece::User(vec![json!({"type": "text", "text": text})]),
        notes,
    }
}

fn call_id(item: &Map<String, Value>) -> Option<String> {
    str_field(item, "call_id").map(str::to_owned)
}

fn without_call_id() -> Draft {
    Draft::dropped(TargetRepairKind::DroppedCallWithoutId)
}

fn render_function_call(item: &Map<String, Value>) -> Draft {
    let Some(call_id) = call_id(item) else {
        return without_call_id();
    };
    let mut notes = Vec::new();
    let raw = str_field(item, "arguments").unwrap_or("");
    let input = if raw.trim().is_empty() {
        notes.push(TargetRepairKind::EmptyArguments);
        json!({})
    } else {
        match serde_json::from_str::<Value>(raw) {
            Ok(object @ Value::Object(_)) => object,
            Ok(_) => {
                notes.push(TargetRepairKind::ArgumentsNotObject {
                    fallback: InputFallback::NotAnObject,
                });
                json!({RAW_ARGUMENTS_KEY: raw})
            }
            Err(_) => {
                notes.push(TargetRepairKind::ArgumentsNotObject {
                    fallback: InputFallback::NotJson,
                });
                json!({RAW_ARGUMENTS_KEY: raw})
            }
        }
    };
    Draft {
        piece: Piece::ToolUse {
            call_id,
            name: str_field(item, "name").unwrap_or("").to_owned(),
            input,
        },
        notes,
    }
}

fn render_custom_call(item: &Map<String, Value>) -> Draft {
    let Some(call_id) = call_id(item) else {
        return without_call_id();
    };
    let input = str_field(item, "input").unwrap_or("");
    Draft::new(Piece::ToolUse {
        call_id,
        name: str_field(item, "name").unwrap_or("").to_owned(),
        input: json!({CUSTOM_TOOL_INPUT_KEY: input}),
    })
}

fn render_local_shell_call(item: &Map<String, Value>) -> Draft {
    let Some(call_id) = call_id(item) else {
        return without_call_id();
    };
    let input = match item.get("action") {
        Some(action @ Value::Object(_)) => action.clone(),
        Some(other) => json!({"action": other}),
        None => json!({}),
    };
    Draft::new(Piece::ToolUse {
        call_id,
        name: LOCAL_SHELL_FUNCTION.to_owned(),
        input,
    })
}

fn render_output(item: &Map<String, Value>) -> Draft {
    let Some(call_id) = call_id(item) else {
        return Draft::dropped(TargetRepairKind::NoEquivalent);
    };
    let mut notes = Vec::new();
    let content = match item.get("output") {
        Some(Value::String(text)) if !text.is_empty() => Some(Value::String(text.clone())),
        Some(Value::Array(parts)) => {
            let blocks = content_blocks(parts, &mut notes);
            (!blocks.is_empty()).then_some(Value::Array(blocks))
        }
        _ => None,
    };
    Draft {
        piece: Piece::ToolResult { call_id, content },
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_json(json: &str) -> Draft {
        super::render_json(json).expect("an item")
    }

    fn piece(json: &str) -> Piece {
        render_json(json).piece
    }

    #[test]
    fn data_urls_of_the_four_image_types_become_base64_sources() {
        let rendered = render_json(
            r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/PNG;base64,AAAA","detail":"high"}]}"#,
        );
        assert_eq!(
            rendered.piece,
            Piece::User(vec![
                json!({"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}})
            ])
        );
        assert!(rendered.notes.is_empty());
        let svg = render_json(
            r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/svg+xml;base64,AAAA"}]}"#,
        );
        assert_eq!(
            svg.piece,
            Piece::User(vec![placeholder_block(IMAGE_PLACEHOLDER)])
        );
        assert_eq!(
            svg.notes,
            vec![TargetRepairKind::ReplacedMedia {
                reason: PlaceholderReason::UnsupportedMediaType
            }]
        );
    }

    #[test]
    fn arguments_that_are_not_an_object_are_kept_under_a_key() {
        for (raw, fallback) in [
            ("[1]", InputFallback::NotAnObject),
            ("{oops", InputFallback::NotJson),
        ] {
            let json = json!({"type":"function_call","name":"f","arguments":raw,"call_id":"c"});
            let rendered = render_json(&json.to_string());
            assert_eq!(
                rendered.piece,
                Piece::ToolUse {
                    call_id: "c".into(),
                    name: "f".into(),
                    input: json!({"arguments": raw})
                }
            );
            assert_eq!(
                rendered.notes,
                vec![TargetRepairKind::ArgumentsNotObject { fallback }]
            );
        }
        assert_eq!(
            piece(r#"{"type":"function_call","name":"f","arguments":"","call_id":"c"}"#),
            Piece::ToolUse {
                call_id: "c".into(),
                name: "f".into(),
                input: json!({})
            }
        );
    }

    #[test]
    fn whitespace_only_text_is_skipped() {
        let rendered = render_json(
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":" \n"}]}"#,
        );
        assert_eq!(rendered.piece, Piece::Assistant(vec![]));
        assert_eq!(rendered.notes, vec![TargetRepairKind::SkippedEmptyText]);
    }
}
