//! Reading Codex rollout JSONL files (reference §2.5; format: `docs/rollout-format.md`).
//!
//! The rules are documented on [`Rollout`], the public item that applies them.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::RolloutError;
use crate::item::{Entry, ItemKind};

/// The name errors give to a rollout read by [`Rollout::read`] from a reader without a path.
pub const READER_LABEL: &str = "<reader>";

/// How the reader treats a line it cannot use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum ReadMode {
    /// Skip it, report it in [`LoadReport::skipped`], and go on (Codex's behaviour).
    #[default]
    Lenient,
    /// Fail with [`RolloutError::BadLine`] on the first such line that is not blank.
    Strict,
}

/// The rollout item type of a line: the envelope's `type`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LineKind {
    /// `session_meta`: the session's metadata; the first one names the thread.
    SessionMeta,
    /// `response_item`: one Responses API item.
    ResponseItem,
    /// `compacted`: a compaction's summary and, in all but very old files, its replacement
    /// history.
    Compacted,
    /// `event_msg`: a protocol event (`turn_started`, `thread_rolled_back`, …).
    EventMsg,
    /// `turn_context`: one turn's settings.
    TurnContext,
    /// `inter_agent_communication`: a message between agents.
    InterAgentCommunication,
    /// Any other type (`world_state`, `token_usage_record`, …), with its name. Kept, not
    /// interpreted.
    Other(Box<str>),
}

impl LineKind {
    /// The kind of an envelope `type`.
    pub fn from_type(name: &str) -> LineKind {
        match name {
            "session_meta" => LineKind::SessionMeta,
            "response_item" => LineKind::ResponseItem,
            "compacted" => LineKind::Compacted,
            "event_msg" => LineKind::EventMsg,
            "turn_context" => LineKind::TurnContext,
            "inter_agent_communication" => LineKind::InterAgentCommunication,
            other => LineKind::Other(other.into()),
        }
    }

    /// The envelope `type` of this kind.
    pub fn as_str(&self) -> &str {
        match self {
            LineKind::SessionMeta => "session_meta",
            LineKind::ResponseItem => "response_item",
            LineKind::Compacted => "compacted",
            LineKind::EventMsg => "event_msg",
            LineKind::TurnContext => "turn_context",
            LineKind::InterAgentCommunication => "inter_agent_communication",
            LineKind::Other(name) => name,
        }
    }
}

impl fmt::Display for LineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One usable line of a rollout.
#[derive(Debug, Clone)]
pub struct RolloutLine {
    /// 1-based line number in the file (blank and skipped lines are counted).
    pub number: u64,
    /// Byte offset of the line's first byte in the file.
    pub offset: u64,
    /// The line's type.
    pub kind: LineKind,
    /// The payload's JSON text, byte for byte as in the file. In a legacy file a bare item (or
    /// the bare session meta) is its own payload.
    pub payload: Box<RawValue>,
    /// What resume needs to know about the line, found while validating it.
    pub(crate) facts: LineFacts,
}

impl RolloutLine {
    /// The payload's JSON text.
    pub fn payload_json(&self) -> &str {
        self.payload.get()
    }
}

/// A protocol event of an `event_msg` line, as far as resume cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// `turn_started`.
    TurnStarted { turn_id: Option<String> },
    /// `turn_complete` or `turn_aborted`.
    TurnEnded { turn_id: Option<String> },
    /// `user_message`.
    UserMessage,
    /// `thread_rolled_back`.
    ThreadRolledBack { num_turns: u64 },
    /// Any other event.
    Other,
}

/// The facts about a line that resume's reverse scan reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineFacts {
    /// Nothing resume interprets.
    None,
    /// A `response_item`; `user_turn` when it is a user-turn boundary (§5.4).
    Item { user_turn: bool },
    /// An `event_msg`.
    Event(Event),
    /// A `turn_context` and its `turn_id`.
    TurnContext { turn_id: Option<String> },
    /// A `compacted` line; `replacement` when it carries a `replacement_history`.
    Compacted { replacement: bool },
}

