//! Writing a snapshot: what may be replaced at its path, and the atomic replacement itself (a
//! temporary file, `sync_data`, `rename`, a sync of the directory), through a storage seam
//! ([`SnapshotStorage`]) whose real implementation is the file system.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

use rkyv::api::high::to_bytes_in;
use rkyv::ser::writer::IoWriter;
use std::path::{Path, PathBuf};

use crate::history::{History, TruncationPolicy};

use std::collections::HashMap;
use std::sync::Arc;

use crate::item::Entry;

use super::archive::borrowed::{EntryRef, PayloadCoreRef, PayloadRef, PayloadWorldRef, StrRef};
use super::archive::{EarlierState, StoredFact, StoredOpenTurn, fact_code, kind_code, role_code};
use super::header::{PAYLOAD_OFFSET, RolloutPosition, SNAPSHOT_FORMAT_VERSION, SnapshotHeader};
use super::{
    ExistingFile, PrefixFact, PrefixState, SnapshotError, SnapshotStep, io_error, is_snapshot,
};

/// What writing a snapshot may replace at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replace {
    /// A snapshot (of any format version, damaged or not) or an empty file; nothing else
    /// (the default): a rollout, another file, a directory, the rollout the snapshot is made
    /// from (also through a link) are refused with [`SnapshotError::WouldReplace`].
    #[default]
    SnapshotsOnly,
    /// Whatever regular file is there (the command line's `--force`) but the rollout the
    /// snapshot is made from. A directory, a device, a FIFO or a socket cannot be replaced.
    Anything,
}

/// Where a snapshot goes: what may be replaced there, and the rollout it is made from (never
/// replaced unless `replace` says anything may be).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SnapshotTarget<'a> {
    pub(crate) replace: Replace,
    pub(crate) source: Option<&'a Path>,
}

/// Refuses to write over anything but a snapshot or an empty file at `path` unless `target`
/// allows it. The check runs before the temporary file is written; a file that appears at `path`
/// between the check and the rename is replaced (this guards against mistakes, not races).
fn check_target(path: &Path, target: SnapshotTarget<'_>) -> Result<(), SnapshotError> {
    let refuse = |found| {
        Err(SnapshotError::WouldReplace {
            path: path.to_owned(),
            found,
        })
    };
    let inspect = io_error(path, SnapshotStep::InspectTarget);
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return match std::fs::symlink_metadata(path) {
                Ok(_) if target.replace == Replace::SnapshotsOnly => {
                    refuse(ExistingFile::DanglingLink)
                }
                _ => Ok(()),
            };
        }
        Err(error) => return Err(inspect(error)),
    };
    if metadata.is_dir() {
        // Not even with `Replace::Anything`: a rename cannot replace a directory with a file,
        // and the error says so better than the rename's.
        return refuse(ExistingFile::Directory);
    }
    if !metadata.is_file() {
        // Nor a device, a FIFO or a socket: replacing `/dev/null` by a rename is never meant.
        return refuse(ExistingFile::Special);
    }
    if let Some(source) = target.source
        && is_same_file(path, &metadata, source)
    {
        // Nor the rollout being read: no command modifies the session it reads.
        return refuse(ExistingFile::SourceRollout);
    }
    if target.replace == Replace::Anything {
        return Ok(());
    }
    let bytes = metadata.len();
    if bytes == 0 || is_snapshot(path) {
        return Ok(());
    }
    let mut start = [0u8; 64];
    let read = File::open(path)
        .and_then(|mut file| file.read(&mut start))
        .map_err(inspect)?;
    let json_lines = start[..read]
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|&byte| byte == b'{');
    if json_lines {
        refuse(ExistingFile::JsonLines { bytes })
    } else {
        refuse(ExistingFile::Other { bytes })
    }
}

/// The file a symbolic link at `path` points to, when it is one and its target exists: the
/// snapshot replaces that file and the link stays, as writing through the link would. `None`
/// for anything else (a dangling link is checked, and replaced, as itself).
fn through_link(path: &Path) -> Option<std::path::PathBuf> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|found| found.file_type().is_symlink());
    is_link.then(|| std::fs::canonicalize(path).ok()).flatten()
}

/// Whether `path` (whose metadata is `metadata`) is the file at `other`: the same device and
/// inode on Unix (so a hard or symbolic link counts), the same canonical path elsewhere.
fn is_same_file(path: &Path, metadata: &std::fs::Metadata, other: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let _ = path;
        std::fs::metadata(other)
            .is_ok_and(|other| other.dev() == metadata.dev() && other.ino() == metadata.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        match (std::fs::canonicalize(path), std::fs::canonicalize(other)) {
            (Ok(path), Ok(other)) => path == other,
            _ => false,
        }
    }
}

/// Writes a snapshot of `history`, covering `position` of its rollout, to `path`, replacing what
/// `target` allows there atomically. `history`, `state` and `facts` (the scan facts of the
/// prefix) must be what resuming exactly that prefix gives: the rollout layer makes sure of it
/// (`Resumed::write_snapshot`), which is why this is not public. The file has format version
/// [`SNAPSHOT_FORMAT_VERSION`].
///
/// Replacement is a temporary file in the same directory, `sync_data`, `rename`, and a sync of
/// the directory. A file that is mapped elsewhere is never modified.
///
/// # Errors
///
/// [`SnapshotError::WouldReplace`] when `target` does not allow replacing what is at `path`;
/// [`SnapshotError::Io`] naming the step that failed; [`SnapshotError::InvalidArchive`] if the
/// archive cannot be built (an item over 4 GiB, an entry table over 2³² entries).
pub(crate) fn write_snapshot(
    path: &Path,
    target: SnapshotTarget<'_>,
    history: &History,
    position: RolloutPosition,
    state: &PrefixState,
    facts: &[PrefixFact],
) -> Result<SnapshotHeader, SnapshotError> {
    write_snapshot_on(
        &mut FileSystem,
        path,
        target,
        history,
        position,
        state,
        facts,
    )
}

