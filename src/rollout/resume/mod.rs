//! Resume: rebuilding a history from a rollout, however it is done — from every line, or from a
//! snapshot plus the lines after the prefix it covers — into one result, [`Resumed`].
//!
//! `scan.rs` is phase 1 (the reverse scan), `replay.rs` phase 2 (the forward replay, shared by
//! both ways), `snapshot.rs` the snapshot path and its fallback rules.

mod replay;
mod scan;
mod snapshot;
mod turn;
mod world;

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;

use crate::history::{DEFAULT_TRUNCATION, History, TruncationPolicy};
use crate::item::{ThreadId, error_chain};
use crate::snapshot::{PrefixFact, RolloutPosition, SnapshotError};

use super::error::RolloutError;
use super::line::{Facts, LineContent, LineKind, Place, RolloutLine};
use super::reader::{LineSource, Rollout, open_rollout, read_lines, rollout_text};
use super::report::{IncompleteTurn, LineageFile, LoadReport, ReadMode, ReadOptions};
use super::stored_report::AncestorCut;
use replay::Replay;
pub(crate) use scan::settle;
use scan::{Reference, line_facts, reverse_scan, stored_fact};
pub(crate) use snapshot::hash_prefix;

/// How to resume.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumeOptions {
    /// Record-time truncation applied to the replayed items: the model's policy.
    pub truncation: TruncationPolicy,
    /// How lines are read: whether a bad line is skipped or fails the resume, the longest line
    /// held in memory, how many skipped lines are listed.
    pub read: ReadOptions,
    /// A snapshot to try first ([`resume_file`] only): when it stands for a prefix of the
    /// rollout, only the lines after that prefix are read; otherwise the rollout is resumed in
    /// full and [`Resumed::source`] says why.
    pub snapshot: Option<PathBuf>,
    /// Resume only newline-terminated lines (a last line still being written is left for later)
    /// and record the prefix they make up in [`Resumed::covered`], so that
    /// [`Resumed::write_snapshot`] can write a snapshot that stands for it.
    pub snapshot_ready: bool,
    /// The Codex home in which the ancestors of a paginated file with a base are found; when
    /// `None`, [`codex_home`](super::codex_home) finds it.
    pub codex_home: Option<PathBuf>,
    /// Keep the scan facts of every line in [`Resumed::scan_facts`] (a session resuming its
    /// file, which settles its turns over them from then on).
    pub(crate) keep_scan_facts: bool,
}

impl Default for ResumeOptions {
    fn default() -> Self {
        ResumeOptions::new(DEFAULT_TRUNCATION)
    }
}

impl ResumeOptions {
    /// Lenient resume with `truncation`, from every line.
    pub fn new(truncation: TruncationPolicy) -> Self {
        ResumeOptions {
            truncation,
            read: ReadOptions::default(),
            snapshot: None,
            snapshot_ready: false,
            codex_home: None,
            keep_scan_facts: false,
        }
    }

    /// The same options, reading in [`ReadMode::Strict`]. A snapshot is then not used (it cannot
    /// vouch for the lines it covers), and the fallback says so.
    pub fn strict(self) -> Self {
        ResumeOptions {
            read: ReadOptions {
                mode: ReadMode::Strict,
                ..self.read
            },
            ..self
        }
    }

    /// The same options, reading with `read`.
    pub fn read_with(self, read: ReadOptions) -> Self {
        ResumeOptions { read, ..self }
    }

    /// The same options, trying the snapshot at `path` first.
    pub fn with_snapshot(self, path: impl Into<PathBuf>) -> Self {
        ResumeOptions {
            snapshot: Some(path.into()),
            ..self
        }
    }

    /// The same options, finding the ancestors of a paginated file under the Codex home `home`.
    pub fn with_codex_home(self, home: impl Into<PathBuf>) -> Self {
        ResumeOptions {
            codex_home: Some(home.into()),
            ..self
        }
    }

    /// The same options, ready for writing a snapshot (see
    /// [`snapshot_ready`](ResumeOptions::snapshot_ready)).
    pub fn snapshot_ready(self) -> Self {
        ResumeOptions {
            snapshot_ready: true,
            ..self
        }
    }
}

/// How a history was resumed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ResumeSource {
    /// Every line was read and replayed.
    Rollout,
    /// The snapshot stood for the prefix it covers; only the lines after it were read.
    Snapshot {
        /// The prefix the snapshot covers.
        covered: RolloutPosition,
    },
    /// A snapshot was named but could not stand for the rollout's prefix; every line was read
    /// and replayed.
    Fallback(FallbackReason),
}

