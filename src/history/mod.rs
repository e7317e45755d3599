//! [`History`]: the persistent, structurally shared conversation history.

mod compact;
mod index;
pub mod truncate;
pub(crate) mod turns;

use std::sync::Arc;

use imbl::Vector;
use serde_json::Value;

use crate::error::ItemError;
use crate::item::{Entry, ItemKind, OutputPayload, Pairing, ResponseItem, Role, parse_item};

pub use compact::{COMPACT_USER_MESSAGE_TOKENS, Compacted, EMPTY_SUMMARY, summary_text};
pub(crate) use index::PairingIndex;
use truncate::{TruncationPolicy, truncate_output};
pub use turns::{
    SUMMARY_PREFIX, is_contextual_developer_text, is_contextual_user_text, is_summary_text,
};
use turns::{TurnRole, turn_role};

/// The truncation policy a history uses when none is given: 10,000 tokens, Codex's policy for
/// its current models.
pub const DEFAULT_TRUNCATION: TruncationPolicy = TruncationPolicy::Tokens(10_000);

/// Why an item was not recorded (reference §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterReason {
    /// `system` messages are not part of the history.
    SystemMessage,
    /// `compaction_trigger` is a request control item.
    CompactionTrigger,
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
    tokens: u64,
    truncation: TruncationPolicy,
    reference_context_item: Option<Arc<Value>>,
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl PartialEq for History {
    /// Histories are equal when their entries, version, truncation policy and reference context
    /// are equal (the index and token total are derived from the entries).
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version
            && self.truncation == other.truncation
            && self.reference_context_item == other.reference_context_item
            && self.entries == other.entries
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("version", &self.version)
            .field("len", &self.entries.len())
            .field("tokens", &self.tokens)
            .field("truncation", &self.truncation)
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
            truncation: policy,
            reference_context_item: None,
        }
    }

    /// A history rebuilt from stored entries (the snapshot reader): the index is rebuilt from the
    /// headers, no item JSON is parsed.
    pub(crate) fn from_stored(
        entries: Vector<Entry>,
        version: u64,
        truncation: TruncationPolicy,
        reference_context_item: Option<Value>,
    ) -> History {
        let mut history = History::with_truncation(truncation);
        history.set_entries(entries);
        history.version = version;
        history.reference_context_item = reference_context_item.map(Arc::new);
        history
    }

    /// The model's truncation policy this history records with.
    pub fn truncation(&self) -> TruncationPolicy {
        self.truncation
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
    /// rollback and compaction; not bumped by recording or [`remove_first_item`] (§5.6).
    ///
    /// [`replace`]: History::replace
    /// [`remove_first_item`]: History::remove_first_item
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Sum of the entries' token estimates (§3.3). Time: O(1).
    pub fn estimated_tokens(&self) -> u64 {
        self.tokens
    }

    /// The token estimate plus that of the base instructions (ceil(bytes / 4)).
    pub fn estimated_tokens_with_base_instructions(&self, base_instructions: &str) -> u64 {
        let instructions = (base_instructions.len() as u64).div_ceil(4);
        self.tokens.saturating_add(instructions)
    }

    /// The reference context item: the baseline a harness diffs turn settings against. `None`
    /// means the next turn re-injects full context.
    pub fn reference_context_item(&self) -> Option<&Value> {
        self.reference_context_item.as_deref()
    }

    /// Sets or clears the reference context item.
    pub fn set_reference_context_item(&mut self, item: Option<Value>) {
        self.reference_context_item = item.map(Arc::new);
    }

    /// Records a typed item: applies the record filter (§3.1) and record-time truncation (§3.2),
    /// serializes it once and appends it. Time: O(log n) plus the item's size.
    ///
    /// # Errors
    ///
    /// [`ItemError::NotStorable`] for [`ResponseItem::Other`] (record its JSON instead),
    /// [`ItemError::Serialize`] if serialization fails.
    pub fn record(&mut self, item: &ResponseItem) -> Result<Recorded, ItemError> {
        if let Some(reason) = filter(item) {
            return Ok(Recorded::Filtered(reason));
        }
        if matches!(item, ResponseItem::Other) {
            return Err(ItemError::NotStorable { item_type: "other" });
        }
        let json = serde_json::to_string(item).map_err(ItemError::Serialize)?;
        self.store(json.into_boxed_str(), item)
    }

    /// Records an item given as JSON text, which is kept verbatim unless truncation rewrites the
    /// output. An item of unknown type is stored (and held back by projection by default).
    ///
    /// # Errors
    ///
    /// [`ItemError::InvalidJson`] when the text is not an item (see [`Entry::from_json`]).
    pub fn record_json(&mut self, json: impl Into<Box<str>>) -> Result<Recorded, ItemError> {
        let json = json.into();
        let item = parse_item(&json)?;
        self.record_parsed(json, &item)
    }

    /// Records JSON text together with the typed item it parses into (for callers that parsed it
    /// already): the record filter, truncation, storing.
    pub(crate) fn record_parsed(
        &mut self,
        json: Box<str>,
        item: &ResponseItem,
    ) -> Result<Recorded, ItemError> {
        if let Some(reason) = filter(item) {
            return Ok(Recorded::Filtered(reason));
        }
        self.store(json, item)
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

    fn store(&mut self, json: Box<str>, item: &ResponseItem) -> Result<Recorded, ItemError> {
        let (json, truncated) = self.truncate_output(json, item)?;
        let entry = match &truncated {
            Some(item) => Entry::from_parts(json, item)?,
            None => Entry::from_parts(json, item)?,
        };
        Ok(Recorded::Stored {
            position: self.push(entry),
            truncated: truncated.is_some(),
        })
    }

    /// Appends an already-built entry, bypassing filter and truncation (used by resume, which
    /// replays entries that were recorded once already, and by `replace`).
    fn push(&mut self, entry: Entry) -> usize {
        let position = self.entries.len();
        self.index.push(position, &entry);
        self.tokens = self.tokens.saturating_add(entry.tokens());
        self.entries.push_back(entry);
        position
    }

    /// Record-time truncation of tool outputs. Returns the (possibly rewritten) JSON and, when it
    /// was rewritten, the re-parsed item.
    fn truncate_output(
        &self,
        json: Box<str>,
        item: &ResponseItem,
    ) -> Result<(Box<str>, Option<ResponseItem>), ItemError> {
        let output = match item {
            ResponseItem::FunctionCallOutput(output) => &output.output,
            ResponseItem::CustomToolCallOutput(output) => &output.output,
            _ => return Ok((json, None)),
        };
        let policy = self.truncation.with_serialization_allowance();
        // Fast path: a string body within budget is left alone by `truncate_text`, so the common
        // case needs no second parse.
        if let OutputPayload::Text(text) = output
            && text.len() <= policy.byte_budget()
        {
            return Ok((json, None));
        }
        let mut value: Value =
            serde_json::from_str(&json).map_err(|source| ItemError::InvalidJson {
                item_type: Some(item_type_name(item).to_owned()),
                source,
            })?;
        let changed = value
            .get_mut("output")
            .is_some_and(|output| truncate_output(output, policy));
        if !changed {
            return Ok((json, None));
        }
        let json = serde_json::to_string(&value)
            .map_err(ItemError::Serialize)?
            .into_boxed_str();
        let item = parse_item(&json)?;
        Ok((json, Some(item)))
    }

    /// Replaces all items with `entries` (used for compaction and rollback). Bumps the version
    /// (saturating) and rebuilds the index. Time: O(n log n).
    pub fn replace(&mut self, entries: impl IntoIterator<Item = Entry>) {
        let entries: Vector<Entry> = entries.into_iter().collect();
        self.set_entries(entries);
        self.version = self.version.saturating_add(1);
    }

    fn set_entries(&mut self, entries: Vector<Entry>) {
        self.index = PairingIndex::build(entries.iter());
        self.tokens = entries
            .iter()
            .map(Entry::tokens)
            .fold(0, u64::saturating_add);
        self.entries = entries;
    }

    /// Removes the first item and then the first item that pairs with it (§5.2): a call takes
    /// its first output along, an output its first call (a `function_call_output` looks for a
    /// `function_call` first, then a `local_shell_call`). Does not bump the version. Returns the
    /// removed entries (none on an empty history). Time: O(n).
    pub fn remove_first_item(&mut self) -> Vec<Entry> {
        let mut entries = self.entries.clone();
        let Some(first) = entries.pop_front() else {
            return Vec::new();
        };
        let mut removed = vec![first.clone()];
        if let Some(position) = counterpart_position(&entries, &first) {
            removed.push(entries.remove(position));
        }
        self.set_entries(entries);
        removed
    }

    /// Number of user turns (§5.4) in the history. Time: O(1).
    pub fn user_turn_count(&self) -> usize {
        self.index.user_turns().len()
    }

    /// Rolls back the last `n` user turns (§5.3): cuts at the `n`-th last user-turn boundary (or
    /// the first, if there are fewer), trims the context updates directly above the cut, and
    /// replaces the history with what remains (bumping the version). Items before the first user
    /// turn always survive. With no user turn at all the items are kept but the version is still
    /// bumped, as Codex does. Time: O(k log n) for k removed items.
    pub fn drop_last_n_user_turns(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let turns = self.index.user_turns();
        let Some(&first_boundary) = turns.get_min() else {
            self.version = self.version.saturating_add(1);
            return;
        };
        let mut cut = if n >= turns.len() {
            first_boundary
        } else {
            turns
                .iter()
                .rev()
                .nth(n - 1)
                .copied()
                .unwrap_or(first_boundary)
        };
        while cut > first_boundary {
            let Some(above) = self.entries.get(cut - 1) else {
                break;
            };
            match turn_role(above) {
                TurnRole::ContextUpdate { mixed } => {
                    if mixed {
                        self.reference_context_item = None;
                    }
                    cut -= 1;
                }
                TurnRole::Boundary | TurnRole::Other => break,
            }
        }
        self.truncate(cut);
        self.version = self.version.saturating_add(1);
    }

    /// The history as it was before its user turn number `turn` (1-based) began: the first
    /// `turn − 1` user turns and everything before them, with the context updates that preceded
    /// turn `turn` trimmed as a rollback does. `turn` past the last turn gives a plain clone.
    /// The result shares structure with `self`. Time: O(1) for a clone, O(k log n) for k items
    /// cut off.
    pub fn before_user_turn(&self, turn: usize) -> History {
        let mut fork = self.clone();
        let total = self.user_turn_count();
        if turn >= 1 && turn <= total {
            fork.drop_last_n_user_turns(total - turn + 1);
        }
        fork
    }

    /// Keeps the first `len` items, undoing their index entries one by one.
    fn truncate(&mut self, len: usize) {
        while self.entries.len() > len {
            let position = self.entries.len() - 1;
            let Some(entry) = self.entries.pop_back() else {
                break;
            };
            self.index.pop(position, &entry);
            self.tokens = self.tokens.saturating_sub(entry.tokens());
        }
    }

    /// The pairing index (crate-internal: read by projection).
    pub(crate) fn index(&self) -> &PairingIndex {
        &self.index
    }

    /// Recomputes every derived field (pairing index, token total) from the entries, with an
    /// algorithm independent of the incremental one, and panics if the maintained ones differ. For tests and fuzzers; Time: O(n log n).
    ///
    /// # Panics
    ///
    /// When an invariant does not hold: that is a bug in this crate, not bad input.
    pub fn assert_invariants(&self) {
        let entries: Vec<&Entry> = self.entries.iter().collect();
        let recomputed = PairingIndex::recompute(&entries);
        assert_eq!(
            self.index, recomputed,
            "pairing index differs from a recomputation"
        );
        let tokens = self
            .entries
            .iter()
            .map(Entry::tokens)
            .fold(0, u64::saturating_add);
        assert_eq!(self.tokens, tokens, "token total differs from a recount");
        for entry in &self.entries {
            assert!(
                entry.payload.stored_json().is_some(),
                "a projection-only payload leaked into the live history"
            );
        }
    }
}

/// The record filter of §3.1.
fn filter(item: &ResponseItem) -> Option<FilterReason> {
    match item {
        ResponseItem::Message(message) if message.role == Role::System => {
            Some(FilterReason::SystemMessage)
        }
        ResponseItem::CompactionTrigger => Some(FilterReason::CompactionTrigger),
        _ => None,
    }
}

fn item_type_name(item: &ResponseItem) -> &'static str {
    ItemKind::of(item).map_or("compaction_trigger", ItemKind::as_str)
}

/// Where the first counterpart of `removed` sits in `entries` (§5.2).
fn counterpart_position(entries: &Vector<Entry>, removed: &Entry) -> Option<usize> {
    let call_id = removed.call_id()?;
    let find = |kind: ItemKind| {
        entries
            .iter()
            .position(|entry| entry.kind() == kind && entry.call_id() == Some(call_id))
    };
    match removed.kind().pairing() {
        Pairing::Call { family, .. } => find(family.output_kind()),
        Pairing::Output { family } => family.call_kinds().iter().find_map(|kind| find(*kind)),
        Pairing::Unpaired => None,
    }
}
