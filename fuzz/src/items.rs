//! Shaped item JSON for the targets that drive a history: every item kind of the wire model, over
//! tiny pools of call ids, item ids and texts, so that collisions (duplicate calls, outputs
//! without calls, calls without outputs, empty ids) are the common case rather than a rarity.
//!
//! Each generated item says what it is for turn counting ([`TurnClass`]), worked out here from
//! the documented rules (`docs/codex-compatibility.md`) and the public text classifiers, so that
//! a model of the history can check the library's own classification.

use agent_history::{
    SUMMARY_PREFIX, is_contextual_developer_text, is_contextual_user_text, is_summary_text,
};
use arbitrary::Arbitrary;
use serde_json::{Value, json};

/// Call ids: the empty one, and three that collide constantly.
pub const CALL_IDS: [&str; 4] = ["", "a", "b", "c"];
/// Item ids: none, empty (no synthetic id can derive from it), and two real ones.
pub const ITEM_IDS: [Option<&str>; 4] = [None, Some(""), Some("x"), Some("y")];

/// The texts the items carry: short, empty, escapes and separators, the two halves of a
/// contextual fragment (which joined by `\n` read as context), an inter-agent instruction and
/// one short of its shape, and long texts that make compaction's 20,000-token budget and
/// record-time truncation cut.
pub fn text(choice: u8) -> String {
    match choice % 13 {
        0 => "hi".into(),
        1 => String::new(),
        2 => "ünï\u{2028}\"\\\n\t\u{0}".into(),
        3 => "<skill>".into(),
        4 => "</skill>".into(),
        5 => "x".repeat(101),
        6 => "  run the tests  ".into(),
        7 => {
            r#"{"author":"/root","recipient":"/root/w","content":"go","trigger_turn":true}"#.into()
        }
        12 => r#"{"author":"/root","recipient":"/root/w"}"#.into(),
        8 => "<environment_context>\n<cwd>/x</cwd>\n</environment_context>".into(),
        9 => format!("{SUMMARY_PREFIX}\nwhat happened"),
        10 => "<permissions instructions>\nsandbox".into(),
        _ => "\u{1F600}".repeat(3),
    }
}

/// A long text: 1,000 to 45,000 bytes (250 to 11,250 tokens).
pub fn long_text(choice: u8) -> String {
    "y".repeat(1_000 + 4_000 * usize::from(choice % 12))
}

/// What an item means for user-turn counting and rollback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnClass {
    /// Starts a user turn.
    Boundary,
    /// Context a harness injected: trimmed above a rolled-back turn; `mixed` when a developer
    /// message also holds other text (trimming it clears the reference context item).
    Context {
        /// See above.
        mixed: bool,
    },
    /// Anything else.
    Other,
}

/// The class of a message from its role and text parts (`input_text` and `output_text`):
/// a user message is context when any part is a contextual fragment, not a turn when its first
/// part is a summary, and a turn otherwise; a developer message is context when any part is a
/// contextual fragment (mixed when not all are); an assistant message whose only text part is an
/// inter-agent instruction (a JSON object with agent paths `author` and `recipient`, a string
/// `content` and a boolean `trigger_turn`) is a turn.
pub fn message_class(role: &str, texts: &[String]) -> TurnClass {
    match role {
        "user" => {
            if texts.iter().any(|text| is_contextual_user_text(text)) {
                TurnClass::Context { mixed: false }
            } else if texts.first().is_some_and(|text| is_summary_text(text)) {
                TurnClass::Other
            } else {
                TurnClass::Boundary
            }
        }
        "developer" => {
            let contextual = texts
                .iter()
                .filter(|text| is_contextual_developer_text(text))
                .count();
            if contextual == 0 {
                TurnClass::Other
            } else {
                TurnClass::Context {
                    mixed: contextual < texts.len(),
                }
            }
        }
        "assistant" => match texts {
            [only] if is_inter_agent(only) => TurnClass::Boundary,
            _ => TurnClass::Other,
        },
        _ => TurnClass::Other,
    }
}

fn is_inter_agent(text: &str) -> bool {
    let is_path = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .is_some_and(|path| path == "/root" || path.starts_with("/root/"))
    };
    text.trim_start().starts_with('{')
        && serde_json::from_str::<Value>(text).is_ok_and(|value| {
            is_path(value.get("author"))
                && is_path(value.get("recipient"))
                && value.get("content").is_some_and(Value::is_string)
                && value.get("trigger_turn").is_some_and(Value::is_boolean)
        })
}

/// Whether a user message made of `texts` is real user input, which compaction keeps: no part
/// is contextual, the first is not a summary, and there is at least one text part.
pub fn is_real_user_input(texts: &[String]) -> bool {
    !texts.is_empty()
        && !texts.iter().any(|text| is_contextual_user_text(text))
        && !texts.first().is_some_and(|text| is_summary_text(text))
}

