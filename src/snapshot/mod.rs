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
    ArchivedEntryV1, ArchivedFactV2, ArchivedSnapshotV1, ArchivedSnapshotV2, ArchivedSnapshotV3,
    ArchivedSnapshotV4, fact_code, flags_from_bits, kind_from_code, role_from_code,
};
pub use error::{SnapshotError, SnapshotStep};
use header::{HeaderProblem, MAGIC, PAYLOAD_OFFSET};
pub use header::{RolloutPosition, SNAPSHOT_FORMAT_VERSION, SnapshotHeader};
use map::MappedFile;
pub use write::{ExistingFile, Replace};
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
    /// records them does (`{text, provenance?}`); `None` when none does. Stored from format
    /// version 2 on; `None` when read from version 1, which did not keep them.
    pub base_instructions: Option<Box<RawValue>>,
    /// The covered prefix ends inside a turn (lines appended later may belong to it).
    pub ends_inside_turn: bool,
    /// The rollout is in the legacy pre-envelope format.
    pub legacy: bool,
    /// A `compacted` line without replacement history was rebuilt by local compaction in the
    /// covered prefix (then a resume settles on no reference context item). Stored from format
    /// version 2 on; `false` when read from version 1, whose stored reference context item
    /// already accounts for it.
    pub legacy_compaction: bool,
    /// The turn the covered prefix ends inside, when it does and the snapshot knows it: stored
    /// from format version 4 on; `None` when read from an older version (a resume through such
    /// a snapshot that would end inside that turn reads the whole rollout instead).
    pub open_turn: Option<OpenTurn>,
}

/// The turn a covered rollout prefix ends inside: started by a `task_started` event, not ended
/// (format version 4, `docs/snapshot-format.md`).
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

impl PrefixState {
    /// The resume flags byte of `version`'s payload.
    fn flags(&self, version: u32) -> u8 {
        let flags = u8::from(self.ends_inside_turn) | (u8::from(self.legacy) << 1);
        if version >= 2 {
            flags | (u8::from(self.legacy_compaction) << 2)
        } else {
            flags
        }
    }
}

