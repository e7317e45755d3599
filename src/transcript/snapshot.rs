//! Snapshots of Claude Code transcripts: a conversation's history archived as a rollout's is,
//! with what reading the transcript found, standing for the whole file as read. Resuming
//! through one checks that the transcript is still that file (its length and BLAKE3 digest) and
//! then reads nothing else; a transcript that changed or grew is read again, with the reason
//! (`docs/claude-code.md`, "Snapshots").
//!
//! A rollout's snapshot goes on with the lines after its prefix; a transcript's does not: a
//! later record can hang anywhere in the chain, move the leaf, or answer an earlier call, so the
//! conversation of a longer file is chosen from all of its records again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::history::History;
use crate::item::ThreadId;
use crate::provider::Target;
use crate::rollout::{
    FallbackReason, PrefixReport, ReadMode, ReadOptions, ResumeSource, RolloutText, hash_prefix,
    open_input,
};
use crate::snapshot::{
    PrefixState, Replace, RolloutPosition, Snapshot, SnapshotError, SnapshotHeader,
    SnapshotOptions, SnapshotTarget, open_snapshot, write_snapshot,
};

use super::SentRecord;
use super::error::TranscriptError;
use super::reader::{Transcript, subagent_files_beside};
use super::report::{ConversationReport, TranscriptReport};
use super::usage::UsageTotals;

/// A transcript's conversation as a history, with what reading the transcript found: read from
/// the transcript ([`Transcript::resume_file`]) or from a snapshot of it.
///
/// Its parts are read through methods: what a snapshot written from it stores must be what was
/// read.
#[derive(Debug)]
pub struct ResumedTranscript {
    path: PathBuf,
    history: History,
    report: TranscriptReport,
    conversation: ConversationReport,
    facts: Facts,
    read: RolloutPosition,
    source: ResumeSource,
    /// Opened from a snapshot on its own: no transcript was named.
    opened_alone: bool,
}

/// What a transcript says about itself and its conversation, beside the history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Facts {
    /// The subagent whose conversation this is (`None`: the main thread's).
    thread: Option<String>,
    session_id: Option<String>,
    cwd: Option<String>,
    version: Option<String>,
    model: Option<String>,
    /// The subagents whose records the file holds inline.
    subagents: Vec<String>,
    sent: Vec<SentRecord>,
    /// The line each item of the history was read from.
    item_lines: Vec<u64>,
    /// What every response of the file was billed.
    usage: UsageTotals,
}

/// The transcript state a snapshot stores, as JSON (`docs/snapshot-format.md`, "Payload").
#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(flatten)]
    facts: Facts,
    lines: u64,
    torn_tail: bool,
    read_past: BTreeMap<String, u64>,
    replaced: u64,
    /// The skipped and repaired lines, in the rollout layer's stored form.
    read: Box<RawValue>,
    conversation: ConversationReport,
}

impl Stored {
    fn of(resumed: &ResumedTranscript) -> Stored {
        let report = &resumed.report;
        let read = PrefixReport {
            skipped: report.skipped.clone(),
            skip_counts: report.skip_counts,
            repaired: report.repaired.clone(),
            ..PrefixReport::default()
        };
        Stored {
            facts: resumed.facts.clone(),
            lines: report.lines,
            torn_tail: report.torn_tail,
            read_past: report.read_past.clone(),
            replaced: report.replaced,
            read: read.to_json(),
            conversation: resumed.conversation.clone(),
        }
    }

    fn report(&self) -> Result<TranscriptReport, String> {
        let read = PrefixReport::from_json(&self.read)?;
        Ok(TranscriptReport {
            lines: self.lines,
            skipped: read.skipped,
            skip_counts: read.skip_counts,
            torn_tail: self.torn_tail,
            repaired: read.repaired,
            read_past: self.read_past.clone(),
            replaced: self.replaced,
        })
    }
}

