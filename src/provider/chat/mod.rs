//! The Chat Completions target: each item converted on its own (`convert.rs`, cached per entry),
//! the messages built from the steps pairing ordered (`messages.rs`), and the request body
//! (`request.rs`).

mod convert;
mod messages;
mod request;

pub use convert::{TOOL_IMAGE_PLACEHOLDER, UNNAMED_TOOL_FUNCTION};
pub(crate) use messages::Chat;
pub use request::{ChatTools, chat_tool_choice, chat_tools};