/// Why a line was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// Only white space.
    Blank,
    /// Not valid UTF-8.
    InvalidUtf8,
    /// Not valid JSON (serde's message).
    InvalidJson(String),
    /// Valid JSON, but not a line envelope (an object with a string `type` and a `payload`), or
    /// in a legacy file not an object.
    NotAnEnvelope(String),
    /// The payload of a `session_meta`, `compacted`, `event_msg` or `turn_context` line does not
    /// have that type's shape.
    InvalidPayload(String),
    /// A `response_item` (or an item of a `compacted` line's `replacement_history`) of a known
    /// item type without that type's shape.
    InvalidItem(String),
}

impl SkipReason {
    /// Whether this is a real problem, not just a blank line.
    pub fn is_malformed(&self) -> bool {
        !matches!(self, SkipReason::Blank)
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Blank => f.write_str("blank"),
            SkipReason::InvalidUtf8 => f.write_str("invalid UTF-8"),
            SkipReason::InvalidJson(why) => write!(f, "malformed: invalid JSON: {why}"),
            SkipReason::NotAnEnvelope(why) => write!(f, "malformed: not a rollout line: {why}"),
            SkipReason::InvalidPayload(why) => write!(f, "malformed: invalid payload: {why}"),
            SkipReason::InvalidItem(why) => write!(f, "invalid item: {why}"),
        }
    }
}

/// A line the reader did not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// Why.
    pub reason: SkipReason,
}

impl fmt::Display for SkippedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} (byte {}): {}",
            self.line, self.offset, self.reason
        )
    }
}

/// What reading a rollout found besides its usable lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoadReport {
    /// Number of lines read, skipped ones included.
    pub lines: u64,
    /// Lines that were skipped, in file order; blank lines among them.
    pub skipped: Vec<SkippedLine>,
    /// The last line had no `\n` and could not be used: a write cut short. It is the last entry
    /// of [`skipped`](LoadReport::skipped).
    pub torn_tail: bool,
    /// The `id` of the first `session_meta` line: the thread id. Always `Some` in a rollout the
    /// reader returned (a rollout without one is [`RolloutError::NoSessionMeta`]).
    pub thread_id: Option<String>,
    /// The file is in the legacy, pre-envelope format.
    pub legacy: bool,
    /// Legacy `ghost_snapshot` items dropped (as lines, or from replacement histories). Not a
    /// problem, so not in `skipped`.
    pub ghost_snapshots: u64,
    /// Legacy `{"record_type":"state",…}` lines passed over. Not a problem, so not in
    /// `skipped`.
    pub state_lines: u64,
}

impl LoadReport {
    /// Skipped lines other than blank ones.
    pub fn malformed(&self) -> impl Iterator<Item = &SkippedLine> {
        self.skipped
            .iter()
            .filter(|line| line.reason.is_malformed())
    }
}