/// [`write_snapshot`] on the storage given: the file system, or a simulated storage in tests
/// (the `testing` feature's crash simulation).
pub(crate) fn write_snapshot_on<St: SnapshotStorage>(
    storage: &mut St,
    path: &Path,
    target: SnapshotTarget<'_>,
    history: &History,
    position: RolloutPosition,
    state: &PrefixState,
    facts: &[PrefixFact],
) -> Result<SnapshotHeader, SnapshotError> {
    let resolved = through_link(path);
    let path = resolved.as_deref().unwrap_or(path);
    storage.check_target(path, target)?;
    let payload =
        payload_of(history, state, facts).map_err(|detail| SnapshotError::InvalidArchive {
            path: path.to_owned(),
            detail,
        })?;
    let mut written = None;
    write_atomically_with(storage, path, PAYLOAD_OFFSET as usize, &mut |out| {
        // The payload is archived straight into the file, hashed on the way: the archive is
        // never held in memory, and the entries' texts are borrowed from the history.
        let mut hashing = HashingWriter {
            inner: out,
            hasher: blake3::Hasher::new(),
            len: 0,
            failed: None,
        };
        // `BoxedError` keeps the cause in every profile (`rancor::Error` drops it without debug
        // assertions: "failed without error information").
        let archived =
            to_bytes_in::<_, rkyv::rancor::BoxedError>(&payload, IoWriter::new(&mut hashing))
                .map(drop);
        if let Some(error) = hashing.failed.take() {
            return Err(io_error(path, SnapshotStep::WriteTemporary)(error));
        }
        archived.map_err(|error| SnapshotError::InvalidArchive {
            path: path.to_owned(),
            detail: error.to_string(),
        })?;
        let header = SnapshotHeader {
            format_version: SNAPSHOT_FORMAT_VERSION,
            entry_count: history.len() as u64,
            payload_len: hashing.len,
            payload_digest: hashing.hasher.finalize(),
            rollout: position,
            history_version: history.version(),
        };
        written = Some(header);
        Ok(header.encode())
    })?;
    Ok(written.expect("the payload was written"))
}

/// The payload of a snapshot of `history`, borrowing its entries; `Err` with what cannot be
/// stored.
fn payload_of<'a>(
    history: &'a History,
    state: &PrefixState,
    facts: &[PrefixFact],
) -> Result<PayloadRef<'a>, String> {
    let (truncation_mode, truncation_limit) = match history.truncation() {
        TruncationPolicy::Bytes(limit) => (0u8, limit as u64),
        TruncationPolicy::Tokens(limit) => (1u8, limit as u64),
    };
    let (entries, earlier) = entry_table(history)
        .ok_or_else(|| "the entry table holds more than 2^32 entries".to_owned())?;
    let raw_text = |raw: &Option<Box<serde_json::value::RawValue>>| {
        raw.as_ref().map(|raw| raw.get().to_owned())
    };
    let core = PayloadCoreRef {
        thread_id: state.thread_id.map(|id| id.to_string()),
        resume_flags: state.flags(),
        truncation_mode,
        truncation_limit,
        reference_context_item: history.reference_context_item().map(ToString::to_string),
        previous_turn_settings: raw_text(&state.previous_turn_settings),
        base_instructions: raw_text(&state.base_instructions),
        load_report: raw_text(&state.load_report),
        transcript: raw_text(&state.transcript),
        entries,
        turns_from: history.turns_from() as u64,
        earlier,
        facts: facts.iter().map(stored_fact).collect(),
    };
    let world_state = match history.world_state_baseline() {
        Some(baseline) => Some(
            serde_json::to_string(baseline)
                .map_err(|error| format!("world-state baseline: {error}"))?,
        ),
        None => None,
    };
    Ok(PayloadRef {
        open_turn: state.open_turn.as_ref().map(|turn| StoredOpenTurn {
            turn_id: turn.turn_id.as_ref().map(|id| id.as_str().to_owned()),
            started_line: turn.started_line,
            start: turn.start,
        }),
        world: PayloadWorldRef { world_state, core },
    })
}

/// Passes the payload on to the file, counting and hashing it (the header records both). An
/// I/O error is kept here, so that it is reported as the write that failed, not as an archive
/// error (rkyv's error type carries it only as text).
struct HashingWriter<'a> {
    inner: &'a mut dyn Write,
    hasher: blake3::Hasher,
    len: u64,
    failed: Option<std::io::Error>,
}

