//! Validators: which error a model API would return for a given input, predicted before sending.
//!
//! [`validate`] takes any request body (or a bare `input` / `messages` array) as JSON, whoever
//! produced it, and returns every rule it breaks for one [`Target`]: where (the position as that
//! API names it), which ids, and the error text that API returns, with the ids filled in. Input
//! that is not of the expected shape at all is a [`Rule::Shape`] finding, never a panic.
//! `docs/validation.md` lists every rule, its wording, its severity and how sure the wording is.

mod anthropic;
mod chat;
mod responses;

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::Target;

/// Checks `input` against the rules of `target` and returns every finding.
///
/// `input` is a whole request body (an object: Responses' `input`, which may be a string;
/// Chat Completions' `messages`; Anthropic's `system`, `messages`, `tools` and `max_tokens`) or a
/// bare array of items or messages. Rules about the body itself (Anthropic's `max_tokens` and
/// `tools`) are only checked when a body is given.
///
/// ```
/// use agent_history::{Rule, Target, validate};
/// use serde_json::json;
///
/// let body = json!({"messages": [
///     {"role": "user", "content": "hi"},
///     {"role": "assistant", "content": null,
///      "tool_calls": [{"id": "call_1", "type": "function",
///                      "function": {"name": "shell", "arguments": "{}"}}]},
///     {"role": "user", "content": "go on"},
/// ]});
/// let validation = validate(Target::ChatCompletions, &body);
/// assert!(!validation.is_valid());
/// let finding = &validation.findings[0];
/// assert_eq!(finding.rule, Rule::ChatCallsWithoutToolMessages);
/// assert_eq!(finding.position, "messages.[2].role");
/// assert!(finding.message.ends_with("did not have response messages: call_1"));
/// ```
pub fn validate(target: Target, input: &Value) -> Validation {
    let mut findings = Findings::default();
    match target {
        Target::Responses => responses::check(input, &mut findings),
        Target::ChatCompletions => chat::check(input, &mut findings),
        Target::AnthropicMessages => anthropic::check(input, &mut findings),
    }
    let mut findings = findings.0;
    // In the order of the input: by item (stable, so a message's own findings keep their
    // order), the body's own findings last.
    findings.sort_by_key(|finding| finding.item.unwrap_or(usize::MAX));
    Validation { target, findings }
}

/// What [`validate`] found: every finding, in the order of the input.
///
/// Serializes as `{"target", "findings"}` (`docs/json-output.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Validation {
    /// The target the input was checked for.
    pub target: Target,
    /// Every rule broken, in the order of the input (body-level findings last).
    pub findings: Vec<Finding>,
}

impl Validation {
    /// Whether the target would accept the input: no finding of [`Severity::Error`] (warnings
    /// are allowed).
    pub fn is_valid(&self) -> bool {
        self.errors().next().is_none()
    }

    /// Whether nothing at all was found, warnings included.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// The findings the target rejects.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|finding| finding.severity == Severity::Error)
    }

    /// The findings the target may not enforce.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|finding| finding.severity == Severity::Warning)
    }

    /// The findings of one rule.
    pub fn of_rule(&self, rule: Rule) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(move |finding| finding.rule == rule)
    }
}

/// One rule an input breaks, where, and the error the provider would return.
///
/// Serializes as `{"rule", "severity", "wording", "position", "item", "ids", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// The rule broken.
    pub rule: Rule,
    /// Whether the provider rejects the input for it, or may not.
    pub severity: Severity,
    /// Whether `message` is the provider's confirmed wording.
    pub wording: Wording,
    /// Where, as the provider names the place: `input[3]`, `messages.[4].role`,
    /// `messages.4.content.1`, `tools.2`, or the whole input (`input`, `messages`).
    pub position: String,
    /// The index of the item or message concerned in the input array (none for the body).
    pub item: Option<usize>,
    /// The call ids (or item ids) involved.
    pub ids: Vec<String>,
    /// The provider's error text with the ids filled in ([`Wording::Exact`]), or this crate's
    /// description when the provider's is not known ([`Wording::Unconfirmed`]).
    pub message: String,
}

impl fmt::Display for Finding {
    /// `messages.[2].role: error chat_calls_without_tool_messages: An assistant message …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} {}: {}",
            self.position, self.severity, self.rule, self.message
        )?;
        if self.wording == Wording::Unconfirmed {
            f.write_str(" (wording not confirmed)")?;
        }
        Ok(())
    }
}

/// Whether the provider rejects an input for a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The provider rejects the request (an HTTP 400).
    Error,
    /// The provider may accept it: the rule is enforced only by some models or compatible
    /// servers, or its enforcement is not confirmed, or the input is accepted but loses
    /// something.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// Whether a finding's message is the provider's own text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wording {
    /// The text the provider was seen to return, with the variable parts filled in.
    Exact,
    /// No provider text is confirmed (or it was only seen paraphrased): the message is this
    /// crate's description of the problem.
    Unconfirmed,
}