impl Transcript {
    /// The conversation of the transcript at `path` as a history: through `snapshot` when it
    /// was written from this very file (same length and digest), reading nothing else; else
    /// from the transcript, with the reason the snapshot was not used
    /// ([`ResumedTranscript::source`]). Strict reading never uses a snapshot.
    ///
    /// # Errors
    ///
    /// As [`Transcript::read_file`]; a snapshot that cannot be used is no error.
    pub fn resume_file(
        path: impl AsRef<Path>,
        snapshot: Option<&Path>,
        options: impl Into<ReadOptions>,
    ) -> Result<ResumedTranscript, TranscriptError> {
        let path = path.as_ref();
        let options = options.into();
        let reason = match snapshot {
            None => None,
            Some(snapshot) => match through_snapshot(path, snapshot, options) {
                Ok(resumed) => return Ok(resumed),
                Err(Stop::Error(error)) => return Err(error),
                Err(Stop::Fallback(reason)) => Some(reason),
            },
        };
        let transcript = Transcript::read_file(path, options)?;
        let mut resumed = transcript.resumed()?;
        if let Some(reason) = reason {
            resumed.source = ResumeSource::Fallback(reason);
        }
        Ok(resumed)
    }

    /// This transcript's conversation (as [`Transcript::conversation`] chooses it) as a
    /// [`ResumedTranscript`], ready for a snapshot.
    ///
    /// # Errors
    ///
    /// As [`Conversation::history`](super::Conversation::history).
    pub fn resumed(&self) -> Result<ResumedTranscript, TranscriptError> {
        let conversation = self.conversation();
        let history = conversation.history()?;
        let thread = self
            .is_subagent_file()
            .then(|| conversation.thread.clone())
            .flatten();
        let facts = Facts {
            thread,
            session_id: self.session_id().map(str::to_owned),
            cwd: self.cwd().map(str::to_owned),
            version: self.version().map(str::to_owned),
            model: self.model().map(str::to_owned),
            subagents: self.subagents().into_iter().map(str::to_owned).collect(),
            sent: conversation.sent().to_vec(),
            item_lines: (0..history.len())
                .filter_map(|position| conversation.item_line(position))
                .collect(),
            usage: self.usage_totals(),
        };
        Ok(ResumedTranscript {
            path: self.path().to_owned(),
            history,
            report: self.report.clone(),
            conversation: conversation.report,
            facts,
            read: self.read,
            source: ResumeSource::Rollout,
            opened_alone: false,
        })
    }
}

/// Why a resume through a snapshot stopped: an error of the transcript, or a reason to read it.
enum Stop {
    Error(TranscriptError),
    Fallback(FallbackReason),
}

impl From<FallbackReason> for Stop {
    fn from(reason: FallbackReason) -> Self {
        Stop::Fallback(reason)
    }
}

/// The resume through `snapshot`, when it stands for the transcript at `path` as it is.
fn through_snapshot(
    path: &Path,
    snapshot: &Path,
    options: ReadOptions,
) -> Result<ResumedTranscript, Stop> {
    if options.mode == ReadMode::Strict {
        return Err(FallbackReason::StrictMode.into());
    }
    let opened =
        open_snapshot(snapshot, SnapshotOptions::default()).map_err(|error| match error {
            SnapshotError::OlderVersion {
                found, supported, ..
            } => FallbackReason::OldVersion { found, supported },
            error => FallbackReason::Unreadable(error),
        })?;
    if !opened.is_transcript() {
        return Err(FallbackReason::OtherFormat { snapshot: "codex" }.into());
    }
    let covered = opened.header().rollout;
    let now = digest_of(path).map_err(Stop::Error)?;
    if now.bytes != covered.bytes || now.digest != covered.digest {
        return Err(FallbackReason::TranscriptChanged {
            transcript_bytes: now.bytes,
            covered_bytes: covered.bytes,
        }
        .into());
    }
    ResumedTranscript::from_snapshot_at(opened, snapshot, Some(path.to_owned())).map_err(|error| {
        match error {
            TranscriptError::Snapshot(error) => Stop::Fallback(FallbackReason::Unreadable(error)),
            TranscriptError::NotATranscriptSnapshot { .. } => {
                Stop::Fallback(FallbackReason::OtherFormat { snapshot: "codex" })
            }
            other => Stop::Error(other),
        }
    })
}

