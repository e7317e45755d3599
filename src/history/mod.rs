//! The history layer: [`History`], the persistent, structurally shared conversation history.
//!
//! Every inherent method of `History` that changes or reads the history lives in this folder:
//! recording, replacing and removing here, rollback (and the states before compactions it can
//! return to) in `rollback.rs`, compaction in `compact.rs`, the pairing index it maintains in
//! `index.rs`, record-time truncation in `truncate.rs`, world-state updates in `world.rs`, what
//! later layers keep for every version (and how far two versions share their entries) in
//! `cache.rs`. `shared.rs` shares a
//! history between threads: one writer publishes versions, any number of readers load them.
//! Projecting a history into a request is the projection layer's work (`History::project` is
//! defined there).

mod cache;
mod canonical;
mod compact;
mod index;
mod memo;
mod rollback;
mod shared;
mod stats;
mod truncate;
mod world;

use std::sync::Arc;

use imbl::Vector;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::item::{
    BYTES_PER_TOKEN, Entry, ItemError, ItemKind, OutputBody, ResponseItem, Role,
    approx_token_count, parse_item,
};
use crate::world::WorldSnapshot;

pub(crate) use cache::Cache;
pub(crate) use canonical::{Canonical, canonicalize};
pub use compact::{COMPACT_USER_MESSAGE_TOKENS, Compacted, EMPTY_SUMMARY, summary_text};
pub(crate) use compact::{UserWindow, real_user_text};
pub(crate) use index::{PairingIndex, PositionSet};
pub(crate) use memo::MediaMemo;
pub use shared::{HistoryPublisher, Published, SharedHistory};
pub use stats::{HistoryStats, KindStats};
pub use truncate::{ParseTruncationError, TruncationPolicy, truncate_text};
pub use world::WorldStateUpdate;

/// The truncation policy a history uses when none is given: 10,000 tokens, Codex's policy for
/// its current models.
pub const DEFAULT_TRUNCATION: TruncationPolicy = TruncationPolicy::Tokens(10_000);

/// Why an item was not recorded (Codex's record filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterReason {
    /// `system` messages are not part of the history.
    SystemMessage,
    /// `compaction_trigger` is a request control item.
    CompactionTrigger,
    /// A client-executed `tool_search_call` without a call id (missing, `null` or empty): no
    /// output could ever answer it, so it is kept out of the durable history (an output that
    /// names it is then an orphan, which projection drops).
    ClientToolSearchWithoutCallId,
}

/// What recording an item did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recorded {
    /// The item was appended at `position`; `truncated` says whether its output was shortened.
    Stored {
        /// Its index in the history.
        position: usize,
        /// Whether record-time truncation changed it.
        truncated: bool,
    },
    /// The item was not recorded.
    Filtered(FilterReason),
}

/// A persistent, immutable-by-value conversation history.
///
/// The items live in an [`imbl::Vector`] of [`Entry`] values, so `clone` is O(1) and a clone is a
/// snapshot: edits of one never show in the other, and unchanged parts stay shared. Beside the
/// items it keeps a version counter, a running token estimate and a pairing index (calls without
/// outputs, orphan outputs, media, unknown items) that projection reads instead of scanning.
///
/// # Examples
///
/// ```
/// use agent_history::{History, Message, ResponseItem, Role};
///
/// let mut history = History::new();
/// history.record(&ResponseItem::Message(Message::text(Role::User, "hi")))?;
/// let snapshot = history.clone(); // O(1)
/// history.record_json(r#"{"type":"function_call","name":"ls","arguments":"{}","call_id":"c1"}"#)?;
/// assert_eq!(snapshot.len(), 1);
/// assert_eq!(history.len(), 2);
/// # Ok::<(), agent_history::Error>(())
/// ```
#[derive(Clone)]
pub struct History {
    entries: Vector<Entry>,
    index: PairingIndex,
    version: u64,
    /// The exact sum of the entries' estimates. It has 128 bits so that removing an entry undoes
    /// adding it even past `u64::MAX` (which only the counts of a crafted snapshot reach): a
    /// saturated 64-bit sum would lose what it could not hold.
    tokens: u128,
    /// The sum of the entries' JSON text lengths (request bodies are sized from it).
    bytes: u64,
    /// What changes only on a replace, a rollback or a new reference context: behind one
    /// shared pointer, so that a version (which every clone a caller keeps is) holds 8 bytes of
    /// it rather than 104, and a record, which changes none of it, copies nothing of it.
    rare: Arc<Rare>,
}