/// Why a snapshot was not used. Whatever the reason, the history is that of a full resume.
#[derive(Debug)]
#[non_exhaustive]
pub enum FallbackReason {
    /// Strict reading checks every line, and a snapshot cannot vouch for those it covers.
    StrictMode,
    /// The snapshot cannot be opened, or is damaged.
    Unreadable(SnapshotError),
    /// The snapshot was written with another truncation policy.
    TruncationMismatch {
        /// The snapshot's policy.
        snapshot: TruncationPolicy,
        /// The policy asked for.
        requested: TruncationPolicy,
    },
    /// The rollout is in the legacy format.
    LegacyFormat,
    /// The snapshot covers no `session_meta` line of the rollout.
    NoSessionMeta,
    /// The rollout is shorter than the prefix the snapshot covers.
    RolloutShorter {
        /// The rollout's length.
        rollout_bytes: u64,
        /// The covered prefix's length.
        covered_bytes: u64,
    },
    /// The rollout no longer starts with the prefix the snapshot covers (its digest differs).
    PrefixChanged,
    /// The covered prefix does not end at a line boundary.
    NotAtLineBoundary,
    /// The snapshot's header counts another number of lines than its covered prefix holds
    /// (only a damaged or crafted header can).
    LineCountMismatch {
        /// The lines the header says it covers.
        covered_lines: u64,
        /// The lines the covered prefix holds.
        prefix_lines: u64,
    },
    /// A file of the thread's lineage that the snapshot's history continues is missing, or no
    /// longer holds the bytes up to its cut that were read when the snapshot was written.
    LineageChanged {
        /// The file's rollout id.
        rollout_id: ThreadId,
    },
    /// The snapshot has an older format version, which this build does not read
    /// ([`SnapshotError::OlderVersion`]). A snapshot written from this resume has the supported
    /// one.
    OldVersion {
        /// The snapshot's format version.
        found: u32,
        /// The one this build reads ([`SNAPSHOT_FORMAT_VERSION`](crate::SNAPSHOT_FORMAT_VERSION)).
        supported: u32,
    },
    /// The snapshot is of a session of the other format: a Claude Code transcript's, given for
    /// a rollout, or a rollout's, given for a transcript.
    OtherFormat {
        /// The snapshot's session format: `"codex"` or `"claude-code"`.
        snapshot: &'static str,
    },
    /// The transcript is not the file the snapshot was written from: a transcript's snapshot
    /// stands for the whole file as read, so one that changed or grew since is read again.
    TranscriptChanged {
        /// The transcript's bytes now.
        transcript_bytes: u64,
        /// The bytes the snapshot covers.
        covered_bytes: u64,
    },
}

impl Serialize for ResumeSource {
    /// `{"source": "rollout"}`, `{"source": "snapshot", "covered": {lines, bytes, digest}}` or
    /// `{"source": "fallback", "fallback": {reason, …}}` (`docs/json-output.md`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        match self {
            ResumeSource::Rollout => map.serialize_entry("source", "rollout")?,
            ResumeSource::Snapshot { covered } => {
                map.serialize_entry("source", "snapshot")?;
                map.serialize_entry("covered", covered)?;
            }
            ResumeSource::Fallback(reason) => {
                map.serialize_entry("source", "fallback")?;
                map.serialize_entry("fallback", reason)?;
            }
        }
        map.end()
    }
}

impl FallbackReason {
    /// The reason's snake_case name (its JSON `reason`).
    pub fn name(&self) -> &'static str {
        match self {
            FallbackReason::StrictMode => "strict_mode",
            FallbackReason::Unreadable(_) => "unreadable",
            FallbackReason::TruncationMismatch { .. } => "truncation_mismatch",
            FallbackReason::LegacyFormat => "legacy_format",
            FallbackReason::NoSessionMeta => "no_session_meta",
            FallbackReason::RolloutShorter { .. } => "rollout_shorter",
            FallbackReason::PrefixChanged => "prefix_changed",
            FallbackReason::NotAtLineBoundary => "not_at_line_boundary",
            FallbackReason::LineCountMismatch { .. } => "line_count_mismatch",
            FallbackReason::OldVersion { .. } => "old_version",
            FallbackReason::LineageChanged { .. } => "lineage_changed",
            FallbackReason::OtherFormat { .. } => "other_format",
            FallbackReason::TranscriptChanged { .. } => "transcript_changed",
        }
    }
}

impl Serialize for FallbackReason {
    /// `{"reason", …the variant's fields…, "message"}`: `reason` the snake_case
    /// [`name`](FallbackReason::name), the fields under their own names (truncation policies as
    /// `{mode, limit}`), `message` the display text (for `unreadable`, the snapshot error with
    /// its causes).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("reason", self.name())?;
        match self {
            FallbackReason::StrictMode
            | FallbackReason::Unreadable(_)
            | FallbackReason::LegacyFormat
            | FallbackReason::NoSessionMeta
            | FallbackReason::PrefixChanged
            | FallbackReason::NotAtLineBoundary => {}
            FallbackReason::TruncationMismatch {
                snapshot,
                requested,
            } => {
                map.serialize_entry("snapshot", snapshot)?;
                map.serialize_entry("requested", requested)?;
            }
            FallbackReason::RolloutShorter {
                rollout_bytes,
                covered_bytes,
            } => {
                map.serialize_entry("rollout_bytes", rollout_bytes)?;
                map.serialize_entry("covered_bytes", covered_bytes)?;
            }
            FallbackReason::OldVersion { found, supported } => {
                map.serialize_entry("found", found)?;
                map.serialize_entry("supported", supported)?;
            }
            FallbackReason::LineageChanged { rollout_id } => {
                map.serialize_entry("rollout_id", rollout_id)?;
            }
            FallbackReason::LineCountMismatch {
                covered_lines,
                prefix_lines,
            } => {
                map.serialize_entry("covered_lines", covered_lines)?;
                map.serialize_entry("prefix_lines", prefix_lines)?;
            }
            FallbackReason::OtherFormat { snapshot } => {
                map.serialize_entry("snapshot", snapshot)?;
            }
            FallbackReason::TranscriptChanged {
                transcript_bytes,
                covered_bytes,
            } => {
                map.serialize_entry("transcript_bytes", transcript_bytes)?;
                map.serialize_entry("covered_bytes", covered_bytes)?;
            }
        }
        map.serialize_entry("message", &self.to_string())?;
        map.end()
    }
}

