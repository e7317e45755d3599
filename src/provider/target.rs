//! The machinery every per-target projection shares: options, the projection value and its
//! report, the per-entry rendering cache, and the call grouping that positional pairing needs.
//!
//! # How a target plugs in
//!
//! A target (Chat Completions in `chat.rs`, Anthropic Messages beside it) provides:
//!
//! 1. A rendering type `R` implementing [`Rendered`]: what one Responses item becomes for the
//!    target, computed from the item's JSON as the Responses projection sends it (media already
//!    stripped for the model), and independent of any per-request option, so that it can be
//!    cached. `Rendered::CELL` names the entry's cache cell the target owns
//!    ([`CHAT_CELL`], [`ANTHROPIC_CELL`]); `Rendered::pairing` says whether it is a call, an
//!    output (with the call id used for pairing) or anything else; `Rendered::notes` lists what
//!    the conversion of this one item lost or changed ([`TargetRepairKind`]), reported at the
//!    item's position on every projection.
//! 2. A writer over the [`Paired`] order that [`Units::collect`] and [`pair_calls`] produce from a
//!    [`Projection`]: `Step::Unit` sends a unit's rendering, `Step::Synthetic` answers a call
//!    that has no output left for the target (with the same `aborted` text as the Responses
//!    repairs). Each call batch (consecutive calls) is followed by the outputs of its calls,
//!    moved there when they sat elsewhere; the writer only merges steps into the target's
//!    messages.
//! 3. A variant of the private `Inner` enum of [`TargetProjection`] holding its written form,
//!    and an arm in [`History::project_for`] and in `TargetProjection::write_json`.
//!
//! Every rendering is computed once per entry and shared by every clone of the entry (every
//! version of a history, every projection), through the entry's body: re-projecting a history
//! after one append renders one item ([`target_renderings`] counts them with the `testing`
//! feature). Synthetic outputs of the Responses projection have no entry to cache in: they are
//! rendered when the slot of their call is assembled, which after an append is only in the
//! re-assembled tail (they are k small items).
//!
//! Chat Completions also keeps its assembly (`chat.rs`, `ChatMemo`): in pieces that nothing
//! outside pairs or batches with, in a memo of the history's lineage (shared by the versions that
//! hold the same entries at the same positions; up to four assemblies, for option sets and
//! versions, `ChatMemos`), so that a projection of a later or an older version re-assembles only
//! the pieces from the first position that differs ([`target_slots_assembled`] counts the slots
//! visited). Anthropic Messages keeps the builder's state at the last few places
//! nothing before pairs or batches with anything after (`anthropic/assemble.rs`,
//! `AnthropicMemo`), in its own cell of the same memo (up to four assemblies, for option sets and
//! versions, `AnthropicMemos`), and re-assembles from the last one a later version can resume at
//! (an older version: the last one at or before its end).

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, Write};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::history::{History, Memo, memo_list};
use crate::item::{Body, Entry, ItemError, ItemKind};
use crate::projection::{
    ABORTED_OUTPUT, Location, Projection, ProjectionError, ProjectionOptions, RepairReport,
    SentSlot,
};

use super::Target;
use super::anthropic::{self, AnthropicMessages, InputFallback, PlaceholderReason};
use super::chat::{self, ChatMessages};

/// The cache cell of an entry's Chat Completions rendering.
pub(crate) const CHAT_CELL: usize = 0;
/// The cache cell of an entry's Anthropic Messages rendering.
pub(crate) const ANTHROPIC_CELL: usize = 1;

/// How many texts of one entry a target can render: the stored text and its three stripped
/// forms (images, audio, both), as [`SentSlot::Item`] numbers them.
const FORMS: usize = 4;

/// Whether a Chat Completions projection keeps `developer` messages as `developer` or sends
/// them as `system`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeveloperRole {
    /// `developer` messages are sent as `system` messages (the default: older OpenAI models and
    /// many compatible servers reject the `developer` role; every server takes `system`).
    #[default]
    System,
    /// `developer` messages keep their role (OpenAI's newer models prefer it).
    Developer,
}

/// Options of [`History::project_for`]: the target, the Responses projection's options (the
/// repairs every target starts from) and the options particular to one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TargetOptions {
    /// The API the projection is for.
    pub target: Target,
    /// Modalities, repair mode and unknown items, as for [`History::project`].
    pub projection: ProjectionOptions,
    /// Chat Completions: how `developer` messages are sent (default: as `system`).
    pub developer_role: DeveloperRole,
}

impl TargetOptions {
    /// Options for `target` with the default projection options.
    pub fn new(target: Target) -> Self {
        TargetOptions {
            target,
            ..TargetOptions::default()
        }
    }

    /// The same options with these projection options.
    pub fn with_projection(self, projection: ProjectionOptions) -> Self {
        TargetOptions { projection, ..self }
    }
}

