//! Reading Codex rollout JSONL files (reference §2.5).
//!
//! The reader streams the file line by line (memory is bounded by the longest line), skips and
//! reports every line it cannot use — blank, invalid UTF-8, invalid JSON, not an envelope, an item
//! of a known type with the wrong shape — and never lets one bad line make the session
//! unreadable.
//!
//! Resume replays the lines in order: `response_item` lines are recorded (with the record filter
//! and truncation), a `compacted` line with a `replacement_history` replaces the history, and an
//! `event_msg` `thread_rolled_back` drops the last user turns. Codex reaches the same history with
//! a reverse scan that stops at the newest compaction; the forward replay differs only when a
//! rollback reaches back across a compaction.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::RolloutError;
use crate::history::History;
use crate::history::truncate::TruncationPolicy;
use crate::item::Entry;

/// Why a line was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// Only white space.
    Blank,
    /// Not valid UTF-8.
    InvalidUtf8,
    /// Not valid JSON, or not a rollout line envelope (`timestamp`, `type`, `payload`).
    Malformed(String),
    /// A `response_item` or `compacted` line whose item is not a valid item.
    InvalidItem(String),
    /// A `compacted` line without `replacement_history` (a legacy compaction, not yet rebuilt).
    LegacyCompaction,
}

/// A line that resume did not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// Why.
    pub reason: SkipReason,
}

impl std::fmt::Display for SkippedLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {} (byte {}): ", self.line, self.offset)?;
        match &self.reason {
            SkipReason::Blank => f.write_str("blank"),
            SkipReason::InvalidUtf8 => f.write_str("invalid UTF-8"),
            SkipReason::Malformed(why) => write!(f, "malformed: {why}"),
            SkipReason::InvalidItem(why) => write!(f, "invalid item: {why}"),
            SkipReason::LegacyCompaction => {
                f.write_str("compaction without replacement history (legacy; not rebuilt)")
            }
        }
    }
}

/// The outcome of resuming a rollout.
#[derive(Debug, Clone)]
pub struct Resumed {
    /// The rebuilt history.
    pub history: History,
    /// The thread id of the first `session_meta` line.
    pub thread_id: Option<String>,
    /// Number of lines read (including skipped ones).
    pub lines: u64,
    /// Lines that were skipped, in file order. Blank lines are counted here too.
    pub skipped: Vec<SkippedLine>,
    /// Whether the last line had no newline and could not be parsed (a write cut short).
    pub torn_tail: bool,
}

impl Resumed {
    /// Skipped lines other than blank ones.
    pub fn malformed(&self) -> impl Iterator<Item = &SkippedLine> {
        self.skipped
            .iter()
            .filter(|line| line.reason != SkipReason::Blank)
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    payload: &'a RawValue,
}

#[derive(Deserialize)]
struct SessionMeta {
    #[serde(default)]
    id: Option<String>,
}

#[derive(Deserialize)]
struct Compacted<'a> {
    #[serde(borrow, default)]
    replacement_history: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct EventMsg {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    num_turns: Option<u64>,
}

#[derive(Deserialize)]
struct ItemType<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
}

/// Resumes a history from the rollout file at `path`, recording with `truncation`.
///
/// # Errors
///
/// [`RolloutError::Io`] when the file cannot be read, [`RolloutError::Empty`] when it has no
/// non-blank line, [`RolloutError::NoSessionMeta`] when no line is a `session_meta` line.
pub fn resume_file(
    path: impl AsRef<Path>,
    truncation: TruncationPolicy,
) -> Result<Resumed, RolloutError> {
    let path = path.as_ref();
    let io_error = |source| RolloutError::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    let resumed = resume_reader(file, truncation).map_err(io_error)?;
    if resumed.skipped.len() as u64 == resumed.lines
        && resumed
            .skipped
            .iter()
            .all(|l| l.reason == SkipReason::Blank)
    {
        return Err(RolloutError::Empty {
            path: path.to_owned(),
        });
    }
    if resumed.thread_id.is_none() {
        return Err(RolloutError::NoSessionMeta {
            path: path.to_owned(),
            lines: resumed.lines,
        });
    }
    Ok(resumed)
}

