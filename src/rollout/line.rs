//! The line types of a rollout: what a line is ([`LineKind`]), a usable line with what was read
//! from it ([`RolloutLine`]), the `session_meta` payload this library writes ([`SessionMeta`]),
//! and the session's base instructions a `session_meta` records ([`BaseInstructions`]).

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::item::{Entry, OutputBody, ThreadId, TurnId, json_type};

use super::paginated::{HistoryBase, HistoryMode};

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
    /// `event_msg`: a protocol event (`task_started`, `thread_rolled_back`, …).
    EventMsg,
    /// `turn_context`: one turn's settings.
    TurnContext,
    /// `inter_agent_communication`: a message between agents.
    InterAgentCommunication,
    /// `world_state`: a world-state snapshot (`full: true`) or the merge patch of the baseline
    /// into the next one.
    WorldState,
    /// Any other type (`token_usage_record`, …), with its name. Kept, not interpreted.
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
            "world_state" => LineKind::WorldState,
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
            LineKind::WorldState => "world_state",
            LineKind::Other(name) => name,
        }
    }
}

impl fmt::Display for LineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One usable line of a rollout, with what the reader read from it: each line is parsed once.
#[derive(Debug, Clone)]
pub struct RolloutLine {
    /// 1-based line number in the file (blank and skipped lines are counted).
    pub number: u64,
    /// Byte offset of the line's first byte in the file.
    pub offset: u64,
    /// The line's type.
    pub kind: LineKind,
    /// The envelope's `ordinal`: every line of a paginated file has one, a legacy file's none.
    pub ordinal: Option<u64>,
    /// In a lineage ([`Rollout::with_lineage`](super::Rollout::with_lineage)), the file the line
    /// is in: 0 for the file read, `k` for its `k`-th ancestor.
    pub(crate) file: u16,
    pub(crate) content: LineContent,
}

/// Where a line is, as the replay keeps it for each entry: its number, and the file of a
/// lineage it is in (see [`RolloutLine::file`]) in the bits above [`Place::FILE_SHIFT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place(u64);

impl Place {
    /// Line numbers stay below 2^48 (a file of 2^48 lines is over 256 TiB).
    const FILE_SHIFT: u32 = 48;

    /// Unknown (an entry a snapshot supplied).
    pub(crate) const UNKNOWN: Place = Place(0);

    /// The 1-based line number in its file (0 when unknown).
    pub(crate) fn line(self) -> u64 {
        self.0 & ((1 << Self::FILE_SHIFT) - 1)
    }

    /// The file of the lineage (0: the file read).
    pub(crate) fn file(self) -> usize {
        (self.0 >> Self::FILE_SHIFT) as usize
    }
}

impl RolloutLine {
    /// The payload's JSON text, byte for byte as in the file. In a legacy file a bare item (or
    /// the bare session meta) is its own payload.
    pub fn payload_json(&self) -> &str {
        match &self.content {
            LineContent::Item {
                payload: Some(raw), ..
            }
            | LineContent::Payload { raw, .. } => raw.get(),
            LineContent::Item { entry, .. } => entry.json(),
        }
    }

    /// The item the line stands for, as the reader built it: a `response_item`'s item, or the
    /// `agent_message` an `inter_agent_communication` line is converted into.
    pub fn item(&self) -> Option<&Entry> {
        match &self.content {
            LineContent::Item { entry, .. } => Some(entry),
            LineContent::Payload { .. } => None,
        }
    }

    /// What resume reads from the line.
    pub(crate) fn facts(&self) -> &Facts {
        match &self.content {
            LineContent::Item { .. } => &Facts::None,
            LineContent::Payload { facts, .. } => facts,
        }
    }

    /// Where the line is, for the replay's bookkeeping.
    pub(crate) fn place(&self) -> Place {
        Place(self.number | (u64::from(self.file) << Place::FILE_SHIFT))
    }

    /// Whether the line is a `response_item` that starts a user turn.
    pub(crate) fn is_user_turn_item(&self) -> bool {
        self.item()
            .is_some_and(|entry| entry.flags().is_user_turn_boundary())
    }
}

