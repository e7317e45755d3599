//! Snapshots: a history archived with rkyv and memory-mapped on open, so that resuming a long
//! session copies no item JSON (format: `docs/snapshot-format.md`).
//!
//! This is the one module of the crate allowed `unsafe` (the rkyv derives in `archive.rs` expand
//! to unsafe trait impls). The hand-written `unsafe` blocks are in `mapped.rs` only: mapping the
//! file, and reading text that was checked to be UTF-8 when the snapshot was opened. Each has a
//! `// SAFETY:` comment naming the checked twin it relies on.
#![allow(unsafe_code)]

mod archive;
mod header;
mod mapped;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use imbl::Vector;

use crate::error::SnapshotError;
use crate::history::History;
use crate::history::truncate::TruncationPolicy;
use crate::item::{CallId, Entry, ItemId, Payload};
use crate::rollout::{Resumed, Rollout};

use archive::{
    ArchivedSnapshotV1, EntryV1, SnapshotV1, flags_from_bits, kind_code, kind_from_code, role_code,
    role_from_code,
};
use header::HeaderProblem;
pub use header::{FORMAT_VERSION, Header, MAGIC, PAYLOAD_OFFSET, RolloutPosition};
pub(crate) use mapped::MappedText;
use mapped::SnapshotMap;

/// What a snapshot holds besides the history: the resume state of the rollout prefix it covers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SnapshotExtras {
    /// The rollout's thread id.
    pub thread_id: Option<String>,
    /// Previous-turn settings (a `turn_context` payload) as JSON text.
    pub previous_turn_settings: Option<String>,
    /// The covered prefix ends inside a turn (lines appended later may belong to it).
    pub ends_inside_turn: bool,
    /// The rollout is in the legacy pre-envelope format.
    pub legacy: bool,
}

impl SnapshotExtras {
    /// The resume state of a rollout prefix, from the prefix read and resumed.
    pub fn of(rollout: &Rollout, resumed: &Resumed) -> SnapshotExtras {
        SnapshotExtras {
            thread_id: resumed.report.thread_id.clone(),
            previous_turn_settings: resumed
                .previous_turn_settings
                .as_ref()
                .map(|raw| raw.get().to_owned()),
            ends_inside_turn: rollout.ends_inside_turn(),
            legacy: resumed.report.legacy,
        }
    }

    fn flags(&self) -> u8 {
        u8::from(self.ends_inside_turn) | (u8::from(self.legacy) << 1)
    }
}

/// An opened snapshot.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The history; its entries' JSON lies in the mapped file.
    pub history: History,
    /// The decoded header (rollout position, digests, counts).
    pub header: Header,
    /// The resume state recorded with the history.
    pub extras: SnapshotExtras,
    /// Whether the payload digest was checked.
    pub verified: bool,
}

/// How to open a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotOptions {
    /// Check the BLAKE3 digest of the payload (default: yes). Without it, validation still keeps
    /// memory safe and the history well-formed, but a changed byte inside an item's text would go
    /// unnoticed.
    pub verify_digest: bool,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        SnapshotOptions {
            verify_digest: true,
        }
    }
}

fn io_error(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_owned();
    move |source| SnapshotError::Io { path, what, source }
}

