//! The provider layer: one durable history, sent to several model APIs.
//!
//! The projection layer repairs a history into an input for the OpenAI Responses API. This layer
//! names the API a request is for ([`Target`]) and adds the others: Chat Completions and
//! Anthropic Messages, each a small implementation of one assembly engine (`assembly/`: the
//! rendering cache, pairing, naming, checkpoints), and one request compiler for every target
//! (`request.rs`); `projection.rs` is the dispatcher ([`History::project_for`]). The validators
//! that predict which error an input would get from each API live beside them (`validate/`).
//! `docs/providers.md` maps every item family field by field and says what each target loses.
//!
//! Inside the layer, imports go one way: `options`, `report` and `tools` ← `assembly` ←
//! `chat`, `anthropic` ← `projection` ← `request`; `validate` stands apart.
//!
//! [`History::project_for`]: crate::History::project_for

mod anthropic;
mod assembly;
mod chat;
mod options;
mod projection;
mod report;
mod request;
mod tools;
mod validate;

use std::fmt;
use std::str::FromStr;

pub(crate) use anthropic::rendered_block;
pub use anthropic::{
    ANTHROPIC_BLOCK_KEY, ANTHROPIC_LEADING_USER_TEXT, AnthropicTools, CUSTOM_TOOL_INPUT_KEY,
    DEFAULT_ANTHROPIC_MAX_TOKENS, RAW_ARGUMENTS_KEY, anthropic_tool_choice, anthropic_tools,
};
#[cfg(feature = "testing")]
pub use assembly::{
    target_names_tried, target_older_versions_resumed, target_renderings, target_slots_assembled,
    target_texts_made,
};
pub use chat::{
    ChatTools, TOOL_IMAGE_PLACEHOLDER, UNNAMED_TOOL_FUNCTION, chat_tool_choice, chat_tools,
};
pub use options::{DeveloperRole, TargetOptions};
pub use projection::TargetProjection;
pub use report::{
    InputFallback, PlaceholderReason, TargetProjectionError, TargetRepair, TargetRepairKind,
    TargetReport,
};
pub use request::TargetRequest;
pub use tools::{DroppedTool, LOCAL_SHELL_FUNCTION};
pub use validate::{Finding, Rule, Severity, Validation, Wording, validate};

/// The model API a projection or a validation is for.
///
/// Parses from and prints as `responses`, `chat` or `anthropic` (the command line's
/// `--target`); serializes with the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum Target {
    /// The OpenAI Responses API (`input` items): the history's own format, projected as
    /// [`History::project`](crate::History::project) does.
    #[default]
    #[serde(rename = "responses")]
    Responses,
    /// The OpenAI Chat Completions API (`messages`), and the many servers compatible with it.
    #[serde(rename = "chat")]
    ChatCompletions,
    /// The Anthropic Messages API (`system` kept apart, alternating `messages`).
    #[serde(rename = "anthropic")]
    AnthropicMessages,
}

impl Target {
    /// Every target, in a stable order.
    pub const ALL: [Target; 3] = [
        Target::Responses,
        Target::ChatCompletions,
        Target::AnthropicMessages,
    ];

    /// The name `--target` takes and [`fmt::Display`] prints.
    pub fn name(self) -> &'static str {
        match self {
            Target::Responses => "responses",
            Target::ChatCompletions => "chat",
            Target::AnthropicMessages => "anthropic",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A target name that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown target `{0}` (expected responses, chat or anthropic)")]
pub struct ParseTargetError(pub String);

impl FromStr for Target {
    type Err = ParseTargetError;

    /// Parses `responses`, `chat` or `anthropic`, ignoring case and surrounding white space.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.trim().to_ascii_lowercase().as_str() {
            "responses" => Ok(Target::Responses),
            "chat" => Ok(Target::ChatCompletions),
            "anthropic" => Ok(Target::AnthropicMessages),
            _ => Err(ParseTargetError(name.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print_by_the_same_names() {
        for target in Target::ALL {
            assert_eq!(target.name().parse(), Ok(target));
            assert_eq!(target.to_string(), target.name());
            assert_eq!(
                serde_json::to_string(&target).unwrap(),
                format!("\"{}\"", target.name())
            );
        }
        assert_eq!(" Chat ".parse(), Ok(Target::ChatCompletions));
        assert_eq!(
            "gemini".parse::<Target>(),
            Err(ParseTargetError("gemini".into()))
        );
    }
}