impl fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FallbackReason::StrictMode => f.write_str(
                "strict reading checks every line, and a snapshot cannot vouch for the lines it covers",
            ),
            FallbackReason::Unreadable(error) => {
                write!(f, "the snapshot cannot be used: {}", error_chain(error))
            }
            FallbackReason::TruncationMismatch {
                snapshot,
                requested,
            } => write!(
                f,
                "the snapshot was written with truncation {snapshot}, not {requested}"
            ),
            FallbackReason::LegacyFormat => f.write_str("the rollout is in the legacy format"),
            FallbackReason::NoSessionMeta => {
                f.write_str("the snapshot covers no session_meta line of the rollout")
            }
            FallbackReason::RolloutShorter {
                rollout_bytes,
                covered_bytes,
            } => write!(
                f,
                "the rollout has {rollout_bytes} bytes; the snapshot covers {covered_bytes}"
            ),
            FallbackReason::PrefixChanged => {
                f.write_str("the rollout no longer starts with the prefix the snapshot covers")
            }
            FallbackReason::NotAtLineBoundary => {
                f.write_str("the prefix the snapshot covers does not end at a line boundary")
            }
            FallbackReason::LineCountMismatch {
                covered_lines,
                prefix_lines,
            } => write!(
                f,
                "the snapshot's header says it covers {covered_lines} line(s); the prefix it covers holds {prefix_lines}"
            ),
            FallbackReason::LineageChanged { rollout_id } => write!(
                f,
                "the file of rollout {rollout_id} in the thread's lineage is missing or no longer holds what the snapshot covers of it"
            ),
            FallbackReason::OldVersion { found, supported } => write!(
                f,
                "the snapshot has format version {found}, older than version {supported}, the only one this build reads"
            ),
            FallbackReason::OtherFormat { snapshot } => write!(
                f,
                "the snapshot is of a {} session",
                if *snapshot == "claude-code" {
                    "Claude Code"
                } else {
                    "Codex"
                }
            ),
            FallbackReason::TranscriptChanged {
                transcript_bytes,
                covered_bytes,
            } => write!(
                f,
                "the transcript changed since the snapshot ({transcript_bytes} bytes; the snapshot stands for {covered_bytes}): a transcript's snapshot stands for the whole file as read"
            ),
        }
    }
}

/// The outcome of resuming a rollout, however it was resumed ([`ResumeSource`]).
///
/// Its fields are read through methods: what a snapshot written from it
/// ([`Resumed::write_snapshot`]) stores must be what resume produced, so nothing here can be
/// replaced from outside. [`Resumed::into_history`] takes the history out.
#[derive(Debug)]
pub struct Resumed {
    pub(crate) path: PathBuf,
    pub(crate) history: History,
    pub(crate) report: LoadReport,
    pub(crate) previous_turn_settings: Option<Box<RawValue>>,
    pub(crate) ends_inside_turn: bool,
    pub(crate) compactions: Option<Compactions>,
    pub(crate) source: ResumeSource,
    /// The prefix the history stands for, recorded with [`ResumeOptions::snapshot_ready`].
    pub(crate) covered: Option<Covered>,
    /// For each entry, where its line is ([`Place::UNKNOWN`] for a snapshot's entries).
    pub(crate) entry_lines: Vec<Place>,
    /// The files of the rollout's lineage, oldest first (empty for a file on its own).
    pub(crate) lineage: Vec<LineageFile>,
    /// A `compacted` line without replacement history was rebuilt by local compaction (in the
    /// lines read, or in the prefix a snapshot covers).
    pub(crate) legacy_compaction: bool,
    /// The turn the rollout ends inside, as a snapshot written from this resume stores it.
    pub(crate) open_turn: Option<crate::snapshot::OpenTurn>,
    /// The scan facts of every line, lineage included, with [`ResumeOptions::keep_scan_facts`].
    pub(crate) scan_facts: Option<Vec<PrefixFact>>,
}

/// The rollout prefix a snapshot-ready resume stands for: what a snapshot written from it
/// ([`Resumed::write_snapshot`]) records.
#[derive(Debug)]
pub(crate) struct Covered {
    /// Its lines, length and digest.
    pub(crate) position: RolloutPosition,
    /// The scan facts of its lines.
    pub(crate) facts: Vec<PrefixFact>,
    /// The ancestors it continues, for a paginated thread with a lineage.
    pub(crate) lineage: Vec<AncestorCut>,
}

/// What the lines read said about compactions. A resume through a snapshot does not read the
/// lines the snapshot covers, so it has none of these ([`Resumed::compactions`]).
///
/// Serializes as `{"base", "lines", "legacy_rebuilt"}` (`base` null when none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Compactions {
    /// The line number of the `compacted` line (with a replacement history) the history's
    /// current state began with, if any: the newest one that no later rollback returned past.
    pub base: Option<u64>,
    /// Number of `compacted` lines in the file (Codex's fallback window number).
    pub lines: u64,
    /// A `compacted` line without replacement history was rebuilt by local compaction.
    pub legacy_rebuilt: bool,
}

impl Resumed {
    /// The rebuilt history; its reference context item is the one resume settled on (`None` when
    /// never set, cleared by a compaction, or after a legacy compaction was rebuilt — then the
    /// next turn re-injects full context).
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The rebuilt history, taken out.
    pub fn into_history(self) -> History {
        self.history
    }

    /// The rollout's path, or the label of the reader it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the reader found in the lines it read: the whole file, or after a snapshot the lines
    /// after the prefix it covers.
    pub fn report(&self) -> &LoadReport {
        &self.report
    }

    /// The thread id: the `id` of the rollout's first `session_meta` line.
    pub fn thread_id(&self) -> ThreadId {
        self.report.thread_id
    }

    /// The previous turn's settings: the raw payload of the newest `turn_context` of a kept user
    /// turn.
    pub fn previous_turn_settings(&self) -> Option<&RawValue> {
        self.previous_turn_settings.as_deref()
    }

    /// Whether the rollout ends inside a turn (a `task_started` without its end).
    pub fn ends_inside_turn(&self) -> bool {
        self.ends_inside_turn
    }

    /// The rollout's last turn, when it was started and neither completed nor aborted: its id,
    /// the items it recorded and its calls still without output (the next projection repairs
    /// them). The same as [`LoadReport::incomplete_turn`]; `Some` exactly when
    /// [`ends_inside_turn`](Resumed::ends_inside_turn).
    pub fn incomplete_turn(&self) -> Option<&IncompleteTurn> {
        self.report.incomplete_turn.as_ref()
    }

