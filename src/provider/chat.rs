//! The Chat Completions target: each Responses item converted to a part of a `messages` array
//! (cached per entry), and the writer that merges them into messages.
//!
//! Conversions (`docs/providers.md` has the table):
//! * `message` system / developer → a `system` / `developer` message (developer is sent as
//!   `system` unless [`DeveloperRole::Developer`]); user → a `user` message with `text` and
//!   `image_url` parts (`detail: original` → `high`); assistant → an `assistant` message, merged
//!   with the calls that follow it.
//! * `function_call` → a `tool_calls` entry (`id` = `call_id`, empty arguments → `{}`);
//!   `custom_tool_call` → a function call whose arguments are `{"input": <input>}`;
//!   `local_shell_call` → a function call named `local_shell` whose arguments are the action.
//!   Consecutive calls form one `tool_calls` array.
//! * outputs → `tool` messages with text content; images of a tool output → a placeholder in the
//!   tool message and a `user` message with the images after the batch's tool messages.
//! * `agent_message` → a `user` message with its text.
//! * reasoning, tool search, web search, image generation, compactions, additional tools and
//!   unknown items → not sent, reported.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::sync::{Arc, OnceLock};

use imbl::Vector;

use serde_json::{Value, json};

use crate::history::History;
use crate::item::{
    AgentContentItem, ContentItem, ImageDetail, ImagePart, ItemError, OutputContentItem,
    OutputPayload, ResponseItem, Role, parse_item,
};
use crate::projection::Projection;

use super::Target;
use super::target::{
    CHAT_CELL, DeveloperRole, KeptAssembly, PairRole, Rendered, Step, TARGET_ABORTED_OUTPUT,
    TargetOptions, TargetProjectionError, TargetRepair, TargetRepairKind, Unit, Units,
    merge_repairs, nearest_kept, pair_calls, reaches_back, read_kept, store_kept,
};

/// The name a `local_shell_call` is sent under as a function call.
pub const LOCAL_SHELL_FUNCTION: &str = "local_shell";

/// The name a call with an empty tool name is sent under (Chat Completions refuses an empty
/// `function.name`).
pub const UNNAMED_TOOL_FUNCTION: &str = "unnamed_tool";

/// The text that replaces the images of a tool output in its `tool` message; the images follow
/// in a `user` message after the batch's tool messages.
pub const TOOL_IMAGE_PLACEHOLDER: &str = "[image: sent in the next user message]";

/// A message's role as Chat Completions takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageRole {
    System,
    Developer,
    User,
}

/// What one item becomes.
#[derive(Debug)]
enum Piece {
    /// A `system`, `developer` or `user` message; `content` is the JSON of its content.
    Message {
        role: MessageRole,
        content: Box<str>,
    },
    /// An assistant message's content (JSON), merged with the calls that follow.
    Assistant { content: Box<str> },
    /// One `tool_calls` entry (JSON).
    Call { id: Box<str>, json: Box<str> },
    /// A `tool` message: its content (a JSON string) and the image parts moved out of it (the
    /// JSON of each `image_url` part, comma-separated; empty when none).
    Output {
        id: Box<str>,
        content: Box<str>,
        images: Box<str>,
    },
    /// Not sent.
    Nothing,
}

/// One item converted for Chat Completions, with what the conversion lost or changed.
#[derive(Debug)]
pub(crate) struct ChatItem {
    piece: Piece,
    notes: Box<[TargetRepairKind]>,
}

impl Rendered for ChatItem {
    const CELL: usize = CHAT_CELL;
    const TARGET: Target = Target::ChatCompletions;

    fn render(json: &str) -> Result<Self, ItemError> {
        let item = parse_item(json)?;
        let mut notes = Vec::new();
        let piece = convert(item, &mut notes);
        Ok(ChatItem {
            piece,
            notes: notes.into_boxed_slice(),
        })
    }

    fn pairing(&self) -> PairRole<'_> {
        match &self.piece {
            Piece::Call { id, .. } => PairRole::Call(id),
            Piece::Output { id, .. } => PairRole::Output(id),
            Piece::Message { .. } | Piece::Assistant { .. } => PairRole::Other,
            Piece::Nothing => PairRole::Nothing,
        }
    }

    fn notes(&self) -> &[TargetRepairKind] {
        &self.notes
    }
}

/// Converts one item.
fn convert(item: ResponseItem, notes: &mut Vec<TargetRepairKind>) -> Piece {
    match item {
        ResponseItem::Message(message) => {
            if message.encrypted_content.is_some() {
                notes.push(dropped("encrypted_content"));
            }
            let role = match message.role {
                Role::System => MessageRole::System,
                Role::Developer => MessageRole::Developer,
                Role::User => MessageRole::User,
                Role::Assistant => {
                    let content = content_json(&message.content, notes);
                    return Piece::Assistant {
                        content: content.into_boxed_str(),
                    };
                }
            };
            Piece::Message {
                role,
                content: content_json(&message.content, notes).into_boxed_str(),
            }
        }
        ResponseItem::AgentMessage(message) => {
            notes.push(TargetRepairKind::MappedRole {
                from: "agent_message".into(),
                to: "user".into(),
            });
            let mut texts = Vec::new();
            let mut lost = Vec::new();
            for part in &message.content {
                match part {
                    AgentContentItem::InputText { text } => texts.push(text_part(text)),
                    AgentContentItem::EncryptedContent { .. } => lost.push("encrypted_content"),
                    _ => lost.push("unknown part"),
                }
            }
            if !lost.is_empty() {
                notes.push(dropped(&lost.join(", ")));
            }
            Piece::Message {
                role: MessageRole::User,
                content: parts_json(texts, true).into_boxed_str(),
            }
        }
        ResponseItem::Reasoning(_) => {
            notes.push(TargetRepairKind::ReasoningNotSent);
            Piece::Nothing
        }
        ResponseItem::FunctionCall(call) => {
            if call.namespace.is_some() {
                notes.push(dropped("namespace"));
            }
            if call.encrypted_content.is_some() || call.encrypted_function_args.is_some() {
                notes.push(dropped("encrypted_content"));
            }
            let arguments = if call.arguments.trim().is_empty() {
                notes.push(TargetRepairKind::EmptyArguments);
                "{}".to_owned()
            } else {
                call.arguments
            };
            tool_call(call.call_id.as_str(), &call.name, arguments, notes)
        }
        ResponseItem::CustomToolCall(call) => {
            notes.push(TargetRepairKind::MappedCall {
                name: call.name.clone(),
            });
            if call.namespace.is_some() {
                notes.push(dropped("namespace"));
            }
            let arguments = json!({ "input": call.input }).to_string();
            tool_call(call.call_id.as_str(), &call.name, arguments, notes)
        }
        ResponseItem::LocalShellCall(call) => {
            let Some(call_id) = call.call_id else {
                notes.push(TargetRepairKind::DroppedCallWithoutId);
                return Piece::Nothing;
            };
            notes.push(TargetRepairKind::MappedCall {
                name: LOCAL_SHELL_FUNCTION.into(),
            });
            // The action is a typed value; serializing it cannot fail.
            let arguments = serde_json::to_string(&call.action).unwrap_or_else(|_| "{}".into());
            tool_call(call_id.as_str(), LOCAL_SHELL_FUNCTION, arguments, notes)
        }
        ResponseItem::FunctionCallOutput(output) => match output.call_id {
            Some(call_id) => tool_output(call_id.as_str(), &output.output, notes),
            None => {
                notes.push(TargetRepairKind::NoEquivalent);
                Piece::Nothing
            }
        },
        ResponseItem::CustomToolCallOutput(output) => {
            tool_output(output.call_id.as_str(), &output.output, notes)
        }
        ResponseItem::ToolSearchCall(_)
        | ResponseItem::ToolSearchOutput(_)
        | ResponseItem::WebSearchCall(_)
        | ResponseItem::ImageGenerationCall(_)
        | ResponseItem::Compaction(_)
        | ResponseItem::ContextCompaction(_)
        | ResponseItem::AdditionalTools(_)
        | ResponseItem::CompactionTrigger
        | ResponseItem::Other => {
            notes.push(TargetRepairKind::NoEquivalent);
            Piece::Nothing
        }
    }
}

