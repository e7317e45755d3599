//! The Anthropic Messages API as a target: a projection's items rendered as `system` and
//! alternating `messages`, and the request body around them.
//!
//! Each item is rendered on its own (`render.rs`: a pure function of its JSON text, so it can be
//! shared by every projection that holds the entry); the renderings are then put together
//! (`assemble.rs`): outputs paired with their calls and placed first in the next user message,
//! same-role pieces merged, tool ids mapped to `^[a-zA-Z0-9_-]+$`. `request.rs` builds the body.
//! `docs/providers.md` lists the mapping item by item and what the target loses.

mod assemble;
mod render;
mod report;
mod request;

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::item::CallId;
use crate::projection::{Projection, RepairKind};

pub use render::{CUSTOM_TOOL_INPUT_KEY, LOCAL_SHELL_TOOL_NAME, RAW_ARGUMENTS_KEY};
pub(crate) use render::{Rendered, render_json};
pub use report::{AnthropicRepair, AnthropicRepairKind, InputFallback, PlaceholderReason};
pub use request::{AnthropicRequest, AnthropicSettings, DEFAULT_ANTHROPIC_MAX_TOKENS, DroppedTool};

/// The text of the user message put first when the history starts with the assistant (the
/// Messages API wants a user message first).
pub const ANTHROPIC_LEADING_USER_TEXT: &str = "(conversation continued)";

/// A history projected for the Anthropic Messages API: the `system` texts (the base
/// instructions, then every `system`/`developer` message of the history, in order), the
/// `messages` array, and what was repaired on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicMessages {
    pub(crate) system: Vec<String>,
    pub(crate) messages: Vec<Value>,
    pub(crate) repairs: Vec<AnthropicRepair>,
}

impl AnthropicMessages {
    /// The texts of the top-level `system`, in order.
    pub fn system_texts(&self) -> &[String] {
        &self.system
    }

    /// The top-level `system` as an array of text blocks, or `None` when there is no text.
    pub fn system(&self) -> Option<Value> {
        (!self.system.is_empty()).then(|| {
            Value::Array(
                self.system
                    .iter()
                    .map(|text| json!({"type": "text", "text": text}))
                    .collect(),
            )
        })
    }

    /// The `messages`: objects `{role, content: [blocks]}`, alternating `user` and `assistant`,
    /// starting with `user`.
    pub fn messages(&self) -> &[Value] {
        &self.messages
    }

    /// The `messages` as one JSON array.
    pub fn messages_json(&self) -> String {
        Value::Array(self.messages.clone()).to_string()
    }

    /// Every repair, in the order of the Responses input (request-wide ones last).
    pub fn repairs(&self) -> &[AnthropicRepair] {
        &self.repairs
    }

    /// Puts the renderings of a Responses input together. `synthetic` holds the call ids whose
    /// output the Responses projection synthesized.
    pub(crate) fn assemble(
        base_instructions: &str,
        items: &[&Rendered],
        synthetic: &HashSet<&str>,
    ) -> AnthropicMessages {
        assemble::assemble(base_instructions, items, synthetic)
    }
}

/// The call ids whose outputs the projection synthesized.
pub(crate) fn synthesized_call_ids(projection: &Projection) -> HashSet<&str> {
    projection
        .report()
        .repairs()
        .iter()
        .filter(|repair| matches!(repair.kind, RepairKind::SynthesizedOutput { .. }))
        .filter_map(|repair| repair.at.call_id.as_ref().map(CallId::as_str))
        .collect()
}

impl Projection {
    /// This projection for the Anthropic Messages API, with `base_instructions` first in
    /// `system`. Every item is rendered from its JSON text here; the history's per-entry cache is
    /// used by the target projection instead.
    pub fn to_anthropic(&self, base_instructions: &str) -> AnthropicMessages {
        let rendered: Vec<Rendered> = self.iter().map(render_json).collect();
        let items: Vec<&Rendered> = rendered.iter().collect();
        AnthropicMessages::assemble(base_instructions, &items, &synthesized_call_ids(self))
    }
}
