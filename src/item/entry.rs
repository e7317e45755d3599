//! [`Entry`]: the stored form of an item — a small header plus shared JSON text.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};

use bytestring::ByteString;

use super::error::ItemError;
use super::estimate::estimate_tokens;
use super::ids::{CallId, ItemId};
use super::kind::ItemKind;
use super::model::{ContentItem, Execution, OutputContentItem, OutputPayload, ResponseItem, Role};
use super::output::OutputBody;
use super::parse::ItemHeader;
use super::turn::{TurnRole, turn_role_of};
use super::work::count_read;

/// The immutable, shared body of an entry.
///
/// An item's JSON text is stored in one of two ways: owned by the entry, or as a slice of a
/// read-only buffer that many entries share (a memory-mapped snapshot provides one; the slice
/// keeps the buffer alive). An item that carries media keeps its text behind one more box, beside
/// the cache of its stripped forms ([`MediaPayload`]). The other two variants exist only in a
/// projection: a repaired slot renders as more or fewer items than the one it replaces, without
/// an insert or a remove in the middle of the persistent vector.
#[derive(Debug)]
pub(crate) enum Payload {
    /// The item's JSON text, owned, exactly as it goes on the wire.
    Owned(Box<str>),
    /// The item's JSON text as a slice of a shared read-only buffer (no copy).
    Shared(ByteString),
    /// The text of an item with image or audio content, and its stripped forms.
    WithMedia(Box<MediaPayload>),
    /// A call followed by the synthetic output that repairs it (`call` is the call's body).
    CallWithSyntheticOutput { call: Arc<Body>, output: Box<str> },
    /// An item that the projection does not send (`original` is its body).
    Omitted { original: Arc<Body> },
}

impl PartialEq for Payload {
    /// Stored text compares by content, wherever it lives (owned or shared).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Payload::Owned(_) | Payload::Shared(_) | Payload::WithMedia(_),
                Payload::Owned(_) | Payload::Shared(_) | Payload::WithMedia(_),
            ) => self.original_json() == other.original_json(),
            (
                Payload::CallWithSyntheticOutput { call, output },
                Payload::CallWithSyntheticOutput {
                    call: other_call,
                    output: other_output,
                },
            ) => call.payload == other_call.payload && output == other_output,
            (Payload::Omitted { original }, Payload::Omitted { original: other }) => {
                original.payload == other.payload
            }
            _ => false,
        }
    }
}

impl Eq for Payload {}

impl Payload {
    /// The payload of a stored item whose text is `text` (`Owned` or `Shared`): the text itself,
    /// or, when `flags` say the item carries media, the text boxed beside an empty cache of its
    /// stripped forms. Entries without media pay nothing for the cache.
    fn stored(text: Payload, flags: EntryFlags) -> Payload {
        if flags.has_image() || flags.has_audio() {
            Payload::WithMedia(Box::new(MediaPayload {
                text,
                stripped: Default::default(),
            }))
        } else {
            text
        }
    }

    /// The JSON text of a stored item (`None` for the projection-only variants).
    pub(crate) fn stored_json(&self) -> Option<&str> {
        match self {
            Payload::Owned(json) => Some(json),
            Payload::Shared(text) => Some(text),
            Payload::WithMedia(media) => media.text.stored_json(),
            Payload::CallWithSyntheticOutput { .. } | Payload::Omitted { .. } => None,
        }
    }

    /// The JSON text of the original item this payload stands for.
    pub(crate) fn original_json(&self) -> &str {
        match self {
            Payload::Owned(json) => json,
            Payload::Shared(text) => text,
            Payload::WithMedia(media) => media.text.original_json(),
            Payload::CallWithSyntheticOutput { call, .. } => call.payload.original_json(),
            Payload::Omitted { original } => original.payload.original_json(),
        }
    }

