//! [`SimulatedStorage`]: a storage for crash tests that keeps, per file, the bytes written, the
//! bytes handed to the operating system and the bytes synced apart, and per directory the names
//! the operating system shows and the names a directory sync made durable; it crashes at a chosen
//! operation, and tells what each kind of crash leaves ([`CrashKind`]). The rollout writer and the
//! snapshot writer run on it through the same seams they use on the file system.
//! `docs/verification.md` ("Crash simulation") describes the model and what the crash tests show.

use std::collections::BTreeMap;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use crate::rollout::{
    Durability, RolloutSink, RolloutWriteError, RolloutWriter, SessionMeta, WriteStep,
};
use crate::snapshot::{
    Replace, Snapshot, SnapshotError, SnapshotHeader, SnapshotStorage, SnapshotTarget,
};

/// One operation of the storage: each is a point where [`SimulatedStorage::crash_at`] can crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// A file created (a new rollout, a snapshot's temporary file).
    Create,
    /// Bytes written: they stay in the process until a flush.
    Write,
    /// Written bytes handed to the operating system.
    Flush,
    /// A file's flushed bytes made durable (`fdatasync`).
    SyncData,
    /// A file renamed over another (a snapshot's temporary file persisted).
    Rename,
    /// A directory's names made durable (created, renamed and removed files).
    SyncDirectory,
    /// A file removed (a failed create's file, a dropped temporary file).
    Remove,
}

/// What a crash keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrashKind {
    /// The process dies; the operating system lives on: every flushed byte and every name
    /// survive, bytes written but not flushed are lost.
    Process,
    /// The machine loses power: only synced bytes survive, and of the directories only the names
    /// a directory sync made durable (a file created or renamed since is gone, or is the old
    /// file again).
    PowerLoss,
    /// The machine loses power after the file system wrote the directories back on its own (a
    /// journal commit) but no file data beyond what was synced: the names the operating system
    /// showed, each with its synced bytes. This is where a rename done before its file was
    /// synced shows an empty or partial file.
    PowerLossAfterDirectoryWrite,
}

impl CrashKind {
    /// The three kinds.
    pub const ALL: [CrashKind; 3] = [
        CrashKind::Process,
        CrashKind::PowerLoss,
        CrashKind::PowerLossAfterDirectoryWrite,
    ];
}

/// A file's contents at three levels: written by the process, handed to the operating system,
/// synced to the device.
#[derive(Debug, Clone, Default)]
struct Inode {
    written: Vec<u8>,
    flushed: Vec<u8>,
    synced: Vec<u8>,
}

#[derive(Debug, Default)]
struct State {
    inodes: Vec<Inode>,
    /// The names the operating system shows.
    names: BTreeMap<PathBuf, usize>,
    /// The names directory syncs made durable.
    durable_names: BTreeMap<PathBuf, usize>,
    /// The operations done, in order (the one that crashed is not among them).
    done: Vec<Operation>,
    /// The 1-based number of the operation to crash at, and whether it is half done.
    crash_at: Option<(u64, bool)>,
    /// The operation the storage crashed at, once it did.
    crashed: Option<Operation>,
    temporaries: u64,
}

/// What an operation may do.
enum Go {
    /// All of it.
    Whole,
    /// The crash happens during it: half of it (`true`) or none of it.
    Crash(bool),
}

impl State {
    /// Counts `operation` and says whether it happens, crashes, or (after the crash) fails.
    fn step(&mut self, operation: Operation) -> io::Result<Go> {
        if self.crashed.is_some() {
            return Err(io::Error::other("the simulated storage has crashed"));
        }
        let number = self.done.len() as u64 + 1;
        match self.crash_at {
            Some((at, half)) if at == number => {
                self.crashed = Some(operation);
                Ok(Go::Crash(half))
            }
            _ => {
                self.done.push(operation);
                Ok(Go::Whole)
            }
        }
    }

    fn crash_error() -> io::Error {
        io::Error::other("simulated crash")
    }

    fn sync_directory(&mut self, path: &Path) -> io::Result<()> {
        match self.step(Operation::SyncDirectory)? {
            Go::Whole => {}
            Go::Crash(_) => return Err(State::crash_error()),
        }
        let directory = parent(path);
        self.durable_names
            .retain(|name, _| parent(name) != directory);
        for (name, &inode) in &self.names {
            if parent(name) == directory {
                self.durable_names.insert(name.clone(), inode);
            }
        }
        Ok(())
    }

