//! The snapshot layer: a history archived with rkyv and memory-mapped on open, so that resuming a
//! long session copies no item JSON (format: `docs/snapshot-format.md`).
//!
//! This layer knows the archive, not the rollout it stands for: a snapshot stores a history, the
//! [`RolloutPosition`] of the prefix it covers and the [`PrefixState`] that resuming that prefix
//! gave. Deciding whether a snapshot may stand for a rollout's prefix is the rollout layer's work
//! (its resume tries a snapshot first and falls back with a reason).
//!
//! This is the one module of the crate allowed `unsafe` (the rkyv derives in `archive.rs` expand
//! to unsafe trait impls). The hand-written `unsafe` blocks are in `map.rs` only: mapping the
//! file, and handing out text that was checked to be UTF-8 when the snapshot was opened. Each has
//! a `// SAFETY:` comment naming the checked twin it relies on.
#![allow(unsafe_code)]

mod archive;
mod error;
mod header;
mod map;
mod write;

use std::fs::File;
use std::io::Read;
use std::path::Path;

use imbl::Vector;
use serde_json::value::RawValue;

use crate::history::{History, TruncationPolicy};
use crate::item::{CallId, Entry, ItemId, ThreadId, TurnId};
use crate::world::WorldSnapshot;

use bytestring::ByteString;

use archive::{
    ArchivedPayload, ArchivedPayloadCore, ArchivedStoredEntry, ArchivedStoredFact,
    ArchivedStoredOpenTurn, fact_code, flags_from_bits, kind_from_code, role_from_code,
};
pub use error::{ExistingFile, SnapshotError, SnapshotStep};
use header::{HeaderProblem, MAGIC, PAYLOAD_OFFSET};
pub use header::{RolloutPosition, SNAPSHOT_FORMAT_VERSION, SnapshotHeader};
use map::MappedFile;
pub use write::Replace;
pub(crate) use write::{SnapshotStorage, SnapshotTarget, sync_parent_directory, write_snapshot};

/// What resuming the covered rollout prefix gave besides the history. A snapshot stores it, so
/// that resuming from the snapshot gives what resuming the prefix did.
#[derive(Debug, Clone, Default)]
pub struct PrefixState {
    /// The rollout's thread id (`None` only in a snapshot that covers no `session_meta` line,
    /// which resume does not use).
    pub thread_id: Option<ThreadId>,
    /// Previous-turn settings: the payload of the `turn_context` line resume settled on.
    pub previous_turn_settings: Option<Box<RawValue>>,
    /// The session's base instructions, as the first `session_meta` of the covered prefix that
    /// records them does (`{text, provenance?}`); `None` when none does.
    pub base_instructions: Option<Box<RawValue>>,
    /// The load report of the covered prefix, in the rollout layer's stored form: a resume
    /// through the snapshot reports what a resume of every line does.
    pub(crate) load_report: Option<Box<RawValue>>,
    /// For a Claude Code transcript's snapshot, what reading it found, in the transcript
    /// layer's stored form; `None` for a rollout's.
    pub(crate) transcript: Option<Box<RawValue>>,
    /// The covered prefix ends inside a turn (lines appended later may belong to it).
    pub ends_inside_turn: bool,
    /// The rollout is in the legacy pre-envelope format.
    pub legacy: bool,
    /// A `compacted` line without replacement history was rebuilt by local compaction in the
    /// covered prefix (then a resume settles on no reference context item).
    pub legacy_compaction: bool,
    /// The turn the covered prefix ends inside: `Some` exactly when
    /// [`ends_inside_turn`](PrefixState::ends_inside_turn).
    pub open_turn: Option<OpenTurn>,
}

/// The turn a covered rollout prefix ends inside: started by a `task_started` event, not ended
/// (`docs/snapshot-format.md`, "Payload").
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenTurn {
    /// The turn id the `task_started` event carried, if any.
    pub turn_id: Option<TurnId>,
    /// The 1-based line number of that event.
    pub started_line: u64,
    /// The history position of the first item the turn recorded (the history's length when it
    /// recorded none yet).
    pub start: u64,
}

/// The resume flag bits the format defines: 0 ends inside a turn, 1 legacy, 2 legacy compaction.
const RESUME_FLAGS: u8 = 0b111;

impl PrefixState {
    /// The resume flags byte of the payload.
    fn flags(&self) -> u8 {
        u8::from(self.ends_inside_turn)
            | (u8::from(self.legacy) << 1)
            | (u8::from(self.legacy_compaction) << 2)
    }
}

/// One fact of a covered rollout prefix that resume's reverse scan reads
/// (`docs/snapshot-format.md`, "Scan facts"). Lines without such a fact are not stored, except the
/// line right after a rollback. Texts are slices of the mapped file when read from a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PrefixFact {
    /// `task_started` / `turn_started`, with its turn id.
    TurnStarted(Option<ByteString>),
    /// `task_complete` / `turn_complete` / `turn_aborted`, with its turn id.
    TurnEnded(Option<ByteString>),
    /// A `user_message` event.
    UserMessage,
    /// A `response_item` that starts a user turn.
    UserTurnItem,
    /// An `inter_agent_communication` line.
    InterAgent,
    /// `thread_rolled_back` with its `num_turns`.
    RolledBack(u64),
    /// A `turn_context` line: its turn id and its payload's JSON text, byte for byte.
    TurnContext {
        /// The turn id.
        turn_id: Option<ByteString>,
        /// The payload.
        payload: ByteString,
    },
    /// A `compacted` line.
    Compacted,
    /// A line without any of these facts directly after a rollback.
    AfterRollback,
}

/// An opened snapshot. Its parts are read through methods: what it writes back
/// ([`Snapshot::write`]) is what the file held.
#[derive(Debug, Clone)]
pub struct Snapshot {
    history: History,
    header: SnapshotHeader,
    state: PrefixState,
    /// The scan facts of the covered prefix.
    facts: Vec<PrefixFact>,
    verified: bool,
    trust: SnapshotTrust,
}