/// One fact of a covered rollout prefix that resume's reverse scan reads (format version 2:
/// `docs/snapshot-format.md`, "Scan facts"). Lines without such a fact are not stored, except the
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
    /// The scan facts of the covered prefix; `None` for a version 1 snapshot, which has none.
    facts: Option<Vec<PrefixFact>>,
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

    /// The history, the resume state and the prefix's scan facts (`None` from a version 1
    /// file), taken out (the rollout layer's snapshot path).
    pub(crate) fn into_parts(self) -> (History, PrefixState, Option<Vec<PrefixFact>>) {
        (self.history, self.state, self.facts)
    }

    /// Writes this snapshot to `path` (a copy that stands for the same rollout prefix), replacing
    /// a snapshot or an empty file there atomically: a temporary file in the same directory,
    /// `sync_data`, `rename`, and a sync of the directory. A file that is mapped elsewhere is
    /// never modified. Any other file at `path` is left alone (see [`Snapshot::write_with`]).
    /// The copy has the format version the snapshot was read as: a version 1 snapshot holds no
    /// scan facts of its prefix, so it is written as version 1 again.
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
            self.facts.as_deref(),
            self.header.format_version,
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
/// With a payload of 1 MiB or more, the digest is computed on a second (scoped) thread while
/// this one validates the archive and builds the history, so that an open takes about as long as
/// the longer of the two, not their sum, when a second core is free. The result is the same
/// either way: a digest mismatch is reported whatever decoding found.
///
/// The map lives as long as any entry refers to it. The file must not be modified or truncated in
/// place while any entry refers to it: this library never does (writers replace files by rename),
/// but another program that writes into the file breaks the guarantees a memory map rests on — the
/// text read from it may no longer be what was checked, and reading a truncated map kills the
/// process with `SIGBUS`. This is the contract of every memory-mapped reader.
///
/// The digests detect damage, not forgery (see [`SnapshotTrust`]): open a snapshot from elsewhere
/// with [`SnapshotOptions::untrusted`]. Opened as the program's own, a file crafted with valid
/// digests can hold entries whose header fields disagree with their JSON, and text that is not
/// JSON at all, which a request would carry as it is; operations that parse such an entry return
/// an error rather than guess.
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
    if payload.len() < PARALLEL_DIGEST_MIN {
        if !digest_matches() {
            return Err(mismatch());
        }
        return decode(path, map, payload, header, options);
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
            // No thread to be had: one after the other.
            if !digest_matches() {
                return Err(mismatch());
            }
            return decode(path, map, payload, header, options);
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

/// Validates and decodes the payload of a snapshot whose header was checked: the history, the
/// resume state and the scan facts, every entry's text left in `map`.
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
    match header.format_version {
        1 => {
            let archived = rkyv::access::<ArchivedSnapshotV1, rkyv::rancor::BoxedError>(payload)
                .map_err(|error| invalid(error.to_string()))?;
            let common = Common {
                thread_id: archived.thread_id.as_ref().map(|text| text.as_str()),
                resume_flags: archived.resume_flags,
                truncation_mode: archived.truncation_mode,
                truncation_limit: archived.truncation_limit.to_native(),
                reference_context_item: archived
                    .reference_context_item
                    .as_ref()
                    .map(|text| text.as_str()),
                previous_turn_settings: archived
                    .previous_turn_settings
                    .as_ref()
                    .map(|text| text.as_str()),
                base_instructions: None,
                known_flags: 0b11,
            };
            let (truncation, reference_context_item, state) = common.decode(&invalid)?;
            if archived.entries.len() as u64 != header.entry_count {
                return Err(invalid(format!(
                    "{} entries in the archive, {} in the header",
                    archived.entries.len(),
                    header.entry_count
                )));
            }
            let entries = archived
                .entries
                .iter()
                .enumerate()
                .map(|(index, stored)| entry_of(map, stored, index, options.trust, path))
                .collect::<Result<Vector<Entry>, _>>()?;
            Ok(Snapshot {
                history: History::from_stored(
                    entries,
                    header.history_version,
                    truncation,
                    reference_context_item,
                ),
                header,
                state,
                facts: None,
                verified: options.verify_digest,
                trust: options.trust,
            })
        }
        2 => {
            let archived = rkyv::access::<ArchivedSnapshotV2, rkyv::rancor::BoxedError>(payload)
                .map_err(|error| invalid(error.to_string()))?;
            decode_v2(path, map, archived, header, options, None)
        }
        3 => {
            let archived = rkyv::access::<ArchivedSnapshotV3, rkyv::rancor::BoxedError>(payload)
                .map_err(|error| invalid(error.to_string()))?;
            let world_state = archived.world_state.as_ref().map(|text| text.as_str());
            decode_v2(path, map, &archived.v2, header, options, world_state)
        }
        _ => {
            let archived = rkyv::access::<ArchivedSnapshotV4, rkyv::rancor::BoxedError>(payload)
                .map_err(|error| invalid(error.to_string()))?;
            let v3 = &archived.v3;
            let world_state = v3.world_state.as_ref().map(|text| text.as_str());
            let mut snapshot = decode_v2(path, map, &v3.v2, header, options, world_state)?;
            if snapshot.state.ends_inside_turn && archived.open_turn.is_none() {
                return Err(invalid(
                    "the prefix ends inside a turn, but no open turn is stored".into(),
                ));
            }
            if let Some(turn) = archived.open_turn.as_ref() {
                let start = turn.start.to_native();
                if !snapshot.state.ends_inside_turn {
                    return Err(invalid(
                        "an open turn stored, but the prefix does not end inside a turn".into(),
                    ));
                }
                if start > snapshot.header.entry_count {
                    return Err(invalid(format!(
                        "open turn: start {start} past the current state's {} entries",
                        snapshot.header.entry_count
                    )));
                }
                snapshot.state.open_turn = Some(OpenTurn {
                    turn_id: turn.turn_id.as_ref().map(|id| TurnId::new(id.as_str())),
                    started_line: turn.started_line.to_native(),
                    start,
                });
            }
            Ok(snapshot)
        }
    }
}