    fn remove(&mut self, path: &Path) -> io::Result<()> {
        match self.step(Operation::Remove)? {
            Go::Whole => {}
            Go::Crash(_) => return Err(State::crash_error()),
        }
        match self.names.remove(path) {
            Some(_) => Ok(()),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }
}

/// The directory that holds `path`.
fn parent(path: &Path) -> PathBuf {
    path.parent().map(Path::to_owned).unwrap_or_default()
}

/// `newer` reached half way from `older`: the bytes up to the middle of the range from the first
/// byte in which they differ to the end are `newer`'s, the rest `older`'s (a flush or sync that a
/// crash cut short).
fn half_way(older: &[u8], newer: &[u8]) -> Vec<u8> {
    let same = older.iter().zip(newer).take_while(|(a, b)| a == b).count();
    let end = older.len().max(newer.len());
    let middle = (same + (end - same) / 2).min(newer.len());
    let mut bytes = newer[..middle].to_vec();
    if older.len() > middle {
        bytes.extend_from_slice(&older[middle..]);
    }
    bytes
}

/// A simulated storage for crash tests (`docs/verification.md`, "Crash simulation").
///
/// A handle: clones share one storage. Every file operation is counted ([`Operation`]); with
/// [`SimulatedStorage::crash_at`] the storage crashes at the operation of that number, which
/// then fails, as every operation after it does; [`SimulatedStorage::files_after`] tells what
/// each [`CrashKind`] leaves. A crash test runs a scenario once to count its operations, then
/// once per operation with a crash there.
///
/// The model: a write keeps its bytes in the process (a buffered sink), a flush hands them to
/// the operating system, `sync_data` makes the flushed bytes durable; a created, renamed or
/// removed name is durable only after its directory is synced. A crash cut short in a flush or a
/// sync (`half`) has moved half of the bytes it was moving. Creates, renames and directory syncs
/// are atomic. What may be replaced at a snapshot's path is not checked here (the file system's
/// writer checks the real file there).
#[derive(Debug, Clone, Default)]
pub struct SimulatedStorage {
    state: Arc<Mutex<State>>,
}

impl SimulatedStorage {
    /// An empty storage that never crashes.
    pub fn new() -> SimulatedStorage {
        SimulatedStorage::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Crash at the operation numbered `operation` (1-based, counted from the storage's
    /// creation): that operation is done by half when `half` (a flush or a sync moves half of
    /// its bytes; the other operations are atomic and do nothing), else not at all; it and every
    /// later operation fail.
    pub fn crash_at(&self, operation: u64, half: bool) {
        self.state().crash_at = Some((operation, half));
    }

    /// The operation the storage crashed at, if it did.
    pub fn crashed(&self) -> Option<Operation> {
        self.state().crashed
    }

    /// The operations done so far, in order (a crashed one is not done).
    pub fn operations(&self) -> Vec<Operation> {
        self.state().done.clone()
    }

    /// Puts a file at `path` whose bytes and name are durable (what was there before the
    /// scenario); counts no operation.
    pub fn put_durable_file(&self, path: impl AsRef<Path>, bytes: &[u8]) {
        let mut state = self.state();
        let inode = state.inodes.len();
        state.inodes.push(Inode {
            written: bytes.to_vec(),
            flushed: bytes.to_vec(),
            synced: bytes.to_vec(),
        });
        state.names.insert(path.as_ref().to_owned(), inode);
        state.durable_names.insert(path.as_ref().to_owned(), inode);
    }

    /// The files a crash of `kind` now would leave, by name.
    pub fn files_after(&self, kind: CrashKind) -> BTreeMap<PathBuf, Vec<u8>> {
        let state = self.state();
        let names = match kind {
            CrashKind::Process | CrashKind::PowerLossAfterDirectoryWrite => &state.names,
            CrashKind::PowerLoss => &state.durable_names,
        };
        names
            .iter()
            .map(|(name, &inode)| {
                let inode = &state.inodes[inode];
                let bytes = match kind {
                    CrashKind::Process => &inode.flushed,
                    CrashKind::PowerLoss | CrashKind::PowerLossAfterDirectoryWrite => &inode.synced,
                };
                (name.clone(), bytes.clone())
            })
            .collect()
    }

    /// The file at `path` a crash of `kind` now would leave (`None`: no such name).
    pub fn file_after(&self, kind: CrashKind, path: impl AsRef<Path>) -> Option<Vec<u8>> {
        self.files_after(kind).remove(path.as_ref())
    }

    /// Creates a new rollout at `path` on this storage with [`RolloutWriter`]'s own create steps
    /// (the file, under [`Durability::SyncData`] a sync of its directory, the `session_meta`
    /// line; the file removed again if a step fails), its lines stamped by `clock`.
    ///
    /// # Errors
    ///
    /// As [`RolloutWriter::create`]; `AlreadyExists` when the name is taken; a simulated crash is
    /// an I/O error of the step it hit.
    pub fn create_rollout(
        &self,
        path: impl AsRef<Path>,
        meta: &SessionMeta,
        durability: Durability,
        clock: fn() -> SystemTime,
    ) -> Result<RolloutWriter<SimulatedFile>, RolloutWriteError> {
        RolloutWriter::create_with(
            path.as_ref(),
            meta,
            durability,
            clock,
            |path| {
                self.create(path, None).map_err(|source| RolloutWriteError {
                    path: path.to_owned(),
                    step: WriteStep::Create,
                    source,
                })
            },
            |path| self.state().sync_directory(path),
            |path| self.state().remove(path),
        )
    }

    /// Writes `snapshot` to `path` on this storage with the snapshot writer's own steps (a
    /// temporary file beside `path`, written, flushed, synced, renamed over `path`, the
    /// directory synced), as [`Snapshot::write_with`] does on the file system.
    ///
    /// # Errors
    ///
    /// As [`Snapshot::write`]; a simulated crash is an I/O error of the step it hit.
    pub fn write_snapshot(
        &self,
        snapshot: &Snapshot,
        path: impl AsRef<Path>,
    ) -> Result<SnapshotHeader, SnapshotError> {
        snapshot.write_on(&mut self.clone(), path.as_ref(), Replace::Anything)
    }

    /// Creates the file `path` (a temporary one when `temporary` names it so), empty.
    fn create(&self, path: &Path, temporary: Option<PathBuf>) -> io::Result<SimulatedFile> {
        let mut state = self.state();
        match state.step(Operation::Create)? {
            Go::Whole => {}
            Go::Crash(_) => return Err(State::crash_error()),
        }
        let name = temporary.clone().unwrap_or_else(|| path.to_owned());
        if state.names.contains_key(&name) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        let inode = state.inodes.len();
        state.inodes.push(Inode::default());
        state.names.insert(name, inode);
        Ok(SimulatedFile {
            storage: self.clone(),
            inode,
            position: None,
            temporary,
        })
    }
}

/// A file of a [`SimulatedStorage`]: a rollout sink (appending) or a snapshot's temporary file
/// (written where it was sought to, removed when dropped unless persisted).
#[derive(Debug)]
pub struct SimulatedFile {
    storage: SimulatedStorage,
    inode: usize,
    /// Where the next write goes (`None`: at the end, as for a file opened to append).
    position: Option<u64>,
    /// The temporary name, until the file is persisted.
    temporary: Option<PathBuf>,
}

impl SimulatedFile {
    fn write_bytes(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut state = self.storage.state();
        match state.step(Operation::Write)? {
            Go::Whole => {}
            // Written bytes are lost at any crash: half of them would show nowhere.
            Go::Crash(_) => return Err(State::crash_error()),
        }
        let written = &mut state.inodes[self.inode].written;
        let at = match self.position {
            None => written.len(),
            Some(position) => usize::try_from(position).unwrap_or(usize::MAX),
        };
        if written.len() < at {
            written.resize(at, 0);
        }
        let overlap = bytes.len().min(written.len() - at);
        written[at..at + overlap].copy_from_slice(&bytes[..overlap]);
        written.extend_from_slice(&bytes[overlap..]);
        if let Some(position) = &mut self.position {
            *position += bytes.len() as u64;
        }
        Ok(bytes.len())
    }

    fn flush_bytes(&mut self) -> io::Result<()> {
        let mut state = self.storage.state();
        let go = state.step(Operation::Flush)?;
        let inode = &mut state.inodes[self.inode];
        match go {
            Go::Whole => {
                inode.flushed.clone_from(&inode.written);
                Ok(())
            }
            Go::Crash(half) => {
                if half {
                    inode.flushed = half_way(&inode.flushed, &inode.written);
                }
                Err(State::crash_error())
            }
        }
    }

    fn sync_bytes(&mut self) -> io::Result<()> {
        let mut state = self.storage.state();
        let go = state.step(Operation::SyncData)?;
        let inode = &mut state.inodes[self.inode];
        match go {
            Go::Whole => {
                inode.synced.clone_from(&inode.flushed);
                Ok(())
            }
            Go::Crash(half) => {
                if half {
                    inode.synced = half_way(&inode.synced, &inode.flushed);
                }
                Err(State::crash_error())
            }
        }
    }
}

impl RolloutSink for SimulatedFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_bytes(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_bytes()
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.sync_bytes()
    }
}

impl Write for SimulatedFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_bytes(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_bytes()
    }
}

impl Seek for SimulatedFile {
    /// Moves where the next write goes (no storage operation).
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let len = self.storage.state().inodes[self.inode].written.len() as u64;
        let current = self.position.unwrap_or(len);
        let position = match to {
            SeekFrom::Start(position) => Some(position),
            SeekFrom::End(offset) => len.checked_add_signed(offset),
            SeekFrom::Current(offset) => current.checked_add_signed(offset),
        }
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        self.position = Some(position);
        Ok(position)
    }
}

