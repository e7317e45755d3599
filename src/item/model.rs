//! The typed wire model of Responses API items as Codex writes them
//! (`docs/codex-compatibility.md`, "Items").
//!
//! These types are for building items and for the few operations that need a typed view. The
//! history itself stores each item as JSON text (see [`Entry`](crate::Entry)), so fields this model
//! does not know survive when an item is read from JSON: it is never re-serialized from here.
//!
//! Serialization follows Codex: optional fields are omitted when absent, except where noted
//! (`reasoning.encrypted_content`, `local_shell_call.call_id`, the `tool_search_*` `call_id`),
//! and `reasoning.content` follows its own rule (see [`Reasoning`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::{CallId, ItemId};

/// Host metadata carried verbatim under `internal_chat_message_metadata_passthrough`.
///
/// This library never interprets it (it is outside the project's scope); it is kept so that it
/// round-trips.
pub type Metadata = Value;

/// A Responses API item: one element of a model request's `input`.
///
/// The JSON form is internally tagged by `"type"` with the snake_case variant name. An unknown
/// type reads as [`ResponseItem::Other`]; raw JSON recorded into a history keeps the full text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResponseItem {
    /// A chat message (`user`, `assistant`, `developer`, `system`).
    Message(Message),
    /// A message between agents of a multi-agent thread.
    AgentMessage(AgentMessage),
    /// Model reasoning: summaries, optional plaintext content, encrypted content.
    Reasoning(Reasoning),
    /// A call of the built-in local shell tool; answered by a `function_call_output`.
    LocalShellCall(LocalShellCall),
    /// A function tool call; answered by a `function_call_output`.
    FunctionCall(FunctionCall),
    /// The output of a function or local shell call.
    FunctionCallOutput(FunctionCallOutput),
    /// A free-form (custom) tool call; answered by a `custom_tool_call_output`.
    CustomToolCall(CustomToolCall),
    /// The output of a custom tool call.
    CustomToolCallOutput(CustomToolCallOutput),
    /// A tool-search call; answered by a `tool_search_output`.
    ToolSearchCall(ToolSearchCall),
    /// The tools a tool search found.
    ToolSearchOutput(ToolSearchOutput),
    /// A server-side web search.
    WebSearchCall(WebSearchCall),
    /// A server-side image generation, with the image as base64.
    ImageGenerationCall(ImageGenerationCall),
    /// An encrypted compaction summary (also read under the alias `compaction_summary`).
    #[serde(alias = "compaction_summary")]
    Compaction(Compaction),
    /// A context-compaction item.
    ContextCompaction(ContextCompaction),
    /// Tool declarations injected as an input item.
    AdditionalTools(AdditionalTools),
    /// A request control item; never recorded, never persisted.
    CompactionTrigger,
    /// Any type this model does not know. Serializes as `{"type":"other"}`: keep the original JSON
    /// (as [`Entry`](crate::Entry) does) when the content matters.
    #[serde(other)]
    Other,
}

impl ResponseItem {
    /// The item's `id`, when it has one (`None` for the variants without an id field).
    pub fn id(&self) -> Option<&ItemId> {
        match self {
            ResponseItem::Message(item) => item.id.as_ref(),
            ResponseItem::AgentMessage(item) => item.id.as_ref(),
            ResponseItem::Reasoning(item) => item.id.as_ref(),
            ResponseItem::LocalShellCall(item) => item.id.as_ref(),
            ResponseItem::FunctionCall(item) => item.id.as_ref(),
            ResponseItem::FunctionCallOutput(item) => item.id.as_ref(),
            ResponseItem::CustomToolCall(item) => item.id.as_ref(),
            ResponseItem::CustomToolCallOutput(item) => item.id.as_ref(),
            ResponseItem::ToolSearchCall(item) => item.id.as_ref(),
            ResponseItem::ToolSearchOutput(item) => item.id.as_ref(),
            ResponseItem::WebSearchCall(item) => item.id.as_ref(),
            ResponseItem::ImageGenerationCall(item) => item.id.as_ref(),
            ResponseItem::Compaction(item) => item.id.as_ref(),
            ResponseItem::ContextCompaction(item) => item.id.as_ref(),
            ResponseItem::AdditionalTools(item) => item.id.as_ref(),
            ResponseItem::CompactionTrigger | ResponseItem::Other => None,
        }
    }
}

/// A message role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user (or a harness speaking for the user: context messages).
    User,
    /// The model.
    Assistant,
    /// The harness's instructions.
    Developer,
    /// System messages; never recorded into a history.
    System,
}

impl Role {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Developer => "developer",
            Role::System => "system",
        }
    }
}

/// Where a message sits in the model's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessagePhase {
    /// Commentary before the answer.
    Commentary,
    /// Part of the answer.
    PartialAnswer,
    /// The final answer.
    FinalAnswer,
}