    /// What the file's `compacted` lines were, when every line was read (`None` after a snapshot
    /// stood for the prefix: its lines were not read).
    pub fn compactions(&self) -> Option<&Compactions> {
        self.compactions.as_ref()
    }

    /// How the history was resumed.
    pub fn source(&self) -> &ResumeSource {
        &self.source
    }

    /// Whether a snapshot stood for the rollout's prefix.
    pub fn used_snapshot(&self) -> bool {
        matches!(self.source, ResumeSource::Snapshot { .. })
    }

    /// Why a snapshot that was named was not used, if it was not.
    pub fn fallback_reason(&self) -> Option<&FallbackReason> {
        match &self.source {
            ResumeSource::Fallback(reason) => Some(reason),
            ResumeSource::Rollout | ResumeSource::Snapshot { .. } => None,
        }
    }

    /// The rollout prefix the history stands for, when resumed with
    /// [`ResumeOptions::snapshot_ready`].
    pub fn covered(&self) -> Option<RolloutPosition> {
        self.covered.as_ref().map(|covered| covered.position)
    }

    /// The 1-based number of the line the entry at `position` comes from (the `compacted` line
    /// for the items of a replacement history). `None` for an entry a snapshot supplied, and past
    /// the end.
    pub fn entry_line(&self, position: usize) -> Option<u64> {
        self.entry_lines
            .get(position)
            .map(|place| place.line())
            .filter(|&line| line > 0)
    }

    /// The file the line of [`entry_line`](Resumed::entry_line) is in: the rollout's own path,
    /// or in a lineage the ancestor's. `None` where `entry_line` is.
    pub fn entry_file(&self, position: usize) -> Option<&Path> {
        let place = self
            .entry_lines
            .get(position)
            .filter(|place| place.line() > 0)?;
        match place.file() {
            0 => Some(&self.path),
            back => self
                .lineage
                .len()
                .checked_sub(back + 1)
                .and_then(|index| self.lineage.get(index))
                .map(|file| file.path.as_path()),
        }
    }

    /// The files of a paginated rollout's lineage, oldest first, the rollout itself last (see
    /// [`Rollout::lineage`]); empty for a rollout resumed on its own, and after a snapshot stood
    /// for the prefix (its files' lines were not read).
    pub fn lineage(&self) -> &[LineageFile] {
        &self.lineage
    }
}

/// Resumes the history of the rollout file at `path`. The file is only read.
///
/// With [`ResumeOptions::snapshot`], the snapshot is tried first (see `docs/snapshot-format.md`
/// for when it stands for the rollout's prefix); otherwise, or when it cannot, every line is read
/// and replayed ([`Rollout::resume`]). The history is the same either way.
///
/// # Errors
///
/// [`RolloutError::Io`] when the file cannot be read, [`RolloutError::Empty`] when it has no
/// non-blank line, [`RolloutError::NoSessionMeta`] when no line is a usable `session_meta` line,
/// in strict mode [`RolloutError::BadLine`] for the first bad line, and
/// [`RolloutError::Replay`] when a line cannot be replayed.
pub fn resume_file(
    path: impl AsRef<Path>,
    options: &ResumeOptions,
) -> Result<Resumed, RolloutError> {
    let path = path.as_ref();
    let fallback = match &options.snapshot {
        None => None,
        Some(snapshot) => match snapshot::resume(path, snapshot, options) {
            Ok(resumed) => return Ok(resumed),
            Err(snapshot::Stop::Fallback(reason)) => Some(reason),
            Err(snapshot::Stop::Error(error)) => return Err(error),
        },
    };
    let mut resumed = resume_lines(rollout_text(open_rollout(path)?, path)?, path, options)?;
    if let Some(reason) = fallback {
        resumed.source = ResumeSource::Fallback(reason);
    }
    Ok(resumed)
}

/// Resumes a history from rollout bytes read from `reader`; errors name `label` (see
/// [`READER_LABEL`](super::READER_LABEL)). With [`ResumeOptions::snapshot`], the stream's first
/// bytes are checked against the snapshot as a file's are; what is read of the stream is kept in
/// memory until the resume through the snapshot is done, so that a fallback can replay it.
///
/// # Errors
///
/// As [`resume_file`].
pub fn resume_reader(
    reader: impl Read,
    label: impl AsRef<Path>,
    options: &ResumeOptions,
) -> Result<Resumed, RolloutError> {
    let label = label.as_ref();
    let text = rollout_text(reader, label)?;
    match &options.snapshot {
        Some(snapshot) => snapshot::resume_stream(text, label, snapshot, options),
        None => resume_lines(text, label, options),
    }
}

/// Reads every line from `reader` and replays them.
fn resume_lines(
    reader: impl Read,
    label: &Path,
    options: &ResumeOptions,
) -> Result<Resumed, RolloutError> {
    let mut hasher = blake3::Hasher::new();
    let mut lines = Vec::new();
    let source = LineSource {
        complete_lines_only: options.snapshot_ready,
        hasher: options.snapshot_ready.then_some(&mut hasher),
        ..LineSource::whole(label, options.read)
    };
    let read = read_lines(reader, source, &mut |mut line| {
        forget_unread_text(&mut line);
        lines.push(line);
    })?;
    let position = options.snapshot_ready.then(|| RolloutPosition {
        lines: read.report.lines,
        bytes: read.end,
        digest: hasher.finalize(),
    });
    let rollout = Rollout::from_parts(lines, read.report, label.to_owned())
        .with_lineage(options.codex_home.as_deref(), options.read)?;
    let mut resumed = rollout.resume(options.truncation)?;
    let facts = (options.snapshot_ready || options.keep_scan_facts).then(|| {
        line_facts(&rollout.lines, false)
            .into_iter()
            .map(stored_fact)
            .collect::<Vec<_>>()
    });
    let (covered_facts, scan_facts) = split_facts(facts, options);
    resumed.covered = position.map(|position| Covered {
        position,
        facts: covered_facts,
        lineage: rollout
            .lineage()
            .iter()
            .filter_map(AncestorCut::of)
            .collect(),
    });
    resumed.scan_facts = scan_facts;
    Ok(resumed)
}

