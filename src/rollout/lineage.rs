//! A paginated thread's lineage: the files whose prefixes a file continues, found by rollout id
//! under the Codex home and cut where the next file's `history_base` says (`docs/rollout-format.md`,
//! "Lineage").
//!
//! The history of a thread whose file has a base is the root's lines after its `session_meta`,
//! up to the first cut, then each newer file's lines after its own `session_meta`, up to the next
//! cut; what an ancestor appended after its cut is not part of it, and the newest file's
//! `session_meta` is the one that counts. An ancestor that cannot be found or read, a cycle, or a
//! cut past the end of a file is an error naming the rollout id and path: a history is never
//! passed off as whole when part of it is missing.

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::item::ThreadId;

use super::error::{LineageProblem, RolloutError};
use super::line::{LineKind, RolloutLine};
use super::paginated::HistoryBase;
use super::reader::{Rollout, open_rollout};
use super::report::{LineageFile, ReadOptions};

/// The environment variable that names the Codex home.
pub const CODEX_HOME_VAR: &str = "CODEX_HOME";

/// The Codex home for a rollout at `path`: `explicit` when given, else the directory that holds
/// the `sessions/` or `archived_sessions/` tree the file is in, else `CODEX_HOME`. The tree a file
/// is in comes before the variable: a copied or backed-up home finds its own files, not those of
/// the home Codex is using.
pub fn codex_home(path: &Path, explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(home) = explicit {
        return Some(home.to_owned());
    }
    home_of_tree(path).or_else(|| {
        std::env::var_os(CODEX_HOME_VAR)
            .filter(|home| !home.is_empty())
            .map(PathBuf::from)
    })
}

/// The directory that holds the `sessions/` or `archived_sessions/` tree `path` is in: the Codex
/// home whose file it is.
pub(crate) fn home_of_tree(path: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    absolute
        .ancestors()
        .skip(1)
        .find(|dir| {
            dir.file_name()
                .is_some_and(|name| name == "sessions" || name == "archived_sessions")
        })
        .and_then(Path::parent)
        .map(Path::to_owned)
}

/// The ids in a rollout file name: `rollout-<19-character timestamp>-<thread id>[_<rollout
/// id>].jsonl` (or `.jsonl.zst`). Without `_`, the rollout id is the thread id.
pub fn rollout_file_ids(name: &str) -> Option<(ThreadId, ThreadId)> {
    let stem = name
        .strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".jsonl.zst"))?;
    let ids = stem
        .strip_prefix("rollout-")?
        .get(19..)?
        .strip_prefix('-')?;
    let (thread, rollout) = ids.split_once('_').unwrap_or((ids, ids));
    Some((thread.parse().ok()?, rollout.parse().ok()?))
}

/// The name Codex gives a rollout file started at `time` (UTC here; Codex uses local time):
/// `rollout-<YYYY-MM-DDThh-mm-ss>-<thread>.jsonl`, or with `_<rollout>` before the extension for
/// a file whose rollout id is not the thread's (a revert's). [`rollout_file_ids`] reads it back.
pub fn rollout_file_name(thread: ThreadId, rollout: Option<ThreadId>, time: SystemTime) -> String {
    let stamp = humantime::format_rfc3339_seconds(time).to_string();
    let stamp = stamp.get(..19).unwrap_or(&stamp).replace(':', "-");
    match rollout.filter(|&rollout| rollout != thread) {
        Some(rollout) => format!("rollout-{stamp}-{thread}_{rollout}.jsonl"),
        None => format!("rollout-{stamp}-{thread}.jsonl"),
    }
}

/// The rollout id of the file at `path`: the one its name gives, else `thread`.
pub(crate) fn rollout_id_of(path: &Path, thread: ThreadId) -> ThreadId {
    path.file_name()
        .and_then(|name| name.to_str())
        .and_then(rollout_file_ids)
        .map_or(thread, |(_, rollout)| rollout)
}

