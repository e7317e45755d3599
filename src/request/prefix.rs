//! How much of a request body two requests share from the first byte: what a provider's prompt
//! cache can reuse when the second is sent after the first.
//!
//! The body writer lays a request out in a fixed order: `{"model":…,"instructions":…,"input":[`,
//! the input items, then `],"tools":…` and the other settings. So the two heads are compared
//! first (they are short: the model and the base instructions); when they are equal, the inputs
//! are compared as [`Projection::common_prefix`](crate::projection::Projection::common_prefix)
//! compares projections, leaf by shared leaf, with each item's text as the body writes it; the
//! tails are written only when the comparison reaches them.

use std::sync::Arc;

use crate::projection::{CommonPrefix, ItemText, common_bytes};

use super::{ModelRequest, RequestError, trim_json_space};

/// The part of a request body its first differing byte lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyPart {
    /// `model`.
    Model,
    /// `instructions`.
    Instructions,
    /// `input`: an item differs, or one request sends more items than the other.
    Input,
    /// `tools`.
    Tools,
    /// What follows the tools: `tool_choice`, `parallel_tool_calls`, `reasoning`, `store`,
    /// `stream`, `include`, `prompt_cache_key`, `text`, `service_tier`.
    Settings,
}

impl BodyPart {
    /// The body key (for [`BodyPart::Settings`], `"settings"`).
    pub fn as_str(self) -> &'static str {
        match self {
            BodyPart::Model => "model",
            BodyPart::Instructions => "instructions",
            BodyPart::Input => "input",
            BodyPart::Tools => "tools",
            BodyPart::Settings => "settings",
        }
    }
}

/// How much two request bodies share from the first byte: the result of
/// [`ModelRequest::common_prefix`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyPrefix {
    /// How many leading bytes of the two bodies ([`ModelRequest::body`]) are equal.
    pub bytes: u64,
    /// Where the first differing byte lies; `None` when the bodies are equal.
    pub first_difference: Option<BodyPart>,
    /// How the inputs compare (items shared, bytes of the input arrays as the body writes them,
    /// the first differing item); `None` when the bodies differ before the input, where the
    /// inputs were not compared.
    pub input: Option<CommonPrefix>,
}

impl BodyPrefix {
    /// Whether the two bodies are equal.
    pub fn is_identical(&self) -> bool {
        self.first_difference.is_none()
    }
}

impl ModelRequest {
    /// How many leading bytes this request's body and `other`'s share, and where the first
    /// difference lies: the part of the body (model, instructions, input, tools, the settings
    /// after them) and, in the input, the first differing item.
    ///
    /// The answer is that of comparing both [`ModelRequest::body`]s byte by byte, but neither
    /// body is written: the inputs are compared by the structure their projections share.
    ///
    /// Time: the heads' size, plus O(p) for the `p` shared input items, plus the tails' size when
    /// they are reached (`docs/prompt-prefix.md`, "What it costs").
    ///
    /// # Errors
    ///
    /// As [`ModelRequest::write_body`], when a part that must be written (instructions, tools,
    /// schema) cannot be serialized.
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::{BodyPart, History, PromptCompiler, RequestSettings, StepContext};
    ///
    /// let mut history = History::new();
    /// history.record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#)?;
    /// let compiler = PromptCompiler::new(RequestSettings { model: "gpt-5".into(), ..Default::default() });
    /// let first = compiler.compile(&history, StepContext::default())?;
    /// history.record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"and?"}]}"#)?;
    /// let second = compiler.compile(&history, StepContext::default())?;
    ///
    /// let shared = first.common_prefix(&second)?;
    /// assert_eq!(shared.first_difference, Some(BodyPart::Input));
    /// let (a, b) = (first.body()?, second.body()?);
    /// let by_bytes = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    /// assert_eq!(shared.bytes, by_bytes as u64);
    /// # Ok::<(), agent_history::Error>(())
    /// ```
    pub fn common_prefix(&self, other: &ModelRequest) -> Result<BodyPrefix, RequestError> {
        let (mut head, mut other_head) = (Vec::new(), Vec::new());
        self.write_head(&mut head)?;
        other.write_head(&mut other_head)?;
        if head != other_head {
            // A JSON string is never a strict prefix of another, so the first difference lies
            // in the model when the models differ, else in the instructions.
            let part = if self.settings.model != other.settings.model {
                BodyPart::Model
            } else {
                BodyPart::Instructions
            };
            return Ok(BodyPrefix {
                bytes: common_bytes(&head, &other_head) as u64,
                first_difference: Some(part),
                input: None,
            });
        }
        let mut tail: Option<Result<Vec<u8>, RequestError>> = None;
        let mut other_tail: Option<Result<Vec<u8>, RequestError>> = None;
        let input = {
            let mut after = || after_input(self, &mut tail);
            let mut other_after = || after_input(other, &mut other_tail);
            self.prompt.input.framed_prefix(
                &other.prompt.input,
                ItemText::Rewritten(trim_json_space),
                &mut after,
                &mut other_after,
            )
        };
        let tail = tail.transpose()?;
        let other_tail = other_tail.transpose()?;
        // The head ends with the input's `[`, which the input's count includes.
        let bytes = head.len() as u64 - 1 + input.bytes;
        let first_difference = if input.first_difference.is_some() {
            Some(BodyPart::Input)
        } else if tail == other_tail {
            None
        } else if Arc::ptr_eq(&self.prompt.tools, &other.prompt.tools)
            || self.prompt.tools.json() == other.prompt.tools.json()
        {
            Some(BodyPart::Settings)
        } else {
            Some(BodyPart::Tools)
        };
        Ok(BodyPrefix {
            bytes,
            first_difference,
            input: Some(input),
        })
    }
}

/// What follows the input array's `]` in `request`'s body, kept in `tail` (the whole tail, or the
/// error writing it) for the caller to look at afterwards.
fn after_input(
    request: &ModelRequest,
    tail: &mut Option<Result<Vec<u8>, RequestError>>,
) -> Vec<u8> {
    let mut bytes = Vec::new();
    let written = request.write_tail(&mut bytes).map(|()| bytes);
    let after = match &written {
        // The tail starts with the input's `]`, which the comparison writes itself.
        Ok(bytes) => bytes.get(1..).unwrap_or_default().to_vec(),
        Err(_) => Vec::new(),
    };
    *tail = Some(written);
    after
}
