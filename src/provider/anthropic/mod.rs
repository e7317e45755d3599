//! The Anthropic Messages API as a target: a projection's items rendered as `system` and
//! alternating `messages`, and the request body around them.
//!
//! Each item is rendered on its own (`render.rs`: from its JSON text alone, cached per entry
//! through the shared target machinery); the renderings are then put together
//! (`assemble.rs`): each call batch's outputs first in the next user message, same-role pieces
//! merged, tool ids mapped to `^[a-zA-Z0-9_-]+$`; the assembly is kept in the history's lineage
//! and a projection of a later version re-assembles only its tail (`AnthropicMemo`).
//! `request.rs` builds the body.
//! `docs/providers.md` lists the mapping item by item and what the target loses.

mod assemble;
mod render;
mod request;

use std::io::{self, Write};
use std::sync::Arc;

use imbl::Vector;
use serde_json::Value;

use super::target::Unit;

pub(crate) use assemble::project;
use render::{AnthropicItem, Sent};
pub use render::{CUSTOM_TOOL_INPUT_KEY, InputFallback, PlaceholderReason, RAW_ARGUMENTS_KEY};
pub use request::{
    AnthropicRequest, AnthropicRequestError, AnthropicTools, DEFAULT_ANTHROPIC_MAX_TOKENS,
    anthropic_tool_choice, anthropic_tools,
};

/// The text of the user message put first when the history starts with the assistant (the
/// Messages API wants a user message first).
pub const ANTHROPIC_LEADING_USER_TEXT: &str = "(conversation continued)";

/// A message role of the Messages API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

/// One block of a message, written from the units when the messages are written.
#[derive(Debug, Clone)]
enum Block {
    /// Block `b` of unit `i`'s user or assistant piece.
    Unit(usize, usize),
    /// The `tool_use` of unit `unit`, sent with id `id`.
    ToolUse { unit: usize, id: Arc<str> },
    /// A `tool_result` answering `id`: unit `unit`'s output, or `aborted` when `None`.
    Result {
        unit: Option<usize>,
        id: Arc<str>,
        is_error: bool,
    },
    /// A block's JSON made for this projection (the leading user text, a trimmed text).
    Text(Box<str>),
}

#[derive(Debug, Clone)]
struct Message {
    role: Role,
    blocks: Vector<Block>,
}

/// A history projected for the Anthropic Messages API: the `system` texts hoisted from the
/// history (every `system`/`developer` message, in order) and the `messages` array, alternating
/// `user` and `assistant` and starting with `user`. A persistent value: the renderings are
/// shared with the history's entries, the messages refer to them, and a projection of a later
/// version of the history shares the messages before its re-assembled tail.
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    units: Vector<Unit<AnthropicItem>>,
    /// The units whose piece is a `system` text.
    system: Vector<usize>,
    messages: Vector<Message>,
}

impl AnthropicMessages {
    /// The texts hoisted into the top-level `system`, in history order (their position in the
    /// conversation is lost). The request puts the base instructions before them.
    pub fn system_texts(&self) -> impl Iterator<Item = &str> + '_ {
        self.system
            .iter()
            .filter_map(|&i| match &self.units[i].rendered.piece {
                Sent::System(text) => Some(&**text),
                _ => None,
            })
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there is no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Writes the `messages` array: `[{"role":…,"content":[blocks]},…]`.
    ///
    /// # Errors
    ///
    /// Whatever the writer returns.
    pub fn write_json<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.write_all(b"[")?;
        for (n, message) in self.messages.iter().enumerate() {
            if n > 0 {
                out.write_all(b",")?;
            }
            out.write_all(match message.role {
                Role::User => br#"{"role":"user","content":["#,
                Role::Assistant => br#"{"role":"assistant","content":["#,
            })?;
            for (m, block) in message.blocks.iter().enumerate() {
                if m > 0 {
                    out.write_all(b",")?;
                }
                self.write_block(block, out)?;
            }
            out.write_all(b"]}")?;
        }
        out.write_all(b"]")
    }

    fn write_block<W: Write + ?Sized>(&self, block: &Block, out: &mut W) -> io::Result<()> {
        let string = |text: &str| Value::String(text.to_owned()).to_string();
        match block {
            Block::Unit(i, b) => match &self.units[*i].rendered.piece {
                Sent::User(blocks) | Sent::Assistant(blocks) => {
                    out.write_all(blocks[*b].as_bytes())
                }
                _ => Ok(()),
            },
            Block::ToolUse { unit, id } => {
                let Sent::ToolUse { name, input, .. } = &self.units[*unit].rendered.piece else {
                    return Ok(());
                };
                write!(
                    out,
                    r#"{{"type":"tool_use","id":{},"name":{name},"input":{input}}}"#,
                    string(id)
                )
            }
            Block::Result { unit, id, is_error } => {
                write!(
                    out,
                    r#"{{"type":"tool_result","tool_use_id":{}"#,
                    string(id)
                )?;
                match unit.map(|i| &self.units[i].rendered.piece) {
                    Some(Sent::ToolResult {
                        content: Some(content),
                        ..
                    }) => write!(out, r#","content":{content}"#)?,
                    Some(_) => {}
                    None => write!(
                        out,
                        r#","content":{}"#,
                        string(crate::projection::ABORTED_OUTPUT)
                    )?,
                }
                if *is_error {
                    out.write_all(br#","is_error":true"#)?;
                }
                out.write_all(b"}")
            }
            Block::Text(json) => out.write_all(json.as_bytes()),
        }
    }

    /// The `messages` array as a string.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
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