/// The fields of a [`History`] that change rarely (copied on write).
#[derive(Clone)]
struct Rare {
    truncation: TruncationPolicy,
    reference_context_item: Option<Arc<Value>>,
    /// The first position whose user turns are this state's own: the items before it came from
    /// the replacement history of the compaction that began this state, and their user messages
    /// stand for turns of an earlier state. 0 when there is no earlier state.
    turns_from: usize,
    /// The states before each compaction (or other [`History::replace`]) that a rollback can
    /// return to, oldest first (`rollback.rs`).
    earlier: Vector<Arc<rollback::Earlier>>,
    /// The sum of the earlier states' own user turns (kept with `earlier`, so that counting the
    /// turns a rollback can undo does not walk every state).
    earlier_turns: usize,
    /// Which media sets' stripped forms are all computed, shared by clones (`memo.rs`); a copy
    /// of the other fields shares it too.
    media_memo: Arc<MediaMemo>,
    /// What later layers keep for this history and every version made from it (`cache.rs`):
    /// shared by clones and kept through every change.
    cache: Arc<Cache>,
    /// The world-state baseline: the snapshot of the world state the items already show, which
    /// the next update is rendered against. `None` until the first update, and again after
    /// anything that rewrites the items (so the next update renders in full).
    world_state: Option<Arc<WorldSnapshot>>,
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl PartialEq for History {
    /// Histories are equal when their entries, version, truncation policy, reference context
    /// and world-state baseline are equal (the index and token total are derived from the
    /// entries; the earlier states a rollback can return to are not compared).
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version
            && self.rare.truncation == other.rare.truncation
            && self.rare.reference_context_item == other.rare.reference_context_item
            && self.rare.world_state == other.rare.world_state
            && self.entries == other.entries
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("version", &self.version)
            .field("len", &self.entries.len())
            .field("tokens", &self.tokens)
            .field("truncation", &self.rare.truncation)
            .finish_non_exhaustive()
    }
}

impl History {
    /// An empty history with the [`DEFAULT_TRUNCATION`] policy.
    pub fn new() -> History {
        History::with_truncation(DEFAULT_TRUNCATION)
    }

    /// An empty history whose tool outputs are truncated at record time to `policy` (the model's
    /// policy; the ×1.2 serialization allowance is applied on top, as Codex does).
    pub fn with_truncation(policy: TruncationPolicy) -> History {
        History {
            entries: Vector::new(),
            index: PairingIndex::default(),
            version: 0,
            tokens: 0,
            bytes: 0,
            rare: Arc::new(Rare {
                truncation: policy,
                reference_context_item: None,
                turns_from: 0,
                earlier: Vector::new(),
                earlier_turns: 0,
                media_memo: Arc::default(),
                cache: Arc::default(),
                world_state: None,
            }),
        }
    }

    /// A history rebuilt from stored entries (the snapshot reader): the index is built from the
    /// headers in one pass ([`PairingIndex::build`]), no item JSON is parsed.
    pub(crate) fn from_stored(
        entries: Vector<Entry>,
        version: u64,
        truncation: TruncationPolicy,
        reference_context_item: Option<Value>,
    ) -> History {
        let mut history = History::with_truncation(truncation);
        history.set_entries(entries);
        history.version = version;
        history.set_shared_reference_context_item(reference_context_item.map(Arc::new));
        history
    }

    /// The model's truncation policy this history records with.
    pub fn truncation(&self) -> TruncationPolicy {
        self.rare.truncation
    }

    /// Number of stored items. Time: O(1).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no item is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry at `position`. Time: O(log n).
    pub fn get(&self, position: usize) -> Option<&Entry> {
        self.entries.get(position)
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.entries.iter()
    }

    /// The underlying persistent vector.
    pub fn entries(&self) -> &Vector<Entry> {
        &self.entries
    }

