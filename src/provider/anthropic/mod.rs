//! The Anthropic Messages target: each item rendered on its own (`render.rs`, cached per entry),
//! the messages built from the steps pairing ordered (`messages.rs`: results first, same-role
//! blocks merged, tool ids mapped to `^[a-zA-Z0-9_-]+$`), and the request body (`request.rs`).
//! `docs/providers.md` lists the mapping item by item and what the target loses.

mod messages;
mod render;
mod request;

use super::assembly::{Format, Messages};

pub(crate) use messages::Anthropic;
pub(crate) use render::rendered_block;
pub use render::{ANTHROPIC_BLOCK_KEY, CUSTOM_TOOL_INPUT_KEY, RAW_ARGUMENTS_KEY};
pub use request::{
    AnthropicTools, DEFAULT_ANTHROPIC_MAX_TOKENS, anthropic_tool_choice, anthropic_tools,
};

/// The text of the user message put first when the history starts with the assistant (the
/// Messages API wants a user message first).
pub const ANTHROPIC_LEADING_USER_TEXT: &str = "(conversation continued)";

/// The texts hoisted into the top-level `system` (every non-empty `system`/`developer` message,
/// in history order).
pub(crate) fn system_texts<F: Format<Item = render::AnthropicItem>>(
    messages: &Messages<F>,
) -> impl Iterator<Item = &str> + '_ {
    messages.hoisted().filter_map(|item| match &item.piece {
        render::Sent::System(text) => Some(&**text),
        _ => None,
    })
}