/// What the reader read from a usable line.
#[derive(Debug, Clone)]
pub(crate) enum LineContent {
    /// A line that resume records as an item. For a `response_item` the entry keeps the
    /// payload's text verbatim and `payload` is `None`; for an `inter_agent_communication` the
    /// entry is the `agent_message` Codex converts the communication into, and `payload` keeps
    /// the line's own payload. `output` is what the item showed of a tool output's body, so
    /// that replaying it does not read the text again.
    Item {
        entry: Entry,
        output: OutputBody,
        payload: Option<Box<RawValue>>,
    },
    /// Any other line: the payload's text and what resume needs from it.
    Payload { raw: Box<RawValue>, facts: Facts },
}

/// What resume needs from a line other than a `response_item`.
#[derive(Debug, Clone)]
pub(crate) enum Facts {
    /// Nothing resume interprets.
    None,
    /// A `session_meta`: its thread id, history mode and base.
    SessionMeta(MetaFacts),
    /// A `compacted` line.
    Compacted(Arc<CompactedPayload>),
    /// An `event_msg`.
    Event(Event),
    /// A `turn_context` and its turn id. The payload is parsed again only for the line resume
    /// settles on (the reference context item): a parsed value takes several times the text's
    /// memory, and a long session holds a `turn_context` line per turn until resume is done.
    TurnContext { turn_id: Option<TurnId> },
    /// A `world_state` line of the right shape (`{"full": bool, "state": …}`); whether it is a
    /// whole snapshot. Its `state` is read only when resume needs it (see `resume/world.rs`).
    WorldState { full: bool },
}

/// What the reader takes from a `session_meta` line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MetaFacts {
    /// The thread id.
    pub(crate) id: ThreadId,
    /// `history_mode` (legacy when absent).
    pub(crate) mode: HistoryMode,
    /// `history_base`, when the file continues another's prefix.
    pub(crate) base: Option<HistoryBase>,
}

/// A `compacted` payload, checked.
#[derive(Debug)]
pub(crate) struct CompactedPayload {
    /// The summary text.
    pub(crate) message: String,
    /// The replacement history's entries, ghost snapshots dropped; `None` in a legacy line.
    pub(crate) replacement_history: Option<Vec<Entry>>,
}

/// A protocol event of an `event_msg` line, as far as resume cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// `task_started` (Codex's spelling) or its alias `turn_started`.
    TurnStarted { turn_id: Option<TurnId> },
    /// `task_complete` (Codex's spelling), its alias `turn_complete`, or `turn_aborted`.
    TurnEnded { turn_id: Option<TurnId> },
    /// `user_message`.
    UserMessage,
    /// `thread_rolled_back`.
    ThreadRolledBack { num_turns: u64 },
    /// Any other event.
    Other,
}

impl Event {
    /// The `event_msg` types that delimit, count or roll back turns: those the reader reads into
    /// an [`Event`] other than [`Event::Other`], in both spellings of the turn events. A writer
    /// that keeps a history in step with its file writes none of them as raw lines: resume would
    /// change the history, or the turns a later rollback counts, where the live history does not
    /// change.
    pub(crate) const TURN_TYPES: [&str; 7] = [
        "thread_rolled_back",
        "task_started",
        "task_complete",
        "turn_started",
        "turn_complete",
        "turn_aborted",
        "user_message",
    ];
}

/// The `session_meta` payload this library writes (the fields Codex requires). Fields it does
/// not set are omitted; a reader ignores what it does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The thread id: the conversation id of the file.
    pub id: ThreadId,
    /// The thread this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from_id: Option<ThreadId>,
    /// Session start, RFC 3339.
    pub timestamp: String,
    /// Working directory.
    pub cwd: String,
    /// The program that wrote the session.
    pub originator: String,
    /// Its version.
    pub cli_version: String,
    /// The session source (`cli`, `vscode`, `exec`, `mcp`, or an object in newer files).
    pub source: Value,
    /// The model provider (key always written, may be null).
    #[serde(default)]
    pub model_provider: Option<String>,
    /// Base instructions `{text, provenance?}` (key always written, may be null); see
    /// [`BaseInstructions`], which serializes to this shape, and [`LoadReport::base_instructions`]
    /// for what a reader takes from it.
    ///
    /// [`LoadReport::base_instructions`]: super::LoadReport::base_instructions
    #[serde(default)]
    pub base_instructions: Option<Value>,
    /// How the thread's history is kept: a paginated file numbers every line (omitted, and so
    /// legacy, by default).
    #[serde(default, skip_serializing_if = "HistoryMode::is_legacy")]
    pub history_mode: HistoryMode,
    /// The prefix of another rollout a paginated file continues (a fork's or a revert's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_base: Option<HistoryBase>,
}