/// The length and digest of the text of the transcript at `path` (a compressed one's
/// decompressed text), as [`Transcript::read`] hashes it.
fn digest_of(path: &Path) -> Result<RolloutPosition, TranscriptError> {
    let io = |source| TranscriptError::Io {
        path: path.to_owned(),
        source,
    };
    let file = open_input(path).map_err(|error| TranscriptError::from_open(path, error))?;
    let mut text = RolloutText::new(file).map_err(io)?;
    let mut hasher = blake3::Hasher::new();
    let read = hash_prefix(&mut text, u64::MAX, &mut hasher).map_err(io)?;
    Ok(RolloutPosition {
        lines: read.lines,
        bytes: read.bytes,
        digest: hasher.finalize(),
    })
}

impl ResumedTranscript {
    /// The history of a snapshot of a transcript, opened by [`open_snapshot`]: the
    /// conversation as it was when the snapshot was written (nothing of the transcript is
    /// read).
    ///
    /// # Errors
    ///
    /// [`TranscriptError::NotATranscriptSnapshot`] for a rollout's snapshot;
    /// [`TranscriptError::Snapshot`] when the transcript state it stores cannot be read.
    pub fn from_snapshot(
        opened: Snapshot,
        snapshot: impl AsRef<Path>,
    ) -> Result<ResumedTranscript, TranscriptError> {
        let snapshot = snapshot.as_ref();
        ResumedTranscript::from_snapshot_at(opened, snapshot, None)
    }

    /// [`ResumedTranscript::from_snapshot`], naming the transcript at `path` (`None`: the
    /// snapshot was opened on its own).
    fn from_snapshot_at(
        opened: Snapshot,
        snapshot: &Path,
        path: Option<PathBuf>,
    ) -> Result<ResumedTranscript, TranscriptError> {
        let Some(state) = opened.state().transcript.as_ref() else {
            return Err(TranscriptError::NotATranscriptSnapshot {
                path: snapshot.to_owned(),
            });
        };
        let damaged = |detail: String| {
            TranscriptError::Snapshot(SnapshotError::InvalidArchive {
                path: snapshot.to_owned(),
                detail: format!("the transcript state: {detail}"),
            })
        };
        let stored: Stored =
            serde_json::from_str(state.get()).map_err(|error| damaged(error.to_string()))?;
        let report = stored.report().map_err(damaged)?;
        if stored.facts.item_lines.len() != opened.history().len() {
            return Err(damaged(format!(
                "{} item line(s) for {} item(s)",
                stored.facts.item_lines.len(),
                opened.history().len()
            )));
        }
        let read = opened.header().rollout;
        Ok(ResumedTranscript {
            opened_alone: path.is_none(),
            path: path.unwrap_or_else(|| snapshot.to_owned()),
            history: opened.into_history(),
            report,
            conversation: stored.conversation,
            facts: stored.facts,
            read,
            source: ResumeSource::Snapshot { covered: read },
        })
    }

    /// The conversation's history, its items keeping their blocks (as
    /// [`Conversation::history`](super::Conversation::history)).
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Takes the history out.
    pub fn into_history(self) -> History {
        self.history
    }