    /// The text a stored item is sent as when the model takes no images (`strip_images`) or no
    /// audio (`strip_audio`): its cached stripped form, images first, then audio from what that
    /// left. The stored text when stripping changes nothing, or when the form was never computed
    /// — the projection computes every form it renders before it returns, so that a form is
    /// missing here only for an item the projection does not strip.
    pub(crate) fn projected_json(&self, strip_images: bool, strip_audio: bool) -> &str {
        let Payload::WithMedia(media) = self else {
            return self.original_json();
        };
        let form = |key: StripKey| media.stripped[key as usize].get()?.as_ref();
        let without_images = if strip_images {
            form(StripKey::Images)
        } else {
            None
        };
        let without_audio = if !strip_audio {
            None
        } else if without_images.is_some() {
            form(StripKey::AudioAfterImages)
        } else {
            form(StripKey::Audio)
        };
        without_audio.or(without_images).map_or_else(
            || media.text.original_json(),
            |form| form.payload.original_json(),
        )
    }
}

/// The stored text of an item with image or audio content, and the forms a projection sends
/// for a model that cannot take that media, each computed once, on first use.
///
/// Why here, in the payload's shared allocation, and not in a map of the history's index keyed
/// by position: every clone of an entry (every version of a history, every projection, every
/// entry a truncation or rollback keeps) shares this allocation, so a form computed for one of
/// them serves all of them, and it dies with the entry — no position to keep up to date when the
/// front of the history is trimmed or an item replaced, no map to path-copy on record, no lock.
/// `OnceLock` keeps the entry `Send + Sync`. Only items with media get this box (about 1 % of
/// items in real sessions); the `Payload` enum keeps its size, so an entry without media costs
/// exactly what it cost before.
#[derive(Debug)]
pub(crate) struct MediaPayload {
    /// The item's text: a `Payload::Owned` or a `Payload::Shared`, never another variant.
    text: Payload,
    /// The stripped forms, by [`StripKey`]; `Some(None)` when stripping changes nothing.
    stripped: [OnceLock<Option<StrippedForm>>; 3],
}

/// Which stripped form of an item: the model's missing modalities, in the order the projection
/// strips them (images first, then audio).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StripKey {
    /// Images stripped from the stored text.
    Images = 0,
    /// Audio stripped from the stored text.
    Audio = 1,
    /// Audio stripped from the images-stripped form.
    AudioAfterImages = 2,
}

/// A stripped form of an item: the text a projection sends instead, and what stripping changed
/// (the projection's report says it).
#[derive(Debug, Clone)]
pub(crate) struct StrippedForm {
    /// The stripped text, a `Payload::Owned`, shared by every projection that sends it.
    pub(crate) payload: Arc<Payload>,
    /// Media parts replaced by the placeholder.
    pub(crate) parts: usize,
    /// Whether an `image_generation_call` result was cleared.
    pub(crate) cleared_result: bool,
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

    /// The item starts a user turn: real user input, not injected context or a summary.
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

/// What an entry shares with its clones, behind its one pointer: how it renders, the ids of its
/// header, and its exact token estimate.
///
/// One allocation per stored item (its text is another when owned, or a slice of a shared
/// buffer; each id's text is one more). A path copy of the persistent vector clones up to 64
/// entry headers, each one reference-count increment on its body; the ids used to sit in the
/// header, each cloned with its own count (three increments per entry, and 56 bytes).
#[derive(Debug)]
pub(crate) struct Body {
    /// The item's text, or in a projection what its slot renders as.
    pub(crate) payload: Payload,
    call_id: Option<CallId>,
    item_id: Option<ItemId>,
    /// The token estimate, exact. The header holds it too when it fits in 32 bits.
    tokens: u64,
    /// The entry's renderings for other model APIs (the provider layer's targets), each computed
    /// the first time a projection for that target needs it and shared by every clone of the
    /// entry. One pointer, null until the first rendering: an entry never projected for another
    /// target pays 8 bytes.
    renderings: once_cell::race::OnceBox<Renderings>,
}

/// One type-erased rendering of an entry for a target.
pub(crate) type Rendering = Box<dyn Any + Send + Sync>;

/// The renderings of one entry, one cell per target (see [`Body::rendering_cell`]).
///
/// Why here, like the media forms: every clone of the entry (every version of a history, every
/// projection) shares the body, so a rendering computed for one of them serves all of them and
/// dies with the entry. The item layer knows neither the provider layer's types nor how many
/// targets it has: a cell holds whatever the target stores, and the target downcasts it.
pub(crate) struct Renderings {
    cells: Box<[OnceLock<Rendering>]>,
}

impl fmt::Debug for Renderings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let filled = self
            .cells
            .iter()
            .filter(|cell| cell.get().is_some())
            .count();
        write!(f, "Renderings({filled} of {} filled)", self.cells.len())
    }
}