impl Drop for SimulatedFile {
    /// A temporary file not persisted is removed, as `tempfile` removes it (best effort: after
    /// a crash nothing is removed, and the stray file stays).
    fn drop(&mut self) {
        if let Some(name) = self.temporary.take() {
            let _ = self.storage.state().remove(&name);
        }
    }
}

impl SnapshotStorage for SimulatedStorage {
    type Temporary = SimulatedFile;

    fn check_target(&mut self, _: &Path, _: SnapshotTarget<'_>) -> Result<(), SnapshotError> {
        Ok(())
    }

    fn create_temporary(&mut self, path: &Path) -> io::Result<SimulatedFile> {
        let number = {
            let mut state = self.state();
            state.temporaries += 1;
            state.temporaries
        };
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temporary = parent(path).join(format!(".{name}.tmp-{number}"));
        let mut file = self.create(path, Some(temporary))?;
        file.position = Some(0);
        Ok(file)
    }

    fn sync_data(&mut self, file: &mut SimulatedFile) -> io::Result<()> {
        file.sync_bytes()
    }

    fn persist(&mut self, mut file: SimulatedFile, path: &Path) -> io::Result<()> {
        let mut state = self.state();
        match state.step(Operation::Rename)? {
            Go::Whole => {}
            Go::Crash(_) => return Err(State::crash_error()),
        }
        if let Some(name) = file.temporary.take() {
            state.names.remove(&name);
        }
        state.names.insert(path.to_owned(), file.inode);
        Ok(())
    }