/// A [`TargetRepairKind::DroppedParts`].
fn dropped(what: &str) -> TargetRepairKind {
    TargetRepairKind::DroppedParts { what: what.into() }
}

/// A `tool_calls` entry; an empty name is sent as [`UNNAMED_TOOL_FUNCTION`] and noted.
fn tool_call(id: &str, name: &str, arguments: String, notes: &mut Vec<TargetRepairKind>) -> Piece {
    let name = if name.is_empty() {
        notes.push(TargetRepairKind::EmptyToolName);
        UNNAMED_TOOL_FUNCTION
    } else {
        name
    };
    let json = json!({
        "id": id,
        "type": "function",
        "function": { "name": name, "arguments": arguments },
    });
    Piece::Call {
        id: id.into(),
        json: json.to_string().into_boxed_str(),
    }
}

/// A `tool` message for the output `payload` of `call_id`.
fn tool_output(call_id: &str, payload: &OutputPayload, notes: &mut Vec<TargetRepairKind>) -> Piece {
    let (text, images) = match payload {
        OutputPayload::Text(text) => (text.clone(), Vec::new()),
        OutputPayload::ContentItems(parts) => {
            let mut texts = Vec::new();
            let mut images = Vec::new();
            let mut lost = Vec::new();
            for part in parts {
                match part {
                    OutputContentItem::InputText { text } => texts.push(text.clone()),
                    OutputContentItem::InputImage(image) => match image_part(image, notes) {
                        Some(part) => {
                            texts.push(TOOL_IMAGE_PLACEHOLDER.to_owned());
                            images.push(part.to_string());
                        }
                        None => lost.push("image by file_id"),
                    },
                    OutputContentItem::InputAudio { .. } => lost.push("input_audio"),
                    OutputContentItem::EncryptedContent { .. } => lost.push("encrypted_content"),
                    _ => lost.push("unknown part"),
                }
            }
            if !lost.is_empty() {
                notes.push(dropped(&lost.join(", ")));
            }
            (texts.join("\n"), images)
        }
    };
    if !images.is_empty() {
        notes.push(TargetRepairKind::MovedToolOutputImages {
            images: images.len(),
        });
    }
    Piece::Output {
        id: call_id.into(),
        content: Value::String(text).to_string().into_boxed_str(),
        images: images.join(",").into_boxed_str(),
    }
}