/// A rollout read into memory: its usable lines and the load report.
///
/// [`Rollout::read`] streams a rollout line by line — memory for reading is bounded by the
/// longest line — and returns the usable lines with a [`LoadReport`]. In the default
/// [`ReadMode::Lenient`] a line it cannot use is skipped and reported with its 1-based number,
/// its byte offset and the reason ([`SkipReason`]); one bad line never makes a session
/// unreadable. [`ReadMode::Strict`] turns the first such line (other than a blank one) into
/// [`RolloutError::BadLine`].
///
/// What the reader checks: the line is UTF-8 and a JSON envelope (`type` + `payload`); the
/// payloads that resume interprets have their shape — a `session_meta` has a string `id`, a
/// `response_item` is an item ([`Entry::from_json`]: an unknown `type` is fine, a known type
/// with the wrong shape is not), a `compacted` has a string `message` and its
/// `replacement_history` holds items, an `event_msg` has a string `type` (and the fields of the
/// events resume reads), a `turn_context` is an object. Payloads of other line types are kept
/// as they are.
///
/// Envelope keys other than `type` and `payload` (`timestamp`, `ordinal`, `metadata`) are not
/// checked: a line without a `timestamp` is used. A line ends at `\n`; a `\r` before it is JSON
/// white space, so CRLF files read. `ghost_snapshot` items (legacy) are dropped, as lines and
/// from replacement histories, and counted in [`LoadReport::ghost_snapshots`].
///
/// **Legacy format.** The format is decided by the first line that is a JSON object: a bare
/// session meta (an `id` and a `timestamp`, not a `type` + `payload` envelope) makes the file
/// legacy ([`LoadReport::legacy`]); it is read as the `session_meta` line, every later line as a
/// bare `response_item`, except `{"record_type":"state",…}` lines, which are passed over
/// ([`LoadReport::state_lines`]).
///
/// Not implemented from §2.5 item 4: a first `session_meta` whose `history_mode` is
/// unrecognised does not abort the load, because the reference does not list the recognised
/// values; `history_mode` is not read at all.
///
/// # Examples
///
/// ```
/// use agent_history::rollout::{READER_LABEL, ReadMode, Rollout};
/// use agent_history::DEFAULT_TRUNCATION;
///
/// let text = concat!(
///     r#"{"timestamp":"2026-11-03T14:00:00.000Z","type":"session_meta","payload":{"id":"t-1","timestamp":"2026-11-03T14:00:00.000Z"}}"#, "\n",
///     r#"{"timestamp":"2026-11-03T14:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#, "\n",
///     r#"{"timestamp":"2026-11-03T14:00:02.000Z","type":"resp"#, // torn by a crash
/// );
/// let rollout = Rollout::read(text.as_bytes(), READER_LABEL, ReadMode::Lenient)?;
/// assert_eq!(rollout.thread_id(), "t-1");
/// assert!(rollout.report.torn_tail);
/// assert_eq!(rollout.report.skipped[0].line, 3);
///
/// let resumed = rollout.resume(DEFAULT_TRUNCATION);
/// assert_eq!(resumed.history.len(), 1);
/// # Ok::<(), agent_history::RolloutError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Rollout {
    /// The usable lines, in file order.
    pub lines: Vec<RolloutLine>,
    /// What else the reader found.
    pub report: LoadReport,
}

impl Rollout {
    /// Reads the rollout file at `path`. The file is only read.
    ///
    /// # Errors
    ///
    /// [`RolloutError::Io`] when the file cannot be opened or read, [`RolloutError::Empty`]
    /// when it has no non-blank line, [`RolloutError::NoSessionMeta`] when none of its lines is
    /// a `session_meta` line, and in [`ReadMode::Strict`] [`RolloutError::BadLine`] for the
    /// first line that is neither usable nor blank.
    pub fn read_file(path: impl AsRef<Path>, mode: ReadMode) -> Result<Rollout, RolloutError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| RolloutError::Io {
            path: path.to_owned(),
            source,
        })?;
        Rollout::read(file, path, mode)
    }

    /// Reads a rollout from `reader`; `label` is the path errors name (see [`READER_LABEL`]).
    ///
    /// # Errors
    ///
    /// As [`Rollout::read_file`].
    pub fn read(
        reader: impl Read,
        label: impl AsRef<Path>,
        mode: ReadMode,
    ) -> Result<Rollout, RolloutError> {
        let mut lines = Vec::new();
        let report = Rollout::stream(reader, label, mode, |line| lines.push(line))?;
        Ok(Rollout { lines, report })
    }

    /// Streams a rollout from `reader`: calls `visit` with each usable line, in file order, as
    /// soon as it is read, and returns the load report. Memory is bounded by the longest line,
    /// not the file (resume needs all lines for its reverse scan and uses [`Rollout::read`];
    /// a lint or a statistic can stream).
    ///
    /// # Errors
    ///
    /// As [`Rollout::read_file`]; `visit` has seen the lines before the error.
    pub fn stream(
        reader: impl Read,
        label: impl AsRef<Path>,
        mode: ReadMode,
        mut visit: impl FnMut(RolloutLine),
    ) -> Result<LoadReport, RolloutError> {
        let state = run(reader, label.as_ref(), mode, None, 0, 0, &mut visit)?;
        state.finish()
    }

    /// Reads the lines of an envelope-format rollout that follow a prefix already accounted for
    /// (a snapshot's): numbering starts after `lines_before` lines and `bytes_before` bytes, and
    /// the checks that concern the whole file (empty, no `session_meta`) are not made.
    pub(crate) fn read_continuation(
        reader: impl Read,
        label: &Path,
        lines_before: u64,
        bytes_before: u64,
    ) -> Result<Rollout, RolloutError> {
        let mut lines = Vec::new();
        let mut collect = |line| lines.push(line);
        let report = run(
            reader,
            label,
            ReadMode::Lenient,
            Some(Format::Envelope),
            lines_before,
            bytes_before,
            &mut collect,
        )?
        .report;
        Ok(Rollout { lines, report })
    }

    /// The thread id: the `id` of the first `session_meta` line.
    pub fn thread_id(&self) -> &str {
        self.report.thread_id.as_deref().unwrap_or_default()
    }
}

