//! The integration tests, in one binary so that the crate is linked once: each module is the
//! test of one behaviour, named after it (`docs/verification.md` names each promise's tests as
//! `module::function`). A test that needs a process of its own is a binary beside this one, and
//! says why at its top: `tests/complexity.rs` and `tests/snapshot_memory.rs` count the
//! allocations of the whole process through their own global allocator.
//!
//! Failures that proptest finds in a module are saved as
//! `tests/proptest-regressions/<module path>.txt` (proptest's default for a source beside a
//! `main.rs`), and replayed from there first.

// The 150-line limit on functions (Cargo.toml, clippy.toml) is for the crate's code: a test that
// walks a scenario step by step may be longer.
#![allow(clippy::too_many_lines)]

#[path = "../common/mod.rs"]
mod common;

// The crate itself.
mod layering;
mod testing_kit;

// Items and the history.
mod hot_paths;
mod item_model;
mod pairing_index;
mod rollback;
mod rollback_rules;
mod upstream_behaviour;
mod world_baseline;
mod world_state;

// The projection and the request.
mod body_size;
mod common_prefix;
mod media_cache;
mod projection_model;
mod projection_overlay;
mod request;
mod tool_plan;

// Provider targets and their validators.
mod anthropic_projection;
mod chat_projection;
mod target_cost;
mod validate;

// Rollouts, resume and snapshots.
mod base_instructions;
mod codex_shaped_sessions;
mod compressed;
mod crash_simulation;
mod incomplete_turn;
mod inter_agent;
mod paginated;
mod paginated_write;
mod resume;
mod resume_model;
mod rollout_read;
mod rollout_write;
mod session_turns;
mod snapshot;
mod snapshot_continue;
mod snapshot_large;
mod world_resume;
mod world_session;
mod writer_lock;

// Claude Code transcripts: the model of what a resume sends, against its fixtures.
mod claude_model;
mod transcript_read;

// Sessions shared between threads, and streamed responses.
mod concurrency;
mod stream;
mod stream_session;

// Bad input of every kind, and the JSON form of the reports.
mod bad_files;
mod bad_input;
mod json_output;

// The `agent-history` command (feature `cli`).
#[cfg(feature = "cli")]
mod cli;