    fn sync_directory(&mut self, path: &Path) -> io::Result<()> {
        self.state().sync_directory(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_way_moves_half_of_the_changed_bytes() {
        assert_eq!(half_way(b"ab", b"abcdef"), b"abcd");
        assert_eq!(half_way(b"0000xyz", b"HEADxyz"), b"HEA0xyz");
        assert_eq!(half_way(b"", b"abc"), b"a");
        assert_eq!(half_way(b"same", b"same"), b"same");
    }

    #[test]
    fn each_crash_kind_keeps_its_level() {
        let storage = SimulatedStorage::new();
        let mut file = storage.create(Path::new("d/f"), None).expect("created");
        RolloutSink::write(&mut file, b"one\n").expect("written");
        RolloutSink::flush(&mut file).expect("flushed");
        RolloutSink::sync_data(&mut file).expect("synced");
        RolloutSink::write(&mut file, b"two\n").expect("written");
        RolloutSink::flush(&mut file).expect("flushed");
        RolloutSink::write(&mut file, b"three\n").expect("written");
        let after = |kind| storage.file_after(kind, "d/f");
        assert_eq!(
            after(CrashKind::Process).as_deref(),
            Some(&b"one\ntwo\n"[..])
        );
        assert_eq!(
            after(CrashKind::PowerLoss),
            None,
            "the name was never synced"
        );
        assert_eq!(
            after(CrashKind::PowerLossAfterDirectoryWrite).as_deref(),
            Some(&b"one\n"[..])
        );
        storage
            .state()
            .sync_directory(Path::new("d/f"))
            .expect("synced");
        assert_eq!(after(CrashKind::PowerLoss).as_deref(), Some(&b"one\n"[..]));
        assert_eq!(
            storage.operations(),
            [
                Operation::Create,
                Operation::Write,
                Operation::Flush,
                Operation::SyncData,
                Operation::Write,
                Operation::Flush,
                Operation::Write,
                Operation::SyncDirectory,
            ]
        );
    }

    #[test]
    fn a_crash_fails_its_operation_and_every_later_one() {
        let storage = SimulatedStorage::new();
        storage.crash_at(3, true);
        let mut file = storage.create(Path::new("f"), None).expect("created");
        RolloutSink::write(&mut file, b"abcd").expect("written");
        assert!(RolloutSink::flush(&mut file).is_err());
        assert_eq!(storage.crashed(), Some(Operation::Flush));
        assert!(RolloutSink::write(&mut file, b"e").is_err());
        assert_eq!(
            storage.file_after(CrashKind::Process, "f").as_deref(),
            Some(&b"ab"[..]),
            "half of the flush"
        );
        assert_eq!(storage.operations().len(), 2);
    }
}
