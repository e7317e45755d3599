//! [`Entry`]: the stored form of an item — a small header plus shared JSON text.

use std::fmt;
use std::sync::Arc;

use super::estimate::estimate_tokens;
use super::ids::{CallId, ItemId};
use super::kind::ItemKind;
use super::model::{ContentItem, OutputContentItem, OutputPayload, ResponseItem, Role};
use crate::error::ItemError;
use crate::history::turns::{TurnRole, turn_role_of};

/// The immutable, shared body of an entry.
///
/// Live-history entries always hold [`Payload::Item`]. The other variants exist only in a
/// [`Projection`](crate::Projection): a repaired slot renders as more or fewer items than the one
/// it replaces, without an insert or a remove in the middle of the persistent vector.
#[derive(Debug)]
pub(crate) enum Payload {
    /// The item's JSON text, exactly as it goes on the wire.
    Item(Box<str>),
    /// The item's JSON text where it lies in a memory-mapped snapshot (no copy).
    Mapped(crate::snapshot::MappedText),
    /// A call followed by the synthetic output that repairs it.
    CallWithSyntheticOutput {
        call: Arc<Payload>,
        output: Box<str>,
    },
    /// An item that the projection does not send.
    Omitted { original: Arc<Payload> },
}

impl PartialEq for Payload {
    /// Stored text compares by content, wherever it lives (owned or mapped).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Payload::Item(_) | Payload::Mapped(_), Payload::Item(_) | Payload::Mapped(_)) => {
                self.original_json() == other.original_json()
            }
            (
                Payload::CallWithSyntheticOutput { call, output },
                Payload::CallWithSyntheticOutput {
                    call: other_call,
                    output: other_output,
                },
            ) => call == other_call && output == other_output,
            (Payload::Omitted { original }, Payload::Omitted { original: other }) => {
                original == other
            }
            _ => false,
        }
    }
}

impl Eq for Payload {}

impl Payload {
    /// The JSON text of a stored item (`None` for the projection-only variants).
    pub(crate) fn stored_json(&self) -> Option<&str> {
        match self {
            Payload::Item(json) => Some(json),
            Payload::Mapped(text) => Some(text.as_str()),
            Payload::CallWithSyntheticOutput { .. } | Payload::Omitted { .. } => None,
        }
    }

    /// The JSON text of the original item this payload stands for.
    pub(crate) fn original_json(&self) -> &str {
        match self {
            Payload::Item(json) => json,
            Payload::Mapped(text) => text.as_str(),
            Payload::CallWithSyntheticOutput { call, .. } => call.original_json(),
            Payload::Omitted { original } => original.original_json(),
        }
    }
}

/// Facts about an entry's content that projection and indexing need without parsing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct EntryFlags(u8);

impl EntryFlags {
    const IMAGE: u8 = 1;
    const AUDIO: u8 = 1 << 1;
    const SERVER_EXECUTION: u8 = 1 << 2;
    const USER_TURN: u8 = 1 << 3;

    /// The item carries image content: an `input_image` part in a message or a tool output's
    /// array, or the non-empty `result` of an `image_generation_call`.
    pub fn has_image(self) -> bool {
        self.0 & Self::IMAGE != 0
    }

    /// The item carries an `input_audio` part.
    pub fn has_audio(self) -> bool {
        self.0 & Self::AUDIO != 0
    }

    /// A tool-search item executed by the server (`"execution":"server"`).
    pub fn is_server_executed(self) -> bool {
        self.0 & Self::SERVER_EXECUTION != 0
    }

    /// The item starts a user turn (§5.4): real user input, not injected context or a summary.
    pub fn is_user_turn_boundary(self) -> bool {
        self.0 & Self::USER_TURN != 0
    }

    /// The raw bits (the snapshot format stores them).
    pub(crate) fn bits(self) -> u8 {
        self.0
    }

    /// Flags from raw bits; `None` when an unknown bit is set.
    pub(crate) fn from_bits(bits: u8) -> Option<Self> {
        let known = Self::IMAGE | Self::AUDIO | Self::SERVER_EXECUTION | Self::USER_TURN;
        (bits & !known == 0).then_some(Self(bits))
    }

    fn with(self, bit: u8, on: bool) -> Self {
        if on { Self(self.0 | bit) } else { self }
    }
}

/// One stored item: a small `Clone` header plus an `Arc`-shared payload with the item's JSON text.
///
/// The header (kind, role, call id, item id, flags, token estimate, byte length) answers every
/// question that recording, indexing and projection ask, so the JSON is parsed again only for the
/// rare edits that need it (truncation, media stripping). Cloning an entry copies the header and
/// bumps reference counts; the JSON is never copied.
///
/// Two entries are equal when their headers and JSON text are equal.
#[derive(Clone, PartialEq, Eq)]
pub struct Entry {
    pub(crate) payload: Arc<Payload>,
    call_id: Option<CallId>,
    item_id: Option<ItemId>,
    tokens: u64,
    byte_len: u32,
    kind: ItemKind,
    role: Option<Role>,
    flags: EntryFlags,
}