/// Writes a snapshot of `history`, covering `position` of its rollout, to `path`, replacing any
/// file there atomically. `position` should cover whole lines (end after a `\n`), and `history`
/// should be what resuming exactly that prefix gives; [`resume_with_snapshot`] falls back to a
/// full resume otherwise (it can check the first, not the second).
///
/// Replacement is a temporary file in the same directory, `sync_data`, `rename`, and a sync of
/// the directory. A file that is mapped elsewhere is never modified.
///
/// # Errors
///
/// [`SnapshotError::Io`] naming the step that failed; [`SnapshotError::InvalidArchive`] if the
/// archive cannot be built (an item over 4 GiB).
pub fn write_snapshot(
    path: impl AsRef<Path>,
    history: &History,
    position: RolloutPosition,
    extras: &SnapshotExtras,
) -> Result<Header, SnapshotError> {
    let path = path.as_ref();
    let (truncation_mode, truncation_limit) = match history.truncation() {
        TruncationPolicy::Bytes(limit) => (0u8, limit as u64),
        TruncationPolicy::Tokens(limit) => (1u8, limit as u64),
    };
    let data = SnapshotV1 {
        thread_id: extras.thread_id.clone(),
        resume_flags: extras.flags(),
        truncation_mode,
        truncation_limit,
        reference_context_item: history.reference_context_item().map(ToString::to_string),
        previous_turn_settings: extras.previous_turn_settings.clone(),
        entries: history
            .iter()
            .map(|entry| EntryV1 {
                kind: kind_code(entry.kind()),
                role: role_code(entry.role()),
                flags: entry.flags().bits(),
                tokens: entry.tokens(),
                call_id: entry.call_id().map(|id| id.as_str().to_owned()),
                item_id: entry.item_id().map(|id| id.as_str().to_owned()),
                json: entry.json().to_owned(),
            })
            .collect(),
    };
    let payload = rkyv::to_bytes::<rkyv::rancor::Error>(&data).map_err(|error| {
        SnapshotError::InvalidArchive {
            path: path.to_owned(),
            detail: error.to_string(),
        }
    })?;
    let header = Header {
        entry_count: history.len() as u64,
        payload_len: payload.len() as u64,
        payload_digest: *blake3::hash(&payload).as_bytes(),
        rollout: position,
        history_version: history.version(),
    };
    write_atomically(path, &header.encode(), &payload)?;
    Ok(header)
}

/// A name for the temporary file that no other writer uses: a random part, so that a stray file
/// left by a crashed writer (whose process id may come back, as in containers) never blocks a
/// later one.
fn temporary_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot".into());
    path.with_file_name(format!(".{name}.tmp-{}", uuid::Uuid::new_v4().simple()))
}