/// The kind of item to generate.
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    UserText,
    UserTwoTexts,
    UserOutputText,
    UserLong,
    UserImage,
    UserAudio,
    UserNoText,
    Developer,
    DeveloperTwoTexts,
    Assistant,
    AssistantTwoTexts,
    System,
    AgentMessage,
    Reasoning,
    FunctionCall,
    LocalShellCall,
    CustomToolCall,
    ToolSearchCall,
    FunctionCallOutput,
    NamedOutputWithoutCallId,
    CustomToolCallOutput,
    ToolSearchOutput,
    WebSearchCall,
    ImageGenerationCall,
    Compaction,
    CompactionSummaryAlias,
    ContextCompaction,
    AdditionalTools,
    CompactionTrigger,
    Unknown,
}

/// One item to generate: its shape and the choices that fill it in.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct GenItem {
    /// What it is.
    pub shape: Shape,
    /// Index into [`CALL_IDS`].
    pub call: u8,
    /// Index into [`ITEM_IDS`].
    pub id: u8,
    /// Index of the text (see [`text`]).
    pub text: u8,
    /// A second choice: the second text part, the body of an output, and so on.
    pub variant: u8,
    /// A flag whose meaning depends on the shape (server execution, null call id, …).
    pub flag: bool,
    /// Adds a field this library does not model, which must survive verbatim.
    pub extra: bool,
}

/// A generated item.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Its JSON text.
    pub json: String,
    /// What it means for turn counting.
    pub class: TurnClass,
    /// The text parts of a user message (what compaction reads); `None` for anything else.
    pub user_texts: Option<Vec<String>>,
    /// The record rules keep it out of a history (`system` messages, `compaction_trigger`, a
    /// client `tool_search_call` without a call id).
    pub filtered: bool,
}

fn input_text(text: &str) -> Value {
    json!({"type": "input_text", "text": text})
}

fn image_part(variant: u8) -> Value {
    match variant % 3 {
        0 => json!({"type": "input_image", "image_url": "data:image/png;base64,AAAA"}),
        1 => json!({"type": "input_image", "file_id": "file_1", "detail": "original"}),
        _ => json!({"type": "input_image"}),
    }
}

fn audio_part() -> Value {
    json!({"type": "input_audio", "audio_url": "data:audio/wav;base64,AAAA"})
}

/// A tool output's body: a string (sometimes long enough for record-time truncation), or an
/// array of parts with images, audio, text and encrypted content.
fn output_body(variant: u8, text_choice: u8) -> Value {
    match variant % 8 {
        0 | 1 => json!(text(text_choice)),
        2 => json!(long_text(text_choice)),
        3 => json!([input_text("see"), image_part(text_choice)]),
        4 => json!([audio_part()]),
        5 => json!([input_text(&long_text(text_choice))]),
        6 => json!([{"type": "encrypted_content", "encrypted_content": "gAAAA"}, image_part(0)]),
        _ => json!([]),
    }
}

/// A message item with its text parts (`input_text` and `output_text` only).
fn message(role: &str, parts: Vec<Value>, texts: Vec<String>) -> Generated {
    Generated {
        json: json!({"type": "message", "role": role, "content": parts}).to_string(),
        class: message_class(role, &texts),
        user_texts: (role == "user").then_some(texts),
        filtered: role == "system",
    }
}

/// An item that is not a message.
fn plain(value: Value) -> Generated {
    Generated {
        json: value.to_string(),
        class: TurnClass::Other,
        user_texts: None,
        filtered: false,
    }
}

