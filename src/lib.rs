//! A persistent, immutable conversation-history engine for LLM agents.
//!
//! A [`History`] keeps an agent's items (messages, reasoning, tool calls and outputs, images) in
//! a structurally shared persistent vector: a clone is O(1), old versions stay valid, fork and
//! rewind are cheap. [`History::project`] turns it into a model's input and repairs the protocol
//! shape **in the projection only** — a call without output gets a synthetic `"aborted"` output
//! with a stable UUIDv5 id, an output without call is dropped, media the model cannot take
//! becomes a placeholder — and reports every repair. The durable history records only what really
//! happened. The behaviour matches OpenAI Codex's (`codex-rs`), including its rollout files.
//!
//! # Examples
//!
//! ```
//! use agent_history::{History, ProjectionOptions, RepairKind};
//!
//! let mut history = History::new();
//! history.record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}"#)?;
//! // The process died after the model called a tool, before the output was recorded.
//! history.record_json(r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}"#)?;
//!
//! let projection = history.project(&ProjectionOptions::default())?;
//! assert_eq!(projection.len(), 3); // message, call, synthetic output
//! assert!(matches!(projection.report().repairs()[0].kind, RepairKind::SynthesizedOutput { .. }));
//! assert_eq!(history.len(), 2); // the history itself is unchanged
//! # Ok::<(), agent_history::Error>(())
//! ```

/// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod error;
mod history;
mod item;
mod projection;
mod request;
pub mod rollout;
mod session;
pub mod snapshot;

pub use error::{
    Error, ItemError, ProjectionError, RequestError, RolloutError, RolloutWriteError, SnapshotError,
};
pub use history::truncate::{self, TruncationPolicy};
pub use history::{
    COMPACT_USER_MESSAGE_TOKENS, Compacted, DEFAULT_TRUNCATION, EMPTY_SUMMARY, FilterReason,
    History, Recorded, SUMMARY_PREFIX, is_contextual_developer_text, is_contextual_user_text,
    is_summary_text, summary_text,
};
pub use item::*;
pub use projection::{
    ABORTED_OUTPUT, AUDIO_PLACEHOLDER, IMAGE_PLACEHOLDER, Modalities, ParseModalitiesError,
    Projection, ProjectionOptions, Repair, RepairKind, RepairMode, RepairReport, UnknownItems,
    Violation, ViolationKind,
};
pub use request::{
    ModelRequest, OUTPUT_SCHEMA_NAME, Prompt, PromptCompiler, ReasoningConfig, RequestSettings,
    StepContext, Verbosity,
};
pub use rollout::{Durability, FileSink, RolloutSink, RolloutWriter, SessionMeta};
pub use session::Session;