    /// The history version: 0 for a new history, bumped (saturating) by every [`replace`],
    /// rollback and compaction; not bumped by recording or [`remove_first_item`].
    ///
    /// [`replace`]: History::replace
    /// [`remove_first_item`]: History::remove_first_item
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Sum of the entries' token estimates, saturating at `u64::MAX`. Time: O(1).
    pub fn estimated_tokens(&self) -> u64 {
        u64::try_from(self.tokens).unwrap_or(u64::MAX)
    }

    /// Sum of the lengths of the entries' JSON texts, in bytes: what the items of a request body
    /// take before repairs and separators. Time: O(1).
    pub fn json_bytes(&self) -> u64 {
        self.bytes
    }

    /// The token estimate plus that of the base instructions ([`approx_token_count`]).
    pub fn estimated_tokens_with_base_instructions(&self, base_instructions: &str) -> u64 {
        self.estimated_tokens()
            .saturating_add(approx_token_count(base_instructions) as u64)
    }

    /// The reference context item: the baseline a harness diffs turn settings against. `None`
    /// means the next turn re-injects full context.
    pub fn reference_context_item(&self) -> Option<&Value> {
        self.rare.reference_context_item.as_deref()
    }

    /// Sets or clears the reference context item.
    pub fn set_reference_context_item(&mut self, item: Option<Value>) {
        self.set_shared_reference_context_item(item.map(Arc::new));
    }

    /// Sets or clears the reference context item, sharing it (resume sets the one it read).
    pub(crate) fn set_shared_reference_context_item(&mut self, item: Option<Arc<Value>>) {
        if self.rare.reference_context_item.is_some() || item.is_some() {
            self.rare_mut().reference_context_item = item;
        }
    }

    /// The world-state baseline: the snapshot of the world state that the items already show,
    /// which the next world-state update is diffed against. `None` before the first update and
    /// after [`History::replace`], [`History::remove_first_item`], a compaction or a rollback,
    /// so that the next update renders every section in full. Time: O(1).
    pub fn world_state_baseline(&self) -> Option<&WorldSnapshot> {
        self.rare.world_state.as_deref()
    }

    /// Sets or clears the world-state baseline (after the items rendering an update are
    /// recorded, or when a resume replays the rollout's `world_state` lines). Does not change the
    /// items or the version. Time: O(1) (the rarely changing fields are copied when shared).
    pub fn set_world_state_baseline(&mut self, baseline: Option<WorldSnapshot>) {
        self.set_shared_world_state_baseline(baseline.map(Arc::new));
    }

    /// Sets or clears the world-state baseline, sharing it (a snapshot or resume sets the one
    /// it read).
    pub(crate) fn set_shared_world_state_baseline(&mut self, baseline: Option<Arc<WorldSnapshot>>) {
        if self.rare.world_state.is_some() || baseline.is_some() {
            self.rare_mut().world_state = baseline;
        }
    }

    /// The rarely changing fields, for a change (copied first when a clone shares them).
    fn rare_mut(&mut self) -> &mut Rare {
        Arc::make_mut(&mut self.rare)
    }

    /// Sets the first position of this state's own turns (copying the rare fields only when it
    /// changes).
    fn set_turns_from(&mut self, turns_from: usize) {
        if self.rare.turns_from != turns_from {
            self.rare_mut().turns_from = turns_from;
        }
    }

    /// Why the record filter keeps `item` out of a history, if it does: `system` messages and
    /// `compaction_trigger` are not recorded.
    pub(crate) fn record_filter(item: &ResponseItem) -> Option<FilterReason> {
        match item {
            ResponseItem::Message(message) if message.role == Role::System => {
                Some(FilterReason::SystemMessage)
            }
            ResponseItem::CompactionTrigger => Some(FilterReason::CompactionTrigger),
            _ => None,
        }
    }