/// A `text` part.
fn text_part(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

/// The `image_url` part of `image`; `None` for an image by file id (no equivalent).
fn image_part(image: &ImagePart, notes: &mut Vec<TargetRepairKind>) -> Option<Value> {
    let url = image.image_url.as_deref()?;
    let mut inner = serde_json::Map::new();
    inner.insert("url".into(), url.into());
    let detail = match image.detail {
        None => None,
        Some(ImageDetail::Auto) => Some("auto"),
        Some(ImageDetail::Low) => Some("low"),
        Some(ImageDetail::High) => Some("high"),
        Some(ImageDetail::Original) => {
            notes.push(TargetRepairKind::MappedImageDetail);
            Some("high")
        }
    };
    if let Some(detail) = detail {
        inner.insert("detail".into(), detail.into());
    }
    Some(json!({ "type": "image_url", "image_url": Value::Object(inner) }))
}

/// The JSON of a message's content: a string when it is one text part, else an array of parts
/// (`""` when nothing is left).
fn content_json(content: &[ContentItem], notes: &mut Vec<TargetRepairKind>) -> String {
    let mut parts = Vec::new();
    let mut only_text = true;
    let mut lost = Vec::new();
    for part in content {
        match part {
            ContentItem::InputText { text } | ContentItem::OutputText { text, .. } => {
                parts.push(text_part(text));
            }
            ContentItem::InputImage(image) => match image_part(image, notes) {
                Some(part) => {
                    only_text = false;
                    parts.push(part);
                }
                None => lost.push("image by file_id"),
            },
            ContentItem::InputAudio { .. } => lost.push("input_audio"),
            _ => lost.push("unknown part"),
        }
    }
    if !lost.is_empty() {
        notes.push(dropped(&lost.join(", ")));
    }
    parts_json(parts, only_text)
}

/// `parts` as content: a string when it is one text part, `""` when empty, else the array.
fn parts_json(mut parts: Vec<Value>, only_text: bool) -> String {
    if parts.is_empty() {
        return "\"\"".to_owned();
    }
    if only_text && parts.len() == 1 {
        if let Some(text) = parts
            .pop()
            .and_then(|mut part| part.get_mut("text").map(Value::take))
        {
            return text.to_string();
        }
        return "\"\"".to_owned();
    }
    Value::Array(parts).to_string()
}

/// One step of a Chat Completions projection, holding what it writes: a unit's rendering (with
/// the id it is sent under when its call id was mapped), or an `aborted` output for a call.
#[derive(Debug, Clone)]
enum Written {
    /// A unit.
    Unit {
        /// Its rendering (shared with the entry's cache).
        item: Arc<ChatItem>,
        /// The id it is sent under, when mapped ([`unique_ids`]).
        mapped: Option<Arc<str>>,
    },
    /// An `aborted` output answering the call sent under `id`.
    Synthetic {
        /// The call's id as sent.
        id: Arc<str>,
    },
}

impl Written {
    /// Its piece, if it is a unit.
    fn piece(&self) -> Option<&Piece> {
        match self {
            Written::Unit { item, .. } => Some(&item.piece),
            Written::Synthetic { .. } => None,
        }
    }

    /// Whether it is an output (a unit's or a synthetic one).
    fn is_output(&self) -> bool {
        match self {
            Written::Synthetic { .. } => true,
            Written::Unit { item, .. } => matches!(item.piece, Piece::Output { .. }),
        }
    }
}

/// The messages of a Chat Completions projection: the units in the order pairing chose, merged
/// into messages when written. A persistent vector: a projection of a later version shares the
/// steps of the earlier one's that did not change.
#[derive(Debug, Clone)]
pub(crate) struct ChatMessages {
    steps: Vector<Written>,
    developer_role: DeveloperRole,
    len: Arc<OnceLock<usize>>,
}

/// Ids that make every call id of the request unique and non-empty: a call whose id is empty
/// or was used by an earlier call gets `<id>_<n>` (`call_<n>` for an empty one), the first such
/// name no call of the request has; its output uses the same id. Keyed by unit (calls and
/// outputs); reported as [`TargetRepairKind::MappedId`]. Only such calls cost anything.
///
/// `units` are one piece of the assembly, starting at position `start`; a call id can have
/// calls in several pieces (a model that names every call `call_0`), so "used by an earlier
/// call" is decided within the piece and against `names`, which knows the first piece with a
/// call of each id of the request, the names minted by the pieces before, and where each base's
/// search resumes; it records the names minted here (returned too, for the piece's [`Span`]).
fn unique_ids(
    units: &[Unit<ChatItem>],
    steps: &[Step],
    call_of: &HashMap<usize, usize>,
    repairs: &mut Vec<TargetRepair>,
    (names, start): (&mut Names, usize),
) -> (HashMap<usize, Arc<str>>, Vec<Arc<str>>) {
    let mut mapped = HashMap::new();
    let mut minted = Vec::new();
    let call_id = |i: usize| match &units[i].rendered.piece {
        Piece::Call { id, .. } => Some(&**id),
        _ => None,
    };
    let mut seen: HashSet<&str> = HashSet::new();
    let mut needs_mapping = Vec::new();
    for step in steps {
        let Step::Unit(i) = *step else { continue };
        if let Some(id) = call_id(i)
            && (id.is_empty() || !seen.insert(id) || names.called_before(id, start))
        {
            needs_mapping.push(i);
        }
    }
    for call in needs_mapping {
        let id = call_id(call).unwrap_or("");
        let fresh = names.mint(if id.is_empty() { "call" } else { id }, start);
        repairs.push(TargetRepair {
            kind: TargetRepairKind::MappedId {
                from: id.to_owned(),
                to: fresh.to_string(),
            },
            at: units[call].at.clone(),
        });
        mapped.insert(call, Arc::clone(&fresh));
        minted.push(fresh);
    }
    for (&output, call) in call_of {
        if let Some(id) = mapped.get(call) {
            mapped.insert(output, Arc::clone(id));
        }
    }
    (mapped, minted)
}

/// "None" in the positions of an [`IdUse`].
const NOWHERE: usize = usize::MAX;

/// What an assembly knows of one call id or minted name (the key of [`ChatMemo::ids`]), as
/// the map keeps it: in 16 bytes for the common cases, an id whose calls and outputs start in
/// one piece (the same id may have units in later pieces too) and a name minted by one piece
/// as the first name its search tried (the map's nodes hold a slot for each of 32 keys, so the
/// size of a value counts per call id).
#[derive(Debug, Clone)]
enum Kept {
    /// The id of units from the piece at this start on, whose first call is in that piece
    /// (`true`), or of outputs only, none of which is loose (`false`).
    Own(usize, bool),
    /// A name minted by the piece at this start, the first its search tried.
    Minted(usize),
    /// Anything else (rare: a minted name that is also an output's id, an id a minted name
    /// skipped, an id whose first call comes after its first output, a loose output).
    Other(Arc<IdUse>),
}

impl Kept {
    /// The compact form of `used`.
    fn pack(used: IdUse) -> Kept {
        match used {
            IdUse {
                own,
                call,
                loose: NOWHERE,
                minted: NOWHERE,
                passed: 0,
                skipped_by: NOWHERE,
            } if call == own || call == NOWHERE => Kept::Own(own, call == own),
            IdUse {
                own: NOWHERE,
                call: NOWHERE,
                loose: NOWHERE,
                minted,
                passed: 0,
                skipped_by: NOWHERE,
            } => Kept::Minted(minted),
            _ => Kept::Other(Arc::new(used)),
        }
    }

    /// What it says.
    fn unpack(&self) -> IdUse {
        match *self {
            Kept::Own(own, call) => IdUse {
                own,
                call: if call { own } else { NOWHERE },
                ..IdUse::UNUSED
            },
            Kept::Minted(minted) => IdUse {
                minted,
                ..IdUse::UNUSED
            },
            Kept::Other(ref used) => **used,
        }
    }
}

/// What an assembly knows of one call id or minted name. The units of one call id can be in
/// several pieces ([`cuts`]); each position is the start of the FIRST piece that has what it
/// names, so that dropping the pieces from some start on drops exactly the positions at or
/// after it (an earlier piece that has it keeps its earlier position).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IdUse {
    /// The first piece with a call or an output of this id ([`NOWHERE`]: none).
    own: usize,
    /// The first piece with a call of this id (an output's id alone does not make a name
    /// taken, nor a later call of it mapped).
    call: usize,
    /// The first piece with an output of this id that answers no call (dropped): a later call
    /// of this id left unanswered would take it.
    loose: usize,
    /// The piece that sent a call under it as a minted name ([`NOWHERE`]: none).
    minted: usize,
    /// When minted: how many names its search tried before it (the search for its base
    /// started `passed` numbers lower), so that cutting the piece off restores where that
    /// base's search resumes.
    passed: usize,
    /// The start of the first piece before `call` whose minted name skipped it, because a
    /// call has it ([`NOWHERE`]: none): that piece's names depend on a later piece's calls.
    skipped_by: usize,
}

impl IdUse {
    /// Nothing known.
    const UNUSED: IdUse = IdUse {
        own: NOWHERE,
        call: NOWHERE,
        loose: NOWHERE,
        minted: NOWHERE,
        passed: 0,
        skipped_by: NOWHERE,
    };

    /// The start of the first piece that uses it (`NOWHERE`: none).
    fn first(&self) -> usize {
        self.own.min(self.minted)
    }

