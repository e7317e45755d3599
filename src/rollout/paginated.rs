//! Codex's paginated thread history as the reader sees it: the mode a `session_meta` declares
//! ([`HistoryMode`]), the prefix of another rollout a file continues ([`HistoryBase`]), and what
//! the `ordinal` of every line showed ([`Pagination`]).
//!
//! A paginated file numbers its lines with a top-level `ordinal`; gaps are legal (a line that
//! failed to write is written again with its number), a repeated or decreasing ordinal is damage
//! that is reported, never renumbered (`docs/rollout-format.md`, "Paginated files").

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::item::ThreadId;

/// How a thread's history is kept: the `history_mode` of its first `session_meta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMode {
    /// One file holds the whole thread (files without the field are legacy).
    #[default]
    Legacy,
    /// Every line carries an `ordinal`, and a file may continue another's prefix.
    Paginated,
}

impl HistoryMode {
    /// Whether this is the legacy mode (a `session_meta` written without the field).
    pub fn is_legacy(&self) -> bool {
        *self == HistoryMode::Legacy
    }

    /// The mode's name as Codex writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryMode::Legacy => "legacy",
            HistoryMode::Paginated => "paginated",
        }
    }
}

impl fmt::Display for HistoryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The frozen prefix of another rollout that a paginated file continues: the `history_base` of
/// its `session_meta`.
///
/// Serializes as Codex writes it: `{"thread_id", "end_ordinal_exclusive", "end_byte_offset"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HistoryBase {
    /// The rollout id of the file continued (Codex names the field `thread_id`; it equals the
    /// thread id except for the files a revert writes).
    #[serde(rename = "thread_id")]
    pub rollout_id: ThreadId,
    /// The first ordinal of that file that is not inherited.
    pub end_ordinal_exclusive: u64,
    /// The byte offset just after the last inherited line of that file.
    pub end_byte_offset: u64,
}

/// What the ordinals of a paginated file showed ([`LoadReport::pagination`]).
///
/// Serializes as `{"base", "first_ordinal", "last_ordinal", "without_ordinal", "damage",
/// "damaged", "events", "other_events"}` (`docs/json-output.md`).
///
/// [`LoadReport::pagination`]: super::LoadReport::pagination
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Pagination {
    /// The prefix of another rollout this file continues, if any.
    pub base: Option<HistoryBase>,
    /// The ordinal of the first usable line that has one.
    pub first_ordinal: Option<u64>,
    /// The highest ordinal of a usable line: the next line Codex writes takes this + 1.
    pub last_ordinal: Option<u64>,
    /// Usable lines without an `ordinal` (Codex writes one on every line of such a file).
    pub without_ordinal: u64,
    /// The first lines whose ordinal repeats or goes back ([`ReadOptions::max_reported`] of
    /// them), in file order.
    ///
    /// [`ReadOptions::max_reported`]: super::ReadOptions::max_reported
    pub damage: Vec<OrdinalDamage>,
    /// How many lines repeat or go back, listed or not.
    pub damaged: u64,
    /// The file's `event_msg` lines by event type: the UI history a paginated file keeps beside
    /// the model's (`item_completed`, the turn lifecycle, token counts), read past by resume. At
    /// most [`Pagination::MAX_EVENT_TYPES`] types are counted by name.
    #[serde(default)]
    pub events: BTreeMap<String, u64>,
    /// Event lines of further types, or of a type name longer than 64 bytes.
    #[serde(default)]
    pub other_events: u64,
}

impl Pagination {
    /// How many distinct event types [`Pagination::events`] counts by name.
    pub const MAX_EVENT_TYPES: usize = 64;

    /// Counts one more `event_msg` line of type `kind`.
    pub(super) fn count_event(&mut self, kind: &str) {
        if let Some(count) = self.events.get_mut(kind) {
            *count += 1;
        } else if self.events.len() < Self::MAX_EVENT_TYPES && kind.len() <= 64 {
            self.events.insert(kind.to_owned(), 1);
        } else {
            self.other_events += 1;
        }
    }

    /// Whether every usable line has an ordinal and the ordinals only go up.
    pub fn is_sound(&self) -> bool {
        self.without_ordinal == 0 && self.damaged == 0
    }
}

/// A line whose ordinal is not above every ordinal before it (Codex bug #35746 writes such files
/// after a line it could not read back).
///
/// Serializes as `{"line", "offset", "ordinal", "highest_before"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OrdinalDamage {
    /// The 1-based line number.
    pub line: u64,
    /// The byte offset of its first byte.
    pub offset: u64,
    /// Its ordinal.
    pub ordinal: u64,
    /// The highest ordinal before it (equal: a repeat; higher: it goes back).
    pub highest_before: u64,
}

impl fmt::Display for OrdinalDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.ordinal == self.highest_before {
            "repeats"
        } else {
            "goes back below"
        };
        write!(
            f,
            "line {} (byte {}): ordinal {} {what} ordinal {}",
            self.line, self.offset, self.ordinal, self.highest_before
        )
    }
}

impl Pagination {
    /// Counts the ordinal of a usable line (`None` when it has none).
    /// The ordinal the next line appended to the file takes: one more than the highest (Codex
    /// takes one more than the last line it can read; in a sound file the two are the same, and
    /// in a damaged one this repeats no number). `None` when no line has one.
    pub fn next_ordinal(&self) -> Option<u64> {
        self.last_ordinal.and_then(|last| last.checked_add(1))
    }

    pub(super) fn note(&mut self, line: u64, offset: u64, ordinal: Option<u64>, max: usize) {
        let Some(ordinal) = ordinal else {
            self.without_ordinal += 1;
            return;
        };
        match self.last_ordinal {
            Some(highest) if ordinal <= highest => {
                self.damaged += 1;
                if self.damage.len() < max {
                    self.damage.push(OrdinalDamage {
                        line,
                        offset,
                        ordinal,
                        highest_before: highest,
                    });
                }
            }
            _ => self.last_ordinal = Some(ordinal),
        }
        self.first_ordinal.get_or_insert(ordinal);
    }
}