    /// Records a typed item: applies the record filter (`system` messages and
    /// `compaction_trigger` are not recorded), the canonicalization of client tool searches (see
    /// [`FilterReason::ClientToolSearchWithoutCallId`] and [`History::record_json`]) and
    /// record-time truncation of tool outputs, serializes it once and appends it. Time: O(log n)
    /// plus the item's size.
    ///
    /// # Errors
    ///
    /// [`ItemError::NotStorable`] for [`ResponseItem::Other`] (record its JSON instead),
    /// [`ItemError::Serialize`] if serialization fails.
    pub fn record(&mut self, item: &ResponseItem) -> Result<Recorded, ItemError> {
        if let Some(reason) = History::record_filter(item) {
            return Ok(Recorded::Filtered(reason));
        }
        let entry = match canonicalize(None, item)? {
            Canonical::Unchanged => Entry::from_item(item)?,
            Canonical::Filtered(reason) => return Ok(Recorded::Filtered(reason)),
            Canonical::Rewritten { json, item } => Entry::from_parts(json.into(), &item)?,
        };
        self.store(entry, OutputBody::of(item))
    }

    /// Records an item given as JSON text, which is kept verbatim unless a record-time rule
    /// rewrites it. An item of unknown type is stored (and held back by projection by default).
    ///
    /// Two rules rewrite: truncation of a tool output's body (reported as
    /// [`Recorded::Stored`]`{ truncated: true, .. }`), and the canonical `arguments` of a client
    /// `tool_search_call`. A client `tool_search_call` without a call id is not recorded
    /// ([`FilterReason::ClientToolSearchWithoutCallId`]). The rules:
    /// `docs/codex-compatibility.md`, "Recording".
    ///
    /// # Errors
    ///
    /// [`ItemError::InvalidJson`] when the text is not an item (see [`Entry::from_json`]).
    pub fn record_json(&mut self, json: impl Into<Box<str>>) -> Result<Recorded, ItemError> {
        let json = json.into();
        // The items whose header is read without building the typed item are neither filtered
        // nor canonicalized (see `Entry::read_header`).
        if let Some(header) = Entry::read_header(&json) {
            let (entry, output) = Entry::from_header(json, header)?;
            return self.store(entry, output);
        }
        let item = parse_item(&json)?;
        match History::durable_entry(json, &item)? {
            Ok(entry) => self.store(entry, OutputBody::of(&item)),
            Err(reason) => Ok(Recorded::Filtered(reason)),
        }
    }

    /// What a history keeps of an item given as `json` that parses into `item`, before
    /// truncation — the text a rollout line holds — or why it keeps nothing: the record filter,
    /// then the canonicalization of client tool searches.
    ///
    /// # Errors
    ///
    /// As [`Entry::from_json`].
    pub(crate) fn durable_entry(
        json: Box<str>,
        item: &ResponseItem,
    ) -> Result<Result<Entry, FilterReason>, ItemError> {
        if let Some(reason) = History::record_filter(item) {
            return Ok(Err(reason));
        }
        Ok(Ok(match canonicalize(Some(&json), item)? {
            Canonical::Unchanged => Entry::from_parts(json, item)?,
            Canonical::Filtered(reason) => return Ok(Err(reason)),
            Canonical::Rewritten { json, item } => Entry::from_parts(json.into(), &item)?,
        }))
    }

    /// Stores an entry made by [`History::durable_entry`] from `item` (the session, which also
    /// writes the entry's text to its rollout): truncation, storing.
    pub(crate) fn record_durable_entry(
        &mut self,
        entry: Entry,
        item: &ResponseItem,
    ) -> Result<Recorded, ItemError> {
        self.store(entry, OutputBody::of(item))
    }

    /// Records an entry that is already built (made with [`Entry::from_json`], say): the same
    /// record filter, canonicalization and truncation as [`History::record_json`], without
    /// building the item again (a `tool_search_call` that is not server-executed is read again
    /// to canonicalize it). A tool output's text is read to see whether truncation must cut it,
    /// and parsed when it must.
    ///
    /// # Errors
    ///
    /// [`ItemError::InvalidJson`] when an output that must be truncated, or a tool search that
    /// must be canonicalized, does not parse (an entry from a crafted snapshot, see
    /// [`Entry::to_item`]).
    pub fn record_entry(&mut self, entry: Entry) -> Result<Recorded, ItemError> {
        self.record_entry_with(entry, OutputBody::Unknown)
    }