/// Decodes a version 2 root (that of a version 3 payload too, with its world-state baseline's
/// text).
fn decode_v2(
    path: &Path,
    map: &MappedFile,
    archived: &ArchivedSnapshotV2,
    header: SnapshotHeader,
    options: SnapshotOptions,
    world_state: Option<&str>,
) -> Result<Snapshot, SnapshotError> {
    let invalid = |detail: String| SnapshotError::InvalidArchive {
        path: path.to_owned(),
        detail,
    };
    let common = Common {
        thread_id: archived.thread_id.as_ref().map(|text| text.as_str()),
        resume_flags: archived.resume_flags,
        truncation_mode: archived.truncation_mode,
        truncation_limit: archived.truncation_limit.to_native(),
        reference_context_item: archived
            .reference_context_item
            .as_ref()
            .map(|text| text.as_str()),
        previous_turn_settings: archived
            .previous_turn_settings
            .as_ref()
            .map(|text| text.as_str()),
        base_instructions: archived
            .base_instructions
            .as_ref()
            .map(|text| text.as_str()),
        known_flags: 0b111,
    };
    let (truncation, reference_context_item, state) = common.decode(&invalid)?;
    let current = usize::try_from(header.entry_count)
        .ok()
        .filter(|&count| count <= archived.entries.len())
        .ok_or_else(|| {
            invalid(format!(
                "entry table of {} entries, {} in the header's current state",
                archived.entries.len(),
                header.entry_count
            ))
        })?;
    // The table's first `current` entries are the current state's; the rest only
    // earlier states hold.
    let mut entries = Vector::new();
    let mut others = Vec::with_capacity(archived.entries.len() - current);
    for (index, stored) in archived.entries.iter().enumerate() {
        let entry = entry_of(map, stored, index, options.trust, path)?;
        if index < current {
            entries.push_back(entry);
        } else {
            others.push(entry);
        }
    }
    let table_len = archived.entries.len();
    let mut earlier = Vec::with_capacity(archived.earlier.len());
    for (number, state) in archived.earlier.iter().enumerate() {
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
        let entries = state_entries;
        let turns_from = state_turns_from(
            state.turns_from.to_native(),
            entries.len(),
            number == 0,
            &format!("earlier state {number}"),
            &invalid,
        )?;
        earlier.push((entries, turns_from));
    }
    let turns_from = state_turns_from(
        archived.turns_from.to_native(),
        entries.len(),
        earlier.is_empty(),
        "current state",
        &invalid,
    )?;
    let facts = archived
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
    if let Some(text) = world_state {
        let baseline = serde_json::from_str::<WorldSnapshot>(text)
            .map_err(|error| invalid(format!("world-state baseline: {error}")))?;
        history.set_world_state_baseline(Some(baseline));
    }
    Ok(Snapshot {
        history,
        header,
        state,
        facts: Some(facts),
        verified: options.verify_digest,
        trust: options.trust,
    })
}

/// The fields versions 1, 2 and 3 share, as stored.
struct Common<'a> {
    thread_id: Option<&'a str>,
    resume_flags: u8,
    truncation_mode: u8,
    truncation_limit: u64,
    reference_context_item: Option<&'a str>,
    previous_turn_settings: Option<&'a str>,
    base_instructions: Option<&'a str>,
    /// The resume flag bits the version defines.
    known_flags: u8,
}

impl Common<'_> {
    /// Checks and decodes them.
    fn decode(
        &self,
        invalid: &dyn Fn(String) -> SnapshotError,
    ) -> Result<(TruncationPolicy, Option<serde_json::Value>, PrefixState), SnapshotError> {
        let limit = usize::try_from(self.truncation_limit)
            .map_err(|_| invalid("truncation limit out of range".into()))?;
        let truncation = match self.truncation_mode {
            0 => TruncationPolicy::Bytes(limit),
            1 => TruncationPolicy::Tokens(limit),
            _ => return Err(invalid("invalid truncation mode".into())),
        };
        let reference_context_item = match self.reference_context_item {
            Some(text) => Some(
                serde_json::from_str(text)
                    .map_err(|error| invalid(format!("reference context item: {error}")))?,
            ),
            None => None,
        };
        if self.resume_flags & !self.known_flags != 0 {
            return Err(invalid("invalid resume flags".into()));
        }
        let thread_id = match self.thread_id {
            Some(text) => Some(
                text.parse::<ThreadId>()
                    .map_err(|error| invalid(format!("thread id: {error}")))?,
            ),
            None => None,
        };
        let previous_turn_settings = match self.previous_turn_settings {
            Some(text) => Some(
                RawValue::from_string(text.to_owned())
                    .map_err(|error| invalid(format!("previous turn settings: {error}")))?,
            ),
            None => None,
        };
        let base_instructions = match self.base_instructions {
            Some(text) => Some(
                RawValue::from_string(text.to_owned())
                    .map_err(|error| invalid(format!("base instructions: {error}")))?,
            ),
            None => None,
        };
        let state = PrefixState {
            thread_id,
            previous_turn_settings,
            base_instructions,
            ends_inside_turn: self.resume_flags & 1 != 0,
            legacy: self.resume_flags & 2 != 0,
            legacy_compaction: self.resume_flags & 4 != 0,
            open_turn: None,
        };
        Ok((truncation, reference_context_item, state))
    }
}

/// The entry at `index` of the archive, its text left in the map; with
/// [`SnapshotTrust::Untrusted`], checked against its JSON.
fn entry_of(
    map: &MappedFile,
    stored: &ArchivedEntryV1,
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
    stored: &ArchivedFactV2,
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