    /// The history for `target`: for the Responses API the plain items, thinking and blocks with
    /// no Responses form left out (as
    /// [`Conversation::history_for`](super::Conversation::history_for)), with how many items
    /// were left out; the history itself for the others.
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Item`] for an item whose plain form cannot be recorded (only a crafted
    /// snapshot holds one).
    pub fn history_for(&self, target: Target) -> Result<(History, usize), TranscriptError> {
        if target != Target::Responses {
            return Ok((self.history.clone(), 0));
        }
        let items = self.history.iter().enumerate().map(|(position, entry)| {
            (
                entry.json(),
                self.item_line(position).unwrap_or(0),
                entry.kind().as_str(),
            )
        });
        super::record(&self.path, items, target)
    }

    /// What reading the transcript found.
    pub fn report(&self) -> &TranscriptReport {
        &self.report
    }

    /// How the conversation was chosen.
    pub fn conversation(&self) -> &ConversationReport {
        &self.conversation
    }

    /// The records the conversation sends, in order.
    pub fn sent(&self) -> &[SentRecord] {
        &self.facts.sent
    }

    /// The line item `position` of the history was read from.
    pub fn item_line(&self, position: usize) -> Option<u64> {
        self.facts.item_lines.get(position).copied()
    }

    /// The subagent whose conversation this is, for a subagent's own file (`None`: the main
    /// thread's).
    pub fn thread(&self) -> Option<&str> {
        self.facts.thread.as_deref()
    }

    /// As [`Transcript::session_id`].
    pub fn session_id(&self) -> Option<&str> {
        self.facts.session_id.as_deref()
    }

    /// As [`Transcript::cwd`].
    pub fn cwd(&self) -> Option<&str> {
        self.facts.cwd.as_deref()
    }

    /// As [`Transcript::version`].
    pub fn version(&self) -> Option<&str> {
        self.facts.version.as_deref()
    }

    /// As [`Transcript::model`].
    pub fn model(&self) -> Option<&str> {
        self.facts.model.as_deref()
    }

    /// As [`Transcript::usage_totals`].
    pub fn usage(&self) -> UsageTotals {
        self.facts.usage
    }

    /// As [`Transcript::subagents`].
    pub fn subagents(&self) -> &[String] {
        &self.facts.subagents
    }

    /// The transcript: its path as given, or the label of the reader; the snapshot's path
    /// for one opened on its own ([`ResumedTranscript::from_snapshot`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// As [`Transcript::subagent_files`]; none for a snapshot opened on its own.
    pub fn subagent_files(&self) -> Vec<PathBuf> {
        if self.opened_alone {
            return Vec::new();
        }
        subagent_files_beside(&self.path)
    }

    /// What was read: every line of the transcript, its bytes and their digest.
    pub fn read(&self) -> RolloutPosition {
        self.read
    }

    /// How it was resumed: from the transcript, through a snapshot, or from the transcript
    /// because the snapshot named could not stand for it.
    pub fn source(&self) -> &ResumeSource {
        &self.source
    }

    /// Whether the snapshot was used.
    pub fn used_snapshot(&self) -> bool {
        matches!(self.source, ResumeSource::Snapshot { .. })
    }

    /// Writes a snapshot of this conversation to `path`, standing for the transcript as it was
    /// read; a later [`Transcript::resume_file`] with it reads nothing else while the
    /// transcript stays that file. What may be replaced at `path` is as for a rollout's
    /// snapshot ([`Resumed::write_snapshot`](crate::Resumed::write_snapshot)): never the
    /// transcript itself.
    ///
    /// # Errors
    ///
    /// As [`Resumed::write_snapshot`](crate::Resumed::write_snapshot).
    pub fn write_snapshot(&self, path: impl AsRef<Path>) -> Result<SnapshotHeader, SnapshotError> {
        self.write_snapshot_with(path, Replace::SnapshotsOnly)
    }

    /// [`ResumedTranscript::write_snapshot`], replacing what `replace` allows.
    ///
    /// # Errors
    ///
    /// As [`ResumedTranscript::write_snapshot`].
    pub fn write_snapshot_with(
        &self,
        path: impl AsRef<Path>,
        replace: Replace,
    ) -> Result<SnapshotHeader, SnapshotError> {
        let path = path.as_ref();
        let stored = serde_json::value::to_raw_value(&Stored::of(self)).map_err(|error| {
            SnapshotError::InvalidArchive {
                path: path.to_owned(),
                detail: format!("the transcript state: {error}"),
            }
        })?;
        let state = PrefixState {
            thread_id: self.session_id().and_then(|id| id.parse::<ThreadId>().ok()),
            transcript: Some(stored),
            ..PrefixState::default()
        };
        let target = SnapshotTarget {
            replace,
            source: Some(&self.path),
        };
        write_snapshot(path, target, &self.history, self.read, &state, &[])
    }
}
