//! The `agent-history` command, run as a process on files the tests write or bundle (the binary
//! is built when the `cli` feature is on, which is the default).

mod anthropic_target;
mod append;
mod chat_target;
mod claude_code;
mod commands;
mod compressed;
mod lint;
mod paginated;
mod read_only;