impl Body {
    /// The cache cell `cell` of this entry's target renderings, allocating `cells` cells on
    /// first use (the provider layer says how many targets it has); `None` for a cell number
    /// out of range.
    pub(crate) fn rendering_cell(&self, cell: usize, cells: usize) -> Option<&OnceLock<Rendering>> {
        self.renderings
            .get_or_init(|| {
                Box::new(Renderings {
                    cells: (0..cells).map(|_| OnceLock::new()).collect(),
                })
            })
            .cells
            .get(cell)
    }
}

/// The header's token count when the estimate does not fit in 32 bits: the exact count is the
/// body's. No item a parser accepts gets there (an item is at most 4 GiB, about 2³⁰ tokens);
/// the stored count of a crafted snapshot can.
const TOKENS_IN_BODY: u32 = u32::MAX;

/// One stored item: a 16-byte header plus one shared pointer to its body (JSON text and ids).
///
/// The header (kind, role, flags, token estimate) and the body's ids answer every question that
/// recording, indexing and projection ask, so the JSON is parsed again only for the rare edits
/// that need it (truncation, media stripping). Cloning an entry copies the header and bumps one
/// reference count; the JSON and the ids are never copied.
///
/// Two entries are equal when their headers and JSON text are equal.
#[derive(Clone)]
pub struct Entry {
    body: Arc<Body>,
    /// The token estimate, or [`TOKENS_IN_BODY`] when it does not fit.
    tokens: u32,
    kind: ItemKind,
    role: Option<Role>,
    flags: EntryFlags,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.role == other.role
            && self.flags == other.flags
            && self.tokens() == other.tokens()
            && (Arc::ptr_eq(&self.body, &other.body)
                || (self.body.call_id == other.body.call_id
                    && self.body.item_id == other.body.item_id
                    && self.body.payload == other.body.payload))
    }
}

impl Eq for Entry {}

impl Entry {
    /// Whether `other` is this very entry (a clone of it): the same body and header. Time: O(1).
    pub(crate) fn is_same(&self, other: &Entry) -> bool {
        Arc::ptr_eq(&self.body, &other.body)
            && self.kind == other.kind
            && self.role == other.role
            && self.flags == other.flags
            && self.tokens == other.tokens
    }
}