impl Write for HashingWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self.inner.write(bytes) {
            Ok(written) => {
                self.hasher.update(&bytes[..written]);
                self.len += written as u64;
                Ok(written)
            }
            Err(error) => {
                let kind = error.kind();
                let message = error.to_string();
                self.failed.get_or_insert(error);
                Err(std::io::Error::new(kind, message))
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// An entry as the archive stores it, borrowing its text and ids.
fn stored_entry(entry: &Entry) -> EntryRef<'_> {
    EntryRef {
        kind: kind_code(entry.kind()),
        role: role_code(entry.role()),
        flags: entry.flags().bits(),
        tokens: entry.tokens(),
        call_id: entry.call_id().map(|id| StrRef(id.as_str())),
        item_id: entry.item_id().map(|id| StrRef(id.as_str())),
        json: StrRef(entry.json()),
    }
}

/// The entry table of a payload and the earlier states as indices into it: the current
/// state's entries first, in order, then each entry of an earlier state that is not already in
/// the table. Entries are deduplicated by identity (the same shared payload, as an earlier state
/// and the states after it share the entries they have in common) with the same header fields:
/// such entries are interchangeable. `None` when an index does not fit in 32 bits.
/// Time: O(n) for the n entries of all states.
fn entry_table(history: &History) -> Option<(Vec<EntryRef<'_>>, Vec<EarlierState>)> {
    let mut table: Vec<&Entry> = history.iter().collect();
    let mut known: HashMap<*const (), u32> = HashMap::new();
    for (index, entry) in table.iter().enumerate() {
        known
            .entry(identity(entry))
            .or_insert(u32::try_from(index).ok()?);
    }
    let mut earlier = Vec::new();
    for (entries, turns_from) in history.earlier_states() {
        let mut indices = Vec::with_capacity(entries.len());
        for entry in entries {
            let index = match known.get(&identity(entry)) {
                Some(&index) if same_header(table[index as usize], entry) => index,
                _ => {
                    let index = u32::try_from(table.len()).ok()?;
                    table.push(entry);
                    known.insert(identity(entry), index);
                    index
                }
            };
            indices.push(index);
        }
        earlier.push(EarlierState {
            entries: indices,
            turns_from: turns_from as u64,
        });
    }
    Some((table.into_iter().map(stored_entry).collect(), earlier))
}

/// The identity of an entry's payload (shared by its clones).
fn identity(entry: &Entry) -> *const () {
    Arc::as_ptr(entry.body()).cast()
}

/// Whether two entries with the same payload have the same header fields.
fn same_header(a: &Entry, b: &Entry) -> bool {
    a.kind() == b.kind()
        && a.role() == b.role()
        && a.flags() == b.flags()
        && a.tokens() == b.tokens()
        && a.call_id() == b.call_id()
        && a.item_id() == b.item_id()
}

/// A scan fact as the archive stores it.
fn stored_fact(fact: &PrefixFact) -> StoredFact {
    let plain = |kind| StoredFact {
        kind,
        turn_id: None,
        num_turns: 0,
        payload: None,
    };
    match fact {
        PrefixFact::TurnStarted(turn_id) => StoredFact {
            turn_id: turn_id.as_ref().map(ToString::to_string),
            ..plain(fact_code::TURN_STARTED)
        },
        PrefixFact::TurnEnded(turn_id) => StoredFact {
            turn_id: turn_id.as_ref().map(ToString::to_string),
            ..plain(fact_code::TURN_ENDED)
        },
        PrefixFact::UserMessage => plain(fact_code::USER_MESSAGE),
        PrefixFact::UserTurnItem => plain(fact_code::USER_TURN_ITEM),
        PrefixFact::InterAgent => plain(fact_code::INTER_AGENT),
        PrefixFact::RolledBack(num_turns) => StoredFact {
            num_turns: *num_turns,
            ..plain(fact_code::ROLLED_BACK)
        },
        PrefixFact::TurnContext { turn_id, payload } => StoredFact {
            turn_id: turn_id.as_ref().map(ToString::to_string),
            payload: Some(payload.to_string()),
            ..plain(fact_code::TURN_CONTEXT)
        },
        PrefixFact::Compacted => plain(fact_code::COMPACTED),
        PrefixFact::AfterRollback => plain(fact_code::AFTER_ROLLBACK),
    }
}

/// The temporary file a snapshot is written to before it replaces `path`: created by `tempfile`
/// beside `path` (a rename replaces only within one file system) under a name no other writer
/// uses (`.<name>.tmp-` and a random part, so that a stray file left by a crashed writer never
/// blocks a later one), removed when dropped unless persisted. On Unix it is created with mode
/// 0666 less the umask, as `File::create` would create the snapshot itself (`tempfile`'s default
/// is 0600).
fn temporary_file(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot".into());
    let prefix = format!(".{name}.tmp-");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let directory = parent_directory(path);
    builder.tempfile_in(&directory).map_err(|error| {
        // `tempfile` appends its random temporary path to the message, a name the user never
        // gave (the caller's error names the target). Give the reason without it: the
        // operating system's own words about the directory when that is what failed (the usual
        // case: it is missing or not a directory), else the kind of failure.
        match std::fs::metadata(&directory) {
            Err(reason) => reason,
            Ok(metadata) if !metadata.is_dir() => std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "the snapshot's parent is not a directory",
            ),
            Ok(_) => std::io::Error::from(error.kind()),
        }
    })
}

/// Writes a file's payload into the writer it is given and returns its header (of the length
/// given to [`write_atomically_with`]), which can depend on the payload (its length, digest).
pub(super) type Contents<'a> = dyn FnMut(&mut dyn Write) -> Result<Vec<u8>, SnapshotError> + 'a;

/// The storage a snapshot is written to: every file-system step of an atomic replacement goes
/// through it. [`FileSystem`] is the real one (static dispatch: writing a snapshot costs what it
/// did before the seam existed); the `testing` feature's simulated storage keeps what was written
/// but not synced apart and drops it at a simulated crash (`docs/verification.md`, "Crash
/// simulation").
pub(crate) trait SnapshotStorage {
    /// A temporary file being written beside the target.
    type Temporary: Write + Seek;

    /// Refuses to write over what `target` does not allow at `path` (the real file system reads
    /// what is there, see [`check_target`]).
    fn check_target(
        &mut self,
        path: &Path,
        target: SnapshotTarget<'_>,
    ) -> Result<(), SnapshotError>;

    /// Creates a new temporary file in the directory of `path`, under a name nobody else uses.
    fn create_temporary(&mut self, path: &Path) -> std::io::Result<Self::Temporary>;

    /// Makes the temporary file's flushed bytes durable (`fdatasync`).
    fn sync_data(&mut self, file: &mut Self::Temporary) -> std::io::Result<()>;