impl Entry {
    /// Builds an entry from a typed item, serializing it once.
    ///
    /// # Errors
    ///
    /// [`ItemError::NotStorable`] for `compaction_trigger` (a request control, never stored) and
    /// for [`ResponseItem::Other`] (its content is unknown; record the JSON instead).
    pub fn from_item(item: &ResponseItem) -> Result<Entry, ItemError> {
        if matches!(item, ResponseItem::Other) {
            return Err(ItemError::NotStorable { item_type: "other" });
        }
        let json = serde_json::to_string(item).map_err(ItemError::Serialize)?;
        Entry::from_parts(json.into_boxed_str(), item)
    }

    /// Builds an entry from an item's JSON text, which it keeps verbatim.
    ///
    /// An item of a `type` this library does not know becomes an [`ItemKind::Unknown`] entry; its
    /// text survives untouched.
    ///
    /// # Errors
    ///
    /// [`ItemError::InvalidJson`] when the text is not one JSON object with a string `type`, or
    /// when an item of a known type does not have that type's shape (a `function_call` without
    /// `call_id`, say). [`ItemError::TooLarge`] for an item over 4 GiB.
    pub fn from_json(json: impl Into<Box<str>>) -> Result<Entry, ItemError> {
        let json = json.into();
        let item = parse_item(&json)?;
        Entry::from_parts(json, &item)
    }

    /// Builds an entry from JSON text and the typed item it parses into.
    pub(crate) fn from_parts(json: Box<str>, item: &ResponseItem) -> Result<Entry, ItemError> {
        let kind = ItemKind::of(item).ok_or(ItemError::NotStorable {
            item_type: "compaction_trigger",
        })?;
        // The length is kept in 32 bits so that the header stays within 64 bytes.
        let byte_len =
            u32::try_from(json.len()).map_err(|_| ItemError::TooLarge { bytes: json.len() })?;
        let header = Header::of(item);
        Ok(Entry {
            byte_len,
            payload: Arc::new(Payload::Item(json)),
            call_id: header.call_id,
            item_id: header.item_id,
            tokens: estimate_tokens(item),
            kind,
            role: header.role,
            flags: header.flags,
        })
    }

    /// An entry rebuilt from stored header fields and a payload (the snapshot reader).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_stored_parts(
        payload: Payload,
        call_id: Option<CallId>,
        item_id: Option<ItemId>,
        tokens: u64,
        byte_len: u32,
        kind: ItemKind,
        role: Option<Role>,
        flags: EntryFlags,
    ) -> Entry {
        Entry {
            payload: Arc::new(payload),
            call_id,
            item_id,
            tokens,
            byte_len,
            kind,
            role,
            flags,
        }
    }

    /// A copy of this entry that renders differently in a projection (same header).
    pub(crate) fn with_payload(&self, payload: Payload) -> Entry {
        Entry {
            payload: Arc::new(payload),
            ..self.clone()
        }
    }

    /// The item's kind.
    pub fn kind(&self) -> ItemKind {
        self.kind
    }

    /// The role of a `message` or `additional_tools` item.
    pub fn role(&self) -> Option<Role> {
        self.role
    }

    /// The `call_id` of a call or an output, when it has one.
    pub fn call_id(&self) -> Option<&CallId> {
        self.call_id.as_ref()
    }

    /// The item's `id`, when it has one.
    pub fn item_id(&self) -> Option<&ItemId> {
        self.item_id.as_ref()
    }

    /// Content facts (image, audio, server execution).
    pub fn flags(&self) -> EntryFlags {
        self.flags
    }

    /// Estimated tokens (reference §3.3).
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Length of the JSON text in bytes.
    pub fn byte_len(&self) -> usize {
        self.byte_len as usize
    }

    /// The item's JSON text, exactly as it is sent and persisted.
    pub fn json(&self) -> &str {
        self.payload.original_json()
    }

    /// Parses the JSON text into the typed model.
    ///
    /// # Errors
    ///
    /// Never for entries built by this library (their text was parsed when they were built);
    /// the `Result` is kept so that the call stays total.
    pub fn to_item(&self) -> Result<ResponseItem, ItemError> {
        parse_item(self.json())
    }

    /// Whether the entry's JSON text lies in a memory-mapped snapshot (it was not copied).
    pub fn is_mapped(&self) -> bool {
        matches!(&*self.payload, Payload::Mapped(_))
    }

    /// Whether two entries share the same payload allocation (structure sharing).
    pub fn shares_payload_with(&self, other: &Entry) -> bool {
        Arc::ptr_eq(&self.payload, &other.payload)
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("kind", &self.kind)
            .field("role", &self.role)
            .field("call_id", &self.call_id)
            .field("item_id", &self.item_id)
            .field("flags", &self.flags)
            .field("tokens", &self.tokens)
            .field("json", &self.json())
            .finish()
    }
}