/// The file of rollout id `id` under `home`'s `sessions/`, else its `archived_sessions/`.
fn find_rollout(home: &Path, id: ThreadId) -> Option<PathBuf> {
    ["sessions", "archived_sessions"]
        .iter()
        .find_map(|tree| find_in(&home.join(tree), id))
}

/// A depth-first search of `dir` for a plain rollout file of rollout id `id`, in name order.
fn find_in(dir: &Path, id: ThreadId) -> Option<PathBuf> {
    let mut entries: Vec<_> = fs::read_dir(dir).ok()?.flatten().collect();
    entries.sort_by_key(fs::DirEntry::file_name);
    entries.into_iter().find_map(|entry| {
        let path = entry.path();
        let kind = entry.file_type().ok()?;
        if kind.is_dir() {
            find_in(&path, id)
        } else {
            let name = entry.file_name();
            let (_, rollout) = rollout_file_ids(name.to_str()?)?;
            (rollout == id && name.to_str()?.ends_with(".jsonl")).then_some(path)
        }
    })
}

impl Rollout {
    /// The files of a paginated thread's lineage, oldest first, the file read last; empty for a
    /// rollout read on its own (legacy, or paginated without a base).
    pub fn lineage(&self) -> &[LineageFile] {
        &self.lineage
    }

    /// This rollout with its lineage, when its first `session_meta` has a base: the lines of
    /// every ancestor, each cut where the next file says, oldest first, then this file's, and
    /// this file's `session_meta` first of all (the lines [`Rollout::resume`] replays). Each
    /// file is only read. `home` is found as [`codex_home`] says.
    ///
    /// # Errors
    ///
    /// [`RolloutError::Lineage`] when an ancestor cannot be found or is not one (the rollout id
    /// and the file that names it), and the errors of [`Rollout::read_file`] for an ancestor.
    pub fn with_lineage(
        mut self,
        home: Option<&Path>,
        options: ReadOptions,
    ) -> Result<Rollout, RolloutError> {
        let Some(mut base) = self.report.pagination.as_ref().and_then(|page| page.base) else {
            return Ok(self);
        };
        let newest_id = self.rollout_id();
        let lineage_error = |path: &Path, rollout_id, problem| RolloutError::Lineage {
            path: path.to_owned(),
            rollout_id,
            problem,
        };
        let home = codex_home(self.path(), home).ok_or_else(|| {
            lineage_error(self.path(), base.rollout_id, LineageProblem::NoCodexHome)
        })?;
        let mut seen = HashSet::from([newest_id]);
        // Newest first while walking; reversed at the end.
        let mut files = vec![own_part(&self, newest_id, None)];
        let mut parts = vec![own_lines(std::mem::take(&mut self.lines))];
        let mut child = self.path().to_owned();
        loop {
            let problem = |problem| lineage_error(&child, base.rollout_id, problem);
            if parts.len() > usize::from(u16::MAX) {
                return Err(problem(LineageProblem::TooLong));
            }
            if !seen.insert(base.rollout_id) {
                return Err(problem(LineageProblem::Cycle));
            }
            if base.end_ordinal_exclusive == 0 {
                return Err(problem(LineageProblem::CutBeforeHistory));
            }
            let path = find_rollout(&home, base.rollout_id)
                .ok_or_else(|| problem(LineageProblem::Missing { home: home.clone() }))?;
            let file = open_rollout(&path)?;
            let length = file
                .metadata()
                .map_err(|source| RolloutError::Io {
                    path: path.clone(),
                    source,
                })?
                .len();
            if base.end_byte_offset > length {
                return Err(problem(LineageProblem::CutPastEnd {
                    ancestor: path,
                    end_byte_offset: base.end_byte_offset,
                    length,
                }));
            }
            // Hashed as it is read: a snapshot of the thread stands for these very bytes.
            let mut prefix = Hashing::new(file.take(base.end_byte_offset));
            let ancestor = Rollout::read(&mut prefix, &path, options)?;
            let Some(pagination) = &ancestor.report.pagination else {
                return Err(problem(LineageProblem::NotPaginated { ancestor: path }));
            };
            let next = pagination.base;
            let mut part = own_part(&ancestor, base.rollout_id, Some(base));
            part.digest = Some(prefix.finish());
            files.push(part);
            let Rollout { lines, .. } = ancestor;
            parts.push(own_lines(lines));
            child = path;
            match next {
                Some(next) => base = next,
                None => break,
            }
        }
        let meta = parts[0].0.take();
        for (back, (_, lines)) in parts.iter_mut().enumerate() {
            // The walk stops before `back` outgrows a u16.
            let file = u16::try_from(back).unwrap_or(u16::MAX);
            for line in lines {
                line.file = file;
            }
        }
        self.lines = meta
            .into_iter()
            .chain(parts.into_iter().rev().flat_map(|(_, lines)| lines))
            .collect();
        files.reverse();
        self.lineage = files;
        Ok(self)
    }