/// The scan facts a resume with `options` computed (`None` when it was asked for none), shared
/// between the covered prefix a snapshot records and the ones a session keeps.
pub(super) fn split_facts(
    facts: Option<Vec<PrefixFact>>,
    options: &ResumeOptions,
) -> (Vec<PrefixFact>, Option<Vec<PrefixFact>>) {
    match facts {
        None => (Vec::new(), None),
        Some(facts) if !options.keep_scan_facts => (facts, None),
        Some(facts) if !options.snapshot_ready => (Vec::new(), Some(facts)),
        Some(facts) => (facts.clone(), Some(facts)),
    }
}

impl Rollout {
    /// Rebuilds the history these lines record, recording with `truncation`, as Codex resumes a
    /// session. The rollout is not changed. Time: O(n) lines plus the replayed items.
    ///
    /// It follows Codex's two phases: a reverse scan groups the lines into turn segments, applies
    /// rollbacks to them and settles the previous-turn settings and the reference context item;
    /// a forward replay rebuilds the history through the operations a live session uses. The
    /// world-state baseline is rebuilt from the `world_state` lines after the last line that
    /// clears it. Every rule is in `docs/codex-compatibility.md`, "Resume".
    ///
    /// # Errors
    ///
    /// [`RolloutError::Replay`] when a line cannot be replayed: an item or a compaction summary
    /// over 4 GiB.
    pub fn resume(&self, truncation: TruncationPolicy) -> Result<Resumed, RolloutError> {
        let facts = line_facts(&self.lines, false);
        let scan = reverse_scan(&facts);
        let mut replay = Replay::new(History::with_truncation(truncation), Vec::new(), None);
        replay.lines(&self.lines, self.path())?;
        let replay = replay.finish(self.path())?;
        let reference_context_item = match scan.reference {
            Reference::Latest(line) if !replay.legacy_compaction => turn_context_value(line),
            Reference::Latest(_) | Reference::NeverSet | Reference::Cleared => None,
        };
        let mut history = replay.history;
        history.set_shared_reference_context_item(reference_context_item);
        let mut report = self.report.clone();
        history.set_shared_world_state_baseline(world::rebuild_baseline(
            &self.lines,
            None,
            &mut report.world_state,
        ));
        report.incomplete_turn = replay.open_turn.as_ref().map(|turn| turn.report(&history));
        Ok(Resumed {
            path: self.path().to_owned(),
            history,
            report,
            previous_turn_settings: scan.settings.and_then(turn_context_raw),
            ends_inside_turn: scan::ends_inside_turn(&facts),
            compactions: Some(Compactions {
                base: replay.base.map(Place::line),
                lines: count_compacted(&self.lines),
                legacy_rebuilt: replay.legacy_compaction,
            }),
            source: ResumeSource::Rollout,
            covered: None,
            entry_lines: replay.entry_lines,
            lineage: self.lineage.clone(),
            legacy_compaction: replay.legacy_compaction,
            open_turn: replay.open_turn.as_ref().and_then(turn::Tracked::stored),
            scan_facts: None,
        })
    }
}

/// Drops the payload text of a line whose text resume never reads: an `event_msg` line, whose
/// [`Facts::Event`] holds all that resume uses. Codex's end-of-command events repeat a tool's
/// output, so in a real session they are a large part of the file; the lines are held until the
/// replay is done, and without this their text would be held with them.
fn forget_unread_text(line: &mut RolloutLine) {
    if line.kind == LineKind::EventMsg
        && let LineContent::Payload { raw, .. } = &mut line.content
    {
        *raw = RawValue::NULL.to_owned();
    }
}

/// The payload of a `turn_context` line, as a value (the reference context item). The reader
/// parsed it once to check it, so it parses again.
pub(super) fn turn_context_value(line: &RolloutLine) -> Option<std::sync::Arc<serde_json::Value>> {
    let Facts::TurnContext { .. } = line.facts() else {
        return None;
    };
    let raw = turn_context_raw(line)?;
    serde_json::from_str(raw.get())
        .ok()
        .map(std::sync::Arc::new)
}

/// The payload of a `turn_context` line, as its text (the previous-turn settings).
pub(super) fn turn_context_raw(line: &RolloutLine) -> Option<Box<RawValue>> {
    match &line.content {
        LineContent::Payload { raw, .. } => Some(raw.clone()),
        LineContent::Item { .. } => None,
    }
}