/// The header fields of a typed item.
struct Header {
    role: Option<Role>,
    call_id: Option<CallId>,
    item_id: Option<ItemId>,
    flags: EntryFlags,
}

impl Header {
    fn of(item: &ResponseItem) -> Header {
        let mut header = Header {
            role: None,
            call_id: None,
            item_id: item.id().cloned(),
            flags: EntryFlags::default(),
        };
        match item {
            ResponseItem::Message(message) => {
                header.role = Some(message.role);
                header.flags = content_flags(&message.content);
            }
            ResponseItem::LocalShellCall(call) => header.call_id = call.call_id.clone(),
            ResponseItem::FunctionCall(call) => header.call_id = Some(call.call_id.clone()),
            ResponseItem::FunctionCallOutput(output) => {
                header.call_id = output.call_id.clone();
                header.flags = output_flags(&output.output);
            }
            ResponseItem::CustomToolCall(call) => header.call_id = Some(call.call_id.clone()),
            ResponseItem::CustomToolCallOutput(output) => {
                header.call_id = Some(output.call_id.clone());
                header.flags = output_flags(&output.output);
            }
            ResponseItem::ToolSearchCall(call) => {
                header.call_id = call.call_id.clone();
                header.flags = EntryFlags::default()
                    .with(EntryFlags::SERVER_EXECUTION, call.execution == "server");
            }
            ResponseItem::ToolSearchOutput(output) => {
                header.call_id = output.call_id.clone();
                header.flags = EntryFlags::default()
                    .with(EntryFlags::SERVER_EXECUTION, output.execution == "server");
            }
            ResponseItem::ImageGenerationCall(call) => {
                header.flags =
                    EntryFlags::default().with(EntryFlags::IMAGE, !call.result.is_empty());
            }
            ResponseItem::AdditionalTools(tools) => header.role = Some(tools.role),
            ResponseItem::AgentMessage(_)
            | ResponseItem::Reasoning(_)
            | ResponseItem::WebSearchCall(_)
            | ResponseItem::Compaction(_)
            | ResponseItem::ContextCompaction(_)
            | ResponseItem::CompactionTrigger
            | ResponseItem::Other => {}
        }
        let boundary = turn_role_of(item) == TurnRole::Boundary;
        header.flags = header.flags.with(EntryFlags::USER_TURN, boundary);
        header
    }
}

fn content_flags(parts: &[ContentItem]) -> EntryFlags {
    parts
        .iter()
        .fold(EntryFlags::default(), |flags, part| match part {
            ContentItem::InputImage(_) => flags.with(EntryFlags::IMAGE, true),
            ContentItem::InputAudio { .. } => flags.with(EntryFlags::AUDIO, true),
            ContentItem::InputText { .. } | ContentItem::OutputText { .. } | ContentItem::Other => {
                flags
            }
        })
}

fn output_flags(output: &OutputPayload) -> EntryFlags {
    match output {
        OutputPayload::Text(_) => EntryFlags::default(),
        OutputPayload::ContentItems(parts) => {
            parts
                .iter()
                .fold(EntryFlags::default(), |flags, part| match part {
                    OutputContentItem::InputImage(_) => flags.with(EntryFlags::IMAGE, true),
                    OutputContentItem::InputAudio { .. } => flags.with(EntryFlags::AUDIO, true),
                    OutputContentItem::InputText { .. }
                    | OutputContentItem::EncryptedContent { .. }
                    | OutputContentItem::Other => flags,
                })
        }
    }
}

/// Parses item JSON into the typed model, naming the declared `type` on failure.
pub(crate) fn parse_item(json: &str) -> Result<ResponseItem, ItemError> {
    serde_json::from_str(json).map_err(|source| ItemError::InvalidJson {
        item_type: sniff_type(json),
        source,
    })
}

/// The `type` of a JSON object, for error messages about text that failed to parse as an item.
fn sniff_type(json: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        item_type: String,
    }
    serde_json::from_str::<Typed>(json)
        .ok()
        .map(|typed| typed.item_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_header_is_small() {
        assert!(
            std::mem::size_of::<Entry>() <= 64,
            "{}",
            std::mem::size_of::<Entry>()
        );
    }
}