/// What a target did to one item, beyond the Responses projection's repairs.
///
/// Serializes as an object whose `kind` is the variant in snake_case, beside the variant's
/// fields (`docs/json-output.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TargetRepairKind {
    /// A reasoning item was not sent: the target has no field for it, and its encrypted content
    /// is bound to the provider that made it.
    ReasoningNotSent,
    /// An item with no equivalent in the target was not sent (its kind is in `at`).
    NoEquivalent,
    /// An output sat elsewhere than right after its call's batch and was moved there
    /// (`before_call`: it came before its call in the history).
    MovedOutput {
        /// Position of the call it answers.
        call_position: usize,
        /// Whether the output came before its call.
        before_call: bool,
    },
    /// An output that no call takes (its call had been answered already: a duplicate) was not
    /// sent.
    DroppedDuplicateOutput,
    /// No output answers a call whose call id has outputs (which answer other calls of that id,
    /// e.g. after an interrupted turn of a model that names every call alike): an `aborted`
    /// output was placed after its batch.
    SynthesizedOutput,
    /// A call without a call id was not sent: the target pairs calls and outputs by id.
    DroppedCallWithoutId,
    /// A call of another family was sent as a function call named `name`.
    MappedCall {
        /// The function name it is sent under.
        name: String,
    },
    /// A message was sent with another role.
    MappedRole {
        /// The role it had.
        from: String,
        /// The role it is sent with.
        to: String,
    },
    /// An image's `detail: original` was sent as `high` (the target knows auto, low, high).
    MappedImageDetail,
    /// Empty function-call arguments were sent as `{}`.
    EmptyArguments,
    /// Chat Completions: a call with an empty tool name was sent under the name
    /// [`UNNAMED_TOOL_FUNCTION`](crate::provider::UNNAMED_TOOL_FUNCTION) (the API refuses an
    /// empty `function.name`; the call and its output are kept so that they still pair).
    EmptyToolName,
    /// Images of a tool output were replaced by a placeholder in the tool message and sent in a
    /// `user` message after the batch's tool messages.
    MovedToolOutputImages {
        /// How many images.
        images: usize,
    },
    /// Parts or fields with no equivalent were not sent (e.g. `input_audio`, an image by
    /// `file_id`, encrypted content, a function's `namespace`).
    DroppedParts {
        /// What was dropped, comma-separated.
        what: String,
    },
    /// A call id was mapped to an id the target accepts (deterministic within the request).
    MappedId {
        /// The id in the history.
        from: String,
        /// The id sent.
        to: String,
    },
    /// Anthropic: a `system` or `developer` message was moved into the top-level `system`
    /// (its position in the conversation is lost).
    HoistedToSystem {
        /// `system` or `developer`.
        role: String,
    },
    /// Anthropic: an empty or white-space-only text was not sent (the API refuses empty text
    /// blocks).
    SkippedEmptyText,
    /// Anthropic: an image or audio part was replaced by its placeholder text.
    ReplacedMedia {
        /// Why.
        reason: PlaceholderReason,
    },
    /// Anthropic: function-call arguments that are not a JSON object were sent as
    /// `{"arguments": "<raw text>"}`, so that the `tool_use` and its result are kept.
    ArgumentsNotObject {
        /// Not JSON, or JSON of another type.
        fallback: InputFallback,
    },
    /// Anthropic: the history starts with the assistant; a user message with a placeholder
    /// text was put first.
    LeadingUserMessage,
    /// Anthropic: trailing white space was trimmed from the final assistant message's text.
    TrimmedFinalWhitespace,
}

/// One target repair, located in the live history.
///
/// Serializes as the [`TargetRepairKind`]'s fields (`kind` and its own) followed by `at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetRepair {
    /// What was done.
    #[serde(flatten)]
    pub kind: TargetRepairKind,
    /// The item it was done to.
    pub at: Location,
}

impl TargetRepairKind {
    /// The `kind` this serializes with.
    pub fn name(&self) -> &'static str {
        match self {
            TargetRepairKind::ReasoningNotSent => "reasoning_not_sent",
            TargetRepairKind::NoEquivalent => "no_equivalent",
            TargetRepairKind::MovedOutput { .. } => "moved_output",
            TargetRepairKind::DroppedDuplicateOutput => "dropped_duplicate_output",
            TargetRepairKind::SynthesizedOutput => "synthesized_output",
            TargetRepairKind::DroppedCallWithoutId => "dropped_call_without_id",
            TargetRepairKind::MappedCall { .. } => "mapped_call",
            TargetRepairKind::MappedRole { .. } => "mapped_role",
            TargetRepairKind::MappedImageDetail => "mapped_image_detail",
            TargetRepairKind::EmptyArguments => "empty_arguments",
            TargetRepairKind::EmptyToolName => "empty_tool_name",
            TargetRepairKind::MovedToolOutputImages { .. } => "moved_tool_output_images",
            TargetRepairKind::DroppedParts { .. } => "dropped_parts",
            TargetRepairKind::MappedId { .. } => "mapped_id",
            TargetRepairKind::HoistedToSystem { .. } => "hoisted_to_system",
            TargetRepairKind::SkippedEmptyText => "skipped_empty_text",
            TargetRepairKind::ReplacedMedia { .. } => "replaced_media",
            TargetRepairKind::ArgumentsNotObject { .. } => "arguments_not_object",
            TargetRepairKind::LeadingUserMessage => "leading_user_message",
            TargetRepairKind::TrimmedFinalWhitespace => "trimmed_final_whitespace",
        }
    }
}