fn count_compacted(lines: &[RolloutLine]) -> u64 {
    lines
        .iter()
        .filter(|line| line.kind == LineKind::Compacted)
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The rows of the `FallbackReason` table of `docs/json-output.md`: each reason named in a
    /// row's first cell, with the row.
    fn documented_reasons() -> Vec<(String, String)> {
        let page = include_str!("../../../docs/json-output.md");
        let start = page
            .find("A `FallbackReason` is")
            .expect("the page has the FallbackReason table");
        let table = &page[start..];
        let table = &table[..table.find("```json").expect("an example after the table")];
        let mut reasons = Vec::new();
        // The rows under the header and its rule.
        let rows = table.lines().skip_while(|line| !line.starts_with("|---"));
        for row in rows.filter(|line| line.starts_with("| `")) {
            let first_cell = row.split('|').nth(1).expect("a first cell");
            for name in first_cell.split(',') {
                let name = name.trim().trim_matches('`');
                reasons.push((name.to_owned(), row.to_owned()));
            }
        }
        reasons
    }

    fn line(kind: &str, payload: &str) -> String {
        format!(r#"{{"timestamp":"2026-11-03T14:00:01.137Z","type":"{kind}","payload":{payload}}}"#)
    }

    const THREAD: &str = "0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90";

    fn meta() -> String {
        line(
            "session_meta",
            &format!(
                r#"{{"id":"{THREAD}","timestamp":"2026-11-03T14:00:00.000Z","cwd":"/w","originator":"test","cli_version":"0.0.0","source":"cli"}}"#
            ),
        )
    }

    fn event(payload: &str) -> String {
        line("event_msg", payload)
    }

    fn user(text: &str) -> String {
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        )
    }

    fn assistant(text: &str) -> String {
        format!(
            r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{text}"}}]}}"#
        )
    }

    fn turn_context(turn: &str, model: &str) -> String {
        format!(
            r#"{{"turn_id":"{turn}","cwd":"/w","approval_policy":"never","sandbox_policy":{{"type":"read-only"}},"model":"{model}"}}"#
        )
    }

    fn text(lines: &[String]) -> String {
        lines.iter().map(|line| format!("{line}\n")).collect()
    }

    /// A user turn with its lifecycle events, its `turn_context` (model `m<turn>`) and a user
    /// item; the turn is completed when `complete`.
    fn turn(turn: &str, complete: bool) -> Vec<String> {
        let mut lines = vec![
            event(&format!(r#"{{"type":"task_started","turn_id":"{turn}"}}"#)),
            line("turn_context", &turn_context(turn, &format!("m{turn}"))),
            event(&format!(
                r#"{{"type":"user_message","message":"question {turn}"}}"#
            )),
            line("response_item", &user(&format!("question {turn}"))),
        ];
        if complete {
            lines.push(line("response_item", &assistant(&format!("answer {turn}"))));
            lines.push(event(&format!(
                r#"{{"type":"task_complete","turn_id":"{turn}"}}"#
            )));
        }
        lines
    }

    /// The builder methods each set their one field and keep the others.
    #[test]
    fn each_option_builder_sets_its_field_and_keeps_the_others() {
        let read = ReadOptions {
            mode: ReadMode::Strict,
            ..ReadOptions::default()
        };
        let options = ResumeOptions::new(TruncationPolicy::Bytes(100))
            .with_snapshot("/s.snap")
            .snapshot_ready()
            .strict();
        assert_eq!(options.truncation, TruncationPolicy::Bytes(100));
        assert_eq!(options.read, read);
        assert_eq!(options.snapshot, Some(PathBuf::from("/s.snap")));
        assert!(options.snapshot_ready);
        // Each builder keeps what the others set, in any order.
        let other_order = ResumeOptions::new(TruncationPolicy::Bytes(100))
            .strict()
            .snapshot_ready()
            .with_snapshot("/s.snap");
        assert_eq!(other_order, options);
        let lenient = options.clone().read_with(ReadOptions::default());
        assert_eq!(lenient.read, ReadOptions::default());
        assert_eq!(lenient.truncation, TruncationPolicy::Bytes(100));
        assert_eq!(lenient.snapshot, Some(PathBuf::from("/s.snap")));
        assert!(lenient.snapshot_ready);
        assert_eq!(lenient.strict(), options);
        assert_ne!(
            ResumeOptions::new(TruncationPolicy::Bytes(100)).read_with(read),
            ResumeOptions::new(TruncationPolicy::Bytes(100))
        );
        assert_eq!(ResumeOptions::default().snapshot, None);
        assert!(!ResumeOptions::default().snapshot_ready);
    }

    /// What a resume from every line reports, read through each accessor: a turn, two
    /// `compacted` lines with replacement histories, then a second turn the rollout ends inside
    /// (a call without output).
    #[test]
    fn a_full_resume_reports_what_the_lines_say() {
        let mut lines = vec![meta()];
        lines.extend(turn("t1", true)); // lines 2–7
        let summary = assistant("summary");
        lines.push(line(
            "compacted",
            &format!(
                r#"{{"message":"first","replacement_history":[{}]}}"#,
                user("question t1")
            ),
        )); // line 8
        lines.push(line(
            "compacted",
            &format!(
                r#"{{"message":"second","replacement_history":[{},{summary}]}}"#,
                user("question t1")
            ),
        )); // line 9
        lines.extend(turn("t2", false)); // lines 10–13
        lines.push(line(
            "response_item",
            r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
        )); // line 14
        let bytes = text(&lines);
        let options = ResumeOptions::default();
        let resumed = resume_reader(bytes.as_bytes(), "label.jsonl", &options).expect("resumes");
        assert_eq!(resumed.path(), Path::new("label.jsonl"));
        assert_eq!(resumed.report().lines, 14);
        assert_eq!(resumed.thread_id().to_string(), THREAD);
        // The base (line 9)'s replacement history, then the second turn's items.
        let kinds: Vec<String> = resumed
            .history()
            .iter()
            .map(|entry| entry.json().to_owned())
            .collect();
        assert_eq!(kinds.len(), 4, "{kinds:?}");
        assert!(kinds[1].contains("summary"), "{kinds:?}");
        assert!(kinds[2].contains("question t2"), "{kinds:?}");
        assert_eq!(
            (0..5).map(|p| resumed.entry_line(p)).collect::<Vec<_>>(),
            [Some(9), Some(9), Some(13), Some(14), None]
        );
        let settings = resumed.previous_turn_settings().expect("settings").get();
        assert_eq!(settings, turn_context("t2", "mt2"));
        let expected: serde_json::Value =
            serde_json::from_str(&turn_context("t2", "mt2")).expect("json");
        assert_eq!(resumed.history().reference_context_item(), Some(&expected));
        assert!(resumed.ends_inside_turn());
        let open = resumed.incomplete_turn().expect("an open turn");
        assert_eq!(open.started_line, 10);
        assert_eq!((open.start, open.items), (2, 2));
        assert_eq!(open.calls_without_output.len(), 1);
        assert_eq!(
            resumed.compactions(),
            Some(&Compactions {
                base: Some(9),
                lines: 2,
                legacy_rebuilt: false
            })
        );
        assert!(matches!(resumed.source(), ResumeSource::Rollout));
        assert!(!resumed.used_snapshot());
        assert!(resumed.fallback_reason().is_none());
        assert_eq!(resumed.covered(), None);
        let history = resumed.into_history();
        assert_eq!(history.len(), 4);

        // The same lines with the last turn completed: no open turn.
        lines.push(event(r#"{"type":"task_complete","turn_id":"t2"}"#));
        let resumed =
            resume_reader(text(&lines).as_bytes(), "label.jsonl", &options).expect("resumes");
        assert!(!resumed.ends_inside_turn());
        assert!(resumed.incomplete_turn().is_none());
        assert_eq!(
            resumed.compactions().map(|c| c.lines),
            Some(2),
            "counts the compacted lines only"
        );
    }

    /// Through a snapshot: the entries it supplied have no line number, the later lines' entries
    /// have theirs; the source names the covered prefix, and the compacted lines (not read) are
    /// not reported. The history is the full resume's.
    #[test]
    fn through_a_snapshot_only_the_later_entries_have_line_numbers() {
        let dir = tempfile::tempdir().expect("dir");
        let rollout = dir.path().join("r.jsonl");
        let snapshot = dir.path().join("r.snap");
        let mut lines = vec![meta()];
        lines.extend(turn("t1", true));
        std::fs::write(&rollout, text(&lines)).expect("written");
        let ready =
            resume_file(&rollout, &ResumeOptions::default().snapshot_ready()).expect("resumes");
        ready.write_snapshot(&snapshot).expect("written");
        lines.extend(turn("t2", true));
        std::fs::write(&rollout, text(&lines)).expect("written");
        let options = ResumeOptions::default().with_snapshot(&snapshot);
        let through = resume_file(&rollout, &options).expect("resumes");
        assert!(through.used_snapshot(), "{:?}", through.source());
        assert!(through.fallback_reason().is_none());
        assert!(matches!(
            through.source(),
            ResumeSource::Snapshot { covered } if *covered == ready.covered().expect("covered")
        ));
        assert_eq!(through.compactions(), None);
        assert_eq!(
            (0..5).map(|p| through.entry_line(p)).collect::<Vec<_>>(),
            [None, None, Some(11), Some(12), None]
        );
        let full = resume_file(&rollout, &ResumeOptions::default()).expect("resumes");
        assert_eq!(through.history(), full.history());
        assert_eq!(
            (0..5).map(|p| full.entry_line(p)).collect::<Vec<_>>(),
            [Some(5), Some(6), Some(11), Some(12), None]
        );
    }

    /// A legacy compaction (no replacement history) rebuilt in an earlier turn leaves no
    /// reference context item, though a later turn has a `turn_context`: the next turn
    /// re-injects full context. Without it the newest `turn_context` is the reference.
    #[test]
    fn a_rebuilt_legacy_compaction_leaves_no_reference_context_item() {
        let mut lines = vec![meta()];
        lines.extend(turn("t1", false));
        lines.push(line("compacted", r#"{"message":"summary"}"#));
        lines.push(event(r#"{"type":"task_complete","turn_id":"t1"}"#));
        lines.extend(turn("t2", true));
        let resumed = resume_reader(text(&lines).as_bytes(), "l", &ResumeOptions::default())
            .expect("resumes");
        assert_eq!(
            resumed.compactions(),
            Some(&Compactions {
                base: None,
                lines: 1,
                legacy_rebuilt: true
            })
        );
        assert_eq!(resumed.history().reference_context_item(), None);
        assert_eq!(
            resumed.previous_turn_settings().map(RawValue::get),
            Some(turn_context("t2", "mt2").as_str())
        );
    }

    /// A resume ready for a snapshot reads only the newline-terminated lines and records the
    /// prefix they make up: its lines, its length and its BLAKE3 digest.
    #[test]
    fn a_snapshot_ready_resume_covers_the_complete_lines_only() {
        let mut lines = vec![meta()];
        lines.extend(turn("t1", true));
        let complete = text(&lines);
        let torn = line("response_item", &user("still being written"));
        let bytes = format!("{complete}{torn}");
        let ready = ResumeOptions::default().snapshot_ready();
        let resumed = resume_reader(bytes.as_bytes(), "l", &ready).expect("resumes");
        assert_eq!(
            resumed.covered(),
            Some(RolloutPosition {
                lines: 7,
                bytes: complete.len() as u64,
                digest: blake3::hash(complete.as_bytes()),
            })
        );
        assert_eq!(resumed.report().lines, 7);
        assert_eq!(resumed.history().len(), 2);
        // Without it the last line is read too.
        let plain = resume_reader(bytes.as_bytes(), "l", &ResumeOptions::default()).expect("ok");
        assert_eq!(plain.history().len(), 3);
        assert_eq!(plain.covered(), None);
    }

    /// An `event_msg` line's payload text is not kept once its facts are read; other lines keep
    /// theirs.
    #[test]
    fn only_event_lines_forget_their_text() {
        let lines = [
            event(r#"{"type":"user_message","message":"a long output"}"#),
            line("turn_context", &turn_context("t1", "m")),
            line("response_item", &user("hi")),
        ];
        let rollout = Rollout::read(
            text(&[vec![meta()], lines.to_vec()].concat()).as_bytes(),
            "l",
            ReadOptions::default(),
        )
        .expect("reads");
        let mut read = rollout.lines.clone();
        for line in &mut read {
            let before = line.payload_json().to_owned();
            forget_unread_text(line);
            if line.kind == LineKind::EventMsg {
                assert_eq!(line.payload_json(), "null");
                assert!(matches!(line.facts(), Facts::Event(_)));
            } else {
                assert_eq!(line.payload_json(), before);
            }
        }
        assert!(read.iter().any(|line| line.kind == LineKind::EventMsg));
    }

    /// Every fallback reason serializes as `{"reason", …its fields…, "message"}` with the name
    /// and fields `docs/json-output.md` lists for it, and the page lists no other reason. The
    /// `match` has no catch-all arm: a new reason does not compile until it is given its JSON
    /// here (and then fails until the page has it).
    #[test]
    fn every_fallback_reason_serializes_as_the_json_page_lists_it() {
        let reasons = [
            FallbackReason::StrictMode,
            FallbackReason::Unreadable(SnapshotError::NotAFile {
                path: PathBuf::from("/s.snap"),
            }),
            FallbackReason::TruncationMismatch {
                snapshot: TruncationPolicy::Tokens(10_000),
                requested: TruncationPolicy::Bytes(100),
            },
            FallbackReason::LegacyFormat,
            FallbackReason::NoSessionMeta,
            FallbackReason::RolloutShorter {
                rollout_bytes: 10,
                covered_bytes: 20,
            },
            FallbackReason::PrefixChanged,
            FallbackReason::NotAtLineBoundary,
            FallbackReason::OldVersion {
                found: 2,
                supported: 4,
            },
            FallbackReason::LineCountMismatch {
                covered_lines: 3,
                prefix_lines: 2,
            },
            FallbackReason::LineageChanged {
                rollout_id: "019a0000-0000-7000-8000-000000000001"
                    .parse()
                    .expect("an id"),
            },
            FallbackReason::OtherFormat {
                snapshot: "claude-code",
            },
            FallbackReason::TranscriptChanged {
                transcript_bytes: 30,
                covered_bytes: 25,
            },
        ];
        let documented = documented_reasons();
        let mut names = std::collections::BTreeSet::new();
        let mut messages = std::collections::BTreeSet::new();
        for reason in reasons {
            let (name, fields) = match &reason {
                FallbackReason::StrictMode => ("strict_mode", json!({})),
                FallbackReason::Unreadable(_) => ("unreadable", json!({})),
                FallbackReason::TruncationMismatch { .. } => (
                    "truncation_mismatch",
                    json!({"snapshot": {"mode": "tokens", "limit": 10_000},
                        "requested": {"mode": "bytes", "limit": 100}}),
                ),
                FallbackReason::LegacyFormat => ("legacy_format", json!({})),
                FallbackReason::NoSessionMeta => ("no_session_meta", json!({})),
                FallbackReason::RolloutShorter { .. } => (
                    "rollout_shorter",
                    json!({"rollout_bytes": 10, "covered_bytes": 20}),
                ),
                FallbackReason::PrefixChanged => ("prefix_changed", json!({})),
                FallbackReason::NotAtLineBoundary => ("not_at_line_boundary", json!({})),
                FallbackReason::OldVersion { .. } => {
                    ("old_version", json!({"found": 2, "supported": 4}))
                }
                FallbackReason::LineCountMismatch { .. } => (
                    "line_count_mismatch",
                    json!({"covered_lines": 3, "prefix_lines": 2}),
                ),
                FallbackReason::LineageChanged { .. } => (
                    "lineage_changed",
                    json!({"rollout_id": "019a0000-0000-7000-8000-000000000001"}),
                ),
                FallbackReason::OtherFormat { .. } => {
                    ("other_format", json!({"snapshot": "claude-code"}))
                }
                FallbackReason::TranscriptChanged { .. } => (
                    "transcript_changed",
                    json!({"transcript_bytes": 30, "covered_bytes": 25}),
                ),
            };
            assert_eq!(reason.name(), name);
            // The message is the reason in words, with its figures.
            let message = reason.to_string();
            let words = match &reason {
                FallbackReason::RolloutShorter { .. } => "has 10 bytes; the snapshot covers 20",
                FallbackReason::OldVersion { .. } => "format version 2, older than version 4",
                FallbackReason::LineCountMismatch { .. } => {
                    "covers 3 line(s); the prefix it covers holds 2"
                }
                FallbackReason::Unreadable(_) => "the snapshot cannot be used: ",
                FallbackReason::LineageChanged { .. } => {
                    "rollout 019a0000-0000-7000-8000-000000000001 in the thread's lineage"
                }
                FallbackReason::OtherFormat { .. } => "of a Claude Code session",
                FallbackReason::TranscriptChanged { .. } => "30 bytes; the snapshot stands for 25",
                _ => " ",
            };
            assert!(message.contains(words), "{name}: {message}");
            assert!(messages.insert(message), "{name}'s message twice");
            let mut expected = fields.clone();
            expected["reason"] = json!(name);
            expected["message"] = json!(reason.to_string());
            assert_eq!(
                serde_json::to_value(&reason).expect("serializes"),
                expected,
                "{name}"
            );
            assert_eq!(
                serde_json::to_value(ResumeSource::Fallback(reason)).expect("serializes"),
                json!({"source": "fallback", "fallback": expected}),
                "{name} as a resume's source"
            );
            let (_, row) = documented
                .iter()
                .find(|(documented, _)| documented == name)
                .unwrap_or_else(|| panic!("docs/json-output.md does not list `{name}`"));
            for field in fields.as_object().expect("an object").keys() {
                assert!(
                    row.contains(&format!("`{field}`")),
                    "the page's row of `{name}` does not name its field `{field}`"
                );
            }
            assert!(names.insert(name), "{name} twice");
        }
        let listed: std::collections::BTreeSet<&str> =
            documented.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            listed, names,
            "the page lists exactly the reasons there are"
        );
    }
}