/// The line loop shared by [`Rollout::stream`] and [`Rollout::read_continuation`].
fn run<'v>(
    reader: impl Read,
    label: &Path,
    mode: ReadMode,
    format: Option<Format>,
    lines_before: u64,
    bytes_before: u64,
    visit: &'v mut dyn FnMut(RolloutLine),
) -> Result<ReadState<'v>, RolloutError> {
    let mut state = ReadState {
        path: label.to_owned(),
        mode,
        format,
        report: LoadReport {
            lines: lines_before,
            ..LoadReport::default()
        },
        visit,
        non_blank: false,
    };
    let mut reader = BufReader::new(reader);
    let mut buffer = Vec::new();
    let mut offset = bytes_before;
    loop {
        buffer.clear();
        let read = reader
            .read_until(b'\n', &mut buffer)
            .map_err(|source| RolloutError::Io {
                path: state.path.clone(),
                source,
            })?;
        if read == 0 {
            break;
        }
        state.report.lines += 1;
        let number = state.report.lines;
        let terminated = buffer.last() == Some(&b'\n');
        let content = if terminated {
            &buffer[..buffer.len() - 1]
        } else {
            &buffer[..]
        };
        state.line(content, number, offset, terminated)?;
        offset += read as u64;
    }
    Ok(state)
}

/// The two line formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `{timestamp, type, payload}` envelopes.
    Envelope,
    /// A bare session meta object, then bare items and state lines.
    Legacy,
}

struct ReadState<'v> {
    path: PathBuf,
    mode: ReadMode,
    /// Decided by the first line that is a JSON object.
    format: Option<Format>,
    report: LoadReport,
    visit: &'v mut dyn FnMut(RolloutLine),
    non_blank: bool,
}

/// What a usable line becomes.
enum Parsed {
    Line {
        kind: LineKind,
        payload: Box<RawValue>,
        facts: LineFacts,
        ghost_snapshots: u64,
    },
    /// A line that is read and deliberately not used (a ghost snapshot, a legacy state line).
    Ignored(Ignored),
}

enum Ignored {
    GhostSnapshot,
    StateLine,
}

