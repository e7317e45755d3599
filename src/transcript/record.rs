//! One line of a Claude Code transcript read into a [`Record`]: what choosing the conversation
//! and building its messages need of it, and nothing else.

use serde::Deserialize;
use serde_json::Value;

/// The kind of a chain record: the records linked by `uuid` and `parentUuid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// `user`: a prompt, tool results, or both.
    User,
    /// `assistant`: one or two blocks of a model response.
    Assistant,
    /// `system`: boundaries, hook summaries, a local command's output.
    System,
    /// `attachment`: context Claude Code attached; in the chain, never sent.
    Attachment,
    /// `progress`: a running tool's or hook's progress (in the chain before 2.1.85).
    Progress,
}

impl RecordKind {
    fn of(name: &str) -> Option<RecordKind> {
        Some(match name {
            "user" => RecordKind::User,
            "assistant" => RecordKind::Assistant,
            "system" => RecordKind::System,
            "attachment" => RecordKind::Attachment,
            "progress" => RecordKind::Progress,
            _ => return None,
        })
    }
}

/// A chain record.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// The line it was read from, from 1.
    pub(crate) line: u64,
    pub(crate) kind: RecordKind,
    pub(crate) uuid: Box<str>,
    pub(crate) parent: Option<Box<str>>,
    /// A compact boundary's `logicalParentUuid`: the last record before it.
    pub(crate) logical_parent: Option<Box<str>>,
    pub(crate) sidechain: bool,
    /// The subagent a sidechain record belongs to.
    pub(crate) agent_id: Option<Box<str>>,
    /// ISO 8601, compared as text.
    pub(crate) timestamp: Box<str>,
    /// A `system` record's `subtype`.
    pub(crate) subtype: Option<Box<str>>,
    /// `isApiErrorMessage`: an error Claude Code shows as an assistant line, never sent.
    pub(crate) api_error: bool,
    /// `isVirtual`: shown, never sent.
    pub(crate) is_virtual: bool,
    /// An assistant record's `message.id`.
    pub(crate) message_id: Option<Box<str>>,
    /// An assistant record's `message.model`.
    pub(crate) model: Option<Box<str>>,
    /// An assistant record's `message.usage`, as written.
    pub(crate) usage: Option<Box<Value>>,
    /// The content: `message.content` of a user or assistant record, `content` of a system
    /// record; `Null` otherwise.
    pub(crate) content: Value,
    /// Session facts, as the record gives them.
    pub(crate) session_id: Option<Box<str>>,
    pub(crate) cwd: Option<Box<str>>,
    pub(crate) version: Option<Box<str>>,
}

impl Record {
    /// The thread the record belongs to: the main thread (`None`), or a subagent by its
    /// `agentId` (an inline sidechain without one is the subagent `""`).
    pub(crate) fn thread(&self) -> Option<&str> {
        self.sidechain
            .then(|| self.agent_id.as_deref().unwrap_or(""))
    }

    /// A `system` record of `subtype`.
    pub(crate) fn is_system(&self, subtype: &str) -> bool {
        self.kind == RecordKind::System && self.subtype.as_deref() == Some(subtype)
    }

    /// Whether the content holds a `tool_result` block.
    pub(crate) fn holds_results(&self) -> bool {
        self.content.as_array().is_some_and(|blocks| {
            blocks
                .iter()
                .any(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
        })
    }

    /// A record a resume can send: a user or assistant record, or a local command's output.
    pub(crate) fn is_talk(&self) -> bool {
        matches!(self.kind, RecordKind::User | RecordKind::Assistant)
            || self.is_system("local_command")
    }
}

/// What one line is.
pub(crate) enum Parsed {
    /// A chain record.
    Record(Box<Record>),
    /// A record outside the chain (`summary`, `file-history-snapshot`, `queue-operation`,
    /// `last-prompt`, or a type this reader does not know), by its `type`.
    Other(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    #[serde(rename = "type")]
    kind: String,
    uuid: Option<String>,
    parent_uuid: Option<String>,
    logical_parent_uuid: Option<String>,
    #[serde(default)]
    is_sidechain: bool,
    agent_id: Option<String>,
    timestamp: Option<String>,
    subtype: Option<String>,
    #[serde(default)]
    is_api_error_message: bool,
    #[serde(default)]
    is_virtual: bool,
    message: Option<Message>,
    content: Option<Value>,
    session_id: Option<String>,
    cwd: Option<String>,
    version: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    id: Option<String>,
    model: Option<String>,
    usage: Option<Value>,
    #[serde(default)]
    content: Value,
}

/// Reads line `line`, or says why it is no record (serde's message).
pub(crate) fn parse_line(text: &str, line: u64) -> Result<Parsed, ParseProblem> {
    let value: Value = serde_json::from_str(text).map_err(|e| ParseProblem::Json(e.to_string()))?;
    if !value.is_object() {
        return Err(ParseProblem::Shape("a record must be a JSON object".into()));
    }
    if !value.get("type").is_some_and(Value::is_string) {
        return Err(ParseProblem::Shape(
            "a record must have a string `type`".into(),
        ));
    }
    let fields =
        serde_json::from_value::<Line>(value).map_err(|e| ParseProblem::Shape(e.to_string()))?;
    let Some(kind) = RecordKind::of(&fields.kind) else {
        return Ok(Parsed::Other(fields.kind));
    };
    let Some(uuid) = fields.uuid else {
        return Err(ParseProblem::Shape(format!(
            "a `{}` record must have a `uuid`",
            fields.kind
        )));
    };
    let (message_id, model, usage, content) = match (kind, fields.message) {
        (RecordKind::Assistant, Some(message)) => (
            message.id,
            message.model,
            message.usage.filter(Value::is_object).map(Box::new),
            message.content,
        ),
        (RecordKind::User, Some(message)) => (message.id, message.model, None, message.content),
        (RecordKind::System, _) => (None, None, None, fields.content.unwrap_or(Value::Null)),
        _ => (None, None, None, Value::Null),
    };
    let boxed = |text: Option<String>| text.map(String::into_boxed_str);
    Ok(Parsed::Record(Box::new(Record {
        line,
        kind,
        uuid: uuid.into_boxed_str(),
        parent: boxed(fields.parent_uuid),
        logical_parent: boxed(fields.logical_parent_uuid),
        sidechain: fields.is_sidechain,
        agent_id: boxed(fields.agent_id),
        timestamp: fields.timestamp.unwrap_or_default().into_boxed_str(),
        subtype: boxed(fields.subtype),
        api_error: fields.is_api_error_message,
        is_virtual: fields.is_virtual,
        message_id: boxed(message_id),
        model: boxed(model),
        usage,
        content,
        session_id: boxed(fields.session_id),
        cwd: boxed(fields.cwd),
        version: boxed(fields.version),
    })))
}

/// Why a line is no record.
pub(crate) enum ParseProblem {
    /// Not JSON.
    Json(String),
    /// JSON, not a record.
    Shape(String),
}