    /// Renames the temporary file over `path`, atomically. On failure the temporary file is
    /// removed.
    fn persist(&mut self, file: Self::Temporary, path: &Path) -> std::io::Result<()>;

    /// Makes the renamed directory entry durable: syncs the directory that holds `path`.
    fn sync_directory(&mut self, path: &Path) -> std::io::Result<()>;
}

/// The file system as it is: a `tempfile` temporary file (removed when dropped unless
/// persisted), `sync_data`, `rename`, a sync of the directory.
pub(crate) struct FileSystem;

impl SnapshotStorage for FileSystem {
    type Temporary = tempfile::NamedTempFile;

    fn check_target(
        &mut self,
        path: &Path,
        target: SnapshotTarget<'_>,
    ) -> Result<(), SnapshotError> {
        check_target(path, target)
    }

    fn create_temporary(&mut self, path: &Path) -> std::io::Result<Self::Temporary> {
        temporary_file(path)
    }

    fn sync_data(&mut self, file: &mut Self::Temporary) -> std::io::Result<()> {
        file.as_file().sync_data()
    }

    fn persist(&mut self, file: Self::Temporary, path: &Path) -> std::io::Result<()> {
        // A failed persist hands the temporary file back inside the error; dropping it removes
        // it.
        file.persist(path).map(drop).map_err(|failed| failed.error)
    }

    fn sync_directory(&mut self, path: &Path) -> std::io::Result<()> {
        sync_parent_directory(path)
    }
}

/// Writes a file to a temporary file beside `path` — `header_len` zero bytes, then the payload
/// `contents` writes, then the header it returns over the zeros — flushes and syncs it, renames
/// it over `path` and syncs the directory, each step through `storage`. Until the rename, `path`
/// is untouched; after a failure the temporary file is removed (dropping it does). Errors name
/// `path`, the file the caller asked for, and the step; never the temporary file's hidden name.
pub(super) fn write_atomically_with<St: SnapshotStorage>(
    storage: &mut St,
    path: &Path,
    header_len: usize,
    contents: &mut Contents<'_>,
) -> Result<(), SnapshotError> {
    let write_error = || io_error(path, SnapshotStep::WriteTemporary);
    let mut temporary = storage
        .create_temporary(path)
        .map_err(io_error(path, SnapshotStep::CreateTemporary))?;
    temporary
        .write_all(&vec![0; header_len])
        .map_err(write_error())?;
    let header = {
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, &mut temporary);
        let header = contents(&mut out)?;
        out.flush().map_err(write_error())?;
        header
    };
    debug_assert_eq!(header.len(), header_len, "the header fills its place");
    // Flushed before the sync: a no-op for a file (its writes reach the operating system at
    // once), but a storage may hold written bytes until then, and `sync_data` makes durable only
    // what was handed over.
    temporary
        .seek(SeekFrom::Start(0))
        .and_then(|_| temporary.write_all(&header))
        .and_then(|()| temporary.flush())
        .map_err(write_error())?;
    storage
        .sync_data(&mut temporary)
        .map_err(io_error(path, SnapshotStep::SyncTemporary))?;
    storage
        .persist(temporary, path)
        .map_err(io_error(path, SnapshotStep::Rename))?;
    // Makes the rename durable (a no-op where directories cannot be opened, as on Windows).
    storage.sync_directory(path).map_err(io_error(
        &parent_directory(path),
        SnapshotStep::SyncDirectory,
    ))
}