    /// The rollout id of this file: from its name, else its thread id.
    pub(crate) fn rollout_id(&self) -> ThreadId {
        rollout_id_of(self.path(), self.thread_id())
    }
}

/// A file's entry in the lineage: what its lines after its last `session_meta` are.
fn own_part(rollout: &Rollout, rollout_id: ThreadId, cut: Option<HistoryBase>) -> LineageFile {
    let own = own_start(&rollout.lines);
    let ordinals = rollout.lines[own..].iter().filter_map(|line| line.ordinal);
    LineageFile {
        rollout_id,
        path: rollout.path().to_owned(),
        cut,
        lines: rollout.lines.len() - own,
        first_ordinal: ordinals.clone().min(),
        last_ordinal: ordinals.max(),
        report: rollout.report.clone(),
        digest: None,
    }
}

/// Whether the file of rollout id `rollout_id` under `home` still starts with the
/// `end_byte_offset` bytes whose BLAKE3 digest is `digest` (what a snapshot of a thread that
/// continues it covers). `false` when no such file is found or it cannot be read.
pub(crate) fn holds_prefix(
    home: &Path,
    rollout_id: ThreadId,
    end_byte_offset: u64,
    digest: &blake3::Hash,
) -> bool {
    let Some(file) = find_rollout(home, rollout_id).and_then(|path| fs::File::open(path).ok())
    else {
        return false;
    };
    let mut prefix = Hashing::new(file.take(end_byte_offset));
    match std::io::copy(&mut prefix, &mut std::io::sink()) {
        Ok(read) => read == end_byte_offset && prefix.finish() == *digest,
        Err(_) => false,
    }
}

/// A reader that hashes what it reads.
struct Hashing<R> {
    inner: R,
    hasher: blake3::Hasher,
}

impl<R: Read> Hashing<R> {
    fn new(inner: R) -> Self {
        Hashing {
            inner,
            hasher: blake3::Hasher::new(),
        }
    }

    /// The digest of everything read.
    fn finish(&self) -> blake3::Hash {
        self.hasher.finalize()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.hasher.update(&buffer[..read]);
        Ok(read)
    }
}

/// The index of the first line after the last `session_meta` line (a file's own part: Codex's
/// reverse scan of a segment stops at its `session_meta`).
fn own_start(lines: &[RolloutLine]) -> usize {
    lines
        .iter()
        .rposition(|line| line.kind == LineKind::SessionMeta)
        .map_or(0, |index| index + 1)
}

/// A file's `session_meta` line (its last one) and its own lines after it.
fn own_lines(mut lines: Vec<RolloutLine>) -> (Option<RolloutLine>, Vec<RolloutLine>) {
    let own = own_start(&lines);
    let rest = lines.split_off(own);
    (lines.pop(), rest)
}