    /// Whether a call of the request is sent under it.
    fn taken(&self) -> bool {
        self.call != NOWHERE || self.minted != NOWHERE
    }

    /// What is left of it once the pieces from `dropped` on are cut off.
    fn before(mut self, dropped: usize) -> IdUse {
        let cut = |position: &mut usize| {
            if *position >= dropped {
                *position = NOWHERE;
            }
        };
        cut(&mut self.own);
        cut(&mut self.call);
        cut(&mut self.loose);
        cut(&mut self.minted);
        cut(&mut self.skipped_by);
        if self.minted == NOWHERE {
            self.passed = 0;
        }
        self
    }
}

/// The base and number of a minted name (`<base>_<n>`).
fn minted_parts(name: &str) -> Option<(&str, usize)> {
    let (base, n) = name.rsplit_once('_')?;
    Some((base, n.parse().ok()?))
}

/// The names of an assembly being made: the lineage's record of call ids and minted names
/// ([`ChatMemo::ids`]), and where each base's search for a fresh name resumes.
struct Names<'a> {
    ids: &'a mut imbl::HashMap<Arc<str>, Kept>,
    /// The number each base's next search starts at ([`ChatMemo::next`]). A name only becomes
    /// taken (minted, or a call's own id, all recorded before any piece is assembled), so every
    /// name a search for the same base tried before is still taken: starting after the last
    /// name it gave finds the same name, without trying `<id>_2`, `<id>_3`, … again for every
    /// call (an id reused by every call of a long session would make that quadratic). Kept
    /// with the assembly, so that an append resumes the search too.
    next: &'a mut imbl::HashMap<Arc<str>, usize>,
}

impl Names<'_> {
    /// Records the own call ids of the piece starting at `start`, the calls' and outputs' ids
    /// of `units`, and returns them (each once).
    fn record_own(&mut self, units: &[Unit<ChatItem>], start: usize) -> Vec<Arc<str>> {
        let mut own: Vec<(&str, bool)> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for unit in units {
            let (id, call) = match unit.rendered.pairing() {
                PairRole::Call(id) => (id, true),
                PairRole::Output(id) => (id, false),
                PairRole::Other | PairRole::Nothing => continue,
            };
            match index.get(id) {
                Some(&at) => own[at].1 |= call,
                None => {
                    index.insert(id, own.len());
                    own.push((id, call));
                }
            }
        }
        own.into_iter()
            .map(|(id, call)| {
                // The map's key when the id is known (a call id reused every turn is then one
                // string, not one per piece).
                let (key, mut used) = match self.ids.get_key_value(id) {
                    Some((key, kept)) => (Arc::clone(key), kept.unpack()),
                    None => (Arc::from(id), IdUse::UNUSED),
                };
                used.own = used.own.min(start);
                if call {
                    used.call = used.call.min(start);
                }
                self.ids.insert(Arc::clone(&key), Kept::pack(used));
                key
            })
            .collect()
    }

    /// Whether a call of a piece before the one at `start` has `id`.
    fn called_before(&self, id: &str, start: usize) -> bool {
        self.ids
            .get(id)
            .is_some_and(|kept| kept.unpack().call < start)
    }

    /// Records that the piece at `start` has an output of `id` that answers no call.
    fn record_loose(&mut self, id: &str, start: usize) {
        let mut used = self.ids.get(id).map_or(IdUse::UNUSED, Kept::unpack);
        used.loose = used.loose.min(start);
        self.ids.insert(Arc::from(id), Kept::pack(used));
    }

    /// The first `<base>_<n>` (n ≥ 2) no call of the request has, after those given to
    /// `base` before, minted for a call of the piece starting at `start`.
    fn mint(&mut self, base: &str, start: usize) -> Arc<str> {
        let from = self.next.get(base).copied().unwrap_or(2);
        let mut n = from;
        loop {
            count_name_tried();
            let name = format!("{base}_{n}");
            match self.ids.get(name.as_str()).map(Kept::unpack) {
                Some(mut used) if used.taken() => {
                    if used.call != NOWHERE && used.call > start {
                        // Only calls of later pieces have it: this piece's names depend on them.
                        used.skipped_by = used.skipped_by.min(start);
                        self.ids.insert(Arc::from(name.as_str()), Kept::pack(used));
                    }
                    n += 1;
                }
                used => {
                    let name: Arc<str> = Arc::from(name);
                    let mut used = used.unwrap_or(IdUse::UNUSED);
                    used.minted = start;
                    used.passed = n - from;
                    self.ids.insert(Arc::clone(&name), Kept::pack(used));
                    self.next.insert(Arc::from(base), n + 1);
                    return name;
                }
            }
        }
    }
}

#[cfg(feature = "testing")]
thread_local! {
    static NAMES_TRIED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many names this thread's Chat Completions assemblies tried while mapping call ids (the
/// `testing` feature): one per mapped call unless a name is taken, however many calls reuse an
/// id, which tests check by counting.
#[cfg(feature = "testing")]
pub fn chat_names_tried() -> u64 {
    NAMES_TRIED.with(std::cell::Cell::get)
}

/// Counts one name tried.
fn count_name_tried() {
    #[cfg(feature = "testing")]
    NAMES_TRIED.with(|count| count.set(count.get() + 1));
}

/// The steps and repairs of some units assembled on their own.
struct Assembled {
    steps: Vec<Written>,
    repairs: Vec<TargetRepair>,
    /// The names minted for its calls.
    minted: Vec<Arc<str>>,
    /// The outputs that answer no call (dropped), by index in the units.
    loose: Vec<usize>,
}

/// Assembles `units` (all of a projection's, or a piece that nothing outside it pairs or
/// batches with: see [`ChatMemo`]); `notes` are their notes' repairs.
fn assemble(
    units: &[Unit<ChatItem>],
    mut repairs: Vec<TargetRepair>,
    developer_role: DeveloperRole,
    names: (&mut Names, usize),
) -> Assembled {
    let paired = pair_calls(units);
    if developer_role == DeveloperRole::System {
        for step in &paired.steps {
            let Step::Unit(i) = *step else { continue };
            if let Piece::Message {
                role: MessageRole::Developer,
                ..
            } = units[i].rendered.piece
            {
                repairs.push(TargetRepair {
                    kind: TargetRepairKind::MappedRole {
                        from: "developer".into(),
                        to: "system".into(),
                    },
                    at: units[i].at.clone(),
                });
            }
        }
    }
    let (ids, minted) = unique_ids(units, &paired.steps, &paired.call_of, &mut repairs, names);
    let loose = units
        .iter()
        .enumerate()
        .filter(|(i, unit)| {
            matches!(unit.rendered.pairing(), PairRole::Output(_))
                && !paired.call_of.contains_key(i)
        })
        .map(|(i, _)| i)
        .collect();
    let steps = paired
        .steps
        .iter()
        .map(|step| match *step {
            Step::Unit(i) => Written::Unit {
                item: Arc::clone(&units[i].rendered),
                mapped: ids.get(&i).cloned(),
            },
            Step::Synthetic(call) => Written::Synthetic {
                id: match (ids.get(&call), &units[call].rendered.piece) {
                    (Some(mapped), _) => Arc::clone(mapped),
                    (None, Piece::Call { id, .. }) => Arc::from(&**id),
                    _ => Arc::from(""),
                },
            },
        })
        .collect();
    Assembled {
        steps,
        repairs: merge_repairs(repairs, paired.repairs),
        minted,
        loose,
    }
}

/// How the first or last unit of a piece that sends something takes part in batching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edge {
    /// A call: a call right after it joins its batch.
    Call,
    /// Anything else that is sent.
    Other,
}