impl ReadState<'_> {
    fn line(
        &mut self,
        content: &[u8],
        number: u64,
        offset: u64,
        terminated: bool,
    ) -> Result<(), RolloutError> {
        let reason = match self.parse(content) {
            Ok(Parsed::Line {
                kind,
                payload,
                facts,
                ghost_snapshots,
            }) => {
                let report = &mut self.report;
                report.ghost_snapshots += ghost_snapshots;
                if kind == LineKind::SessionMeta && report.thread_id.is_none() {
                    report.thread_id = Some(session_id(payload.get()).unwrap_or_default());
                }
                (self.visit)(RolloutLine {
                    number,
                    offset,
                    kind,
                    payload,
                    facts,
                });
                return Ok(());
            }
            Ok(Parsed::Ignored(Ignored::GhostSnapshot)) => {
                self.report.ghost_snapshots += 1;
                return Ok(());
            }
            Ok(Parsed::Ignored(Ignored::StateLine)) => {
                self.report.state_lines += 1;
                return Ok(());
            }
            Err(reason) => reason,
        };
        let torn = !terminated && reason.is_malformed();
        if self.mode == ReadMode::Strict && reason.is_malformed() {
            return Err(RolloutError::BadLine {
                path: self.path.clone(),
                line: number,
                offset,
                reason,
                torn_tail: torn,
            });
        }
        let report = &mut self.report;
        report.torn_tail = torn;
        report.skipped.push(SkippedLine {
            line: number,
            offset,
            reason,
        });
        Ok(())
    }

    fn parse(&mut self, content: &[u8]) -> Result<Parsed, SkipReason> {
        let Ok(text) = std::str::from_utf8(content) else {
            self.non_blank = true;
            return Err(SkipReason::InvalidUtf8);
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(SkipReason::Blank);
        }
        self.non_blank = true;
        match self.format {
            Some(Format::Envelope) => parse_envelope(text),
            Some(Format::Legacy) => parse_legacy(text),
            None => {
                let value = json_object(text)?;
                let head: FormatSniff<'_> = serde_json::from_str(value.get())
                    .map_err(|error| SkipReason::NotAnEnvelope(error.to_string()))?;
                if head.is_legacy_meta() {
                    self.format = Some(Format::Legacy);
                    self.report.legacy = true;
                    session_id(value.get()).map_err(SkipReason::InvalidPayload)?;
                    Ok(Parsed::Line {
                        kind: LineKind::SessionMeta,
                        payload: value,
                        facts: LineFacts::None,
                        ghost_snapshots: 0,
                    })
                } else {
                    self.format = Some(Format::Envelope);
                    parse_envelope(text)
                }
            }
        }
    }

    fn finish(self) -> Result<LoadReport, RolloutError> {
        if !self.non_blank {
            return Err(RolloutError::Empty { path: self.path });
        }
        if self.report.thread_id.is_none() {
            return Err(RolloutError::NoSessionMeta {
                path: self.path,
                lines: self.report.lines,
            });
        }
        Ok(self.report)
    }
}

/// The keys that tell the two formats apart.
#[derive(Deserialize)]
struct FormatSniff<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
}

impl FormatSniff<'_> {
    /// A bare session meta: an `id` and a `timestamp`, and not a `type` + `payload` envelope.
    fn is_legacy_meta(&self) -> bool {
        self.id.is_some()
            && self.timestamp.is_some()
            && !(self.kind.is_some() && self.payload.is_some())
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    payload: Box<RawValue>,
}

/// Parses `text` (trimmed, not empty) as a JSON object.
fn json_object(text: &str) -> Result<Box<RawValue>, SkipReason> {
    if !text.starts_with('{') {
        return Err(not_an_object(text));
    }
    serde_json::from_str(text).map_err(|error| SkipReason::InvalidJson(error.to_string()))
}

/// Why `text`, which does not start with `{`, is not a line.
fn not_an_object(text: &str) -> SkipReason {
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Ok(_) => SkipReason::NotAnEnvelope("not a JSON object".to_owned()),
        Err(error) => SkipReason::InvalidJson(error.to_string()),
    }
}

/// Checks that a payload is a JSON object (serde would also read a struct from an array).
fn expect_object(payload: &str, kind: &str) -> Result<(), String> {
    if payload.trim_start().starts_with('{') {
        Ok(())
    } else {
        Err(format!("{kind}: the payload is not a JSON object"))
    }
}

