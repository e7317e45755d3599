//! Codex rollout files: the durable JSONL record of a session (format: `docs/rollout-format.md`).
//!
//! * [`reader`](self#reading): a streaming, tolerant reader with a load report, and resume.
//! * writing: [`RolloutWriter`] over a [`RolloutSink`] with an explicit [`Durability`].

mod reader;
mod resume;
mod writer;

pub use reader::*;
pub use resume::*;
pub use writer::*;