/// One piece of an assembled projection: slots from `start` on that nothing before or after
/// pairs or batches with (no output and the call it answers on both sides of its bounds, no
/// call batch across them).
#[derive(Debug)]
struct Span {
    /// The position of its first slot.
    start: usize,
    /// How many steps and repairs the pieces before it have.
    steps_before: usize,
    repairs_before: usize,
    /// The call ids of its calls and outputs, and the names minted for its calls: its keys
    /// of [`ChatMemo::ids`].
    ids: Box<[Arc<str>]>,
    /// The edge of the last unit that sends something in this piece or, when it sends
    /// nothing, in the pieces before (`None`: nothing is sent up to its end).
    last: Option<Edge>,
}

/// What the projection of one version of a history for Chat Completions assembled, kept in the
/// history's lineage (shared by every version that holds the same entries at the same
/// positions; [`ChatMemos`]) so that a projection of another version of the lineage, later or
/// older, re-assembles only what differs.
///
/// The assembly is cut into pieces that nothing outside pairs or batches with: assembling each
/// piece on its own and putting the results one after the other gives what assembling all the
/// units at once gives (pairing only looks at the calls and outputs of one call id; a batch
/// spans consecutive calls; the writer merges steps across pieces as it would within one). A
/// later version differs from this one from its first appended slot on, an older version (a
/// prefix of this one) from its end on, and either at the slots the Responses repairs replaced
/// in one of them and not the other (a call answered since, an orphan whose call came): the
/// pieces before the first such position are kept, the rest re-assembled from the start of the
/// piece that holds it (for an older version: the piece its end falls in, if any, which this version's
/// assembly may have paired or batched with later items), moved back over kept pieces that a
/// re-assembled unit could pair with (below) or whose last unit is a call when the first
/// re-assembled one is a call.
///
/// The pieces before the first change are kept only when nothing re-assembled can pair back
/// across them ([`reaches_back`]: of each call id used before, the first re-assembled unit is a
/// call, and no re-assembled call that no later output answers has the id of a loose output
/// before); else the assembly moves back one slot, then two, four, …, each time to the first
/// piece that starts there or after (at most about twice as many slots as needed, however long
/// the pieces before). So a call id's units can be in many pieces: a session whose model names
/// every call `call_0` has a piece per turn and stays incremental, interrupted turns included.
///
/// Call ids that need mapping (empty, or used by an earlier call) are mapped piece by piece,
/// against [`ChatMemo::ids`]: one persistent map for the lineage, from each call id to the
/// first piece with a unit, a call and a loose output of it, and from each minted name to the
/// piece that minted it, so that a piece's calls see the calls of the pieces before and its
/// fresh name skips every call id of the request and every name an earlier piece minted,
/// exactly as an assembly of the whole projection picks it; where each base's search resumes
/// is kept too ([`ChatMemo::next`]). Re-assembling from a piece
/// therefore also moves back over a kept piece that minted a name a re-assembled unit has as
/// its own id (that call takes the name: the kept call gets another), and over a kept piece
/// whose minted name skipped a call id that is no longer there (it may take that name now).
#[derive(Debug)]
struct ChatMemo {
    options: TargetOptions,
    /// The length of the history version assembled.
    len: usize,
    /// The Responses projection's replaced slots of that version: (position, sends nothing).
    replaced: Vec<(usize, bool)>,
    pieces: Vector<Arc<Span>>,
    steps: Vector<Written>,
    repairs: Vector<TargetRepair>,
    /// Each call id of the assembly and each name minted for a call: the piece that has it, the
    /// piece that minted it, and the first piece whose minted name skipped it ([`IdUse`]). One
    /// persistent map for the lineage, not a copy per piece.
    ids: imbl::HashMap<Arc<str>, Kept>,
    /// Where the search for a fresh `<base>_<n>` resumes, by base, after the last piece
    /// ([`Names`]): one entry per base of a mapped call id. Cutting pieces off restores it from
    /// the names they minted ([`IdUse::passed`]).
    next: imbl::HashMap<Arc<str>, usize>,
}

/// The call id of a unit that pairs.
fn pairing_id(unit: &Unit<ChatItem>) -> Option<&str> {
    match unit.rendered.pairing() {
        PairRole::Call(id) | PairRole::Output(id) => Some(id),
        PairRole::Other | PairRole::Nothing => None,
    }
}

/// The edge of a unit that sends something.
fn edge(unit: &Unit<ChatItem>) -> Option<Edge> {
    match unit.rendered.pairing() {
        PairRole::Call(_) => Some(Edge::Call),
        PairRole::Output(_) | PairRole::Other => Some(Edge::Other),
        PairRole::Nothing => None,
    }
}

/// The first position where `before` and `now` (replaced slots, sorted) differ.
fn first_difference(before: &[(usize, bool)], now: &[(usize, bool)]) -> Option<usize> {
    let (mut a, mut b) = (before.iter().peekable(), now.iter().peekable());
    loop {
        match (a.peek(), b.peek()) {
            (None, None) => return None,
            (Some(x), None) => return Some(x.0),
            (None, Some(y)) => return Some(y.0),
            (Some(x), Some(y)) if x == y => {
                a.next();
                b.next();
            }
            (Some(x), Some(y)) => return Some(x.0.min(y.0)),
        }
    }
}