fn parse_envelope(text: &str) -> Result<Parsed, SkipReason> {
    if !text.starts_with('{') {
        return Err(not_an_object(text));
    }
    // Tell invalid JSON (a torn line, say) from valid JSON of the wrong shape.
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(error) if error.is_data() => return Err(SkipReason::NotAnEnvelope(error.to_string())),
        Err(error) => return Err(SkipReason::InvalidJson(error.to_string())),
    };
    let kind = LineKind::from_type(&envelope.kind);
    let payload = envelope.payload;
    let mut ghost_snapshots = 0;
    let facts = match &kind {
        LineKind::SessionMeta => {
            session_id(payload.get()).map_err(SkipReason::InvalidPayload)?;
            LineFacts::None
        }
        LineKind::ResponseItem => match item_facts(payload.get())? {
            Some(facts) => facts,
            None => return Ok(Parsed::Ignored(Ignored::GhostSnapshot)),
        },
        LineKind::Compacted => {
            let compacted = parse_compacted(payload.get())?;
            ghost_snapshots = compacted.ghost_snapshots;
            LineFacts::Compacted {
                replacement: compacted.replacement_history.is_some(),
            }
        }
        LineKind::EventMsg => {
            LineFacts::Event(parse_event(payload.get()).map_err(SkipReason::InvalidPayload)?)
        }
        LineKind::TurnContext => LineFacts::TurnContext {
            turn_id: turn_context_id(payload.get()).map_err(SkipReason::InvalidPayload)?,
        },
        LineKind::InterAgentCommunication | LineKind::Other(_) => LineFacts::None,
    };
    Ok(Parsed::Line {
        kind,
        payload,
        facts,
        ghost_snapshots,
    })
}

/// A line of a legacy file after the session meta: a state line or a bare item.
fn parse_legacy(text: &str) -> Result<Parsed, SkipReason> {
    #[derive(Deserialize)]
    struct StateSniff<'a> {
        #[serde(borrow, default)]
        record_type: Option<Cow<'a, str>>,
    }
    let value = json_object(text)?;
    let sniff: StateSniff<'_> = serde_json::from_str(value.get())
        .map_err(|error| SkipReason::NotAnEnvelope(error.to_string()))?;
    if sniff.record_type.as_deref() == Some("state") {
        return Ok(Parsed::Ignored(Ignored::StateLine));
    }
    match item_facts(value.get())? {
        Some(facts) => Ok(Parsed::Line {
            kind: LineKind::ResponseItem,
            payload: value,
            facts,
            ghost_snapshots: 0,
        }),
        None => Ok(Parsed::Ignored(Ignored::GhostSnapshot)),
    }
}

/// Checks an item; `None` for a `ghost_snapshot`, which is dropped.
fn item_facts(json: &str) -> Result<Option<LineFacts>, SkipReason> {
    let entry = item_entry(json)?;
    Ok(entry.map(|entry| LineFacts::Item {
        user_turn: entry.flags().is_user_turn_boundary(),
    }))
}

/// Builds the entry of an item; `None` for a legacy `ghost_snapshot`.
pub(crate) fn item_entry(json: &str) -> Result<Option<Entry>, SkipReason> {
    let entry =
        Entry::from_json(json).map_err(|error| SkipReason::InvalidItem(error.to_string()))?;
    // `ghost_snapshot` is not a type this library models, so only unknown items need a look.
    if entry.kind() == ItemKind::Unknown && is_ghost_snapshot(json) {
        return Ok(None);
    }
    Ok(Some(entry))
}

fn is_ghost_snapshot(json: &str) -> bool {
    #[derive(Deserialize)]
    struct TypeSniff<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
    }
    serde_json::from_str::<TypeSniff<'_>>(json).is_ok_and(|item| item.kind == "ghost_snapshot")
}