/// The directory that holds `path` (`.` for a bare file name).
fn parent_directory(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Makes a new or renamed directory entry durable: syncs the directory that holds `path` (a
/// no-op where directories cannot be opened to be synced, as on Windows). Snapshots use it after
/// their rename, rollouts after they are created.
///
/// # Errors
///
/// The error of opening or syncing the directory.
pub(crate) fn sync_parent_directory(path: &Path) -> std::io::Result<()> {
    if cfg!(unix) {
        File::open(parent_directory(path))?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file system, failing the one step it is given.
    struct FailAt(SnapshotStep);

    fn injected(step: SnapshotStep) -> std::io::Error {
        std::io::Error::other(format!("injected failure: {step}"))
    }

    /// A temporary file whose writes fail, after half of the first one was written, when the
    /// step to fail is [`SnapshotStep::WriteTemporary`].
    struct Temporary {
        file: tempfile::NamedTempFile,
        fail_writes: bool,
        writes: u32,
    }

    impl Write for Temporary {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if !self.fail_writes {
                return self.file.write(bytes);
            }
            self.writes += 1;
            if self.writes == 1 {
                self.file.write(&bytes[..bytes.len().div_ceil(2)])
            } else {
                Err(injected(SnapshotStep::WriteTemporary))
            }
        }

        fn flush(&mut self) -> std::io::Result<()> {
            self.file.flush()
        }
    }

    impl Seek for Temporary {
        fn seek(&mut self, position: SeekFrom) -> std::io::Result<u64> {
            self.file.seek(position)
        }
    }

    impl FailAt {
        fn check(&self, step: SnapshotStep) -> std::io::Result<()> {
            if step == self.0 {
                Err(injected(step))
            } else {
                Ok(())
            }
        }
    }

    impl SnapshotStorage for FailAt {
        type Temporary = Temporary;

        fn check_target(
            &mut self,
            path: &Path,
            target: SnapshotTarget<'_>,
        ) -> Result<(), SnapshotError> {
            FileSystem.check_target(path, target)
        }

        fn create_temporary(&mut self, path: &Path) -> std::io::Result<Temporary> {
            self.check(SnapshotStep::CreateTemporary)?;
            Ok(Temporary {
                file: FileSystem.create_temporary(path)?,
                fail_writes: self.0 == SnapshotStep::WriteTemporary,
                writes: 0,
            })
        }

        fn sync_data(&mut self, file: &mut Temporary) -> std::io::Result<()> {
            self.check(SnapshotStep::SyncTemporary)?;
            FileSystem.sync_data(&mut file.file)
        }

        fn persist(&mut self, file: Temporary, path: &Path) -> std::io::Result<()> {
            self.check(SnapshotStep::Rename)?;
            FileSystem.persist(file.file, path)
        }

        fn sync_directory(&mut self, path: &Path) -> std::io::Result<()> {
            self.check(SnapshotStep::SyncDirectory)?;
            FileSystem.sync_directory(path)
        }
    }

    fn directory_listing(dir: &Path) -> Vec<std::ffi::OsString> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .expect("listed")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        names.sort();
        names
    }

    /// A replacement that fails at any step before the rename leaves the previous snapshot
    /// byte for byte, and no temporary file; one that fails at the directory sync has renamed
    /// a complete new snapshot into place and says the rename may not be durable. Either way the
    /// file at the path is one whole snapshot, never a mix.
    #[test]
    fn a_failure_at_any_step_leaves_a_whole_snapshot_and_no_temporary_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("history.snap");
        let (old_header, old_payload) = (b"old header".to_vec(), vec![1u8; 10_000]);
        let (new_header, new_payload) = (b"new header".to_vec(), vec![2u8; 20_000]);
        let old = [old_header.as_slice(), &old_payload].concat();
        let new = [new_header.as_slice(), &new_payload].concat();
        for step in [
            SnapshotStep::CreateTemporary,
            SnapshotStep::WriteTemporary,
            SnapshotStep::SyncTemporary,
            SnapshotStep::Rename,
            SnapshotStep::SyncDirectory,
        ] {
            let mut old_contents = |out: &mut dyn Write| {
                out.write_all(&old_payload).expect("written");
                Ok(old_header.clone())
            };
            write_atomically_with(&mut FileSystem, &path, old_header.len(), &mut old_contents)
                .expect("the previous snapshot");
            let mut new_contents = |out: &mut dyn Write| {
                out.write_all(&new_payload).expect("written");
                Ok(new_header.clone())
            };
            let error = write_atomically_with(
                &mut FailAt(step),
                &path,
                new_header.len(),
                &mut new_contents,
            )
            .expect_err("injected");
            match &error {
                SnapshotError::Io {
                    step: failed,
                    path: named,
                    ..
                } => {
                    assert_eq!(*failed, step);
                    // The error names what the caller gave (or, for the directory sync, its
                    // directory), never the hidden temporary file.
                    let expected = if step == SnapshotStep::SyncDirectory {
                        dir.path()
                    } else {
                        path.as_path()
                    };
                    assert_eq!(named, expected, "{step}");
                }
                other => panic!("{other:?}"),
            }
            let expected = if step == SnapshotStep::SyncDirectory {
                &new
            } else {
                &old
            };
            assert_eq!(&std::fs::read(&path).expect("read"), expected, "{step}");
            assert_eq!(
                directory_listing(dir.path()),
                ["history.snap"],
                "after a failure at {step}"
            );
        }
    }

    // What is written is what the reader reads, field by field (`docs/snapshot-format.md`), and
    // what may be replaced ("What may be replaced"). Written from the format page, not the code.

    use bytestring::ByteString;
    use serde_json::value::RawValue;

    use super::super::{OpenTurn, SnapshotOptions, open_snapshot};
    use crate::item::{ThreadId, TurnId};
    use crate::world::WorldSnapshot;

    fn user(text: &str) -> String {
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        )
    }

    fn assistant(id: &str, text: &str) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","role":"assistant","content":[{{"type":"output_text","text":"{text}"}}]}}"#
        )
    }

    fn call(call_id: &str) -> String {
        format!(
            r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"{call_id}"}}"#
        )
    }

    fn output(call_id: &str) -> String {
        format!(r#"{{"type":"function_call_output","call_id":"{call_id}","output":"done"}}"#)
    }

    fn image() -> String {
        user("look").replace(
            r#"{"type":"input_text","text":"look"}"#,
            r#"{"type":"input_image","image_url":"data:image/png;base64,AAAA"}"#,
        )
    }

    fn entry(json: &str) -> Entry {
        Entry::from_json(json).expect("an item")
    }

    /// A history with two earlier states (two compactions), entries of several kinds, roles,
    /// flags and ids, a reference context item and a world-state baseline: `[u1, c1, o1]`, then
    /// `[u1, s1, u2]` (u1 shared), then the current `[s1, s2, u3, m1, i1]` (s1 shared).
    fn history() -> History {
        let mut history = History::with_truncation(TruncationPolicy::Tokens(77));
        for json in [user("u1"), call("c1"), output("c1")] {
            history.record_json(json).expect("recorded");
        }
        let u1 = history.get(0).expect("u1").clone();
        history.replace([u1, entry(&user("s1"))]);
        history.record_json(user("u2")).expect("recorded");
        let s1 = history.get(1).expect("s1").clone();
        history.replace([s1, entry(&user("s2"))]);
        for json in [user("u3"), assistant("msg_1", "m1"), image()] {
            history.record_json(json).expect("recorded");
        }
        history.set_reference_context_item(Some(serde_json::json!({"type": "message"})));
        history.set_world_state_baseline(Some(
            WorldSnapshot::from_value(serde_json::json!({"cwd": "/w", "env": {"a": 1}}))
                .expect("a baseline"),
        ));
        history
    }

    fn raw(json: &str) -> Option<Box<RawValue>> {
        Some(RawValue::from_string(json.to_owned()).expect("JSON"))
    }

    fn state() -> PrefixState {
        PrefixState {
            thread_id: Some(ThreadId::random()),
            previous_turn_settings: raw(r#"{"model":"m","cwd":"/w"}"#),
            base_instructions: raw(r#"{"text":"be brief"}"#),
            load_report: raw(r#"{"stored":"opaque to this layer"}"#),
            transcript: raw(r#"{"stored":"opaque to this layer too"}"#),
            ends_inside_turn: true,
            legacy: false,
            legacy_compaction: true,
            open_turn: Some(OpenTurn {
                turn_id: Some(TurnId::new("t3")),
                started_line: 9,
                start: 2,
            }),
        }
    }

    /// One fact of every kind, with and without the fields a kind may have.
    fn facts() -> Vec<PrefixFact> {
        let text = ByteString::from_static;
        vec![
            PrefixFact::TurnStarted(Some(text("t1"))),
            PrefixFact::TurnContext {
                turn_id: Some(text("t1")),
                payload: text(r#"{"model":"m"}"#),
            },
            PrefixFact::UserTurnItem,
            PrefixFact::UserMessage,
            PrefixFact::TurnEnded(Some(text("t1"))),
            PrefixFact::InterAgent,
            PrefixFact::Compacted,
            PrefixFact::RolledBack(2),
            PrefixFact::AfterRollback,
            PrefixFact::TurnStarted(None),
            PrefixFact::TurnContext {
                turn_id: None,
                payload: text(r#"{"model":"n"}"#),
            },
            PrefixFact::TurnEnded(None),
            PrefixFact::TurnStarted(Some(text("t3"))),
        ]
    }

    fn position() -> RolloutPosition {
        RolloutPosition {
            lines: 12,
            bytes: 3_456,
            digest: blake3::hash(b"the covered prefix"),
        }
    }

    const ONLY_SNAPSHOTS: SnapshotTarget<'static> = SnapshotTarget {
        replace: Replace::SnapshotsOnly,
        source: None,
    };

    fn write(
        path: &Path,
        history: &History,
        state: &PrefixState,
        facts: &[PrefixFact],
    ) -> Result<SnapshotHeader, SnapshotError> {
        write_snapshot_on(
            &mut FileSystem,
            path,
            ONLY_SNAPSHOTS,
            history,
            position(),
            state,
            facts,
        )
    }

    /// The earlier states of a history as entries and `turns_from`, oldest first.
    fn earlier(history: &History) -> Vec<(Vec<Entry>, usize)> {
        history
            .earlier_states()
            .map(|(entries, turns_from)| (entries.iter().cloned().collect(), turns_from))
            .collect()
    }

    fn text(raw: Option<&RawValue>) -> Option<&str> {
        raw.map(RawValue::get)
    }

    /// What is written is read back as written, opened untrusted (every entry's header fields
    /// checked against its text): the header the writer returns is the file's, of the current
    /// format version; the history (entries byte for byte with their header fields, version,
    /// truncation policy, reference context item, world-state baseline), its earlier states and
    /// `turns_from`, the prefix state and the scan facts are those given
    /// (`docs/snapshot-format.md`, "Payload").
    #[test]
    fn a_snapshot_reads_back_what_was_written() {
        let dir = tempfile::tempdir().expect("dir");
        let history = history();
        let (state, facts) = (state(), facts());
        assert_eq!(history.earlier_states().count(), 2);
        assert!(history.turns_from() > 0);
        assert!(history.world_state_baseline().is_some());
        let path = dir.path().join("history.snap");
        let header = write(&path, &history, &state, &facts).expect("written");
        assert_eq!(header.format_version, SNAPSHOT_FORMAT_VERSION);
        assert_eq!(header.entry_count, history.len() as u64);
        assert_eq!(header.rollout, position());
        assert_eq!(header.history_version, history.version());
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len() as u64, PAYLOAD_OFFSET + header.payload_len);
        assert_eq!(
            header.payload_digest,
            blake3::hash(&bytes[PAYLOAD_OFFSET as usize..])
        );
        let opened = open_snapshot(&path, SnapshotOptions::untrusted()).expect("opens");
        assert_eq!(opened.header(), &header);
        let (read, read_state, read_facts) = opened.into_parts();
        assert_eq!(read, history);
        assert!(read.iter().zip(history.iter()).all(|(a, b)| {
            a.json() == b.json() && a.call_id() == b.call_id() && a.item_id() == b.item_id()
        }));
        assert_eq!(read.world_state_baseline(), history.world_state_baseline());
        assert_eq!(earlier(&read), earlier(&history));
        assert_eq!(read.turns_from(), history.turns_from());
        assert_eq!(read_facts, facts);
        assert_eq!(read_state.thread_id, state.thread_id);
        assert_eq!(
            text(read_state.previous_turn_settings.as_deref()),
            text(state.previous_turn_settings.as_deref())
        );
        assert_eq!(
            text(read_state.base_instructions.as_deref()),
            text(state.base_instructions.as_deref())
        );
        assert_eq!(
            text(read_state.load_report.as_deref()),
            text(state.load_report.as_deref())
        );
        assert_eq!(
            (
                read_state.ends_inside_turn,
                read_state.legacy,
                read_state.legacy_compaction
            ),
            (true, false, true)
        );
        assert_eq!(read_state.open_turn, state.open_turn);
    }

    /// The entry table: the current state's entries first, in order, then each entry only an
    /// earlier state holds, once; an entry an earlier state shares with the current state (or
    /// with an earlier one) is stored once, and the earlier states point at it.
    #[test]
    fn the_entry_table_stores_a_shared_entry_once() {
        let history = history();
        let (table, earlier) = entry_table(&history).expect("a table");
        let texts: Vec<&str> = table.iter().map(|entry| entry.json.0).collect();
        let (s1, s2, u3, m1, i1) = (
            user("s1"),
            user("s2"),
            user("u3"),
            assistant("msg_1", "m1"),
            image(),
        );
        let (u1, c1, o1, u2) = (user("u1"), call("c1"), output("c1"), user("u2"));
        assert_eq!(
            texts,
            [&s1, &s2, &u3, &m1, &i1, &u1, &c1, &o1, &u2].map(String::as_str)
        );
        let indices: Vec<(&[u32], u64)> = earlier
            .iter()
            .map(|state| (state.entries.as_slice(), state.turns_from))
            .collect();
        assert_eq!(indices, [(&[5, 6, 7][..], 0), (&[5, 0, 8][..], 2)]);
        // Each table slot stores its entry's header fields.
        for (stored, entry) in table.iter().zip(history.iter()) {
            assert_eq!(stored.kind, kind_code(entry.kind()));
            assert_eq!(stored.role, role_code(entry.role()));
            assert_eq!(stored.flags, entry.flags().bits());
            assert_eq!(stored.tokens, entry.tokens());
        }
    }

    fn refused(path: &Path, target: SnapshotTarget<'_>) -> ExistingFile {
        match FileSystem.check_target(path, target) {
            Err(SnapshotError::WouldReplace { found, path: named }) => {
                assert_eq!(named, path);
                found
            }
            other => panic!("{}: {other:?}", path.display()),
        }
    }

    /// What may be replaced: a snapshot (any version, damaged or not), an empty file or nothing;
    /// anything else is refused, saying what is there; with `Replace::Anything`, anything but a
    /// directory. Nothing is written when refused.
    #[test]
    fn only_a_snapshot_or_an_empty_file_is_replaced_unless_told() {
        let dir = tempfile::tempdir().expect("dir");
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).expect("written");
            path
        };
        let anything = SnapshotTarget {
            replace: Replace::Anything,
            source: None,
        };
        let snapshot = dir.path().join("good.snap");
        write(&snapshot, &History::new(), &PrefixState::default(), &[]).expect("written");
        for path in [
            dir.path().join("missing.snap"),
            file("empty", b""),
            snapshot,
            file("damaged.snap", b"AGHISNAP, then not a snapshot"),
        ] {
            for target in [ONLY_SNAPSHOTS, anything] {
                FileSystem
                    .check_target(&path, target)
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            }
        }
        let rollout = br#"{"timestamp":"t","type":"session_meta","payload":{}}
"#;
        for (path, found) in [
            (
                file("rollout", rollout),
                ExistingFile::JsonLines {
                    bytes: rollout.len() as u64,
                },
            ),
            (
                file("indented", b" \n\t\r{\"a\":1}\n"),
                ExistingFile::JsonLines { bytes: 12 },
            ),
            (file("notes", b"notes {"), ExistingFile::Other { bytes: 7 }),
            (file("blank", b" \n "), ExistingFile::Other { bytes: 3 }),
            (file("binary", b"\x00{"), ExistingFile::Other { bytes: 2 }),
            (
                file("late", &[b" ".repeat(64), b"{".to_vec()].concat()),
                ExistingFile::Other { bytes: 65 },
            ),
        ] {
            assert_eq!(refused(&path, ONLY_SNAPSHOTS), found, "{}", path.display());
            FileSystem
                .check_target(&path, anything)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        }
        // A device is not replaced even when anything may be.
        let null = PathBuf::from("/dev/null");
        for target in [ONLY_SNAPSHOTS, anything] {
            assert_eq!(refused(&null, target), ExistingFile::Special);
        }
        let rollout = dir.path().join("rollout");
        let before = std::fs::read(&rollout).expect("read");
        assert!(matches!(
            write(&rollout, &History::new(), &PrefixState::default(), &[]),
            Err(SnapshotError::WouldReplace { .. })
        ));
        assert_eq!(std::fs::read(&rollout).expect("read"), before);
        assert!(
            directory_listing(dir.path())
                .iter()
                .all(|name| !name.to_string_lossy().contains(".tmp-")),
            "no temporary file left"
        );

        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).expect("symlink");
        assert_eq!(
            refused(&dangling, ONLY_SNAPSHOTS),
            ExistingFile::DanglingLink
        );
        FileSystem
            .check_target(&dangling, anything)
            .expect("a dangling link is replaced when told");
        for target in [ONLY_SNAPSHOTS, anything] {
            assert_eq!(refused(dir.path(), target), ExistingFile::Directory);
        }
    }

    /// A FIFO and a socket are not regular files: refused as such at once (what is found is not
    /// opened, so a FIFO without a writer does not block the check), the write refused with them
    /// left in place, also with `Replace::Anything`.
    #[test]
    fn a_fifo_or_a_socket_is_refused_without_being_opened() {
        let dir = tempfile::tempdir().expect("dir");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let socket = dir.path().join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bound");
        let anything = SnapshotTarget {
            replace: Replace::Anything,
            source: None,
        };
        for path in [&fifo, &socket] {
            assert_eq!(refused(path, ONLY_SNAPSHOTS), ExistingFile::Special);
            match write(path, &History::new(), &PrefixState::default(), &[]) {
                Err(SnapshotError::WouldReplace { found, path: named }) => {
                    assert_eq!(
                        (found, named.as_path()),
                        (ExistingFile::Special, path.as_path())
                    );
                }
                other => panic!("{}: {other:?}", path.display()),
            }
            let kind = std::fs::symlink_metadata(path)
                .expect("still there")
                .file_type();
            assert!(!kind.is_file() && !kind.is_symlink(), "{}", path.display());
            assert_eq!(refused(path, anything), ExistingFile::Special);
        }
    }

    /// The rollout a snapshot is made from is refused under its own name and through a hard or
    /// symbolic link, also when anything else may be replaced; another file beside it is not
    /// the rollout.
    #[test]
    fn the_source_rollout_is_refused_through_any_link() {
        let dir = tempfile::tempdir().expect("dir");
        let rollout = dir.path().join("rollout.jsonl");
        std::fs::write(&rollout, b"{}\n").expect("written");
        let hard = dir.path().join("hard");
        std::fs::hard_link(&rollout, &hard).expect("hard link");
        let soft = dir.path().join("soft");
        std::os::unix::fs::symlink(&rollout, &soft).expect("symlink");
        let snapshot = dir.path().join("beside.snap");
        std::fs::write(&snapshot, b"AGHISNAP").expect("written");
        let from_rollout = SnapshotTarget {
            replace: Replace::SnapshotsOnly,
            source: Some(&rollout),
        };
        for path in [&rollout, &hard, &soft] {
            assert_eq!(
                refused(path, from_rollout),
                ExistingFile::SourceRollout,
                "{}",
                path.display()
            );
            let anything = SnapshotTarget {
                replace: Replace::Anything,
                ..from_rollout
            };
            assert_eq!(refused(path, anything), ExistingFile::SourceRollout);
        }
        FileSystem
            .check_target(&snapshot, from_rollout)
            .expect("a snapshot beside the rollout (same device, another inode)");
        // Made from the snapshot, the rollout is a file of JSON lines, not the source.
        let from_snapshot = SnapshotTarget {
            source: Some(&snapshot),
            ..from_rollout
        };
        assert_eq!(
            refused(&rollout, from_snapshot),
            ExistingFile::JsonLines { bytes: 3 }
        );
    }

    /// What is at the path is inspected: a path that cannot be looked at (under a regular file)
    /// is an error of that step, not taken for a free path.
    #[test]
    fn a_target_that_cannot_be_inspected_is_an_error_of_that_step() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").expect("written");
        let path = file.join("under.snap");
        match FileSystem.check_target(&path, ONLY_SNAPSHOTS) {
            Err(SnapshotError::Io {
                step, path: named, ..
            }) => {
                assert_eq!(step, SnapshotStep::InspectTarget);
                assert_eq!(named, path);
            }
            other => panic!("{other:?}"),
        }
    }

    /// The refusal says what is there.
    #[test]
    fn what_is_found_is_said_in_words() {
        for (found, words) in [
            (
                ExistingFile::SourceRollout,
                "the rollout the snapshot is made from",
            ),
            (ExistingFile::Directory, "a directory"),
            (ExistingFile::Special, "not a regular file"),
            (ExistingFile::DanglingLink, "a symbolic link to nothing"),
            (
                ExistingFile::JsonLines { bytes: 12 },
                "a file of JSON lines (12 bytes), such as a rollout",
            ),
            (
                ExistingFile::Other { bytes: 7 },
                "a file of 7 bytes, not a snapshot",
            ),
        ] {
            assert_eq!(found.to_string(), words);
        }
    }

    /// A temporary file that cannot be created is an error naming the target and the step, in
    /// the operating system's words or the kind of failure, never the temporary file's name.
    #[test]
    fn a_temporary_file_that_cannot_be_created_names_the_target_and_why() {
        let dir = tempfile::tempdir().expect("dir");
        let missing = dir.path().join("missing").join("x.snap");
        let long = dir.path().join("x".repeat(250));
        for path in [&missing, &long] {
            match write(path, &History::new(), &PrefixState::default(), &[]) {
                Err(error @ SnapshotError::Io { .. }) => {
                    let SnapshotError::Io {
                        step,
                        path: named,
                        source,
                    } = &error
                    else {
                        unreachable!()
                    };
                    assert_eq!(*step, SnapshotStep::CreateTemporary);
                    assert_eq!(named, path);
                    let message = format!("{error} {source}");
                    assert!(!message.contains(".tmp-"), "{message}");
                    assert!(!message.contains("not a directory"), "{message}");
                    if path == &missing {
                        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
                    }
                }
                other => panic!("{}: {other:?}", path.display()),
            }
        }
        assert_eq!(
            directory_listing(dir.path()),
            Vec::<std::ffi::OsString>::new()
        );
        // A parent that is a file (the target check refuses it first; the temporary file's own
        // error says so too).
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").expect("written");
        let error = temporary_file(&file.join("x.snap")).expect_err("not a directory");
        assert_eq!(error.kind(), std::io::ErrorKind::NotADirectory);
        assert_eq!(
            error.to_string(),
            "the snapshot's parent is not a directory"
        );
    }

    /// The temporary file goes in the target's directory (`.` for a bare name), and the sync
    /// after the rename opens that directory: a failure to is reported.
    #[test]
    fn the_directory_of_a_target_is_its_parent_or_the_current_one() {
        assert_eq!(parent_directory(Path::new("x.snap")), Path::new("."));
        assert_eq!(parent_directory(Path::new("a/b/x.snap")), Path::new("a/b"));
        assert_eq!(parent_directory(Path::new("/x.snap")), Path::new("/"));
        let dir = tempfile::tempdir().expect("dir");
        let missing = dir.path().join("missing").join("x.snap");
        assert!(sync_parent_directory(&missing).is_err());
        assert!(FileSystem.sync_directory(&missing).is_err());
        sync_parent_directory(&dir.path().join("x.snap")).expect("synced");
    }

    /// A snapshot's file has the mode any new file gets (0666 less the umask), not the
    /// temporary file's usual 0600.
    #[test]
    fn a_snapshot_gets_the_mode_of_a_new_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("x.snap");
        write(&path, &History::new(), &PrefixState::default(), &[]).expect("written");
        let plain = dir.path().join("plain");
        File::create(&plain).expect("created");
        let mode = |path: &Path| {
            std::fs::metadata(path)
                .expect("metadata")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(&path), mode(&plain));
    }
}
