//! The Anthropic Messages target: each item rendered on its own (`render.rs`, cached per entry),
//! the messages built from the steps pairing ordered (`messages.rs`: results first, same-role
//! blocks merged, tool ids mapped to `^[a-zA-Z0-9_-]+$`), and the request body (`request.rs`).
//! `docs/providers.md` lists the mapping item by item and what the target loses.

mod messages;
mod render;
mod request;

use std::io::{self, Write};

use serde_json::Value;

use super::assembly::Messages;

pub(crate) use messages::Anthropic;
pub use render::{CUSTOM_TOOL_INPUT_KEY, RAW_ARGUMENTS_KEY};
pub(crate) use request::write_body;
pub use request::{
    AnthropicTools, DEFAULT_ANTHROPIC_MAX_TOKENS, anthropic_tool_choice, anthropic_tools,
};

/// The text of the user message put first when the history starts with the assistant (the
/// Messages API wants a user message first).
pub const ANTHROPIC_LEADING_USER_TEXT: &str = "(conversation continued)";

/// A history projected for the Anthropic Messages API: the `system` texts hoisted from the
/// history (every `system`/`developer` message, in order) and the `messages` array, alternating
/// `user` and `assistant` and starting with `user`. A persistent value that shares its
/// renderings with the history's entries and its messages with the projections of other
/// versions.
#[derive(Debug, Clone)]
pub struct AnthropicMessages(pub(crate) Messages<Anthropic>);

impl AnthropicMessages {
    /// The texts hoisted into the top-level `system`, in history order (their position in the
    /// conversation is lost). The request puts the base instructions before them.
    pub fn system_texts(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.hoisted().filter_map(|item| match &item.piece {
            render::Sent::System(text) => Some(&**text),
            _ => None,
        })
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the `messages` array: `[{"role":…,"content":[blocks]},…]`.
    ///
    /// # Errors
    ///
    /// Whatever the writer returns.
    pub fn write_json<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        self.0.write_json(out)
    }

    /// The `messages` array as a string.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(self.0.json_len());
        // Writing to a vector cannot fail.
        let _ = self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// The `messages` parsed into JSON values (for inspection; [`AnthropicMessages::write_json`]
    /// is the fast way to send them).
    pub fn to_values(&self) -> Vec<Value> {
        match serde_json::from_str(&self.to_json()) {
            Ok(Value::Array(messages)) => messages,
            _ => Vec::new(),
        }
    }
}