// Histories cross threads (a writer publishing to readers): an entry must stay `Send + Sync`.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Entry>();
};

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
    /// `call_id`, say). [`ItemError::NotStorable`] for `compaction_trigger`.
    /// [`ItemError::TooLarge`] for an item over 4 GiB.
    pub fn from_json(json: impl Into<Box<str>>) -> Result<Entry, ItemError> {
        let json = json.into();
        if let Some(header) = Entry::read_header(&json) {
            return Entry::from_header(json, header).map(|(entry, _)| entry);
        }
        let item = parse_item(&json)?;
        Entry::from_parts(json, &item)
    }

    /// Reads what an entry needs of an item's JSON without building the typed item, for the
    /// item types that carry most of a session's bytes (see `parse::parse_header`); `None` when
    /// the typed path must read it: build the entry with [`parse_item`] and
    /// [`Entry::from_parts`] then. An item read here is never one that the record filter drops,
    /// that canonicalization rewrites or that carries media.
    pub(crate) fn read_header(json: &str) -> Option<ItemHeader> {
        if !json.starts_with('{') {
            return None;
        }
        let header = super::parse::parse_header(json)?;
        // The parse `parse_item` would count.
        super::count_conversion();
        Some(header)
    }

    /// Builds an entry from JSON text and its header read by [`Entry::read_header`] — the entry
    /// [`Entry::from_parts`] builds from the typed item — with what the item shows of a tool
    /// output's body.
    ///
    /// # Errors
    ///
    /// [`ItemError::TooLarge`] for an item over 4 GiB.
    pub(crate) fn from_header(
        json: Box<str>,
        header: ItemHeader,
    ) -> Result<(Entry, OutputBody), ItemError> {
        super::count_conversion();
        if u32::try_from(json.len()).is_err() {
            return Err(ItemError::TooLarge { bytes: json.len() });
        }
        let flags = EntryFlags::default()
            .with(EntryFlags::SERVER_EXECUTION, header.server_executed)
            .with(EntryFlags::USER_TURN, header.user_turn);
        // `usize` is at most 64 bits on every supported platform: the widening is lossless.
        let tokens = super::estimate::tokens_for_bytes(header.bytes) as u64;
        let entry = Entry::new(
            Payload::Owned(json),
            header.call_id,
            header.item_id,
            tokens,
            header.kind,
            header.role,
            flags,
        );
        Ok((entry, header.output))
    }

    /// Builds an entry from JSON text and the typed item it parses into.
    pub(crate) fn from_parts(json: Box<str>, item: &ResponseItem) -> Result<Entry, ItemError> {
        super::count_conversion();
        let kind = ItemKind::of(item).ok_or(ItemError::NotStorable {
            item_type: "compaction_trigger",
        })?;
        // A snapshot's strings have 32-bit lengths (rkyv's `pointer_width_32`): a larger item
        // could be recorded but never persisted.
        if u32::try_from(json.len()).is_err() {
            return Err(ItemError::TooLarge { bytes: json.len() });
        }
        let header = HeaderFields::of(item);
        Ok(Entry::new(
            Payload::stored(Payload::Owned(json), header.flags),
            header.call_id,
            header.item_id,
            estimate_tokens(item)?,
            kind,
            header.role,
            header.flags,
        ))
    }

    /// An entry of a new body.
    fn new(
        payload: Payload,
        call_id: Option<CallId>,
        item_id: Option<ItemId>,
        tokens: u64,
        kind: ItemKind,
        role: Option<Role>,
        flags: EntryFlags,
    ) -> Entry {
        Entry {
            body: Arc::new(Body {
                payload,
                call_id,
                item_id,
                tokens,
                renderings: once_cell::race::OnceBox::new(),
            }),
            tokens: u32::try_from(tokens)
                .ok()
                .filter(|&tokens| tokens != TOKENS_IN_BODY)
                .unwrap_or(TOKENS_IN_BODY),
            kind,
            role,
            flags,
        }
    }

    /// An entry whose text is a slice of a shared buffer, with header fields stored beside it
    /// (the snapshot reader): nothing is parsed. `None` for text over 4 GiB.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_shared_parts(
        json: ByteString,
        call_id: Option<CallId>,
        item_id: Option<ItemId>,
        tokens: u64,
        kind: ItemKind,
        role: Option<Role>,
        flags: EntryFlags,
    ) -> Option<Entry> {
        u32::try_from(json.len()).ok()?;
        Some(Entry::new(
            Payload::stored(Payload::Shared(json), flags),
            call_id,
            item_id,
            tokens,
            kind,
            role,
            flags,
        ))
    }

    /// Checks an entry whose header was stored beside its text (an untrusted snapshot): the text
    /// must be one item, and every header field must be the one the item gives.
    ///
    /// # Errors
    ///
    /// The first field that disagrees (`json` when the text is not an item), with what was
    /// stored and what the text says.
    pub(crate) fn check_header(&self) -> Result<(), HeaderMismatch> {
        let item = parse_item(self.json()).map_err(|error| HeaderMismatch {
            field: "json",
            detail: error.to_string(),
        })?;
        // The header fields come from the item alone (the text is not needed to derive them).
        let derived = Entry::from_parts(Box::from(""), &item).map_err(|error| HeaderMismatch {
            field: "json",
            detail: error.to_string(),
        })?;
        let mismatch = |field: &'static str, stored: String, derived: String| {
            Err(HeaderMismatch {
                field,
                detail: format!("stored {stored}, the item's JSON says {derived}"),
            })
        };
        if derived.kind != self.kind {
            return mismatch("kind", self.kind.to_string(), derived.kind.to_string());
        }
        if derived.role != self.role {
            return mismatch(
                "role",
                format!("{:?}", self.role),
                format!("{:?}", derived.role),
            );
        }
        if derived.call_id() != self.call_id() {
            return mismatch(
                "call_id",
                format!("{:?}", self.call_id().map(CallId::as_str)),
                format!("{:?}", derived.call_id().map(CallId::as_str)),
            );
        }
        if derived.item_id() != self.item_id() {
            return mismatch(
                "item_id",
                format!("{:?}", self.item_id().map(ItemId::as_str)),
                format!("{:?}", derived.item_id().map(ItemId::as_str)),
            );
        }
        if derived.flags != self.flags {
            return mismatch(
                "flags",
                format!("{:#06b}", self.flags.bits()),
                format!("{:#06b}", derived.flags.bits()),
            );
        }
        if derived.tokens() != self.tokens() {
            return mismatch(
                "tokens",
                self.tokens().to_string(),
                derived.tokens().to_string(),
            );
        }
        Ok(())
    }

    /// A copy of this entry that renders differently in a projection: same header and ids, a
    /// new body (a projection builds one per repaired slot).
    ///
    /// The passes hand over a payload they just built, which moves into the body. A payload
    /// shared elsewhere (a cached stripped form, which only a stored text that is not the entry's
    /// own would be replaced by, and no pass puts such a text in a slot) has its text copied.
    pub(crate) fn with_payload(&self, payload: Arc<Payload>) -> Entry {
        let payload = Arc::try_unwrap(payload)
            .unwrap_or_else(|shared| Payload::Owned(Box::from(shared.original_json())));
        Entry {
            body: Arc::new(Body {
                payload,
                call_id: self.body.call_id.clone(),
                item_id: self.body.item_id.clone(),
                tokens: self.body.tokens,
                renderings: once_cell::race::OnceBox::new(),
            }),
            ..*self
        }
    }

    /// How the entry renders: its stored text, or in a projection a repair of it.
    pub(crate) fn payload(&self) -> &Payload {
        count_read();
        &self.body.payload
    }

    /// The entry's body, shared by its clones (a repaired slot keeps its original's).
    pub(crate) fn body(&self) -> &Arc<Body> {
        count_read();
        &self.body
    }

    /// The stripped form `key` of this entry, if it was computed already.
    pub(crate) fn cached_stripped(&self, key: StripKey) -> Option<&StrippedForm> {
        match &self.body.payload {
            Payload::WithMedia(media) => media.stripped[key as usize].get()?.as_ref(),
            Payload::Owned(_)
            | Payload::Shared(_)
            | Payload::CallWithSyntheticOutput { .. }
            | Payload::Omitted { .. } => None,
        }
    }

    /// The stripped form `key` of this entry: computed by `compute` the first time any clone of
    /// the entry asks, then shared. `None` when stripping changes nothing. An entry without media
    /// has no cache, and `compute` runs on every call (the projection never asks it: only entries
    /// flagged with media are in the index's media sets).
    ///
    /// # Errors
    ///
    /// Whatever `compute` returns; an error is not cached, so a later call computes again.
    pub(crate) fn stripped<E>(
        &self,
        key: StripKey,
        compute: impl FnOnce() -> Result<Option<StrippedForm>, E>,
    ) -> Result<Option<StrippedForm>, E> {
        let cell = match &self.body.payload {
            Payload::WithMedia(media) => &media.stripped[key as usize],
            Payload::Owned(_)
            | Payload::Shared(_)
            | Payload::CallWithSyntheticOutput { .. }
            | Payload::Omitted { .. } => return compute(),
        };
        if let Some(form) = cell.get() {
            return Ok(form.clone());
        }
        let form = compute()?;
        // Two threads may compute at once; the first to store wins and both return its form,
        // so that every projection shares one allocation.
        let _ = cell.set(form.clone());
        Ok(cell.get().cloned().unwrap_or(form))
    }

    /// The item's kind.
    pub fn kind(&self) -> ItemKind {
        count_read();
        self.kind
    }

    /// The role of a `message` or `additional_tools` item.
    pub fn role(&self) -> Option<Role> {
        count_read();
        self.role
    }

    /// The `call_id` of a call or an output, when it has one.
    pub fn call_id(&self) -> Option<&CallId> {
        count_read();
        self.body.call_id.as_ref()
    }

    /// The item's `id`, when it has one.
    pub fn item_id(&self) -> Option<&ItemId> {
        count_read();
        self.body.item_id.as_ref()
    }

    /// Content facts (image, audio, server execution).
    pub fn flags(&self) -> EntryFlags {
        count_read();
        self.flags
    }

    /// Estimated tokens (see [`approx_token_count`](super::approx_token_count) for the rule).
    pub fn tokens(&self) -> u64 {
        count_read();
        if self.tokens == TOKENS_IN_BODY {
            self.body.tokens
        } else {
            u64::from(self.tokens)
        }
    }

    /// Length of the JSON text in bytes.
    pub fn byte_len(&self) -> usize {
        self.json().len()
    }

    /// The item's JSON text, exactly as it is sent and persisted.
    pub fn json(&self) -> &str {
        count_read();
        self.body.payload.original_json()
    }

    /// Parses the JSON text into the typed model.
    ///
    /// # Errors
    ///
    /// [`ItemError::InvalidJson`] when the text does not parse. That cannot happen for an entry
    /// built from JSON or from a typed item (its text was parsed when it was built); an entry
    /// opened from a snapshot is trusted to hold what the snapshot's writer parsed, and a
    /// snapshot crafted to hold something else gets this error rather than a guess.
    pub fn to_item(&self) -> Result<ResponseItem, ItemError> {
        parse_item(self.json())
    }

    /// Whether the entry's JSON text is a slice of a shared buffer such as a memory-mapped
    /// snapshot (it was not copied).
    pub fn is_mapped(&self) -> bool {
        match &self.body.payload {
            Payload::Shared(_) => true,
            Payload::WithMedia(media) => matches!(media.text, Payload::Shared(_)),
            Payload::Owned(_)
            | Payload::CallWithSyntheticOutput { .. }
            | Payload::Omitted { .. } => false,
        }
    }

    /// Whether two entries share the same payload allocation (structure sharing).
    pub fn shares_payload_with(&self, other: &Entry) -> bool {
        Arc::ptr_eq(&self.body, &other.body)
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("kind", &self.kind)
            .field("role", &self.role)
            .field("call_id", &self.body.call_id)
            .field("item_id", &self.body.item_id)
            .field("flags", &self.flags)
            .field("tokens", &self.tokens())
            .field("json", &self.json())
            .finish()
    }
}