/// What a target projection repaired: the Responses projection's report, which every target
/// starts from, and the target's own repairs and losses in position order.
#[derive(Debug, Clone)]
pub struct TargetReport {
    target: Target,
    projection: RepairReport,
    repairs: imbl::Vector<TargetRepair>,
}

impl TargetReport {
    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The repairs of the Responses projection the target started from.
    pub fn projection(&self) -> &RepairReport {
        &self.projection
    }

    /// The target's own repairs, in position order (stable: one item's in the order made). A
    /// persistent vector: a projection of a later version shares the earlier one's.
    pub fn repairs(&self) -> &imbl::Vector<TargetRepair> {
        &self.repairs
    }

    /// The target's repairs counted by kind.
    pub fn counts(&self) -> std::collections::BTreeMap<&'static str, u64> {
        let mut counts = std::collections::BTreeMap::new();
        for repair in &self.repairs {
            *counts.entry(repair.kind.name()).or_insert(0) += 1;
        }
        counts
    }
}

impl Serialize for TargetReport {
    /// `{"target", "projection", "count", "by_kind", "repairs"}`: the target's name, the
    /// Responses projection's report, then the target's own repairs (`docs/json-output.md`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("TargetReport", 5)?;
        state.serialize_field("target", &self.target)?;
        state.serialize_field("projection", &self.projection)?;
        state.serialize_field("count", &self.repairs.len())?;
        state.serialize_field("by_kind", &self.counts())?;
        state.serialize_field("repairs", &Repairs(&self.repairs))?;
        state.end()
    }
}

/// The repairs of a [`TargetReport`], serialized as an array.
struct Repairs<'a>(&'a imbl::Vector<TargetRepair>);

impl Serialize for Repairs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

/// A projection could not be made for a target; nothing was projected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetProjectionError {
    /// The Responses projection every target starts from failed.
    #[error("the projection failed")]
    Projection(#[from] ProjectionError),
    /// An item does not parse, so it cannot be converted for the target (only an entry of a
    /// crafted snapshot can; entries built by this library always parse).
    #[error("item {position} cannot be read to convert it for {target}")]
    UnreadableItem {
        /// Its position in the live history.
        position: usize,
        /// The target.
        target: Target,
        /// Why it cannot be read.
        #[source]
        source: ItemError,
    },
    /// This target has no projection yet.
    #[error("projection for {0} is not available")]
    Unsupported(Target),
}

/// A projected input for one target: a persistent value independent of later edits of the
/// history, its report, and its JSON.
#[derive(Debug, Clone)]
pub struct TargetProjection {
    projection: Projection,
    inner: Inner,
    report: TargetReport,
}

/// The written form of each target.
#[derive(Debug, Clone)]
enum Inner {
    /// The Responses projection is the input itself.
    Responses,
    /// The Chat Completions messages.
    Chat(ChatMessages),
    /// The Anthropic `messages` (and the hoisted `system` texts).
    Anthropic(AnthropicMessages),
}

impl TargetProjection {
    /// The target.
    pub fn target(&self) -> Target {
        self.report.target
    }

    /// The Responses projection this was made from (repaired; what `--target responses` sends).
    pub fn projection(&self) -> &Projection {
        &self.projection
    }

    /// What was repaired, by the Responses projection and by the target.
    pub fn report(&self) -> &TargetReport {
        &self.report
    }