fn write_atomically(path: &Path, header: &[u8], payload: &[u8]) -> Result<(), SnapshotError> {
    let temporary = temporary_path(path);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(io_error(&temporary, "create the temporary file"))?;
        file.write_all(header)
            .and_then(|()| file.write_all(payload))
            .map_err(io_error(&temporary, "write the temporary file"))?;
        file.sync_data()
            .map_err(io_error(&temporary, "sync the temporary file"))?;
        std::fs::rename(&temporary, path).map_err(io_error(path, "rename over the target"))?;
        sync_directory(path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Makes a rename durable: sync the directory that holds `path` (a no-op where directories
/// cannot be opened, as on Windows).
fn sync_directory(path: &Path) -> Result<(), SnapshotError> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    if cfg!(unix) {
        File::open(&directory)
            .and_then(|dir| dir.sync_all())
            .map_err(io_error(&directory, "sync the directory"))?;
    }
    Ok(())
}

/// Opens a snapshot: maps the file, checks the header, verifies the payload digest (unless told
/// not to), validates the archive once, and builds a history whose entries' JSON stays in the map.
///
/// The map lives as long as any entry refers to it. The file must not be modified or truncated in
/// place while any entry refers to it: this library never does (writers replace files by rename),
/// but another program that writes into the file breaks the guarantees a memory map rests on — the
/// text read from it may no longer be what was checked, and reading a truncated map kills the
/// process with `SIGBUS`. This is the contract of every memory-mapped reader.
///
/// The digests detect damage, not forgery: a snapshot is trusted to be one this library wrote. A
/// file crafted with valid digests can hold entries whose header fields disagree with their JSON.
///
/// # Errors
///
/// Every [`SnapshotError`] variant; see `docs/snapshot-format.md`.
pub fn open_snapshot(
    path: impl AsRef<Path>,
    options: SnapshotOptions,
) -> Result<Snapshot, SnapshotError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(io_error(path, "open"))?;
    let map = Arc::new(SnapshotMap::map(&file).map_err(io_error(path, "map"))?);
    let bytes = map.bytes();
    let header = Header::decode(bytes).map_err(|problem| header_error(path, problem))?;
    let payload = &bytes[PAYLOAD_OFFSET as usize..];
    if options.verify_digest && *blake3::hash(payload).as_bytes() != header.payload_digest {
        return Err(SnapshotError::PayloadDigestMismatch {
            path: path.to_owned(),
        });
    }
    let invalid = |detail: String| SnapshotError::InvalidArchive {
        path: path.to_owned(),
        detail,
    };
    let archived = rkyv::access::<ArchivedSnapshotV1, rkyv::rancor::Error>(payload)
        .map_err(|error| invalid(error.to_string()))?;
    if archived.entries.len() as u64 != header.entry_count {
        return Err(invalid(format!(
            "{} entries in the archive, {} in the header",
            archived.entries.len(),
            header.entry_count
        )));
    }
    let mut entries = Vector::new();
    for (index, stored) in archived.entries.iter().enumerate() {
        let field = |name: &str| invalid(format!("entry {index}: invalid {name}"));
        let kind = kind_from_code(stored.kind).ok_or_else(|| field("kind"))?;
        let role = role_from_code(stored.role).ok_or_else(|| field("role"))?;
        let flags = flags_from_bits(stored.flags).ok_or_else(|| field("flags"))?;
        let json = stored.json.as_str();
        let text = MappedText::of(&map, json).ok_or_else(|| field("json"))?;
        let byte_len = u32::try_from(json.len()).map_err(|_| field("json length"))?;
        entries.push_back(Entry::from_stored_parts(
            Payload::Mapped(text),
            stored.call_id.as_ref().map(|id| CallId::new(id.as_str())),
            stored.item_id.as_ref().map(|id| ItemId::new(id.as_str())),
            stored.tokens.to_native(),
            byte_len,
            kind,
            role,
            flags,
        ));
    }
    let limit = usize::try_from(archived.truncation_limit.to_native())
        .map_err(|_| invalid("truncation limit out of range".into()))?;
    let truncation = match archived.truncation_mode {
        0 => TruncationPolicy::Bytes(limit),
        1 => TruncationPolicy::Tokens(limit),
        _ => return Err(invalid("invalid truncation mode".into())),
    };
    let reference_context_item = match archived.reference_context_item.as_ref() {
        Some(text) => Some(
            serde_json::from_str(text.as_str())
                .map_err(|error| invalid(format!("reference context item: {error}")))?,
        ),
        None => None,
    };
    if archived.resume_flags & !0b11 != 0 {
        return Err(invalid("invalid resume flags".into()));
    }
    let extras = SnapshotExtras {
        thread_id: archived
            .thread_id
            .as_ref()
            .map(|text| text.as_str().to_owned()),
        previous_turn_settings: archived
            .previous_turn_settings
            .as_ref()
            .map(|text| text.as_str().to_owned()),
        ends_inside_turn: archived.resume_flags & 1 != 0,
        legacy: archived.resume_flags & 2 != 0,
    };
    Ok(Snapshot {
        history: History::from_stored(
            entries,
            header.history_version,
            truncation,
            reference_context_item,
        ),
        header,
        extras,
        verified: options.verify_digest,
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
            supported: FORMAT_VERSION,
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
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut magic))
        .is_ok()
        && magic == MAGIC
}

/// The outcome of [`resume_with_snapshot`].
#[derive(Debug, Clone)]
pub struct SnapshotResume {
    /// The resumed history: equal to a full JSONL resume of the rollout.
    pub history: History,
    /// The thread id.
    pub thread_id: Option<String>,
    /// Previous-turn settings (a `turn_context` payload) as JSON text.
    pub previous_turn_settings: Option<String>,
    /// Why the snapshot was not used, if it was not (then the rollout was resumed in full).
    pub fallback_reason: Option<String>,
    /// The load report: of the lines after the snapshot, or of the whole file after a fallback.
    pub report: crate::rollout::LoadReport,
}

impl SnapshotResume {
    /// Whether the snapshot was used.
    pub fn used_snapshot(&self) -> bool {
        self.fallback_reason.is_none()
    }
}

/// Resumes the session in the rollout at `rollout` from the snapshot at `snapshot` plus the
/// rollout lines after the prefix it covers. When the snapshot cannot stand for that prefix —
/// it cannot be opened, it was written with another truncation policy, the rollout no longer
/// starts with the covered prefix, or the later lines could change what the prefix means (a
/// rollback, a compaction, turn events; see `docs/snapshot-format.md`) — the rollout is resumed
/// in full and [`SnapshotResume::fallback_reason`] says why. Either way the history equals a full
/// JSONL resume.
///
/// # Errors
///
/// [`crate::Error::Rollout`] when the rollout itself cannot be read.
pub fn resume_with_snapshot(
    rollout: impl AsRef<Path>,
    snapshot: impl AsRef<Path>,
    truncation: TruncationPolicy,
) -> Result<SnapshotResume, crate::Error> {
    let rollout = rollout.as_ref();
    match try_snapshot(rollout, snapshot.as_ref(), truncation)? {
        Ok(resumed) => Ok(resumed),
        Err(reason) => {
            let full = crate::rollout::resume_file(rollout, truncation)?;
            Ok(SnapshotResume {
                history: full.history,
                thread_id: full.report.thread_id.clone(),
                previous_turn_settings: full
                    .previous_turn_settings
                    .as_ref()
                    .map(|raw| raw.get().to_owned()),
                fallback_reason: Some(reason),
                report: full.report,
            })
        }
    }
}

/// The snapshot path of [`resume_with_snapshot`]: `Ok(Err(reason))` when it must fall back.
fn try_snapshot(
    rollout: &Path,
    snapshot: &Path,
    truncation: TruncationPolicy,
) -> Result<Result<SnapshotResume, String>, crate::Error> {
    let opened = match open_snapshot(snapshot, SnapshotOptions::default()) {
        Ok(opened) => opened,
        Err(error) => return Ok(Err(format!("the snapshot cannot be used: {error}"))),
    };
    if opened.history.truncation() != truncation {
        return Ok(Err(format!(
            "the snapshot was written with truncation {:?}, not {truncation:?}",
            opened.history.truncation()
        )));
    }
    if opened.extras.legacy {
        return Ok(Err("the rollout is in the legacy format".into()));
    }
    // A full resume needs the first `session_meta`, and decides the format from the first line:
    // the covered prefix must hold them.
    if opened.header.rollout.lines == 0 || opened.extras.thread_id.is_none() {
        return Ok(Err(
            "the snapshot covers no session_meta line of the rollout".into(),
        ));
    }
    let read_error = |source| crate::error::RolloutError::Io {
        path: rollout.to_owned(),
        source,
    };
    let mut file = File::open(rollout).map_err(read_error)?;
    let covered = opened.header.rollout;
    let mut hasher = blake3::Hasher::new();
    let mut hashed = 0u64;
    let mut last = None;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut prefix = std::io::Read::take(std::io::Read::by_ref(&mut file), covered.bytes);
    loop {
        let read = match std::io::Read::read(&mut prefix, &mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(read_error(error).into()),
        };
        hasher.update(&buffer[..read]);
        last = buffer[..read].last().copied();
        hashed += read as u64;
    }
    if hashed < covered.bytes {
        return Ok(Err(format!(
            "the rollout has {hashed} bytes; the snapshot covers {}",
            covered.bytes
        )));
    }
    if *hasher.finalize().as_bytes() != covered.digest {
        return Ok(Err(
            "the rollout no longer starts with the prefix the snapshot covers".into(),
        ));
    }
    if covered.bytes > 0 && last != Some(b'\n') {
        return Ok(Err(
            "the prefix the snapshot covers does not end at a line boundary".into(),
        ));
    }
    let tail = Rollout::read_continuation(file, rollout, covered.lines, covered.bytes)?;
    if let Some(reason) = tail.continuation_blocker(opened.extras.ends_inside_turn) {
        return Ok(Err(reason));
    }
    let mut history = opened.history;
    for line in &tail.lines {
        if line.kind == crate::rollout::LineKind::ResponseItem {
            // The reader checked the item; a failure would be a bug, and resume skips it too.
            history.record_json(line.payload_json()).ok();
        }
    }
    let mut report = tail.report;
    report.thread_id = opened.extras.thread_id.clone();
    Ok(Ok(SnapshotResume {
        history,
        thread_id: opened.extras.thread_id,
        previous_turn_settings: opened.extras.previous_turn_settings,
        fallback_reason: None,
        report,
    }))
}