/// A stored header field that disagrees with the entry's JSON text ([`Entry::check_header`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderMismatch {
    /// The field: `json` (the text is not an item), `kind`, `role`, `call_id`, `item_id`,
    /// `flags` or `tokens`.
    pub(crate) field: &'static str,
    /// What was stored and what the text says.
    pub(crate) detail: String,
}

/// The header fields of a typed item.
struct HeaderFields {
    role: Option<Role>,
    call_id: Option<CallId>,
    item_id: Option<ItemId>,
    flags: EntryFlags,
}

impl HeaderFields {
    fn of(item: &ResponseItem) -> HeaderFields {
        let mut header = HeaderFields {
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
                header.flags = EntryFlags::default().with(
                    EntryFlags::SERVER_EXECUTION,
                    call.execution == Execution::Server,
                );
            }
            ResponseItem::ToolSearchOutput(output) => {
                header.call_id = output.call_id.clone();
                header.flags = EntryFlags::default().with(
                    EntryFlags::SERVER_EXECUTION,
                    output.execution == Execution::Server,
                );
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

/// Classifies an entry for turn counting. Parses the JSON only for messages.
///
/// # Errors
///
/// [`ItemError::InvalidJson`] when a message's text does not parse (see [`Entry::to_item`]).
pub(crate) fn turn_role(entry: &Entry) -> Result<TurnRole, ItemError> {
    Ok(match entry.kind() {
        ItemKind::AgentMessage => TurnRole::Boundary,
        ItemKind::Message => turn_role_of(&entry.to_item()?),
        _ => TurnRole::Other,
    })
}

/// Parses item JSON into the typed model, naming the declared `type` on failure.
///
/// Only a JSON object is an item: serde would also read an internally tagged enum from an array
/// whose first element is the tag, which is not a form any provider accepts.
pub(crate) fn parse_item(json: &str) -> Result<ResponseItem, ItemError> {
    super::count_conversion();
    if !json.trim_start().starts_with('{') {
        let source = match serde_json::from_str::<serde::de::IgnoredAny>(json) {
            Err(invalid) => invalid,
            Ok(_) => serde::de::Error::custom("an item must be a JSON object"),
        };
        return Err(ItemError::InvalidJson {
            item_type: None,
            source,
        });
    }
    // One pass when `type` comes first (every item Codex writes); otherwise, and for every
    // item the fast path does not accept, the derived deserializer decides (see `parse/typed.rs`).
    if let Some(item) = super::parse::parse_type_first(json) {
        return Ok(item);
    }
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
    fn payload_keeps_its_size_with_the_media_cache() {
        // 40 bytes before the cache existed: an entry without media (an `Arc` of a `Payload`,
        // 16 bytes of counts plus this) must not grow.
        assert_eq!(std::mem::size_of::<Payload>(), 40);
        // What an item with media adds (a box), before its stripped texts are computed.
        assert_eq!(std::mem::size_of::<MediaPayload>(), 136);
    }

    #[test]
    fn only_entries_with_media_carry_the_cache() {
        let text = Entry::from_json(
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
        )
        .expect("valid");
        assert!(matches!(text.payload(), Payload::Owned(_)));
        let image = Entry::from_json(r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#)
            .expect("valid");
        assert!(matches!(image.payload(), Payload::WithMedia(_)));
        assert!(image.json().contains("input_image"));
        assert!(!image.is_mapped());
    }

    #[test]
    fn an_entry_is_a_16_byte_header_and_one_pointer() {
        // 56 bytes before (issue 10): the payload's pointer, two ids of 16 bytes (each a shared
        // pointer of its own), a 64-bit token count and a 32-bit length beside kind, role and
        // flags. A path copy clones up to 64 entries per leaf: 3.5 KB then, 1 KB now.
        assert_eq!(std::mem::size_of::<Entry>(), 16);
        assert_eq!(std::mem::size_of::<Option<Entry>>(), 16);
        // The body: the payload (40), the ids (16 each), the exact token count (8) and the
        // pointer to the target renderings (8, null until an entry is projected for another API).
        assert_eq!(std::mem::size_of::<Body>(), 88);
    }

    #[test]
    fn a_clone_shares_the_body_ids_included() {
        let entry = Entry::from_json(
            r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{}","call_id":"c1"}"#,
        )
        .expect("valid");
        let clone = entry.clone();
        assert!(clone.shares_payload_with(&entry));
        assert_eq!(Arc::strong_count(&entry.body), 2);
        let (Some(a), Some(b)) = (entry.call_id(), clone.call_id()) else {
            panic!("both have a call id");
        };
        assert!(std::ptr::eq(a, b), "the id is the body's, not a copy");
        assert_eq!(clone.item_id().map(ItemId::as_str), Some("fc_1"));
        assert_eq!(clone.byte_len(), entry.json().len());
    }

    #[test]
    fn a_token_count_past_32_bits_stays_exact() {
        let json = ByteString::from_static(r#"{"type":"message","role":"user","content":[]}"#);
        for tokens in [
            0,
            7,
            u64::from(u32::MAX) - 1,
            u64::from(u32::MAX),
            1 << 40,
            u64::MAX,
        ] {
            let entry = Entry::from_shared_parts(
                json.clone(),
                None,
                None,
                tokens,
                ItemKind::Message,
                Some(Role::User),
                EntryFlags::default(),
            )
            .expect("small text");
            assert_eq!(entry.tokens(), tokens);
            assert_eq!(entry.clone().tokens(), tokens);
        }
    }

    #[test]
    fn a_repaired_slot_keeps_the_header_and_ids_in_a_new_body() {
        let call = Entry::from_json(
            r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{}","call_id":"c1"}"#,
        )
        .expect("valid");
        let slot = call.with_payload(Arc::new(Payload::Omitted {
            original: Arc::clone(call.body()),
        }));
        assert!(!slot.shares_payload_with(&call));
        assert_eq!(slot.call_id(), call.call_id());
        assert_eq!(slot.item_id(), call.item_id());
        assert_eq!((slot.kind(), slot.tokens()), (call.kind(), call.tokens()));
        assert_eq!(slot.json(), call.json());
        assert_ne!(slot, call, "an omitted slot is not the stored item");
        // A shared payload (a cached stripped form) is copied, not taken.
        let form = Arc::new(Payload::Owned(Box::from("{}")));
        let stripped = call.with_payload(Arc::clone(&form));
        assert_eq!(stripped.json(), "{}");
        assert_eq!(stripped.call_id(), call.call_id());
        assert_eq!(Arc::strong_count(&form), 1);
    }
}