    /// [`History::record_entry`] with what the caller knows of a tool output's body (the rollout
    /// reader knows it from the item it built): a body within budget is then not read again.
    pub(crate) fn record_entry_with(
        &mut self,
        entry: Entry,
        output: OutputBody,
    ) -> Result<Recorded, ItemError> {
        if entry.kind() == ItemKind::Message && entry.role() == Some(Role::System) {
            return Ok(Recorded::Filtered(FilterReason::SystemMessage));
        }
        let entry = match canonical::canonicalize_entry(&entry)? {
            Canonical::Unchanged => entry,
            Canonical::Filtered(reason) => return Ok(Recorded::Filtered(reason)),
            Canonical::Rewritten { json, item } => Entry::from_parts(json.into(), &item)?,
        };
        self.store(entry, output)
    }

    /// Records every item of an iterator of JSON texts, stopping at the first error.
    ///
    /// # Errors
    ///
    /// The first [`ItemError`]; the items before it stay recorded.
    pub fn record_all_json<I, S>(&mut self, items: I) -> Result<(), ItemError>
    where
        I: IntoIterator<Item = S>,
        S: Into<Box<str>>,
    {
        for json in items {
            self.record_json(json)?;
        }
        Ok(())
    }

    /// Truncates and appends an entry that passed the record filter; `output` is what is known of
    /// its tool-output body.
    fn store(&mut self, entry: Entry, output: OutputBody) -> Result<Recorded, ItemError> {
        let (entry, truncated) = self.truncate_output(entry, output)?;
        Ok(Recorded::Stored {
            position: self.push(entry),
            truncated,
        })
    }

    /// Appends entries that were recorded once already (into another history with the same
    /// policy), bypassing filter and truncation: resume joins the items recorded after a
    /// compaction to the compacted history this way.
    pub(crate) fn extend_recorded(&mut self, entries: impl IntoIterator<Item = Entry>) {
        for entry in entries {
            self.push(entry);
        }
    }

    /// Sets the version: resume, which replays several compactions as one replacement, gives the
    /// history the version the compactions one by one would have.
    pub(crate) fn set_version(&mut self, version: u64) {
        self.version = version;
    }

    /// Appends an already-built entry, bypassing filter and truncation: every append goes
    /// through here.
    fn push(&mut self, entry: Entry) -> usize {
        let position = self.entries.len();
        self.index.push(&entry);
        self.tokens += u128::from(entry.tokens());
        self.bytes += entry.byte_len() as u64;
        self.entries.push_back(entry);
        position
    }

    /// Record-time truncation of tool outputs: only `function_call_output` and
    /// `custom_tool_call_output` are cut, to the model's policy with Codex's ×1.2 allowance.
    /// Returns the entry (rewritten when truncation changed it) and whether it was.
    fn truncate_output(
        &self,
        entry: Entry,
        output: OutputBody,
    ) -> Result<(Entry, bool), ItemError> {
        if !matches!(
            entry.kind(),
            ItemKind::FunctionCallOutput | ItemKind::CustomToolCallOutput
        ) {
            return Ok((entry, false));
        }
        let policy = self.rare.truncation.with_serialization_allowance();
        let budget = policy.byte_budget();
        // Fast path: a string body within budget is left alone by `truncate_text`, so the common
        // case needs no second parse. When the body is not known, the whole JSON within budget
        // bounds the string's length.
        let short_text = match output {
            OutputBody::Text { bytes } => bytes <= budget,
            // Truncation keeps every part (and changes nothing) exactly when no text part is
            // empty and the parts' costs, in the policy's unit, add up to at most its limit:
            // each text part then finds budget left (it costs at least one), as does each
            // audio part.
            OutputBody::Parts(cost) => {
                !cost.empty_text
                    && match policy {
                        TruncationPolicy::Bytes(_) => {
                            cost.text_bytes
                                .saturating_add(cost.audio_tokens.saturating_mul(BYTES_PER_TOKEN))
                                <= policy.byte_budget()
                        }
                        TruncationPolicy::Tokens(_) => {
                            cost.text_tokens.saturating_add(cost.audio_tokens)
                                <= policy.token_budget()
                        }
                    }
            }
            OutputBody::Unknown | OutputBody::None => {
                entry.byte_len() <= budget && output_is_text(entry.json())
            }
        };
        if short_text {
            return Ok((entry, false));
        }
        let mut value: Value =
            serde_json::from_str(entry.json()).map_err(|source| ItemError::InvalidJson {
                item_type: Some(entry.kind().as_str().to_owned()),
                source,
            })?;
        let changed = value
            .get_mut("output")
            .is_some_and(|output| truncate::truncate_output(output, policy));
        if !changed {
            return Ok((entry, false));
        }
        Ok((Entry::from_json(value.to_string())?, true))
    }