/// Cuts `units` where nothing on one side pairs or batches with the other: the unit indices
/// each piece starts at (the first is 0). No pair of `call_of` (output to call, as
/// [`pair_calls`] paired `units`) and no call batch spans a cut, and a cut is not between two
/// units at one position (a piece is re-assembled from its position). The units of one call id
/// can be in several pieces (a model that names every call `call_0` has a piece per turn):
/// pairing each piece on its own pairs as the whole does, since no output finds a call across
/// a cut (it would be paired across it) and every call takes only an output of its own piece;
/// naming sees the pieces before through [`Names`].
fn cuts(units: &[Unit<ChatItem>], call_of: &HashMap<usize, usize>) -> Vec<usize> {
    // For the first unit of each pair, the other one.
    let mut partner: HashMap<usize, usize> = HashMap::with_capacity(call_of.len());
    for (&output, &call) in call_of {
        partner.insert(output.min(call), output.max(call));
    }
    let mut cuts = vec![0];
    // The last unit a pair begun so far reaches, and the edge of the last unit sent.
    let mut reach = 0;
    let mut previous: Option<Edge> = None;
    for (i, unit) in units.iter().enumerate() {
        let this = edge(unit);
        if i > 0
            && i > reach
            && units[i - 1].at.position != unit.at.position
            && !(previous == Some(Edge::Call) && this == Some(Edge::Call))
            && this.is_some()
        {
            cuts.push(i);
        }
        if let Some(&other) = partner.get(&i) {
            reach = reach.max(other);
        }
        if this.is_some() {
            previous = this;
        }
    }
    cuts
}

/// How many assemblies a lineage keeps for Chat Completions ([`ChatMemos`]): enough for two
/// option sets (say both developer roles) each projected at two versions (a writer and a reader
/// behind it), or four option sets at one version.
pub(crate) const CHAT_MEMOS: usize = 4;

/// The Chat Completions assemblies a lineage keeps: at most [`CHAT_MEMOS`], the most recently
/// used first. A projection starts from the kept assembly of its options whose version is the
/// nearest to its own (a later version extends it, an older one cuts it back: see
/// [`ChatMemo`]); its own assembly then takes the place of the one it started from when that was
/// of a shorter or the same version, and is kept beside it when it was of a longer one, so that
/// a writer appending and a reader projecting an older version each find their own. The least
/// recently used is dropped when a new one does not fit.
/// The cell holds them as such a vector, read, searched and stored by the rule both targets
/// share (`target::read_kept`, `target::nearest_kept`, `target::store_kept`).
type ChatMemos = Vec<Arc<ChatMemo>>;

impl KeptAssembly for ChatMemo {
    type Options = TargetOptions;

    fn version_len(&self) -> usize {
        self.len
    }

    fn options(&self) -> &TargetOptions {
        &self.options
    }
}

/// Projects for Chat Completions, re-assembling only what differs from the projection of
/// another version of `history`'s lineage ([`ChatMemos`], [`ChatMemo`]).
pub(crate) fn project(
    history: &History,
    projection: &Projection,
    options: &TargetOptions,
) -> Result<(ChatMessages, Vector<TargetRepair>), TargetProjectionError> {
    let cell = history.lineage_memo(CHAT_CELL);
    let kept: ChatMemos = cell.map(read_kept).unwrap_or_default();
    let replaced: Vec<(usize, bool)> = projection.replaced_slots().collect();
    let source = nearest_kept(&kept, options, history.len());
    let memo = match &source {
        // The same version (a warm projection): its assembly as it is.
        Some(source) if source.len == history.len() && source.replaced == replaced => {
            Arc::clone(source)
        }
        Some(source) => Arc::new(extend(source, history, projection, replaced)?),
        None => Arc::new(whole(history, projection, options, replaced)?),
    };
    let messages = ChatMessages {
        steps: memo.steps.clone(),
        developer_role: options.developer_role,
        len: Arc::default(),
    };
    let repairs = memo.repairs.clone();
    if let Some(cell) = cell {
        store_kept(cell, &memo, source.as_ref(), CHAT_MEMOS);
    }
    Ok((messages, repairs))
}

/// The assembly of the whole projection.
fn whole(
    history: &History,
    projection: &Projection,
    options: &TargetOptions,
    replaced: Vec<(usize, bool)>,
) -> Result<ChatMemo, TargetProjectionError> {
    let empty = ChatMemo {
        options: *options,
        len: 0,
        replaced: Vec::new(),
        pieces: Vector::new(),
        steps: Vector::new(),
        repairs: Vector::new(),
        ids: imbl::HashMap::new(),
        next: imbl::HashMap::new(),
    };
    let units = Units::<ChatItem>::collect(projection)?;
    let bounds = cuts(&units.units, &pair_calls(&units.units).call_of);
    Ok(reassemble(
        &empty,
        0,
        (units, bounds),
        history,
        options,
        replaced,
    ))
}

/// The assembly of `history` from `earlier`'s (of a later or an older version of the
/// lineage), re-assembling from the first position that differs (see [`ChatMemo`]).
fn extend(
    earlier: &ChatMemo,
    history: &History,
    projection: &Projection,
    replaced: Vec<(usize, bool)>,
) -> Result<ChatMemo, TargetProjectionError> {
    // A later version differs from the first appended slot on, an older one (a prefix) from
    // its end; both where the Responses repairs replaced a slot in one and not the other.
    let changed = first_difference(&earlier.replaced, &replaced)
        .map_or(earlier.len, |position| position.min(earlier.len))
        .min(history.len());
    // The pieces kept: those that end at or before `changed`.
    let mut keep = if changed >= earlier.len {
        earlier.pieces.len()
    } else {
        let holding = partition_point(&earlier.pieces, |piece| piece.start <= changed);
        holding.saturating_sub(1)
    };
    // How many slots to move back when the new units could pair across the start: one, then
    // twice as many each time, to the first piece that starts there or after, so that finding
    // how far back costs about what re-assembling from there costs. Counted in slots, not
    // pieces: a large piece just before the place needed is not taken for nothing.
    let mut back = 1;
    loop {
        if keep == 0 {
            return whole(history, projection, &earlier.options, replaced);
        }
        let start = earlier
            .pieces
            .get(keep)
            .map_or(earlier.len, |piece| piece.start);
        // A kept piece whose minted name skipped a call id whose first call is in a piece not
        // kept is re-assembled (without that call, it may take that name).
        let skipped = earlier
            .pieces
            .skip(keep)
            .iter()
            .flat_map(|piece| piece.ids.iter())
            .filter_map(|id| earlier.ids.get(id))
            .map(Kept::unpack)
            .filter(|used| used.call >= start)
            .map(|used| used.skipped_by)
            .filter(|&piece_start| piece_start < start)
            .min();
        if let Some(piece_start) = skipped {
            keep = partition_point(&earlier.pieces, |piece| piece.start < piece_start);
            continue;
        }
        let units = Units::<ChatItem>::collect_from(projection, start)?;
        // A kept piece that minted a name a re-assembled unit has as its own id is re-assembled
        // too (a call under that id takes the name, and the kept call another).
        let minted = units
            .units
            .iter()
            .filter_map(pairing_id)
            .filter_map(|id| earlier.ids.get(id).map(|kept| kept.unpack().minted))
            .filter(|&piece_start| piece_start < start)
            .min();
        if let Some(piece_start) = minted {
            keep = partition_point(&earlier.pieces, |piece| piece.start < piece_start);
            continue;
        }
        // So are kept pieces a new unit could pair with.
        let paired = pair_calls(&units.units);
        // (As `ids` knows the pieces before `start`: the first piece with a unit, a loose
        // output of each id.)
        let before = |id: &str| earlier.ids.get(id).map(Kept::unpack);
        if reaches_back(
            &units.units,
            &paired.call_of,
            |id| before(id).is_some_and(|used| used.own < start),
            |id| before(id).is_some_and(|used| used.loose < start),
        ) {
            let target = start.saturating_sub(back);
            keep = partition_point(&earlier.pieces, |piece| piece.start < target).min(keep - 1);
            back *= 2;
            continue;
        }
        // So is the last kept piece when its last call would batch with the first new call.
        let first = units.units.iter().find_map(edge);
        let last = earlier.pieces.get(keep - 1).and_then(|piece| piece.last);
        if first == Some(Edge::Call) && last == Some(Edge::Call) {
            keep -= 1;
            continue;
        }
        let bounds = cuts(&units.units, &paired.call_of);
        return Ok(reassemble(
            earlier,
            keep,
            (units, bounds),
            history,
            &earlier.options,
            replaced,
        ));
    }
}