    /// Writes the input as one JSON array: for Responses exactly the bytes of
    /// [`Projection::write_json_array`]; for Chat Completions and Anthropic Messages the `messages`
    /// array (Anthropic's `system` texts are in [`TargetProjection::anthropic`]).
    ///
    /// # Errors
    ///
    /// Whatever the writer returns.
    pub fn write_json<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        match &self.inner {
            Inner::Responses => self.projection.write_json_array(out),
            Inner::Chat(messages) => messages.write_json(out),
            Inner::Anthropic(messages) => messages.write_json(out),
        }
    }

    /// The JSON array [`TargetProjection::write_json`] writes, as a string.
    pub fn to_json(&self) -> String {
        match &self.inner {
            Inner::Responses => self.projection.to_json_array(),
            Inner::Chat(messages) => {
                let mut out = Vec::new();
                // Writing to a vector cannot fail.
                let _ = messages.write_json(&mut out);
                String::from_utf8(out).unwrap_or_default()
            }
            Inner::Anthropic(messages) => messages.to_json(),
        }
    }

    /// Number of messages (Chat Completions, Anthropic Messages) or items (Responses) sent.
    pub fn len(&self) -> usize {
        match &self.inner {
            Inner::Responses => self.projection.len(),
            Inner::Chat(messages) => messages.len(),
            Inner::Anthropic(messages) => messages.len(),
        }
    }

    /// The Anthropic form (`system` texts and `messages`), for [`Target::AnthropicMessages`].
    pub fn anthropic(&self) -> Option<&AnthropicMessages> {
        match &self.inner {
            Inner::Anthropic(messages) => Some(messages),
            _ => None,
        }
    }

    /// Whether nothing is sent.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl History {
    /// Projects the history into the input of `options.target`: the Responses projection with
    /// its repairs (synthetic `aborted` outputs, orphans dropped, media stripped, unknown items
    /// held back), converted item by item for the target, each call batch followed by its
    /// outputs. Every conversion and every loss is reported with its position.
    ///
    /// Each entry's conversion is computed once and shared by every clone of the entry (every
    /// version of the history): a projection after one append converts one item. Assembling the
    /// messages for Chat Completions is O(changes) after a projection of another version of this
    /// history's lineage with the same options, later or older (the items one has and the other
    /// lacks, and the Responses repairs that differ: the pieces from the first difference on are
    /// re-assembled). The lineage keeps up to four assemblies, for option sets and versions,
    /// the least recently used dropped, so alternating options or a reader behind a writer stay
    /// incremental. A fork of an older version, a rollback, a replace or a removal assembles in
    /// full once, as does an option set or version whose assemblies were all dropped. Call ids
    /// that need mapping (empty, or used by an earlier call) stay incremental, a session reusing
    /// `call_0` every turn included (the pieces before a change are kept when no new output or
    /// unanswered call can pair back across them); a new call whose own id is a name minted
    /// for an earlier call re-assembles from that call. For
    /// Anthropic Messages it is O(changes) after a
    /// projection of another version with the same options, later or older, from the last place
    /// before the change (for an older version: at or before its end) where nothing before
    /// pairs or batches with anything after (the last message, whose role run the new items may
    /// join, and the call batch their outputs may answer, are re-assembled with them; an output
    /// answering a call before every place kept, an older version ending before every place
    /// kept (the last eight), a fork, a rollback, a replace or a removal assemble in full; the
    /// lineage keeps up to four assemblies, for option sets and versions, the least recently
    /// used dropped, so alternating options or a reader behind a writer stay incremental; call
    /// ids that need mapping stay incremental, but for a new valid id equal to the form an
    /// earlier id was mapped to; a call id reused every turn, as `call_0`, stays incremental,
    /// since a place serves when the first new item of each id used before it is a call; a new
    /// output whose id was used before the place without a new call of it first, or a new call
    /// no later output answers with the id of an output before the place that answers nothing,
    /// resumes at an earlier place). Writing is
    /// O(output bytes). For [`Target::Responses`] the result writes exactly what
    /// [`History::project`] does.
    ///
    /// # Errors
    ///
    /// [`TargetProjectionError::Projection`] when the Responses projection fails (strict mode);
    /// [`TargetProjectionError::UnreadableItem`] when an item does not parse;
    /// [`TargetProjectionError::Unsupported`] for a target without a projection yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::{History, Target, TargetOptions};
    ///
    /// let mut history = History::new();
    /// history.record_json(r#"{"type":"function_call","name":"shell","arguments":"","call_id":"c1"}"#)?;
    /// let chat = history.project_for(&TargetOptions::new(Target::ChatCompletions))?;
    /// assert_eq!(
    ///     chat.to_json(),
    ///     r#"[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"aborted"}]"#
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn project_for(
        &self,
        options: &TargetOptions,
    ) -> Result<TargetProjection, TargetProjectionError> {
        let projection = self.project(&options.projection)?;
        let (inner, repairs) = match options.target {
            Target::Responses => (Inner::Responses, imbl::Vector::new()),
            Target::ChatCompletions => {
                let (messages, repairs) = chat::project(self, &projection, options)?;
                (Inner::Chat(messages), repairs)
            }
            Target::AnthropicMessages => {
                let (messages, repairs) =
                    anthropic::project(self, &projection, &options.projection)?;
                (Inner::Anthropic(messages), repairs)
            }
        };
        let report = TargetReport {
            target: options.target,
            projection: projection.report().clone(),
            repairs,
        };
        Ok(TargetProjection {
            projection,
            inner,
            report,
        })
    }
}

/// How an item's rendering takes part in pairing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PairRole<'a> {
    /// A call with this call id.
    Call(&'a str),
    /// An output answering this call id.
    Output(&'a str),
    /// Anything else that is sent.
    Other,
    /// Nothing is sent (the item has no equivalent); its notes say why.
    Nothing,
}

/// What one Responses item becomes for a target, cached per entry (see the module's
/// documentation).
pub(crate) trait Rendered: Send + Sync + Sized + 'static {
    /// The entry's cache cell this target owns.
    const CELL: usize;
    /// The target, for errors.
    const TARGET: Target;
    /// Converts one item, from its JSON as the Responses projection sends it.
    ///
    /// # Errors
    ///
    /// When the JSON does not parse.
    fn render(json: &str) -> Result<Self, ItemError>;
    /// How it pairs.
    fn pairing(&self) -> PairRole<'_>;
    /// What the conversion lost or changed.
    fn notes(&self) -> &[TargetRepairKind];
}