    /// Replaces all items with `entries` (compaction does this). Bumps the version (saturating)
    /// and builds the index of the new entries, and clears the world-state baseline (the next
    /// update renders in full). The history as it was stays reachable: a
    /// rollback of more user turns than were recorded since returns to it (see
    /// [`History::drop_last_n_user_turns`]). The user messages in `entries` are not turns of
    /// their own: they stand for turns of the history before. Time: O(m log s) for the m new
    /// entries with s call ids among them (one pass, integer comparisons; a replace cannot cost
    /// less than collecting its m entries); the earlier state is kept in O(1).
    pub fn replace(&mut self, entries: impl IntoIterator<Item = Entry>) {
        let entries: Vector<Entry> = entries.into_iter().collect();
        self.keep_earlier_state();
        self.set_turns_from(entries.len());
        self.set_entries(entries);
        self.set_shared_world_state_baseline(None);
        self.version = self.version.saturating_add(1);
    }

    /// Makes `entries` the items, building the index, the token total and the byte total in one
    /// pass over them.
    fn set_entries(&mut self, entries: Vector<Entry>) {
        let (mut tokens, mut bytes) = (0u128, 0u64);
        let count = |entry: &&Entry| {
            tokens += u128::from(entry.tokens());
            bytes += entry.byte_len() as u64;
        };
        self.index = PairingIndex::build(entries.leaves().flatten().inspect(count), entries.len());
        self.tokens = tokens;
        self.bytes = bytes;
        self.entries = entries;
    }

    /// Removes the first item and then the first item that pairs with it: a call takes
    /// its first output along, an output its first call (a `function_call_output` looks for a
    /// `function_call` first, then a `local_shell_call`). Clears the world-state baseline (when
    /// there was an item to remove). Does not bump the version, and does not
    /// change the states a rollback can return to. Returns the removed entries (none on an empty
    /// history). Time: O(log n), plus O(d) when d items share the call id, plus the vector's
    /// removal of the counterpart when it is not at the front (a split and a concatenation of the
    /// persistent vector, O(log n) with a larger constant).
    pub fn remove_first_item(&mut self) -> Vec<Entry> {
        let Some(first) = self.entries.pop_front() else {
            return Vec::new();
        };
        self.set_shared_world_state_baseline(None);
        self.index.remove(0, &first);
        self.tokens = self.tokens.saturating_sub(u128::from(first.tokens()));
        self.bytes = self.bytes.saturating_sub(first.byte_len() as u64);
        let mut removed_before_turns = 1;
        let counterpart = self.index.counterpart(&first);
        let mut removed = vec![first];
        if let Some(position) = counterpart.filter(|&position| position < self.entries.len()) {
            // `position` is in the shortened history: the entry was at `position + 1`.
            if position + 1 < self.rare.turns_from {
                removed_before_turns += 1;
            }
            let entry = self.entries.remove(position);
            self.index.remove(position, &entry);
            self.tokens = self.tokens.saturating_sub(u128::from(entry.tokens()));
            self.bytes = self.bytes.saturating_sub(entry.byte_len() as u64);
            removed.push(entry);
        }
        self.set_turns_from(self.rare.turns_from.saturating_sub(removed_before_turns));
        removed
    }

    /// The value of type `T` this history and its versions keep (crate-internal: the provider
    /// layer keeps its per-target assemblies there; `cache.rs`).
    pub(crate) fn memo<T: std::any::Any + Send + Sync + Default>(&self) -> Arc<T> {
        self.rare.cache.get::<T>()
    }