impl SessionMeta {
    /// Metadata for a new session with thread id `id`, started now, in the current directory
    /// (empty when it cannot be read), written by this library (`source: "exec"`).
    pub fn new(id: ThreadId) -> SessionMeta {
        SessionMeta {
            id,
            forked_from_id: None,
            timestamp: timestamp(SystemTime::now()),
            cwd: std::env::current_dir()
                .map(|dir| dir.display().to_string())
                .unwrap_or_default(),
            originator: "agent_history".into(),
            cli_version: env!("CARGO_PKG_VERSION").into(),
            source: Value::String("exec".into()),
            model_provider: None,
            base_instructions: None,
            history_mode: HistoryMode::Legacy,
            history_base: None,
        }
    }

    /// These metadata for a paginated thread (every line numbered), continuing `base` when given.
    pub fn paginated(mut self, base: Option<HistoryBase>) -> SessionMeta {
        self.history_mode = HistoryMode::Paginated;
        self.history_base = base;
        self
    }

    /// The ordinal of this `session_meta` line in a paginated file (`None` in a legacy one): the
    /// base's end, or 0.
    pub(crate) fn first_ordinal(&self) -> Option<u64> {
        (self.history_mode == HistoryMode::Paginated).then(|| {
            self.history_base
                .map_or(0, |base| base.end_ordinal_exclusive)
        })
    }

    /// These metadata with base instructions `text` (Codex's `{"text": …}` shape): the
    /// instructions a resume reports and [`Session::compiler`](crate::Session::compiler) sends.
    pub fn with_base_instructions(mut self, text: impl Into<String>) -> SessionMeta {
        self.base_instructions = Some(serde_json::json!({ "text": text.into() }));
        self
    }

    /// The text of the base instructions, read as a resume reads them (`None` when absent or
    /// of a shape the reader does not know).
    pub(crate) fn base_instructions_text(&self) -> Option<String> {
        match instructions_of(self.base_instructions.clone()) {
            InstructionsField::Set(instructions) => Some(instructions.text),
            InstructionsField::Unset | InstructionsField::Unknown(_) => None,
        }
    }
}

/// A session's base instructions, as a `session_meta` line records them in `base_instructions`:
/// the text Codex sends as a request's `instructions`, and where it came from.
///
/// Serialized as Codex writes the field, `{"text": …, "provenance": …}` (`provenance` omitted
/// when `None`), so that it can be put in [`SessionMeta::base_instructions`].
///
/// # Examples
///
/// ```
/// use agent_history::{BaseInstructions, SessionMeta, ThreadId};
///
/// let mut meta = SessionMeta::new(ThreadId::random());
/// meta.base_instructions = Some(serde_json::to_value(BaseInstructions::new("Be brief."))?);
/// assert_eq!(meta.base_instructions, Some(serde_json::json!({"text": "Be brief."})));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaseInstructions {
    /// The text.
    pub text: String,
    /// Where the text came from, as recorded (its shape is not interpreted); `None` when the
    /// field is absent or null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Value>,
}

impl BaseInstructions {
    /// Instructions with this text and no provenance.
    pub fn new(text: impl Into<String>) -> BaseInstructions {
        BaseInstructions {
            text: text.into(),
            provenance: None,
        }
    }
}

/// What a `session_meta` payload says about the session's base instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InstructionsField {
    /// The field holds instructions.
    Set(BaseInstructions),
    /// The field is absent or null.
    Unset,
    /// The field has a shape this reader does not know; why.
    Unknown(String),
}