/// Resumes a history from rollout lines read from `reader`. Does not require a `session_meta`
/// line (see [`resume_file`] for the checks a file gets).
///
/// # Errors
///
/// Only I/O errors of the reader.
pub fn resume_reader(reader: impl Read, truncation: TruncationPolicy) -> std::io::Result<Resumed> {
    let mut reader = BufReader::new(reader);
    let mut resumed = Resumed {
        history: History::with_truncation(truncation),
        thread_id: None,
        lines: 0,
        skipped: Vec::new(),
        torn_tail: false,
    };
    let mut buffer = Vec::new();
    let mut offset = 0u64;
    loop {
        buffer.clear();
        let read = reader.read_until(b'\n', &mut buffer)?;
        if read == 0 {
            break;
        }
        resumed.lines += 1;
        let terminated = buffer.last() == Some(&b'\n');
        let skip = apply_line(&mut resumed, &buffer);
        if let Some(reason) = skip {
            if !terminated && reason != SkipReason::Blank {
                resumed.torn_tail = true;
            }
            resumed.skipped.push(SkippedLine {
                line: resumed.lines,
                offset,
                reason,
            });
        }
        offset += read as u64;
    }
    Ok(resumed)
}

/// Applies one line; returns why it was skipped, if it was.
fn apply_line(resumed: &mut Resumed, bytes: &[u8]) -> Option<SkipReason> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Some(SkipReason::InvalidUtf8);
    };
    let text = text.trim();
    if text.is_empty() {
        return Some(SkipReason::Blank);
    }
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(error) => return Some(SkipReason::Malformed(error.to_string())),
    };
    let payload = envelope.payload.get();
    match envelope.kind {
        "session_meta" => {
            let meta: SessionMeta = match serde_json::from_str(payload) {
                Ok(meta) => meta,
                Err(error) => return Some(SkipReason::Malformed(error.to_string())),
            };
            if resumed.thread_id.is_none() {
                resumed.thread_id = Some(meta.id.unwrap_or_default());
            }
        }
        "response_item" => {
            if is_ghost_snapshot(payload) {
                return None;
            }
            if let Err(error) = resumed.history.record_json(payload) {
                return Some(SkipReason::InvalidItem(error.to_string()));
            }
        }
        "compacted" => {
            let compacted: Compacted<'_> = match serde_json::from_str(payload) {
                Ok(compacted) => compacted,
                Err(error) => return Some(SkipReason::Malformed(error.to_string())),
            };
            let Some(items) = compacted.replacement_history else {
                return Some(SkipReason::LegacyCompaction);
            };
            let mut entries = Vec::with_capacity(items.len());
            for item in items {
                if is_ghost_snapshot(item.get()) {
                    continue;
                }
                match Entry::from_json(item.get()) {
                    Ok(entry) => entries.push(entry),
                    Err(error) => return Some(SkipReason::InvalidItem(error.to_string())),
                }
            }
            resumed.history.replace(entries);
        }
        "event_msg" => {
            if let Ok(event) = serde_json::from_str::<EventMsg>(payload)
                && event.kind == "thread_rolled_back"
            {
                let turns = event.num_turns.unwrap_or(0);
                resumed
                    .history
                    .drop_last_n_user_turns(usize::try_from(turns).unwrap_or(usize::MAX));
            }
        }
        _ => {}
    }
    None
}

/// Legacy `ghost_snapshot` items are dropped on read, as Codex does.
fn is_ghost_snapshot(item: &str) -> bool {
    serde_json::from_str::<ItemType<'_>>(item).is_ok_and(|item| item.kind == "ghost_snapshot")
}