/// The renderings of one entry for one target, one per text form.
struct Forms<R>([OnceLock<Arc<R>>; FORMS]);

/// An assembly a lineage's memo cell keeps in its list, for Chat Completions
/// (`chat::ChatMemos`) and Anthropic Messages (`anthropic::assemble::AnthropicMemos`): of which
/// version, and for which options.
pub(crate) trait KeptAssembly: Send + Sync + 'static {
    /// The options an assembly is made for.
    type Options: PartialEq;
    /// The length of the history version assembled.
    fn version_len(&self) -> usize;
    /// The options it was assembled with.
    fn options(&self) -> &Self::Options;
}

/// The kept assembly to start a projection of a version of length `len` with `options` from:
/// the one of those options whose length is the nearest (a shorter one on a tie).
pub(crate) fn nearest_kept<T: KeptAssembly>(
    kept: &[Arc<T>],
    options: &T::Options,
    len: usize,
) -> Option<Arc<T>> {
    kept.iter()
        .filter(|memo| memo.options() == options)
        .min_by_key(|memo| {
            let version = memo.version_len();
            (version.abs_diff(len), version > len)
        })
        .cloned()
}

/// The assemblies kept in `cell`, the most recently used first (none when the cell is empty or
/// holds something else).
pub(crate) fn read_kept<T: KeptAssembly>(cell: &Mutex<Option<Memo>>) -> Vec<Arc<T>> {
    memo_list(&cell.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Stores `memo`, assembled from `source` (or in full after reading it), in `cell`, which keeps
/// at most `limit`, the most recently used first: `memo` takes the place of the one it started
/// from when that was of a shorter or the same version, and is kept beside it when it was of a
/// longer one (so that a writer appending and a reader projecting an older version each find
/// their own); the least recently used is dropped when a new one does not fit. Other
/// projections may have stored theirs since this one read the cell: the rule is applied to
/// what the cell holds now.
pub(crate) fn store_kept<T: KeptAssembly>(
    cell: &Mutex<Option<Memo>>,
    memo: &Arc<T>,
    source: Option<&Arc<T>>,
    limit: usize,
) {
    let mut stored = cell.lock().unwrap_or_else(PoisonError::into_inner);
    let mut kept: Vec<Arc<T>> = memo_list(&stored);
    if kept.first().is_some_and(|first| Arc::ptr_eq(first, memo)) {
        // The most recently used already: nothing to change.
        return;
    }
    // The one it started from stays when it was of a longer version (moved up: it was used),
    // else `memo` replaces it; `memo` also replaces one of the same options and version (the
    // same assembly: the same entries, the same options), itself included.
    let longer_source = source.filter(|source| source.version_len() > memo.version_len());
    let replaced = source.filter(|_| longer_source.is_none());
    kept.retain(|kept| {
        let same = kept.options() == memo.options() && kept.version_len() == memo.version_len();
        let started_from = replaced.is_some_and(|source| Arc::ptr_eq(kept, source));
        !(same || started_from)
    });
    if let Some(source) = longer_source
        && let Some(at) = kept.iter().position(|kept| Arc::ptr_eq(kept, source))
    {
        let source = kept.remove(at);
        kept.insert(0, source);
    }
    kept.insert(0, Arc::clone(memo));
    kept.truncate(limit);
    *stored = Some(Arc::new(kept));
}

#[cfg(feature = "testing")]
thread_local! {
    static RENDERINGS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static ASSEMBLED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static OLDER_RESUMED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many Anthropic Messages projections on this thread resumed the kept assembly of a longer
/// version of their lineage (the `testing` feature): a reader behind a writer resumes the
/// writer's assembly at a cut at or before its own end, which tests check is exercised.
#[cfg(feature = "testing")]
pub fn anthropic_older_versions_resumed() -> u64 {
    OLDER_RESUMED.with(std::cell::Cell::get)
}

/// Counts one projection of an older version resumed from a longer one's assembly.
pub(crate) fn count_older_version_resumed() {
    #[cfg(feature = "testing")]
    OLDER_RESUMED.with(|count| count.set(count.get() + 1));
}

/// How many slots of a Responses projection this thread's target assemblies visited (the
/// `testing` feature): a projection for Chat Completions or Anthropic Messages re-assembles only
/// what changed since the projection of another version of the history's lineage, which tests
/// check by counting. For Anthropic Messages it also counts the slots read to check a kept cut
/// that then proves unusable.
#[cfg(feature = "testing")]
pub fn target_slots_assembled() -> u64 {
    ASSEMBLED.with(std::cell::Cell::get)
}

/// How many items this thread converted for a target other than Responses (the `testing`
/// feature): each entry's conversion is computed once and shared, which tests check by counting.
#[cfg(feature = "testing")]
pub fn target_renderings() -> u64 {
    RENDERINGS.with(std::cell::Cell::get)
}

/// Converts `json`, counting the conversion.
fn render_counted<R: Rendered>(json: &str) -> Result<R, ItemError> {
    #[cfg(feature = "testing")]
    RENDERINGS.with(|count| count.set(count.get() + 1));
    R::render(json)
}

/// The rendering of `json`, form `form` of the entry whose body is `body`: computed the first
/// time any clone of the entry asks, then shared. An error is not cached.
fn cached<R: Rendered>(body: &Body, form: usize, json: &str) -> Result<Arc<R>, ItemError> {
    let Some(cell) = body.rendering_cell(R::CELL) else {
        return render_counted(json).map(Arc::new);
    };
    let forms = cell.get_or_init(|| Box::new(Forms::<R>(Default::default())));
    let Some(slot) = forms
        .downcast_ref::<Forms<R>>()
        .and_then(|forms| forms.0.get(form))
    else {
        // Another type in this target's cell, or a form out of range: not cached.
        return render_counted(json).map(Arc::new);
    };
    if let Some(rendered) = slot.get() {
        return Ok(Arc::clone(rendered));
    }
    let rendered = Arc::new(render_counted(json)?);
    // Two threads may render at once; the first to store wins and both return its rendering.
    let _ = slot.set(Arc::clone(&rendered));
    Ok(slot.get().map_or(rendered, Arc::clone))
}

/// One sent item for a target: its rendering and where it is in the live history.
#[derive(Debug)]
pub(crate) struct Unit<R> {
    /// The rendering (shared with the entry's cache).
    pub(crate) rendered: Arc<R>,
    /// Where the item is (a synthetic output is at its call's position).
    pub(crate) at: Location,
}

// Not derived: the rendering is shared, so `R` need not be `Clone`.
impl<R> Clone for Unit<R> {
    fn clone(&self) -> Self {
        Unit {
            rendered: Arc::clone(&self.rendered),
            at: self.at.clone(),
        }
    }
}

/// The units of a projection for one target, in order, and the repairs their notes make.
#[derive(Debug)]
pub(crate) struct Units<R> {
    /// Every unit, including those that send nothing (`PairRole::Nothing`).
    pub(crate) units: Vec<Unit<R>>,
    /// Every unit's notes as repairs, in position order.
    pub(crate) repairs: Vec<TargetRepair>,
}

impl<R: Rendered> Units<R> {
    /// Renders every slot the Responses projection sends, each through the entry's cache;
    /// a synthetic output is rendered here (per projection).
    ///
    /// # Errors
    ///
    /// [`TargetProjectionError::UnreadableItem`] when an item does not parse.
    pub(crate) fn collect(projection: &Projection) -> Result<Units<R>, TargetProjectionError> {
        Units::collect_slots(projection.sent_slots(), projection.len())
    }

    /// [`Units::collect`] of the slots from position `start` on.
    ///
    /// # Errors
    ///
    /// [`TargetProjectionError::UnreadableItem`] when an item does not parse.
    pub(crate) fn collect_from(
        projection: &Projection,
        start: usize,
    ) -> Result<Units<R>, TargetProjectionError> {
        Units::collect_slots(projection.sent_slots_from(start), 0)
    }

    /// The units of `slots`.
    fn collect_slots<'a>(
        slots: impl Iterator<Item = (usize, &'a Entry, SentSlot<'a>)>,
        capacity: usize,
    ) -> Result<Units<R>, TargetProjectionError> {
        let mut units = Vec::with_capacity(capacity);
        let mut repairs = Vec::new();
        let unreadable = |position: usize| {
            move |source: ItemError| TargetProjectionError::UnreadableItem {
                position,
                target: R::TARGET,
                source,
            }
        };
        for (position, slot, sent) in slots {
            #[cfg(feature = "testing")]
            ASSEMBLED.with(|count| count.set(count.get() + 1));
            let mut push = |rendered: Arc<R>, at: Location| {
                repairs.extend(rendered.notes().iter().map(|kind| TargetRepair {
                    kind: kind.clone(),
                    at: at.clone(),
                }));
                units.push(Unit { rendered, at });
            };
            match sent {
                SentSlot::Item { body, json, form } => {
                    let rendered = cached::<R>(body, form, json).map_err(unreadable(position))?;
                    push(rendered, location(position, slot));
                }
                SentSlot::CallWithSyntheticOutput { call, output } => {
                    let rendered = cached::<R>(call, 0, call.payload.original_json())
                        .map_err(unreadable(position))?;
                    push(rendered, location(position, slot));
                    let output = render_counted::<R>(output).map_err(unreadable(position))?;
                    let at = Location {
                        position,
                        item_kind: synthetic_kind(slot.kind()),
                        call_id: slot.call_id().cloned(),
                    };
                    push(Arc::new(output), at);
                }
            }
        }
        Ok(Units { units, repairs })
    }
}

/// The location of `entry` at `position`.
fn location(position: usize, entry: &Entry) -> Location {
    Location {
        position,
        item_kind: entry.kind(),
        call_id: entry.call_id().cloned(),
    }
}

/// The kind of the synthetic output that answers a call of `kind`.
fn synthetic_kind(kind: ItemKind) -> ItemKind {
    match kind.pairing() {
        crate::item::Pairing::Call { family, .. } => family.output_kind(),
        _ => kind,
    }
}

/// One step of a target's input: a unit, or an `aborted` output for a call with none left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send unit `i`.
    Unit(usize),
    /// Answer the call of unit `i` with [`ABORTED_OUTPUT`].
    Synthetic(usize),
}

/// The text of an output the target synthesizes.
pub(crate) const TARGET_ABORTED_OUTPUT: &str = ABORTED_OUTPUT;

/// The order in which a target sends its units: each batch of consecutive calls followed by one
/// output per call, and the repairs that ordering made.
#[derive(Debug, Default)]
pub(crate) struct Paired {
    /// The steps, in order.
    pub(crate) steps: Vec<Step>,
    /// What the ordering moved, dropped or synthesized.
    pub(crate) repairs: Vec<TargetRepair>,
    /// For each output unit sent, the call unit it answers.
    pub(crate) call_of: HashMap<usize, usize>,
}

/// Orders `units` for a target with positional pairing: every batch of consecutive calls is
/// followed by one output per call before anything else.
///
/// An output answers a call of its own call id in the nearest batch before it that has calls
/// of that id: the earliest call of that batch no output answers yet (parallel calls of one id
/// keep their order). So a call left unanswered (an interrupted turn) is not answered by a
/// later turn's output of the same id, as in a session whose model names every call `call_0`.
/// An output with no such call (none of its id before it, or every one in that batch answered)
/// answers no call before it: a call of its id after it that no output answers takes it (the
/// first such output: an output before its call), and one that no call takes is dropped
/// ([`TargetRepairKind::DroppedDuplicateOutput`]). Outputs right after the batch stay in their
/// order; the others are moved after the batch (reported as [`TargetRepairKind::MovedOutput`]),
/// and skipped at their old place. A call with no output gets a synthetic one
/// ([`TargetRepairKind::SynthesizedOutput`]). Units that send nothing are skipped (they do not
/// split a batch). O(n): one pass pairs each output with a call before it, a second gives the
/// calls left the outputs before them.
pub(crate) fn pair_calls<R: Rendered>(units: &[Unit<R>]) -> Paired {
    // Which output each call takes, and which call takes each.
    let mut output_of: HashMap<usize, usize> = HashMap::new();
    let mut taken: HashMap<usize, usize> = HashMap::new();
    // For each call id, the calls of the last batch that has calls of that id (the batch's
    // number and its calls no output answers yet, in order), and the outputs that answer no
    // call before them, in order.
    let mut open: HashMap<&str, (usize, VecDeque<usize>)> = HashMap::new();
    let mut unanswering: HashMap<&str, VecDeque<usize>> = HashMap::new();
    let (mut batch, mut in_batch) = (0, false);
    for (i, unit) in units.iter().enumerate() {
        match unit.rendered.pairing() {
            PairRole::Call(id) => {
                if !in_batch {
                    batch += 1;
                    in_batch = true;
                }
                let calls = open.entry(id).or_insert_with(|| (batch, VecDeque::new()));
                if calls.0 != batch {
                    // An earlier batch's calls left unanswered stay so: no later output
                    // answers them.
                    *calls = (batch, VecDeque::new());
                }
                calls.1.push_back(i);
            }
            PairRole::Output(id) => {
                in_batch = false;
                match open.get_mut(id).and_then(|(_, calls)| calls.pop_front()) {
                    Some(call) => {
                        taken.insert(i, call);
                        output_of.insert(call, i);
                    }
                    None => unanswering.entry(id).or_default().push_back(i),
                }
            }
            PairRole::Other => in_batch = false,
            PairRole::Nothing => {}
        }
    }
    // A call no output after it answers takes the first output of its id before it that
    // answers no call before that output.
    for (i, unit) in units.iter().enumerate() {
        let PairRole::Call(id) = unit.rendered.pairing() else {
            continue;
        };
        if output_of.contains_key(&i) {
            continue;
        }
        let Some(outputs) = unanswering.get_mut(id) else {
            continue;
        };
        if let Some(&o) = outputs.front()
            && o < i
        {
            outputs.pop_front();
            taken.insert(o, i);
            output_of.insert(i, o);
        }
    }
    let mut paired = Paired::default();
    let mut sent = vec![false; units.len()];
    let mut i = 0;
    while i < units.len() {
        match units[i].rendered.pairing() {
            PairRole::Nothing => i += 1,
            PairRole::Other => {
                paired.steps.push(Step::Unit(i));
                i += 1;
            }
            PairRole::Output(_) => {
                if !taken.contains_key(&i) {
                    paired.repairs.push(TargetRepair {
                        kind: TargetRepairKind::DroppedDuplicateOutput,
                        at: units[i].at.clone(),
                    });
                }
                // A taken output not sent yet belongs to a later call: moved there.
                i += 1;
            }
            PairRole::Call(_) => {
                // The batch: consecutive calls, items that send nothing between them skipped
                // (a reasoning item between two parallel calls does not split their batch).
                let mut batch = Vec::new();
                while i < units.len() {
                    match units[i].rendered.pairing() {
                        PairRole::Call(_) => {
                            paired.steps.push(Step::Unit(i));
                            batch.push(i);
                        }
                        PairRole::Nothing => {}
                        PairRole::Output(_) | PairRole::Other => break,
                    }
                    i += 1;
                }
                // Every call between the batch's first and last is in the batch.
                let (first, last) = (
                    batch.first().copied().unwrap_or(i),
                    batch.last().copied().unwrap_or(i),
                );
                let in_batch = |call: usize| (first..=last).contains(&call);
                // Outputs right after the batch, answering its calls, stay where they are.
                while i < units.len() {
                    match units[i].rendered.pairing() {
                        PairRole::Output(_)
                            if taken.get(&i).is_some_and(|call| in_batch(*call)) =>
                        {
                            sent[i] = true;
                            paired.steps.push(Step::Unit(i));
                            i += 1;
                        }
                        PairRole::Nothing => i += 1,
                        _ => break,
                    }
                }
                for call in batch {
                    match output_of.get(&call) {
                        Some(&output) if sent[output] => {}
                        Some(&output) => {
                            sent[output] = true;
                            paired.steps.push(Step::Unit(output));
                            paired.repairs.push(TargetRepair {
                                kind: TargetRepairKind::MovedOutput {
                                    call_position: units[call].at.position,
                                    before_call: output < call,
                                },
                                at: units[output].at.clone(),
                            });
                        }
                        None => {
                            paired.steps.push(Step::Synthetic(call));
                            paired.repairs.push(TargetRepair {
                                kind: TargetRepairKind::SynthesizedOutput,
                                at: units[call].at.clone(),
                            });
                        }
                    }
                }
            }
        }
    }
    paired.repairs.sort_by_key(|repair| repair.at.position);
    paired.call_of = taken;
    paired
}

/// Whether a unit of `units` (a target's units from some place on; `call_of`, output to call,
/// as [`pair_calls`] paired them) could pair with a unit before that place, as the target's kept
/// assembly knows what is before it: `used_before(id)`, a call or an output of `id` is before;
/// `loose_before(id)`, an output of `id` before answers no call. True when the first unit from
/// the place on of an id used before is not a call (an output would answer a call of the last
/// batch of that id before the place, or be kept aside where a call before it could not take
/// it, so this rejects more than it must), or when a call from the place on that no output
/// after it answers has the id of a loose output before (it takes the first such output). A call
/// that an output after it answers takes nothing before the place, so one loose output of an id
/// a session reuses every turn does not keep every later version from starting there.
///
/// When this is false, and nothing before the place paired or batched with anything after it
/// in the version assembled, nothing before pairs with anything after in this one either: an
/// output from the place on only finds calls of its id after it (each such id starts a new
/// batch there), and a call from the place on finds no output before it that answers nothing.
/// Chat Completions and Anthropic Messages both keep the assembly before a place by this rule.
pub(crate) fn reaches_back<R: Rendered>(
    units: &[Unit<R>],
    call_of: &HashMap<usize, usize>,
    used_before: impl Fn(&str) -> bool,
    loose_before: impl Fn(&str) -> bool,
) -> bool {
    let answered_after: HashSet<usize> = call_of
        .iter()
        .filter(|&(output, call)| output > call)
        .map(|(_, &call)| call)
        .collect();
    // The ids used before whose first unit from the place on has been seen.
    let mut seen: HashSet<&str> = HashSet::new();
    units.iter().enumerate().any(|(i, unit)| {
        let (id, call) = match unit.rendered.pairing() {
            PairRole::Call(id) => (id, true),
            PairRole::Output(id) => (id, false),
            PairRole::Other | PairRole::Nothing => return false,
        };
        if call && !answered_after.contains(&i) && loose_before(id) {
            return true;
        }
        used_before(id) && seen.insert(id) && !call
    })
}

/// Merges the notes' repairs and the pairing's, in position order (stable).
pub(crate) fn merge_repairs(
    mut notes: Vec<TargetRepair>,
    paired: Vec<TargetRepair>,
) -> Vec<TargetRepair> {
    notes.extend(paired);
    notes.sort_by_key(|repair| repair.at.position);
    notes
}