    /// How many leading entries this history shares with `entries` (those of another version of
    /// it): the same entries, not equal texts. Time: O(n / 64) for versions that share their
    /// persistent vector's leaves, O(n) at most.
    pub(crate) fn shared_prefix(&self, entries: &Vector<Entry>) -> usize {
        cache::shared_prefix(&self.entries, entries)
    }

    /// The pairing index (crate-internal: read by projection).
    pub(crate) fn index(&self) -> &PairingIndex {
        &self.index
    }

    /// What the projections of this history and its clones know of its media's stripped forms
    /// (crate-internal: read and written by projection).
    pub(crate) fn media_memo(&self) -> &MediaMemo {
        &self.rare.media_memo
    }

    /// Recomputes every derived field (pairing index, token total) from the entries, with an
    /// algorithm independent of the incremental one, and panics if the maintained ones differ.
    /// For tests and fuzzers (the `testing` feature). Time: O(n log n).
    ///
    /// # Panics
    ///
    /// When an invariant does not hold: that is a bug in this crate, not bad input.
    #[cfg(any(test, feature = "testing"))]
    pub fn assert_invariants(&self) {
        let entries: Vec<&Entry> = self.entries.iter().collect();
        assert_eq!(
            self.index.len(),
            entries.len(),
            "the pairing index accounts for another number of entries"
        );
        let recomputed = PairingIndex::recompute(&entries);
        assert_eq!(
            self.index.by_position(),
            recomputed,
            "pairing index differs from a recomputation"
        );
        let tokens: u128 = self
            .entries
            .iter()
            .map(|entry| u128::from(entry.tokens()))
            .sum();
        assert_eq!(self.tokens, tokens, "token total differs from a recount");
        assert_eq!(
            self.bytes,
            json_bytes(&self.entries),
            "byte total differs from a recount"
        );
        assert!(
            self.rare.turns_from <= self.entries.len(),
            "the first position of the state's own turns is past its end"
        );
        assert!(
            !self.rare.earlier.is_empty() || self.rare.turns_from == 0,
            "a history with no earlier state has turns before its own"
        );
        assert_eq!(
            self.rare.earlier_turns,
            self.earlier_turns_recounted(),
            "the earlier states' turn total differs from a recount"
        );
        for entry in &self.entries {
            assert!(
                entry.payload().stored_json().is_some(),
                "a projection-only payload leaked into the live history"
            );
        }
    }
}

/// The sum of the entries' JSON text lengths.
fn json_bytes(entries: &Vector<Entry>) -> u64 {
    entries.iter().map(|entry| entry.byte_len() as u64).sum()
}

/// Whether a tool output's `output` is a JSON string, read without building the item.
fn output_is_text(json: &str) -> bool {
    #[derive(Deserialize)]
    struct Output<'a> {
        #[serde(borrow)]
        output: &'a RawValue,
    }
    serde_json::from_str::<Output<'_>>(json).is_ok_and(|item| item.output.get().starts_with('"'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recording shares what it does not change with the version before: the rare fields and the
    /// index's rare sets stay one allocation for both, and a call answered by the next item
    /// leaves no set node behind (what keeps a retained version small).
    #[test]
    fn a_record_copies_none_of_the_rare_parts() {
        let mut history = History::new();
        history.set_reference_context_item(Some(serde_json::json!({"cwd": "/"})));
        let items = [
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
            r#"{"type":"function_call","name":"ls","arguments":"{}","call_id":"c1"}"#,
            r#"{"type":"function_call_output","call_id":"c1","output":"ok"}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#,
        ];
        for json in items {
            let before = history.clone();
            history.record_json(json).expect("valid");
            assert!(
                Arc::ptr_eq(&before.rare, &history.rare),
                "rare fields copied by {json}"
            );
            assert!(
                history.index.shares_rare_sets(&before.index),
                "rare index sets copied by {json}"
            );
        }
        assert_eq!(history.index.calls_without_output().count(), 0);
        // A change of a rare field copies them for this version only.
        let before = history.clone();
        history.set_reference_context_item(None);
        assert!(!Arc::ptr_eq(&before.rare, &history.rare));
        assert!(before.reference_context_item().is_some());
        assert!(history.reference_context_item().is_none());
    }
}