impl Snapshot {
    /// The history; its entries' JSON lies in the mapped file.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The history, taken out (the map lives as long as an entry refers to it).
    pub fn into_history(self) -> History {
        self.history
    }

    /// Whether this is a snapshot of a Claude Code transcript (which the transcript layer's
    /// `ResumedTranscript::from_snapshot` reads), not of a Codex rollout.
    pub fn is_transcript(&self) -> bool {
        self.state.transcript.is_some()
    }

    /// The decoded header (rollout position, digests, counts).
    pub fn header(&self) -> &SnapshotHeader {
        &self.header
    }

    /// The resume state recorded with the history.
    pub fn state(&self) -> &PrefixState {
        &self.state
    }

    /// Whether the payload digest was checked.
    pub fn verified(&self) -> bool {
        self.verified
    }

    /// How far the snapshot was trusted when opened: with [`SnapshotTrust::Untrusted`] every
    /// entry was checked against its JSON.
    pub fn trust(&self) -> SnapshotTrust {
        self.trust
    }

    /// The history, the resume state and the prefix's scan facts, taken out (the rollout layer's
    /// snapshot path).
    pub(crate) fn into_parts(self) -> (History, PrefixState, Vec<PrefixFact>) {
        (self.history, self.state, self.facts)
    }

    /// Writes this snapshot to `path` (a copy that stands for the same rollout prefix), replacing
    /// a snapshot or an empty file there atomically: a temporary file in the same directory,
    /// `sync_data`, `rename`, and a sync of the directory. A file that is mapped elsewhere is
    /// never modified. Any other file at `path` is left alone (see [`Snapshot::write_with`]).
    ///
    /// # Errors
    ///
    /// [`SnapshotError::WouldReplace`] when `path` is not a snapshot;
    /// [`SnapshotError::Io`] naming the step that failed; [`SnapshotError::InvalidArchive`] if the
    /// archive cannot be built.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<SnapshotHeader, SnapshotError> {
        self.write_with(path, Replace::SnapshotsOnly)
    }

    /// [`Snapshot::write`], replacing what `replace` allows.
    ///
    /// # Errors
    ///
    /// As [`Snapshot::write`].
    pub fn write_with(
        &self,
        path: impl AsRef<Path>,
        replace: Replace,
    ) -> Result<SnapshotHeader, SnapshotError> {
        self.write_on(&mut write::FileSystem, path.as_ref(), replace)
    }

    /// [`Snapshot::write_with`] on the storage given (the `testing` feature's simulated storage
    /// runs the real writer through it).
    pub(crate) fn write_on<St: SnapshotStorage>(
        &self,
        storage: &mut St,
        path: &Path,
        replace: Replace,
    ) -> Result<SnapshotHeader, SnapshotError> {
        write::write_snapshot_on(
            storage,
            path,
            SnapshotTarget {
                replace,
                source: None,
            },
            &self.history,
            self.header.rollout,
            &self.state,
            &self.facts,
        )
    }
}

/// How far an opened snapshot is trusted.
///
/// The digests detect damage (a torn write, a flipped bit), not forgery: anyone who can write the
/// file can recompute them. A snapshot this program wrote itself is trusted to hold what its
/// writer checked — each entry's header fields (kind, role, call id, item id, flags, tokens)
/// stored beside its JSON text — and opening it parses nothing. A snapshot from elsewhere is
/// opened untrusted: each entry's text must then be one well-formed JSON item whose fields are
/// the stored ones, or the snapshot is refused with [`SnapshotError::InvalidEntry`] naming the
/// entry and the field.
///
/// Memory safety never depends on trust: the archive is validated in either mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SnapshotTrust {
    /// A snapshot this program wrote (the default): header fields are taken as stored, which is
    /// what makes opening cost no JSON parse.
    #[default]
    Own,
    /// A snapshot from elsewhere: every entry is parsed and checked. Costs about as much as
    /// parsing the items of the rollout.
    Untrusted,
}

/// How to open a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotOptions {
    /// Check the BLAKE3 digest of the payload (default: yes). Without it, validation still keeps
    /// memory safe and the history well-formed, but a changed byte inside an item's text would go
    /// unnoticed.
    pub verify_digest: bool,
    /// Whether the snapshot is one this program wrote (default) or comes from elsewhere.
    pub trust: SnapshotTrust,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        SnapshotOptions {
            verify_digest: true,
            trust: SnapshotTrust::Own,
        }
    }
}

impl SnapshotOptions {
    /// Options for a snapshot from elsewhere: digest verified and every entry checked.
    pub fn untrusted() -> Self {
        SnapshotOptions {
            trust: SnapshotTrust::Untrusted,
            ..SnapshotOptions::default()
        }
    }
}

fn io_error(path: &Path, step: SnapshotStep) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_owned();
    move |source| SnapshotError::Io { path, step, source }
}

/// Opens a snapshot: maps the file, checks the header, verifies the payload digest (unless told
/// not to), validates the archive once, and builds a history whose entries' JSON stays in the map.
///
/// From 1 MiB of payload on, the digest is computed on a second thread while the history is
/// built; the result is the same either way. The map lives as long as any entry refers to it, and
/// the file must not be changed in place meanwhile (writers replace files by rename). The
/// digests detect damage, not forgery: open a snapshot from elsewhere with
/// [`SnapshotOptions::untrusted`]. The checks and the trust model: `docs/snapshot-format.md`,
/// "What each field guarantees".
///
/// # Errors
///
/// Every [`SnapshotError`] variant; see `docs/snapshot-format.md`.
pub fn open_snapshot(
    path: impl AsRef<Path>,
    options: SnapshotOptions,
) -> Result<Snapshot, SnapshotError> {
    let path = path.as_ref();
    let not_a_file = || SnapshotError::NotAFile {
        path: path.to_owned(),
    };
    // Looked at before opening: opening a FIFO would wait for a writer.
    let metadata = std::fs::metadata(path).map_err(io_error(path, SnapshotStep::Open))?;
    if metadata.is_dir() {
        return Err(SnapshotError::Directory {
            path: path.to_owned(),
        });
    }
    if !metadata.is_file() {
        return Err(not_a_file());
    }
    let file = File::open(path).map_err(io_error(path, SnapshotStep::Open))?;
    // And after: what was opened is what is mapped.
    if !file
        .metadata()
        .map_err(io_error(path, SnapshotStep::Open))?
        .is_file()
    {
        return Err(not_a_file());
    }
    let map = MappedFile::map(&file).map_err(io_error(path, SnapshotStep::Map))?;
    open_mapped(path, &map, options)
}

