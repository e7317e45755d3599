//! Support for tests of this crate and of code built on it (the `testing` feature): counts of
//! item conversions, media strips, tool-plan serializations and the slots a prefix check read
//! for property tests, and
//! [`CodexRollout`], which writes rollouts in the shape Codex writes them.

mod codex_rollout;

pub use crate::item::item_conversions;
pub use crate::projection::{media_checks, media_strips, prefix_slots_read};
pub use crate::provider::target_renderings;
pub use crate::request::tool_plan_serializations;
pub use codex_rollout::{CodexRollout, CodexRolloutError};
