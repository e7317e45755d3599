//! The rollout layer: Codex rollout files, the durable JSONL record of a session (format:
//! `docs/rollout-format.md`), and resume from them.
//!
//! * `line.rs` — the line types; `validate.rs` — what each line must be, parsed once;
//!   `report.rs` — what reading found; `paginated.rs` — Codex's paginated files (mode, base,
//!   ordinals); `lineage.rs` — the files a paginated file continues; `compressed.rs` — zstd
//!   rollouts read as their text; `reader.rs` — the streaming line loop and [`Rollout`].
//! * `resume/` — [`Rollout::resume`] and [`resume_file`]: one pipeline whatever the source
//!   (every line, or a snapshot plus the lines after it, with a [`FallbackReason`] when a snapshot
//!   cannot be used), one result ([`Resumed`]).
//! * `writer.rs` — [`RolloutWriter`] with an explicit [`Durability`], over a [`RolloutSink`]
//!   (`sink.rs`); `writer_lock.rs` — Codex's writer lock on a thread ([`CodexWriterLock`]).
//!
//! This layer sits above the snapshot layer: its resume decides when a snapshot may stand for a
//! rollout's prefix, and writes snapshots of what it resumed.

mod compressed;
mod error;
mod line;
mod lineage;
mod lines;
mod paginated;
mod reader;
mod report;
mod resume;
mod sink;
mod stored_report;
mod validate;
mod writer;
mod writer_lock;

pub use compressed::{RolloutText, is_compressed};
pub use error::{BinaryContent, LineageProblem, RolloutError, RolloutWriteError, WriteStep};
pub use line::{BaseInstructions, LineKind, RolloutLine, SessionMeta};
pub(crate) use line::{Event, Facts};
pub use lineage::{CODEX_HOME_VAR, codex_home, rollout_file_ids, rollout_file_name};
pub(crate) use lineage::{home_of_tree, rollout_id_of};
pub(crate) use lines::{LineLoop, LineVisitor, split_lines, without_byte_order_mark};
pub use paginated::{HistoryBase, HistoryMode, OrdinalDamage, Pagination};
pub(crate) use reader::{OpenError, open_input};
pub use reader::{READER_LABEL, Rollout, open_rollout};
pub use report::{
    DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_REPORTED, IncompleteTurn, LeftOut, LineRepair, LineageFile,
    LoadReport, OpenCall, ReadMode, ReadOptions, RepairedLine, SkipCounts, SkipReason, SkippedLine,
    WorldStateIssue, WorldStateProblem, WorldStateReport,
};
pub use resume::{
    Compactions, FallbackReason, ResumeOptions, ResumeSource, Resumed, resume_file, resume_reader,
};
pub(crate) use resume::{hash_prefix, settle};
pub use sink::{FileSink, RolloutSink};
pub(crate) use stored_report::PrefixReport;
pub(crate) use writer::FirstLine;
pub use writer::{Durability, RolloutWriter};
pub use writer_lock::CodexWriterLock;