/// Reads the `base_instructions` field of a `session_meta` payload (an object; a duplicate key is
/// read as its last occurrence). Accepted: `{text, provenance?}` with a string `text` (Codex's
/// shape; other keys are ignored) and a plain string (taken as the text). Absent or `null` is
/// [`InstructionsField::Unset`]; anything else is [`InstructionsField::Unknown`], never an error.
pub(crate) fn base_instructions_field(payload: &str) -> InstructionsField {
    #[derive(Deserialize)]
    struct Field {
        #[serde(default)]
        base_instructions: Option<Value>,
    }
    let value = match serde_json::from_str::<Field>(payload) {
        Ok(field) => field.base_instructions,
        // A duplicate key, say: read it as the lenient reader reads a damaged `session_meta`.
        Err(_) => match serde_json::from_str::<serde_json::Map<String, Value>>(payload) {
            Ok(mut meta) => meta.remove("base_instructions"),
            Err(error) => return InstructionsField::Unknown(format!("unreadable ({error})")),
        },
    };
    instructions_of(value)
}

/// Reads a `base_instructions` value as [`base_instructions_field`] does.
fn instructions_of(value: Option<Value>) -> InstructionsField {
    match value {
        None | Some(Value::Null) => InstructionsField::Unset,
        Some(Value::String(text)) => InstructionsField::Set(BaseInstructions::new(text)),
        Some(Value::Object(mut object)) => match object.remove("text") {
            Some(Value::String(text)) => InstructionsField::Set(BaseInstructions {
                text,
                provenance: object.remove("provenance").filter(|value| !value.is_null()),
            }),
            Some(other) => InstructionsField::Unknown(format!(
                "its `text` is {}, not a string",
                json_type(&other)
            )),
            None => InstructionsField::Unknown("an object without `text`".into()),
        },
        Some(other) => {
            InstructionsField::Unknown(format!("{}, not {{text, provenance?}}", json_type(&other)))
        }
    }
}

/// `YYYY-MM-DDThh:mm:ss.mmmZ` in UTC: the rollout envelope's timestamp format.
pub(crate) fn timestamp(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::super::validate::{Parsed, parse_envelope};
    use super::*;

    /// What the reader makes of an `event_msg` line with this payload.
    fn event(payload: &str) -> Option<Event> {
        let line = format!(r#"{{"timestamp":"t","type":"event_msg","payload":{payload}}}"#);
        match parse_envelope(&line, false) {
            Ok(Parsed::Line {
                content:
                    LineContent::Payload {
                        facts: Facts::Event(event),
                        ..
                    },
                ..
            }) => Some(event),
            _ => None,
        }
    }

    /// Codex's spellings of the turn events and their aliases read as the same event.
    #[test]
    fn both_spellings_of_the_turn_events_read_alike() {
        for (codex, alias) in [
            ("task_started", "turn_started"),
            ("task_complete", "turn_complete"),
        ] {
            let read = |name: &str| event(&format!(r#"{{"type":"{name}","turn_id":"t7"}}"#));
            assert_eq!(read(codex), read(alias), "{codex}");
            assert_ne!(read(codex), Some(Event::Other), "{codex}");
        }
        let turn_id = Some(serde_json::from_str::<TurnId>(r#""t7""#).expect("a turn id"));
        assert_eq!(
            event(r#"{"type":"task_started","turn_id":"t7"}"#),
            Some(Event::TurnStarted {
                turn_id: turn_id.clone()
            })
        );
        assert_eq!(
            event(r#"{"type":"task_complete","turn_id":"t7"}"#),
            Some(Event::TurnEnded { turn_id })
        );
    }

    /// Every event type the reader interprets is among the turn types a session refuses to write
    /// raw; the others it reads as `Other`. Checked over every type the reader knows and Codex's
    /// spellings, so that a reader that learns a new event fails here until the list has it.
    #[test]
    fn the_turn_types_cover_every_event_the_reader_interprets() {
        let candidates = [
            "thread_rolled_back",
            "turn_started",
            "turn_complete",
            "turn_aborted",
            "user_message",
            "task_started",
            "task_complete",
            "agent_message",
            "token_count",
            "agent_reasoning",
            "exec_command_end",
            "context_compacted",
            "error",
        ];
        for name in candidates {
            let payload = format!(r#"{{"type":"{name}","num_turns":1,"turn_id":"t"}}"#);
            let interpreted = event(&payload).expect("a usable event line") != Event::Other;
            if interpreted {
                assert!(Event::TURN_TYPES.contains(&name), "{name} is interpreted");
            }
            assert_eq!(Event::TURN_TYPES.contains(&name), interpreted, "{name}");
        }
    }
}