/// The detail level of an image part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageDetail {
    /// Let the provider choose.
    Auto,
    /// Low detail.
    Low,
    /// High detail (what Codex uses when it creates images).
    High,
    /// Original resolution.
    Original,
}

/// A content part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentItem {
    /// Text given to the model.
    InputText {
        /// The text.
        text: String,
    },
    /// An image given to the model, by URL (often a data URL) or by file id.
    InputImage(ImagePart),
    /// Audio given to the model as a data URL.
    InputAudio {
        /// The data URL.
        audio_url: String,
    },
    /// Text the model produced.
    OutputText {
        /// The text.
        text: String,
        /// Annotations; an empty array is kept distinct from an absent one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Vec<Value>>,
        /// Log probabilities; an empty array is kept distinct from an absent one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        logprobs: Option<Vec<Value>>,
    },
    /// A part of a type this model does not know.
    #[serde(other)]
    Other,
}

/// An image part: exactly one of `image_url` and `file_id` is normally set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ImagePart {
    /// The image URL (often `data:image/png;base64,…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_url: Option<String>,
    /// An uploaded file's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// The detail level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<ImageDetail>,
}

/// A part of a tool output given as an array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputContentItem {
    /// Text.
    InputText {
        /// The text.
        text: String,
    },
    /// An image.
    InputImage(ImagePart),
    /// Audio as a data URL.
    InputAudio {
        /// The data URL.
        audio_url: String,
    },
    /// Encrypted content.
    EncryptedContent {
        /// The ciphertext.
        encrypted_content: String,
    },
    /// A part of a type this model does not know.
    #[serde(other)]
    Other,
}

/// The `output` of a tool output item: a plain string or an array of parts.
///
/// Codex's internal `success` flag is never serialized, so it is not modelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OutputPayload {
    /// A string body.
    Text(String),
    /// An array body.
    ContentItems(Vec<OutputContentItem>),
}

impl OutputPayload {
    /// A string body.
    pub fn text(text: impl Into<String>) -> Self {
        OutputPayload::Text(text.into())
    }
}

/// A part of an agent message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentContentItem {
    /// Text.
    InputText {
        /// The text.
        text: String,
    },
    /// Encrypted content.
    EncryptedContent {
        /// The ciphertext.
        encrypted_content: String,
    },
    /// A part of a type this model does not know.
    #[serde(other)]
    Other,
}

/// A reasoning summary part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReasoningSummary {
    /// Summary text.
    SummaryText {
        /// The text.
        text: String,
    },
    /// A part of a type this model does not know.
    #[serde(other)]
    Other,
}

/// A reasoning content part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReasoningContent {
    /// Raw reasoning text.
    ReasoningText {
        /// The text.
        text: String,
    },
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A part of a type this model does not know.
    #[serde(other)]
    Other,
}

/// `message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Role.
    pub role: Role,
    /// Content parts.
    pub content: Vec<ContentItem>,
    /// Phase of an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<MessagePhase>,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Encrypted content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

impl Message {
    /// A message with one text part: `input_text` for user, developer and system messages,
    /// `output_text` for assistant messages.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        let text = text.into();
        let part = match role {
            Role::Assistant => ContentItem::OutputText {
                text,
                annotations: None,
                logprobs: None,
            },
            Role::User | Role::Developer | Role::System => ContentItem::InputText { text },
        };
        Message {
            id: None,
            role,
            content: vec![part],
            phase: None,
            status: None,
            encrypted_content: None,
            meta: None,
        }
    }
}

/// `agent_message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentMessage {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// The sending agent's path, e.g. `/root`.
    pub author: String,
    /// The receiving agent's path.
    pub recipient: String,
    /// Content parts.
    pub content: Vec<AgentContentItem>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// `reasoning`.
///
/// Serialization rule for `content` (as Codex writes it): the key is skipped only when it is present
/// and holds no `reasoning_text` part; when absent it is written as `null`. `encrypted_content`
/// is always written, `null` when absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Summary parts (always present).
    #[serde(default)]
    pub summary: Vec<ReasoningSummary>,
    /// Plaintext reasoning content.
    #[serde(default, skip_serializing_if = "content_has_no_reasoning_text")]
    pub content: Option<Vec<ReasoningContent>>,
    /// Encrypted reasoning.
    #[serde(default)]
    pub encrypted_content: Option<String>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

fn content_has_no_reasoning_text(content: &Option<Vec<ReasoningContent>>) -> bool {
    match content {
        None => false,
        Some(parts) => !parts
            .iter()
            .any(|part| matches!(part, ReasoningContent::ReasoningText { .. })),
    }
}

/// Status of a local shell call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalShellStatus {
    /// Finished.
    Completed,
    /// Running.
    InProgress,
    /// Stopped before finishing.
    Incomplete,
}