/// The `id` of a session meta payload.
fn session_id(payload: &str) -> Result<String, String> {
    expect_object(payload, "session_meta")?;
    #[derive(Deserialize)]
    struct SessionMetaId {
        id: String,
    }
    serde_json::from_str::<SessionMetaId>(payload)
        .map(|meta| meta.id)
        .map_err(|error| format!("session_meta: {error}"))
}

/// A `compacted` payload, checked.
pub(crate) struct CompactedPayload {
    /// The summary text.
    pub(crate) message: String,
    /// The replacement history's entries, ghost snapshots dropped.
    pub(crate) replacement_history: Option<Vec<Entry>>,
    /// How many ghost snapshots were dropped.
    pub(crate) ghost_snapshots: u64,
}

/// Parses and checks a `compacted` payload.
pub(crate) fn parse_compacted(payload: &str) -> Result<CompactedPayload, SkipReason> {
    #[derive(Deserialize)]
    struct Compacted<'a> {
        message: String,
        #[serde(borrow, default)]
        replacement_history: Option<Vec<&'a RawValue>>,
    }
    expect_object(payload, "compacted").map_err(SkipReason::InvalidPayload)?;
    let compacted: Compacted<'_> = serde_json::from_str(payload)
        .map_err(|error| SkipReason::InvalidPayload(format!("compacted: {error}")))?;
    let mut ghost_snapshots = 0;
    let replacement_history = match compacted.replacement_history {
        None => None,
        Some(items) => {
            let mut entries = Vec::with_capacity(items.len());
            for (position, item) in items.iter().enumerate() {
                match item_entry(item.get()) {
                    Ok(Some(entry)) => entries.push(entry),
                    Ok(None) => ghost_snapshots += 1,
                    Err(SkipReason::InvalidItem(why)) => {
                        return Err(SkipReason::InvalidItem(format!(
                            "replacement_history[{position}]: {why}"
                        )));
                    }
                    Err(other) => return Err(other),
                }
            }
            Some(entries)
        }
    };
    Ok(CompactedPayload {
        message: compacted.message,
        replacement_history,
        ghost_snapshots,
    })
}

/// Parses an `event_msg` payload: an object with a string `type`; the events resume reads must
/// have their fields.
fn parse_event(payload: &str) -> Result<Event, String> {
    #[derive(Deserialize)]
    struct EventType<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
    }
    #[derive(Deserialize)]
    struct TurnEvent {
        #[serde(default)]
        turn_id: Option<String>,
    }
    #[derive(Deserialize)]
    struct RolledBack {
        num_turns: u64,
    }
    expect_object(payload, "event_msg")?;
    let head: EventType<'_> =
        serde_json::from_str(payload).map_err(|error| format!("event_msg: {error}"))?;
    let kind = head.kind.as_ref();
    let turn_id = || {
        serde_json::from_str::<TurnEvent>(payload)
            .map(|event| event.turn_id)
            .map_err(|error| format!("{kind}: {error}"))
    };
    Ok(match kind {
        "turn_started" => Event::TurnStarted {
            turn_id: turn_id()?,
        },
        "turn_complete" | "turn_aborted" => Event::TurnEnded {
            turn_id: turn_id()?,
        },
        "user_message" => Event::UserMessage,
        "thread_rolled_back" => Event::ThreadRolledBack {
            num_turns: serde_json::from_str::<RolledBack>(payload)
                .map_err(|error| format!("{kind}: {error}"))?
                .num_turns,
        },
        _ => Event::Other,
    })
}

/// The `turn_id` of a `turn_context` payload, which must be an object.
fn turn_context_id(payload: &str) -> Result<Option<String>, String> {
    expect_object(payload, "turn_context")?;
    #[derive(Deserialize)]
    struct TurnContext {
        #[serde(default)]
        turn_id: Option<String>,
    }
    serde_json::from_str::<TurnContext>(payload)
        .map(|context| context.turn_id)
        .map_err(|error| format!("turn_context: {error}"))
}