/// Opens the snapshot whose bytes `map` holds (`path` names it in errors): the header, the
/// payload digest, then the archive. What `open_snapshot` does once the file is mapped, and what
/// the tests run under Miri over a buffer (`MappedFile::from_buffer`), since Miri cannot map a
/// file.
fn open_mapped(
    path: &Path,
    map: &MappedFile,
    options: SnapshotOptions,
) -> Result<Snapshot, SnapshotError> {
    let bytes = map.bytes();
    let header = SnapshotHeader::decode(bytes).map_err(|problem| header_error(path, problem))?;
    let payload = &bytes[PAYLOAD_OFFSET as usize..];
    let digest_matches = || blake3::hash(payload) == header.payload_digest;
    let mismatch = || SnapshotError::PayloadDigestMismatch {
        path: path.to_owned(),
    };
    if !options.verify_digest {
        return decode(path, map, payload, header, options);
    }
    // The digest, then the archive: below the size where a second thread pays, and when no
    // thread is to be had. One closure for both, so that the fallback is the path the small
    // snapshots of the tests take.
    let one_after_the_other = || {
        if !digest_matches() {
            return Err(mismatch());
        }
        decode(path, map, payload, header, options)
    };
    if payload.len() < PARALLEL_DIGEST_MIN {
        return one_after_the_other();
    }
    // The digest is computed on a second thread while this one validates the archive and builds
    // the history: neither needs the other (validation keeps memory safe whatever the bytes are;
    // the digest only tells damage). A mismatch wins over whatever decoding found, as when the
    // digest is checked first; what was built is then dropped.
    std::thread::scope(|scope| {
        let hashing = std::thread::Builder::new()
            .name("snapshot-digest".into())
            .spawn_scoped(scope, digest_matches);
        let Ok(hashing) = hashing else {
            return one_after_the_other();
        };
        let decoded = decode(path, map, payload, header, options);
        match hashing.join() {
            Ok(true) => decoded,
            Ok(false) => Err(mismatch()),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Payloads from this size on have their digest computed on a second thread while the archive is
/// decoded (below it, starting a thread costs more than it saves).
const PARALLEL_DIGEST_MIN: usize = 1 << 20;

/// Validates and decodes the payload of a snapshot whose header was checked: the history with
/// its earlier states and world-state baseline, the resume state and the scan facts, every
/// entry's text left in `map`. The checks are those of `docs/snapshot-format.md`, "Checks at
/// open".
fn decode(
    path: &Path,
    map: &MappedFile,
    payload: &[u8],
    header: SnapshotHeader,
    options: SnapshotOptions,
) -> Result<Snapshot, SnapshotError> {
    let invalid = |detail: String| SnapshotError::InvalidArchive {
        path: path.to_owned(),
        detail,
    };
    let archived = rkyv::access::<ArchivedPayload, rkyv::rancor::BoxedError>(payload)
        .map_err(|error| invalid(error.to_string()))?;
    let core = &archived.world.core;
    let (truncation, reference_context_item, mut state) = decode_state(core, &invalid)?;
    let (entries, earlier) = decode_states(map, core, header.entry_count, options.trust, path)?;
    let turns_from = state_turns_from(
        core.turns_from.to_native(),
        entries.len(),
        earlier.is_empty(),
        "current state",
        &invalid,
    )?;
    let facts = core
        .facts
        .iter()
        .enumerate()
        .map(|(index, fact)| fact_of(map, fact, index, options.trust, &invalid))
        .collect::<Result<Vec<_>, _>>()?;
    let mut history = History::from_stored(
        entries,
        header.history_version,
        truncation,
        reference_context_item,
    );
    history.set_stored_states(turns_from, earlier);
    if let Some(text) = archived.world.world_state.as_ref() {
        let baseline = serde_json::from_str::<WorldSnapshot>(text.as_str())
            .map_err(|error| invalid(format!("world-state baseline: {error}")))?;
        history.set_world_state_baseline(Some(baseline));
    }
    state.open_turn = open_turn_of(archived.open_turn.as_ref(), &state, &header, &invalid)?;
    Ok(Snapshot {
        history,
        header,
        state,
        facts,
        verified: options.verify_digest,
        trust: options.trust,
    })
}

/// The truncation policy, the reference context item and the resume state (its open turn still
/// unset) a payload stores, checked.
fn decode_state(
    core: &ArchivedPayloadCore,
    invalid: &dyn Fn(String) -> SnapshotError,
) -> Result<(TruncationPolicy, Option<serde_json::Value>, PrefixState), SnapshotError> {
    let limit = usize::try_from(core.truncation_limit.to_native())
        .map_err(|_| invalid("truncation limit out of range".into()))?;
    let truncation = match core.truncation_mode {
        0 => TruncationPolicy::Bytes(limit),
        1 => TruncationPolicy::Tokens(limit),
        _ => return Err(invalid("invalid truncation mode".into())),
    };
    let reference_context_item = match core.reference_context_item.as_ref() {
        Some(text) => Some(
            serde_json::from_str(text.as_str())
                .map_err(|error| invalid(format!("reference context item: {error}")))?,
        ),
        None => None,
    };
    let flags = core.resume_flags;
    if flags & !RESUME_FLAGS != 0 {
        return Err(invalid("invalid resume flags".into()));
    }
    let thread_id = match core.thread_id.as_ref() {
        Some(text) => Some(
            text.as_str()
                .parse::<ThreadId>()
                .map_err(|error| invalid(format!("thread id: {error}")))?,
        ),
        None => None,
    };
    let raw = |text: Option<&rkyv::string::ArchivedString>, what: &str| match text {
        Some(text) => RawValue::from_string(text.as_str().to_owned())
            .map(Some)
            .map_err(|error| invalid(format!("{what}: {error}"))),
        None => Ok(None),
    };
    let state = PrefixState {
        thread_id,
        previous_turn_settings: raw(
            core.previous_turn_settings.as_ref(),
            "previous turn settings",
        )?,
        base_instructions: raw(core.base_instructions.as_ref(), "base instructions")?,
        load_report: raw(core.load_report.as_ref(), "load report")?,
        transcript: raw(core.transcript.as_ref(), "transcript state")?,
        ends_inside_turn: flags & 1 != 0,
        legacy: flags & 2 != 0,
        legacy_compaction: flags & 4 != 0,
        open_turn: None,
    };
    Ok((truncation, reference_context_item, state))
}

/// The states before compactions, oldest first: each one's entries and `turns_from`.
type EarlierStates = Vec<(Vector<Entry>, usize)>;

/// The current state's entries and the earlier states (with their `turns_from`, checked) from
/// the entry table: its first `entry_count` entries are the current state's, the rest only
/// earlier states hold.
fn decode_states(
    map: &MappedFile,
    core: &ArchivedPayloadCore,
    entry_count: u64,
    trust: SnapshotTrust,
    path: &Path,
) -> Result<(Vector<Entry>, EarlierStates), SnapshotError> {
    let invalid = |detail: String| SnapshotError::InvalidArchive {
        path: path.to_owned(),
        detail,
    };
    let table_len = core.entries.len();
    let current = usize::try_from(entry_count)
        .ok()
        .filter(|&count| count <= table_len)
        .ok_or_else(|| {
            invalid(format!(
                "entry table of {table_len} entries, {entry_count} in the header's current state"
            ))
        })?;
    let mut entries = Vector::new();
    let mut others = Vec::with_capacity(table_len - current);
    for (index, stored) in core.entries.iter().enumerate() {
        let entry = entry_of(map, stored, index, trust, path)?;
        if index < current {
            entries.push_back(entry);
        } else {
            others.push(entry);
        }
    }
    let mut earlier = Vec::with_capacity(core.earlier.len());
    for (number, state) in core.earlier.iter().enumerate() {
        let mut state_entries = Vector::new();
        for (position, index) in state.entries.iter().enumerate() {
            let index = index.to_native() as usize;
            let entry = match index.checked_sub(current) {
                None => entries.get(index),
                Some(other) => others.get(other),
            }
            .ok_or_else(|| {
                invalid(format!(
                    "earlier state {number}: entry {position} is table index {index}, past the table's {table_len} entries"
                ))
            })?;
            state_entries.push_back(entry.clone());
        }
        let turns_from = state_turns_from(
            state.turns_from.to_native(),
            state_entries.len(),
            number == 0,
            &format!("earlier state {number}"),
            &invalid,
        )?;
        earlier.push((state_entries, turns_from));
    }
    Ok((entries, earlier))
}

/// The stored open turn, checked: present exactly when the prefix ends inside a turn, and
/// starting within the current state.
fn open_turn_of(
    stored: Option<&ArchivedStoredOpenTurn>,
    state: &PrefixState,
    header: &SnapshotHeader,
    invalid: &dyn Fn(String) -> SnapshotError,
) -> Result<Option<OpenTurn>, SnapshotError> {
    let Some(turn) = stored else {
        if state.ends_inside_turn {
            return Err(invalid(
                "the prefix ends inside a turn, but no open turn is stored".into(),
            ));
        }
        return Ok(None);
    };
    if !state.ends_inside_turn {
        return Err(invalid(
            "an open turn stored, but the prefix does not end inside a turn".into(),
        ));
    }
    let start = turn.start.to_native();
    if start > header.entry_count {
        return Err(invalid(format!(
            "open turn: start {start} past the current state's {} entries",
            header.entry_count
        )));
    }
    Ok(Some(OpenTurn {
        turn_id: turn.turn_id.as_ref().map(|id| TurnId::new(id.as_str())),
        started_line: turn.started_line.to_native(),
        start,
    }))
}

/// The entry at `index` of the archive, its text left in the map; with
/// [`SnapshotTrust::Untrusted`], checked against its JSON.
fn entry_of(
    map: &MappedFile,
    stored: &ArchivedStoredEntry,
    index: usize,
    trust: SnapshotTrust,
    path: &Path,
) -> Result<Entry, SnapshotError> {
    let field = |name: &str| SnapshotError::InvalidArchive {
        path: path.to_owned(),
        detail: format!("entry {index}: invalid {name}"),
    };
    let kind = kind_from_code(stored.kind).ok_or_else(|| field("kind"))?;
    let role = role_from_code(stored.role).ok_or_else(|| field("role"))?;
    let flags = flags_from_bits(stored.flags).ok_or_else(|| field("flags"))?;
    let json = map
        .shared_text(stored.json.as_str())
        .ok_or_else(|| field("json"))?;
    let entry = Entry::from_shared_parts(
        json,
        stored.call_id.as_ref().map(|id| CallId::new(id.as_str())),
        stored.item_id.as_ref().map(|id| ItemId::new(id.as_str())),
        stored.tokens.to_native(),
        kind,
        role,
        flags,
    )
    .ok_or_else(|| field("json length"))?;
    if trust == SnapshotTrust::Untrusted {
        entry
            .check_header()
            .map_err(|mismatch| SnapshotError::InvalidEntry {
                path: path.to_owned(),
                entry: index,
                field: mismatch.field,
                detail: mismatch.detail,
            })?;
    }
    Ok(entry)
}

/// A state's stored `turns_from`, checked: within the state, and 0 for a state that has no
/// earlier state (`first`).
fn state_turns_from(
    stored: u64,
    len: usize,
    first: bool,
    state: &str,
    invalid: &dyn Fn(String) -> SnapshotError,
) -> Result<usize, SnapshotError> {
    match usize::try_from(stored) {
        Ok(turns_from) if first && turns_from != 0 => Err(invalid(format!(
            "{state}: turns_from {turns_from} in a state with no earlier state (must be 0)"
        ))),
        Ok(turns_from) if turns_from <= len => Ok(turns_from),
        _ => Err(invalid(format!(
            "{state}: turns_from {stored} past the state's {len} entries"
        ))),
    }
}

/// The scan fact at `index` of the archive, checked: a defined kind, and the fields that kind
/// has and no others. Texts stay in the map. With [`SnapshotTrust::Untrusted`] a `turn_context`
/// payload must also be JSON.
fn fact_of(
    map: &MappedFile,
    stored: &ArchivedStoredFact,
    index: usize,
    trust: SnapshotTrust,
    invalid: &dyn Fn(String) -> SnapshotError,
) -> Result<PrefixFact, SnapshotError> {
    let field = |name: &str, detail: &str| invalid(format!("fact {index}: {name} {detail}"));
    let text = |name: &str, text: &rkyv::string::ArchivedString| {
        map.shared_text(text.as_str())
            .ok_or_else(|| field(name, "outside the map"))
    };
    let turn_id = match stored.turn_id.as_ref() {
        Some(id) => Some(text("turn_id", id)?),
        None => None,
    };
    let payload = match stored.payload.as_ref() {
        Some(payload) => Some(text("payload", payload)?),
        None => None,
    };
    let num_turns = stored.num_turns.to_native();
    let takes_turn_id = matches!(
        stored.kind,
        fact_code::TURN_STARTED | fact_code::TURN_ENDED | fact_code::TURN_CONTEXT
    );
    if turn_id.is_some() && !takes_turn_id {
        return Err(field("turn_id", "set in a fact that has none"));
    }
    if payload.is_some() && stored.kind != fact_code::TURN_CONTEXT {
        return Err(field("payload", "set in a fact that has none"));
    }
    if num_turns != 0 && stored.kind != fact_code::ROLLED_BACK {
        return Err(field("num_turns", "set in a fact that has none"));
    }
    Ok(match stored.kind {
        fact_code::TURN_STARTED => PrefixFact::TurnStarted(turn_id),
        fact_code::TURN_ENDED => PrefixFact::TurnEnded(turn_id),
        fact_code::USER_MESSAGE => PrefixFact::UserMessage,
        fact_code::USER_TURN_ITEM => PrefixFact::UserTurnItem,
        fact_code::INTER_AGENT => PrefixFact::InterAgent,
        fact_code::ROLLED_BACK => PrefixFact::RolledBack(num_turns),
        fact_code::TURN_CONTEXT => {
            let payload = payload.ok_or_else(|| field("payload", "missing"))?;
            if trust == SnapshotTrust::Untrusted
                && let Err(error) = serde_json::from_str::<&RawValue>(&payload)
            {
                return Err(field("payload", &format!("is not JSON: {error}")));
            }
            PrefixFact::TurnContext { turn_id, payload }
        }
        fact_code::COMPACTED => PrefixFact::Compacted,
        fact_code::AFTER_ROLLBACK => PrefixFact::AfterRollback,
        kind => return Err(field("kind", &format!("{kind} is not defined"))),
    })
}

fn header_error(path: &Path, problem: HeaderProblem) -> SnapshotError {
    let path = path.to_owned();
    match problem {
        HeaderProblem::Truncated { expected, found } => SnapshotError::Truncated {
            path,
            expected,
            found,
        },
        HeaderProblem::TrailingBytes { expected, found } => SnapshotError::TrailingBytes {
            path,
            expected,
            found,
        },
        HeaderProblem::BadMagic(found) => SnapshotError::BadMagic { path, found },
        HeaderProblem::OlderVersion(found) => SnapshotError::OlderVersion {
            path,
            found,
            supported: SNAPSHOT_FORMAT_VERSION,
        },
        HeaderProblem::UnsupportedVersion(found) => SnapshotError::UnsupportedVersion {
            path,
            found,
            supported: SNAPSHOT_FORMAT_VERSION,
        },
        HeaderProblem::UnsupportedFormat {
            endianness,
            pointer_width,
            alignment,
        } => SnapshotError::UnsupportedFormat {
            path,
            endianness,
            pointer_width,
            alignment,
        },
        HeaderProblem::DigestMismatch => SnapshotError::BadHeader {
            path,
            detail: "header digest mismatch".into(),
        },
        HeaderProblem::NonZeroPadding { offset } => SnapshotError::BadHeader {
            path,
            detail: format!("padding byte {offset} is not zero"),
        },
        HeaderProblem::BadPayloadOffset(offset) => SnapshotError::BadHeader {
            path,
            detail: format!("payload offset {offset} (expected {PAYLOAD_OFFSET})"),
        },
    }
}

/// Whether a path is a regular file that starts with the snapshot magic (to tell snapshots from
/// rollouts). Anything else — a pipe, a FIFO, a missing file — is not read at all, so that a
/// stream is left whole for the rollout reader.
pub fn is_snapshot(path: impl AsRef<Path>) -> bool {
    let path = path.as_ref();
    if !std::fs::metadata(path).is_ok_and(|meta| meta.is_file()) {
        return false;
    }
    let mut magic = [0u8; 8];
    File::open(path)
        .and_then(|mut file| file.read_exact(&mut magic))
        .is_ok()
        && magic == MAGIC
}

/// The checks `decode` makes at open (`docs/snapshot-format.md`, "Checks at open"), on payloads
/// built here with one field wrong at a time, opened from buffers as `open_snapshot` opens a map.
#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::archive::{
        EarlierState, Payload, PayloadCore, PayloadWorld, StoredEntry, StoredFact, StoredOpenTurn,
        fact_code,
    };
    use super::*;

    /// A user message; its header fields as stored below (kind 0, role 1, the user-turn flag).
    const TEXT: &str =
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#;

    fn entry(role: u8) -> StoredEntry {
        StoredEntry {
            kind: 0,
            role,
            flags: 1 << 3,
            tokens: 1,
            call_id: None,
            item_id: None,
            json: TEXT.to_owned(),
        }
    }

    fn core(entries: usize) -> PayloadCore {
        PayloadCore {
            thread_id: None,
            resume_flags: 0,
            truncation_mode: 0,
            truncation_limit: 100,
            reference_context_item: None,
            previous_turn_settings: None,
            base_instructions: None,
            load_report: None,
            transcript: None,
            entries: (0..entries).map(|_| entry(1)).collect(),
            turns_from: 0,
            earlier: Vec::new(),
            facts: Vec::new(),
        }
    }

    fn payload(core: PayloadCore, open_turn: Option<StoredOpenTurn>) -> Payload {
        Payload {
            open_turn,
            world: PayloadWorld {
                world_state: None,
                core,
            },
        }
    }

    /// The whole file of a payload: a header of `version` that counts `entries`, then it.
    fn file(version: u32, entries: u64, payload: &[u8]) -> MappedFile {
        let header = SnapshotHeader {
            format_version: version,
            entry_count: entries,
            payload_len: payload.len() as u64,
            payload_digest: blake3::hash(payload),
            rollout: RolloutPosition {
                lines: 0,
                bytes: 0,
                digest: blake3::hash(b""),
            },
            history_version: 7,
        };
        let mut buffer = rkyv::util::AlignedVec::<16>::new();
        buffer.extend_from_slice(&header.encode());
        buffer.extend_from_slice(payload);
        MappedFile::from_buffer(buffer)
    }

    fn open_payload(
        root: Payload,
        entries: u64,
        options: SnapshotOptions,
    ) -> Result<Snapshot, SnapshotError> {
        let payload = rkyv::to_bytes::<rkyv::rancor::BoxedError>(&root).expect("archived");
        open_mapped(
            Path::new("t.snap"),
            &file(SNAPSHOT_FORMAT_VERSION, entries, &payload),
            options,
        )
    }

    /// The detail of an `InvalidArchive`; panics on anything else.
    fn invalid(result: Result<Snapshot, SnapshotError>) -> String {
        match result {
            Err(SnapshotError::InvalidArchive { detail, .. }) => detail,
            Err(other) => panic!("not an invalid archive: {other}"),
            Ok(_) => panic!("opened"),
        }
    }

    /// A file of an older format version is refused before its payload is read, naming its
    /// version and the one this build reads, whatever the payload holds (here one that would open
    /// as the current version).
    #[test]
    fn an_older_format_version_is_refused_naming_both_versions() {
        let payload =
            rkyv::to_bytes::<rkyv::rancor::BoxedError>(&payload(core(1), None)).expect("archived");
        for version in 1..SNAPSHOT_FORMAT_VERSION {
            let opened = open_mapped(
                Path::new("t.snap"),
                &file(version, 1, &payload),
                SnapshotOptions::default(),
            );
            match opened {
                Err(SnapshotError::OlderVersion {
                    found, supported, ..
                }) => assert_eq!((found, supported), (version, SNAPSHOT_FORMAT_VERSION)),
                other => panic!("version {version}: {other:?}"),
            }
        }
        let current = open_mapped(
            Path::new("t.snap"),
            &file(SNAPSHOT_FORMAT_VERSION, 1, &payload),
            SnapshotOptions::default(),
        );
        assert_eq!(current.expect("opens").history().len(), 1);
    }

    /// A one-entry snapshot with these resume flags, and the open turn that bit 0 requires.
    fn with_flags(flags: u8) -> Result<Snapshot, SnapshotError> {
        let mut root = core(1);
        root.resume_flags = flags;
        let open_turn = (flags & 1 != 0).then_some(StoredOpenTurn {
            turn_id: None,
            started_line: 3,
            start: 1,
        });
        open_payload(payload(root, open_turn), 1, SnapshotOptions::default())
    }

    #[test]
    fn resume_flags_and_truncation_are_read_bit_by_bit() {
        for flags in 0..8u8 {
            let snapshot = with_flags(flags).expect("opens");
            let state = snapshot.state();
            assert_eq!(state.ends_inside_turn, flags & 1 != 0, "{flags}");
            assert_eq!(state.legacy, flags & 2 != 0, "{flags}");
            assert_eq!(state.legacy_compaction, flags & 4 != 0, "{flags}");
            assert!(state.thread_id.is_none() && state.base_instructions.is_none());
            assert_eq!(snapshot.history().reference_context_item(), None);
            assert_eq!(snapshot.history().version(), 7);
        }
        assert_eq!(invalid(with_flags(8)), "invalid resume flags");
        for (mode, policy) in [
            (0, Some(TruncationPolicy::Bytes(100))),
            (1, Some(TruncationPolicy::Tokens(100))),
            (2, None),
        ] {
            let mut root = core(1);
            root.truncation_mode = mode;
            let opened = open_payload(payload(root, None), 1, SnapshotOptions::default());
            match policy {
                Some(policy) => assert_eq!(opened.expect("opens").history().truncation(), policy),
                None => assert_eq!(invalid(opened), "invalid truncation mode"),
            }
        }
    }

    #[test]
    fn the_open_turn_is_stored_exactly_when_the_prefix_ends_inside_a_turn() {
        let turn = |start| StoredOpenTurn {
            turn_id: Some("t1".into()),
            started_line: 5,
            start,
        };
        let inside = |flags: u8, open_turn| {
            let mut root = core(2);
            root.resume_flags = flags;
            open_payload(payload(root, open_turn), 2, SnapshotOptions::default())
        };
        let snapshot = inside(1, Some(turn(2))).expect("start at the entry count");
        let open = snapshot.state().open_turn.clone().expect("the open turn");
        assert_eq!(open.turn_id, Some(TurnId::new("t1")));
        assert_eq!((open.started_line, open.start), (5, 2));
        assert_eq!(
            inside(1, Some(turn(1)))
                .expect("opens")
                .state()
                .open_turn
                .as_ref()
                .map(|t| t.start),
            Some(1)
        );
        assert!(inside(0, None).expect("opens").state().open_turn.is_none());
        assert_eq!(
            invalid(inside(1, Some(turn(3)))),
            "open turn: start 3 past the current state's 2 entries"
        );
        assert_eq!(
            invalid(inside(1, None)),
            "the prefix ends inside a turn, but no open turn is stored"
        );
        assert_eq!(
            invalid(inside(0, Some(turn(0)))),
            "an open turn stored, but the prefix does not end inside a turn"
        );
    }

    #[test]
    fn the_entry_table_holds_the_current_state_first_then_what_earlier_states_hold() {
        // Three table entries, two of them the current state's; the earlier states take the
        // third (table index 2) and the first.
        let mut root = core(3);
        root.entries[2].role = 2;
        root.earlier = vec![
            EarlierState {
                entries: vec![2],
                turns_from: 0,
            },
            EarlierState {
                entries: vec![0, 2],
                turns_from: 2,
            },
        ];
        root.turns_from = 2;
        let snapshot =
            open_payload(payload(root, None), 2, SnapshotOptions::default()).expect("opens");
        let history = snapshot.history();
        assert_eq!(history.len(), 2);
        assert!(
            history
                .iter()
                .all(|entry| entry.role() == Some(crate::item::Role::User))
        );
        assert_eq!(history.turns_from(), 2);
        let earlier: Vec<_> = history
            .earlier_states()
            .map(|(entries, turns_from)| {
                let roles: Vec<_> = entries.iter().map(|entry| entry.role()).collect();
                (roles, turns_from)
            })
            .collect();
        use crate::item::Role::{Assistant, User};
        assert_eq!(
            earlier,
            vec![
                (vec![Some(Assistant)], 0),
                (vec![Some(User), Some(Assistant)], 2)
            ]
        );
        // More entries counted than the table holds.
        assert_eq!(
            invalid(open_payload(
                payload(core(2), None),
                3,
                SnapshotOptions::default()
            )),
            "entry table of 2 entries, 3 in the header's current state"
        );
        let mut root = core(2);
        root.earlier = vec![EarlierState {
            entries: vec![2],
            turns_from: 0,
        }];
        assert_eq!(
            invalid(open_payload(
                payload(root, None),
                2,
                SnapshotOptions::default()
            )),
            "earlier state 0: entry 0 is table index 2, past the table's 2 entries"
        );
    }

    #[test]
    fn every_turns_from_is_within_its_state_and_zero_in_the_first() {
        let open = |turns_from: u64, earlier: Vec<(Vec<u32>, u64)>| {
            let mut root = core(2);
            root.turns_from = turns_from;
            root.earlier = earlier
                .into_iter()
                .map(|(entries, turns_from)| EarlierState {
                    entries,
                    turns_from,
                })
                .collect();
            open_payload(payload(root, None), 2, SnapshotOptions::default())
        };
        assert_eq!(open(0, vec![]).expect("opens").history().turns_from(), 0);
        assert_eq!(
            invalid(open(1, vec![])),
            "current state: turns_from 1 in a state with no earlier state (must be 0)"
        );
        let ok = open(2, vec![(vec![0], 0), (vec![0, 1], 2)]).expect("opens");
        assert_eq!(ok.history().turns_from(), 2);
        let states: Vec<_> = ok
            .history()
            .earlier_states()
            .map(|(_, from)| from)
            .collect();
        assert_eq!(states, vec![0, 2]);
        assert_eq!(
            open(1, vec![(vec![0], 0)])
                .expect("opens")
                .history()
                .turns_from(),
            1
        );
        assert_eq!(
            invalid(open(3, vec![(vec![0], 0)])),
            "current state: turns_from 3 past the state's 2 entries"
        );
        assert_eq!(
            invalid(open(0, vec![(vec![0], 1), (vec![0], 0)])),
            "earlier state 0: turns_from 1 in a state with no earlier state (must be 0)"
        );
        assert_eq!(
            invalid(open(0, vec![(vec![0], 0), (vec![0], 2)])),
            "earlier state 1: turns_from 2 past the state's 1 entries"
        );
    }

    fn fact(kind: u8, turn_id: Option<&str>, num_turns: u64, payload: Option<&str>) -> StoredFact {
        StoredFact {
            kind,
            turn_id: turn_id.map(str::to_owned),
            num_turns,
            payload: payload.map(str::to_owned),
        }
    }

    fn open_facts(
        facts: Vec<StoredFact>,
        options: SnapshotOptions,
    ) -> Result<Snapshot, SnapshotError> {
        let mut root = core(1);
        root.facts = facts;
        open_payload(payload(root, None), 1, options)
    }

    #[test]
    fn each_fact_has_exactly_the_fields_of_its_kind() {
        use fact_code::*;
        let facts = vec![
            fact(TURN_STARTED, Some("a"), 0, None),
            fact(TURN_ENDED, None, 0, None),
            fact(USER_MESSAGE, None, 0, None),
            fact(USER_TURN_ITEM, None, 0, None),
            fact(INTER_AGENT, None, 0, None),
            fact(ROLLED_BACK, None, 2, None),
            fact(TURN_CONTEXT, Some("b"), 0, Some(r#"{"model":"m"}"#)),
            fact(COMPACTED, None, 0, None),
            fact(AFTER_ROLLBACK, None, 0, None),
        ];
        for options in [SnapshotOptions::default(), SnapshotOptions::untrusted()] {
            let facts = facts
                .iter()
                .map(|f| {
                    fact(
                        f.kind,
                        f.turn_id.as_deref(),
                        f.num_turns,
                        f.payload.as_deref(),
                    )
                })
                .collect();
            let (_, _, read) = open_facts(facts, options).expect("opens").into_parts();
            assert_eq!(
                read,
                vec![
                    PrefixFact::TurnStarted(Some("a".into())),
                    PrefixFact::TurnEnded(None),
                    PrefixFact::UserMessage,
                    PrefixFact::UserTurnItem,
                    PrefixFact::InterAgent,
                    PrefixFact::RolledBack(2),
                    PrefixFact::TurnContext {
                        turn_id: Some("b".into()),
                        payload: r#"{"model":"m"}"#.into()
                    },
                    PrefixFact::Compacted,
                    PrefixFact::AfterRollback,
                ]
            );
        }
        let refused = |f: StoredFact| {
            invalid(open_facts(
                vec![fact(USER_MESSAGE, None, 0, None), f],
                SnapshotOptions::default(),
            ))
        };
        assert_eq!(
            refused(fact(USER_MESSAGE, Some("a"), 0, None)),
            "fact 1: turn_id set in a fact that has none"
        );
        assert_eq!(
            refused(fact(ROLLED_BACK, Some("a"), 1, None)),
            "fact 1: turn_id set in a fact that has none"
        );
        assert_eq!(
            refused(fact(TURN_STARTED, None, 0, Some("{}"))),
            "fact 1: payload set in a fact that has none"
        );
        assert_eq!(
            refused(fact(TURN_ENDED, None, 1, None)),
            "fact 1: num_turns set in a fact that has none"
        );
        assert_eq!(
            refused(fact(TURN_CONTEXT, None, 0, None)),
            "fact 1: payload missing"
        );
        assert_eq!(
            refused(fact(9, None, 0, None)),
            "fact 1: kind 9 is not defined"
        );
        // A turn_context payload that is not JSON: refused untrusted, kept as the program's own.
        let not_json = || vec![fact(TURN_CONTEXT, None, 0, Some("{"))];
        let (_, _, kept) = open_facts(not_json(), SnapshotOptions::default())
            .expect("own")
            .into_parts();
        assert_eq!(
            kept,
            vec![PrefixFact::TurnContext {
                turn_id: None,
                payload: "{".into()
            }]
        );
        assert!(
            invalid(open_facts(not_json(), SnapshotOptions::untrusted()))
                .starts_with("fact 0: payload is not JSON: ")
        );
    }

    #[test]
    fn only_an_untrusted_open_checks_entries_against_their_json() {
        // The stored role says assistant; the JSON is a user message.
        let mut root = core(2);
        root.entries[1].role = 2;
        let own = open_payload(payload(root, None), 2, SnapshotOptions::default()).expect("own");
        assert_eq!(own.trust(), SnapshotTrust::Own);
        assert!(own.verified());
        let mut root = core(2);
        root.entries[1].role = 2;
        match open_payload(payload(root, None), 2, SnapshotOptions::untrusted()) {
            Err(SnapshotError::InvalidEntry { entry, field, .. }) => {
                assert_eq!((entry, field), (1, "role"));
            }
            other => panic!("{other:?}"),
        }
        let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshot-v6.snap");
        let untrusted = open_snapshot(&golden, SnapshotOptions::untrusted()).expect("opens");
        assert_eq!(untrusted.trust(), SnapshotTrust::Untrusted);
        assert_eq!(SnapshotOptions::untrusted().trust, SnapshotTrust::Untrusted);
        assert!(SnapshotOptions::untrusted().verify_digest);
    }

    #[test]
    fn the_digest_is_checked_unless_told_not_to() {
        let payload =
            rkyv::to_bytes::<rkyv::rancor::BoxedError>(&payload(core(1), None)).expect("archived");
        let good = file(SNAPSHOT_FORMAT_VERSION, 1, &payload);
        // Damage a byte of the entry's text ("hi" → "ho"): still UTF-8 and a valid archive.
        let at = payload
            .windows(2)
            .position(|w| w == b"hi")
            .expect("the text");
        let mut bytes = good.bytes().to_vec();
        bytes[PAYLOAD_OFFSET as usize + at + 1] = b'o';
        let mut buffer = rkyv::util::AlignedVec::<16>::new();
        buffer.extend_from_slice(&bytes);
        let damaged = MappedFile::from_buffer(buffer);
        let path = Path::new("t.snap");
        let unchecked = SnapshotOptions {
            verify_digest: false,
            ..SnapshotOptions::default()
        };
        let opened = open_mapped(path, &good, SnapshotOptions::default()).expect("opens");
        assert!(opened.verified());
        let opened = open_mapped(path, &good, unchecked).expect("opens");
        assert!(!opened.verified());
        assert!(matches!(
            open_mapped(path, &damaged, SnapshotOptions::default()),
            Err(SnapshotError::PayloadDigestMismatch { .. })
        ));
        let opened = open_mapped(path, &damaged, unchecked).expect("opens unchecked");
        assert!(
            opened
                .history()
                .iter()
                .next()
                .expect("entry")
                .json()
                .contains("\"ho\"")
        );
    }

    /// Each combination of resume flags (with the open turn bit 0 requires) is what a copy of
    /// the opened snapshot holds, with the same header.
    #[test]
    fn the_resume_flags_survive_a_copy() {
        let dir = tempfile::tempdir().expect("dir");
        for flags in 0..8u8 {
            let snapshot = with_flags(flags).expect("opens");
            let path = dir.path().join(format!("{flags}.snap"));
            let header = snapshot.write(&path).expect("written");
            assert_eq!(header.format_version, SNAPSHOT_FORMAT_VERSION);
            let copy = open_snapshot(&path, SnapshotOptions::default()).expect("reopens");
            let state = copy.state();
            assert_eq!(
                (
                    state.ends_inside_turn,
                    state.legacy,
                    state.legacy_compaction
                ),
                (flags & 1 != 0, flags & 2 != 0, flags & 4 != 0),
                "{flags:#b}"
            );
            assert_eq!(state.open_turn, snapshot.state().open_turn);
            assert_eq!(copy.header(), &header);
            assert!(is_snapshot(&path));
        }
    }

    #[test]
    fn only_a_regular_file_that_starts_with_the_magic_is_a_snapshot() {
        let dir = tempfile::tempdir().expect("dir");
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).expect("written");
            path
        };
        assert!(is_snapshot(write("magic", b"AGHISNAP and more")));
        assert!(!is_snapshot(write(
            "rollout",
            b"{\"type\":\"session_meta\"}\n"
        )));
        assert!(!is_snapshot(write("short", b"AGHISNA")));
        assert!(!is_snapshot(dir.path()));
        assert!(!is_snapshot(dir.path().join("missing")));
    }
}