/// The action of a local shell call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LocalShellAction {
    /// Run a command. Every field but `command` is nullable and always written.
    Exec {
        /// Program and arguments.
        command: Vec<String>,
        /// Timeout in milliseconds.
        #[serde(default)]
        timeout_ms: Option<u64>,
        /// Working directory.
        #[serde(default)]
        working_directory: Option<String>,
        /// Environment variables.
        #[serde(default)]
        env: Option<std::collections::BTreeMap<String, String>>,
        /// User to run as.
        #[serde(default)]
        user: Option<String>,
    },
}

/// `local_shell_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalShellCall {
    /// Item id (legacy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Call id; the key is always written, `null` allowed.
    #[serde(default)]
    pub call_id: Option<CallId>,
    /// Status.
    pub status: LocalShellStatus,
    /// What to run.
    pub action: LocalShellAction,
    /// Encrypted content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// `function_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Function name.
    pub name: String,
    /// Tool namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Arguments: a string containing JSON.
    pub arguments: String,
    /// Call id.
    pub call_id: CallId,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Encrypted content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Encrypted arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_function_args: Option<Vec<String>>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// `function_call_output`.
///
/// Without a `call_id` but with a `name` it is an external tool event, kept by projection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCallOutput {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Call id (optional in the newest format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<CallId>,
    /// Tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Tool namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The output.
    pub output: OutputPayload,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

impl FunctionCallOutput {
    /// The text output of the call `call_id`: what a tool runner records once the tool ran.
    ///
    /// ```
    /// use agent_history::{FunctionCallOutput, ResponseItem};
    ///
    /// let item = ResponseItem::FunctionCallOutput(FunctionCallOutput::text("call_1", "ok"));
    /// assert_eq!(
    ///     serde_json::to_string(&item)?,
    ///     r#"{"type":"function_call_output","call_id":"call_1","output":"ok"}"#
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn text(call_id: impl Into<CallId>, text: impl Into<String>) -> Self {
        FunctionCallOutput {
            id: None,
            call_id: Some(call_id.into()),
            name: None,
            namespace: None,
            output: OutputPayload::text(text),
            meta: None,
        }
    }
}

/// `custom_tool_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomToolCall {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Call id.
    pub call_id: CallId,
    /// Tool name.
    pub name: String,
    /// Tool namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Free-form input.
    pub input: String,
    /// Encrypted content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// `custom_tool_call_output`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomToolCallOutput {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Call id.
    pub call_id: CallId,
    /// Tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The output (older files: always a string).
    pub output: OutputPayload,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// Where a tool search runs: the `execution` of `tool_search_call` and `tool_search_output`.
///
/// Reads and writes as a string; a value other than `"client"` and `"server"` is kept as it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Execution {
    /// `"client"`: the harness runs the search and answers with a `tool_search_output`.
    Client,
    /// `"server"`: the provider runs it; its output needs no call in the history.
    Server,
    /// Any other value, verbatim.
    Other(String),
}

impl Execution {
    /// The wire text.
    pub fn as_str(&self) -> &str {
        match self {
            Execution::Client => "client",
            Execution::Server => "server",
            Execution::Other(text) => text,
        }
    }
}

impl Serialize for Execution {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Execution {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(match text.as_ref() {
            "client" => Execution::Client,
            "server" => Execution::Server,
            _ => Execution::Other(text.into_owned()),
        })
    }
}

/// `tool_search_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSearchCall {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Call id; the key is always written, `null` allowed.
    #[serde(default)]
    pub call_id: Option<CallId>,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Where the search runs.
    pub execution: Execution,
    /// Arguments: any JSON value (not a string).
    pub arguments: Value,
    /// Encrypted content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// `tool_search_output`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSearchOutput {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Call id; the key is always written, `null` allowed.
    #[serde(default)]
    pub call_id: Option<CallId>,
    /// Status.
    pub status: String,
    /// Where the search ran.
    pub execution: Execution,
    /// Tool definitions found.
    pub tools: Vec<Value>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// The action of a web search call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum WebSearchAction {
    /// A search.
    Search {
        /// The query.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
        /// Several queries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        queries: Option<Vec<String>>,
    },
    /// Opening a page.
    OpenPage {
        /// The page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
    /// Finding text in a page.
    FindInPage {
        /// The page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// The text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pattern: Option<String>,
    },
    /// Any other action.
    #[serde(other)]
    Other,
}

/// `web_search_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebSearchCall {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<WebSearchAction>,
    /// Encrypted content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// `image_generation_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageGenerationCall {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Status.
    pub status: String,
    /// The prompt the model used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revised_prompt: Option<String>,
    /// The image, base64.
    pub result: String,
    /// Encrypted content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// `compaction` (alias `compaction_summary`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compaction {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// The encrypted summary.
    pub encrypted_content: String,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// `context_compaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextCompaction {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// The encrypted summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Host metadata, kept verbatim.
    #[serde(
        default,
        rename = "internal_chat_message_metadata_passthrough",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Metadata>,
}

/// `additional_tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdditionalTools {
    /// Item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Role, e.g. `developer`.
    pub role: Role,
    /// Tool definitions.
    pub tools: Vec<Value>,
}