impl GenItem {
    /// The item's call id.
    pub fn call_id(&self) -> &'static str {
        CALL_IDS[usize::from(self.call) % CALL_IDS.len()]
    }

    /// Builds the item.
    pub fn build(&self) -> Generated {
        let mut generated = self.build_bare();
        if matches!(self.shape, Shape::CompactionTrigger) {
            return generated;
        }
        let mut value: Value = serde_json::from_str(&generated.json).expect("generated JSON");
        if let Some(object) = value.as_object_mut() {
            if let Some(id) = ITEM_IDS[usize::from(self.id) % ITEM_IDS.len()] {
                object.insert("id".into(), json!(id));
            }
            if self.extra {
                object.insert("x-extra".into(), json!({"kept": [1, 2.5, null]}));
            }
        }
        generated.json = value.to_string();
        generated
    }

    fn build_bare(&self) -> Generated {
        let call = self.call_id();
        let nullable_call = if self.flag { Value::Null } else { json!(call) };
        let execution = if self.variant % 2 == 1 {
            "server"
        } else {
            "client"
        };
        let first = text(self.text);
        let second = text(self.variant);
        let output_text = |text: &str| json!({"type": "output_text", "text": text});
        match self.shape {
            Shape::UserText => message("user", vec![input_text(&first)], vec![first]),
            Shape::UserTwoTexts => message(
                "user",
                vec![input_text(&first), input_text(&second)],
                vec![first, second],
            ),
            Shape::UserOutputText => message("user", vec![output_text(&first)], vec![first]),
            Shape::UserLong => {
                let long = long_text(self.variant);
                message("user", vec![input_text(&long)], vec![long])
            }
            Shape::UserImage => message(
                "user",
                vec![input_text(&first), image_part(self.variant)],
                vec![first],
            ),
            Shape::UserAudio => message("user", vec![audio_part()], Vec::new()),
            Shape::UserNoText => message("user", Vec::new(), Vec::new()),
            Shape::Developer => message("developer", vec![input_text(&first)], vec![first]),
            Shape::DeveloperTwoTexts => message(
                "developer",
                vec![input_text(&first), input_text(&second)],
                vec![first, second],
            ),
            Shape::Assistant => message("assistant", vec![output_text(&first)], vec![first]),
            Shape::AssistantTwoTexts => message(
                "assistant",
                vec![output_text(&first), output_text(&second)],
                vec![first, second],
            ),
            Shape::System => message("system", vec![input_text(&first)], vec![first]),
            Shape::AgentMessage => Generated {
                class: TurnClass::Boundary,
                ..plain(json!({"type": "agent_message", "author": "/root",
                    "recipient": "/root/w", "content": [input_text(&first)]}))
            },
            Shape::Reasoning => {
                let encrypted = if self.flag {
                    json!("g".repeat(900))
                } else {
                    Value::Null
                };
                plain(json!({"type": "reasoning",
                    "summary": [{"type": "summary_text", "text": first}],
                    "content": null, "encrypted_content": encrypted}))
            }
            Shape::FunctionCall => plain(
                json!({"type": "function_call", "name": "f", "arguments": "{}", "call_id": call}),
            ),
            Shape::LocalShellCall => plain(json!({"type": "local_shell_call",
                "call_id": nullable_call, "status": "completed",
                "action": {"type": "exec", "command": ["ls"], "timeout_ms": null,
                    "working_directory": null, "env": null, "user": null}})),
            Shape::CustomToolCall => plain(
                json!({"type": "custom_tool_call", "call_id": call, "name": "t", "input": first}),
            ),
            // Canonical arguments; a client call without a call id is not recorded.
            Shape::ToolSearchCall => Generated {
                filtered: execution == "client" && (self.flag || call.is_empty()),
                ..plain(json!({"type": "tool_search_call",
                    "call_id": nullable_call, "execution": execution,
                    "arguments": {"query": first}}))
            },
            Shape::FunctionCallOutput => plain(json!({"type": "function_call_output",
                "call_id": call, "output": output_body(self.variant, self.text)})),
            Shape::NamedOutputWithoutCallId => plain(json!({"type": "function_call_output",
                "name": "event", "output": output_body(self.variant, self.text)})),
            Shape::CustomToolCallOutput => plain(json!({"type": "custom_tool_call_output",
                "call_id": call, "output": output_body(self.variant, self.text)})),
            Shape::ToolSearchOutput => plain(json!({"type": "tool_search_output",
                "call_id": nullable_call, "status": "completed", "execution": execution,
                "tools": []})),
            Shape::WebSearchCall => plain(json!({"type": "web_search_call",
                "status": "completed", "action": {"type": "search", "query": first}})),
            Shape::ImageGenerationCall => {
                let result = if self.flag { "" } else { "Zm9v" };
                plain(
                    json!({"type": "image_generation_call", "status": "completed",
                    "result": result}),
                )
            }
            Shape::Compaction => {
                plain(json!({"type": "compaction", "encrypted_content": "g".repeat(1_000)}))
            }
            Shape::CompactionSummaryAlias => {
                plain(json!({"type": "compaction_summary", "encrypted_content": "gAAAA"}))
            }
            Shape::ContextCompaction => plain(json!({"type": "context_compaction"})),
            Shape::AdditionalTools => plain(json!({"type": "additional_tools",
                "role": "developer", "tools": [{"name": "t"}]})),
            Shape::CompactionTrigger => Generated {
                filtered: true,
                ..plain(json!({"type": "compaction_trigger"}))
            },
            Shape::Unknown => {
                if self.flag {
                    plain(json!({"type": "future_item", "call_id": call,
                        "content": [image_part(0), audio_part()]}))
                } else {
                    plain(json!({"type": "future_item", "call_id": call}))
                }
            }
        }
    }
}