/// The rules, each with its doc and its snake_case name: the enum [`Rule`] and [`Rule::name`].
macro_rules! rules {
    ($($(#[$doc:meta])* $rule:ident = $name:literal,)*) => {
        /// The rules the validators check, per target (`docs/validation.md` describes each).
        ///
        /// Serializes as its snake_case name ([`Rule::name`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "snake_case")]
        #[non_exhaustive]
        pub enum Rule {
            $($(#[$doc])* $rule,)*
        }

        impl Rule {
            /// The rule's snake_case name, as it serializes.
            pub fn name(self) -> &'static str {
                match self {
                    $(Rule::$rule => $name,)*
                }
            }
        }
    };
}

rules! {
    /// The input is not of the shape the target expects at all (not an object or array, a
    /// message without a role, a call without an id, …). The message is this crate's.
    Shape = "shape",
    /// Responses: a `function_call` (or `local_shell_call`) has no `function_call_output`.
    ResponsesCallWithoutOutput = "responses_call_without_output",
    /// Responses: a `function_call_output` has no `function_call` or `local_shell_call`.
    ResponsesOutputWithoutCall = "responses_output_without_call",
    /// Responses: a `custom_tool_call` has no `custom_tool_call_output`.
    ResponsesCustomCallWithoutOutput = "responses_custom_call_without_output",
    /// Responses: a `custom_tool_call_output` has no `custom_tool_call`.
    ResponsesCustomOutputWithoutCall = "responses_custom_output_without_call",
    /// Responses: a client-executed `tool_search_call` has no `tool_search_output`.
    ResponsesToolSearchWithoutOutput = "responses_tool_search_without_output",
    /// Responses: two items share an `id`.
    ResponsesDuplicateItemId = "responses_duplicate_item_id",
    /// Responses: two calls of one family share a `call_id`.
    ResponsesDuplicateCallId = "responses_duplicate_call_id",
    /// Responses: a `call_id` longer than 64 characters.
    ResponsesCallIdTooLong = "responses_call_id_too_long",
    /// Responses: a `reasoning` item not followed by an item the model produced.
    ResponsesReasoningWithoutFollowingItem = "responses_reasoning_without_following_item",
    /// Responses: an assistant message's content part is not `output_text` or `refusal`.
    ResponsesAssistantContentType = "responses_assistant_content_type",
    /// Responses: a message whose `content` is null.
    ResponsesNullContent = "responses_null_content",
    /// Responses: a call's output does not follow it directly (strict compatible servers).
    ResponsesOutputNotAdjacent = "responses_output_not_adjacent",
    /// Chat: an assistant message's `tool_calls` are not all answered by the `tool` messages
    /// right after it.
    ChatCallsWithoutToolMessages = "chat_calls_without_tool_messages",
    /// Chat: a `tool` message that answers no call of the tool-call message right before it.
    ChatToolMessageWithoutCall = "chat_tool_message_without_call",
    /// Chat: two `tool` messages answer the same call id.
    ChatDuplicateToolMessage = "chat_duplicate_tool_message",
    /// Chat: two tool calls share an id.
    ChatDuplicateCallId = "chat_duplicate_call_id",
    /// Chat: `tool_calls` is an empty array.
    ChatEmptyToolCalls = "chat_empty_tool_calls",
    /// Chat: a tool call's name is empty.
    ChatEmptyFunctionName = "chat_empty_function_name",
    /// Chat: an assistant message without `tool_calls` has null or no `content`.
    ChatNullAssistantContent = "chat_null_assistant_content",
    /// Chat: a tool call id longer than 40 characters.
    ChatCallIdTooLong = "chat_call_id_too_long",
    /// Chat: an image in a message whose role is not `user`.
    ChatImageOutsideUser = "chat_image_outside_user",
    /// Chat: `messages` is empty.
    ChatEmptyMessages = "chat_empty_messages",
    /// Chat: an image `detail` other than `auto`, `low` or `high`.
    ChatImageDetail = "chat_image_detail",
    /// Anthropic: `tool_use` blocks without a `tool_result` in the next user message.
    AnthropicToolUseWithoutResult = "anthropic_tool_use_without_result",
    /// Anthropic: a `tool_result` whose `tool_use` is not in the previous assistant message.
    AnthropicResultWithoutToolUse = "anthropic_result_without_tool_use",
    /// Anthropic: a block before the `tool_result` blocks of the message after `tool_use`s.
    AnthropicResultsNotFirst = "anthropic_results_not_first",
    /// Anthropic: two `tool_use` blocks share an id.
    AnthropicDuplicateToolUseId = "anthropic_duplicate_tool_use_id",
    /// Anthropic: two `tool_result` blocks answer one `tool_use`.
    AnthropicDuplicateResult = "anthropic_duplicate_result",
    /// Anthropic: a tool id that does not match its pattern.
    AnthropicIdPattern = "anthropic_id_pattern",
    /// Anthropic: a `tool_use` whose `input` is not an object.
    AnthropicInputNotObject = "anthropic_input_not_object",
    /// Anthropic: a server-tool result block without its `server_tool_use` before it.
    AnthropicServerResultWithoutUse = "anthropic_server_result_without_use",
    /// Anthropic: a text block with empty text.
    AnthropicEmptyText = "anthropic_empty_text",
    /// Anthropic: a message whose text is only white space.
    AnthropicWhitespaceText = "anthropic_whitespace_text",
    /// Anthropic: a message (other than a final assistant one) with empty content.
    AnthropicEmptyMessage = "anthropic_empty_message",
    /// Anthropic: the final assistant message ends with white space.
    AnthropicTrailingWhitespace = "anthropic_trailing_whitespace",
    /// Anthropic: a `system` role inside `messages`.
    AnthropicSystemRole = "anthropic_system_role",
    /// Anthropic: the first message is not a user message.
    AnthropicFirstNotUser = "anthropic_first_not_user",
    /// Anthropic: an image block whose source is not a supported base64 image or a URL.
    AnthropicImageSource = "anthropic_image_source",
    /// Anthropic: the body has no `max_tokens`.
    AnthropicMissingMaxTokens = "anthropic_missing_max_tokens",
    /// Anthropic: the messages hold tool blocks but the body has no `tools`.
    AnthropicMissingTools = "anthropic_missing_tools",
    /// Anthropic: two tool definitions share a name.
    AnthropicDuplicateToolName = "anthropic_duplicate_tool_name",
    /// Anthropic: a tool definition's name does not match the name pattern.
    AnthropicToolNamePattern = "anthropic_tool_name_pattern",
}

impl Rule {
    /// The target the rule belongs to (none for [`Rule::Shape`], which every target has).
    pub fn target(self) -> Option<Target> {
        let name = self.name();
        if name.starts_with("responses_") {
            Some(Target::Responses)
        } else if name.starts_with("chat_") {
            Some(Target::ChatCompletions)
        } else if name.starts_with("anthropic_") {
            Some(Target::AnthropicMessages)
        } else {
            None
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The findings of one validation, as the target modules add them.
#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    /// Adds a finding.
    #[allow(clippy::too_many_arguments)] // one argument per field: a struct literal, named
    fn push(
        &mut self,
        rule: Rule,
        severity: Severity,
        wording: Wording,
        position: impl Into<String>,
        item: Option<usize>,
        ids: Vec<String>,
        message: impl Into<String>,
    ) {
        self.0.push(Finding {
            rule,
            severity,
            wording,
            position: position.into(),
            item,
            ids,
            message: message.into(),
        });
    }

    /// An error with the provider's confirmed wording.
    fn error(
        &mut self,
        rule: Rule,
        position: impl Into<String>,
        item: Option<usize>,
        ids: Vec<String>,
        message: impl Into<String>,
    ) {
        self.push(
            rule,
            Severity::Error,
            Wording::Exact,
            position,
            item,
            ids,
            message,
        );
    }

    /// A [`Rule::Shape`] finding: an error in this crate's words.
    fn shape(
        &mut self,
        position: impl Into<String>,
        item: Option<usize>,
        message: impl Into<String>,
    ) {
        self.push(
            Rule::Shape,
            Severity::Error,
            Wording::Unconfirmed,
            position,
            item,
            Vec::new(),
            message,
        );
    }
}

/// A request body as JSON.
type Body = serde_json::Map<String, Value>;

/// The `messages` array of a Chat Completions or Anthropic Messages input — a whole body or a bare
/// array — and the body when there is one; `None`, with a shape finding, when there is none.
fn messages_of<'v>(
    input: &'v Value,
    findings: &mut Findings,
) -> Option<(&'v [Value], Option<&'v Body>)> {
    match input {
        Value::Array(messages) => Some((messages, None)),
        Value::Object(body) => match body.get("messages") {
            Some(Value::Array(messages)) => Some((messages, Some(body))),
            Some(other) => {
                findings.shape(
                    "messages",
                    None,
                    format!("`messages` must be an array, not {}", json_type(other)),
                );
                None
            }
            None => {
                findings.shape("messages", None, "the request body has no `messages`");
                None
            }
        },
        other => {
            findings.shape(
                "messages",
                None,
                format!(
                    "expected a request body (an object) or an array of messages, not {}",
                    json_type(other)
                ),
            );
            None
        }
    }
}

/// The JSON type of `value`, in words, for shape findings.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The string at `key` of `value`, when `value` is an object holding a string there.
fn str_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

/// The length of `text` in characters (providers count characters, not bytes).
fn char_len(text: &str) -> usize {
    text.chars().count()
}