/// The index of the first piece for which `before` is false (they are sorted by start).
fn partition_point(pieces: &Vector<Arc<Span>>, before: impl Fn(&Span) -> bool) -> usize {
    let (mut low, mut high) = (0, pieces.len());
    while low < high {
        let mid = low + (high - low) / 2;
        if pieces.get(mid).is_some_and(|piece| before(piece)) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    low
}

/// `earlier`'s first `keep` pieces followed by `units` (the slots after them) assembled in
/// the pieces that start at `bounds` ([`cuts`]).
fn reassemble(
    earlier: &ChatMemo,
    keep: usize,
    (units, mut bounds): (Units<ChatItem>, Vec<usize>),
    history: &History,
    options: &TargetOptions,
    replaced: Vec<(usize, bool)>,
) -> ChatMemo {
    let Units { units, repairs } = units;
    let mut next = earlier.next.clone();
    let (mut steps, mut kept_repairs, mut ids) = match earlier.pieces.get(keep) {
        Some(first_dropped) => {
            // What the dropped pieces recorded goes: their ids' uses, their minted names, the
            // skips of their minted names (each at or after the first dropped piece's start).
            let dropped = first_dropped.start;
            let mut ids = earlier.ids.clone();
            // Where each base's search started for the first name a dropped piece minted:
            // where it resumes now.
            let mut restart: HashMap<&str, usize> = HashMap::new();
            let dropped_pieces = earlier.pieces.skip(keep);
            for piece in &dropped_pieces {
                for id in &piece.ids {
                    let Some(used) = ids.get(id).map(Kept::unpack) else {
                        continue;
                    };
                    if used.minted >= dropped
                        && used.minted != NOWHERE
                        && let Some((base, n)) = minted_parts(id)
                    {
                        let from = n - used.passed;
                        restart
                            .entry(base)
                            .and_modify(|at| *at = (*at).min(from))
                            .or_insert(from);
                    }
                    let used = used.before(dropped);
                    if used.first() == NOWHERE {
                        ids.remove(id);
                    } else {
                        ids.insert(Arc::clone(id), Kept::pack(used));
                    }
                }
            }
            for (base, from) in restart {
                next.insert(Arc::from(base), from);
            }
            (
                earlier.steps.take(first_dropped.steps_before),
                earlier.repairs.take(first_dropped.repairs_before),
                ids,
            )
        }
        None => (
            earlier.steps.clone(),
            earlier.repairs.clone(),
            earlier.ids.clone(),
        ),
    };
    let mut pieces = earlier.pieces.take(keep);
    bounds.push(units.len());
    bounds.dedup();
    let mut names = Names {
        ids: &mut ids,
        next: &mut next,
    };
    // Every call id of the request is recorded before any piece mints a name.
    let mut own: Vec<Vec<Arc<str>>> = bounds
        .windows(2)
        .map(|range| {
            let piece_units = &units[range[0]..range[1]];
            names.record_own(piece_units, piece_units[0].at.position)
        })
        .collect();
    let mut last = pieces.last().and_then(|piece| piece.last);
    // The notes' repairs, split along with the units (both are in position order).
    let mut notes = repairs.into_iter().peekable();
    for (range, own) in bounds.windows(2).zip(own.iter_mut()) {
        let (from, to) = (range[0], range[1]);
        let piece_units = &units[from..to];
        let end = units.get(to).map(|unit| unit.at.position);
        let mut piece_notes = Vec::new();
        while let Some(note) = notes.next_if(|note| end.is_none_or(|end| note.at.position < end)) {
            piece_notes.push(note);
        }
        let start = piece_units[0].at.position;
        let assembled = assemble(
            piece_units,
            piece_notes,
            options.developer_role,
            (&mut names, start),
        );
        for &output in &assembled.loose {
            if let Some(id) = pairing_id(&piece_units[output]) {
                names.record_loose(id, start);
            }
        }
        let mut piece_ids = std::mem::take(own);
        piece_ids.extend(assembled.minted);
        last = piece_units.iter().rev().find_map(edge).or(last);
        pieces.push_back(Arc::new(Span {
            start,
            steps_before: steps.len(),
            repairs_before: kept_repairs.len(),
            ids: piece_ids.into_boxed_slice(),
            last,
        }));
        steps.extend(assembled.steps);
        kept_repairs.extend(assembled.repairs);
    }
    ChatMemo {
        options: *options,
        len: history.len(),
        replaced,
        pieces,
        steps,
        repairs: kept_repairs,
        ids,
        next,
    }
}

impl ChatMessages {
    /// Number of messages.
    pub(crate) fn len(&self) -> usize {
        *self.len.get_or_init(|| {
            let mut count = 0;
            // Writing to a sink cannot fail.
            let _ = self.walk(&mut io::sink(), &mut count);
            count
        })
    }

    /// Writes the `messages` array.
    pub(crate) fn write_json<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        let mut count = 0;
        self.walk(out, &mut count)
    }

    /// Writes every message, counting them.
    fn walk<W: Write + ?Sized>(&self, out: &mut W, count: &mut usize) -> io::Result<()> {
        out.write_all(b"[")?;
        let mut begin = |out: &mut W| -> io::Result<()> {
            if *count > 0 {
                out.write_all(b",")?;
            }
            *count += 1;
            Ok(())
        };
        // Image parts of the current batch's tool outputs, sent after its tool messages.
        let mut images: Vec<&str> = Vec::new();
        let mut steps = self.steps.iter().peekable();
        while let Some(step) = steps.next() {
            match step {
                Written::Synthetic { id } => {
                    begin(out)?;
                    write!(
                        out,
                        r#"{{"role":"tool","tool_call_id":{},"content":{}}}"#,
                        Value::from(&**id),
                        Value::from(TARGET_ABORTED_OUTPUT)
                    )?;
                }
                Written::Unit { item, mapped } => match &item.piece {
                    Piece::Message { role, content } => {
                        let role = match (role, self.developer_role) {
                            (MessageRole::System, _)
                            | (MessageRole::Developer, DeveloperRole::System) => "system",
                            (MessageRole::Developer, DeveloperRole::Developer) => "developer",
                            (MessageRole::User, _) => "user",
                        };
                        begin(out)?;
                        write!(out, r#"{{"role":"{role}","content":{content}}}"#)?;
                    }
                    Piece::Assistant { content } => {
                        begin(out)?;
                        write!(out, r#"{{"role":"assistant","content":{content}"#)?;
                        if let Some(next) =
                            steps.next_if(|next| matches!(next.piece(), Some(Piece::Call { .. })))
                        {
                            write_calls(out, next, &mut steps)?;
                        }
                        out.write_all(b"}")?;
                    }
                    Piece::Call { .. } => {
                        begin(out)?;
                        out.write_all(br#"{"role":"assistant","content":null"#)?;
                        write_calls(out, step, &mut steps)?;
                        out.write_all(b"}")?;
                    }
                    Piece::Output {
                        id,
                        content,
                        images: parts,
                    } => {
                        let id = mapped.as_deref().unwrap_or(id);
                        begin(out)?;
                        write!(
                            out,
                            r#"{{"role":"tool","tool_call_id":{},"content":{content}}}"#,
                            Value::from(id)
                        )?;
                        if !parts.is_empty() {
                            images.push(parts);
                        }
                    }
                    Piece::Nothing => {}
                },
            }
            if !images.is_empty() && !steps.peek().is_some_and(|next| next.is_output()) {
                begin(out)?;
                out.write_all(br#"{"role":"user","content":["#)?;
                for (n, parts) in images.drain(..).enumerate() {
                    if n > 0 {
                        out.write_all(b",")?;
                    }
                    out.write_all(parts.as_bytes())?;
                }
                out.write_all(b"]}")?;
            }
        }
        out.write_all(b"]")
    }
}

/// Writes `,"tool_calls":[…]` for the call `first` and the consecutive calls after it.
fn write_calls<'a, W: Write + ?Sized>(
    out: &mut W,
    first: &'a Written,
    steps: &mut std::iter::Peekable<impl Iterator<Item = &'a Written>>,
) -> io::Result<()> {
    out.write_all(br#","tool_calls":["#)?;
    let mut call = Some(first);
    let mut separator = false;
    while let Some(step) = call {
        let Written::Unit { item, mapped } = step else {
            break;
        };
        let Piece::Call { json, .. } = &item.piece else {
            break;
        };
        if separator {
            out.write_all(b",")?;
        }
        separator = true;
        match mapped {
            None => out.write_all(json.as_bytes())?,
            Some(id) => {
                // A mapped call (rare): its entry rewritten with the new id.
                let mut call: Value = serde_json::from_str(json).map_err(io::Error::other)?;
                call["id"] = Value::from(&**id);
                write!(out, "{call}")?;
            }
        }
        call = steps.next_if(|next| matches!(next.piece(), Some(Piece::Call { .. })));
    }
    out.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::ProjectionOptions;
    use proptest::prelude::*;
    use serde_json::json;

    fn written(steps: Vector<Written>) -> String {
        let messages = ChatMessages {
            steps,
            developer_role: DeveloperRole::System,
            len: Arc::default(),
        };
        let mut out = Vec::new();
        messages.write_json(&mut out).expect("writes");
        String::from_utf8(out).expect("UTF-8")
    }

    fn item() -> impl Strategy<Value = Value> {
        // Ids of their own, ids used again, empty ids and names the mapping mints (`c0_2`,
        // `call_2`), so that pieces map ids against each other.
        let id = prop_oneof![
            8 => (0..24u8).prop_map(|n| format!("c{n}")),
            1 => Just(String::new()),
            2 => (0..4u8, 2..4u8).prop_map(|(n, k)| format!("c{n}_{k}")),
            1 => (2..4u8).prop_map(|k| format!("call_{k}")),
        ];
        prop_oneof![
            2 => Just(json!({"type":"message","role":"user","content":[{"type":"input_text","text":"u"}]})),
            2 => Just(json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]})),
            1 => Just(json!({"type":"reasoning","summary":[]})),
            4 => id.clone().prop_map(|id| json!({"type":"function_call","name":"f","arguments":"{}","call_id":id})),
            4 => id.prop_map(|id| json!({"type":"function_call_output","call_id":id,"output":"ok"})),
        ]
    }

    /// The lineage's map of call ids holds one [`Kept`] per id of every tool-using session: the
    /// memory figures of docs/performance.md count on its 16 bytes.
    #[test]
    fn a_kept_id_takes_16_bytes() {
        assert_eq!(std::mem::size_of::<Kept>(), 16);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Assembling the pieces [`cuts`] finds one by one (each mapping its call ids against
        /// the others') gives what assembling every unit at once gives: the same steps
        /// written, the same repairs.
        #[test]
        fn pieces_assemble_as_the_whole(items in proptest::collection::vec(item(), 0..40)) {
            let mut history = History::new();
            for item in &items {
                history.record_json(item.to_string()).expect("valid");
            }
            let options = TargetOptions::new(Target::ChatCompletions);
            let projection = history.project(&ProjectionOptions::default()).expect("projects");
            let units = Units::<ChatItem>::collect(&projection).expect("collects");
            let mut ids = imbl::HashMap::new();
            let mut next = imbl::HashMap::new();
            let mut names = Names { ids: &mut ids, next: &mut next };
            names.record_own(&units.units, 0);
            let all = assemble(&units.units, units.repairs, DeveloperRole::System, (&mut names, 0));
            let memo = whole(&history, &projection, &options, Vec::new()).expect("assembles");
            prop_assert_eq!(written(all.steps.into_iter().collect()), written(memo.steps));
            prop_assert_eq!(all.repairs, memo.repairs.into_iter().collect::<Vec<_>>());
        }
    }
}
