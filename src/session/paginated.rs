//! Forks and reverts of a paginated thread, as Codex makes them: a new file that copies no line,
//! whose `session_meta` names where the thread's lineage is cut (`docs/rollout-format.md`,
//! "Writing paginated files").
//!
//! A cut before a user turn is the start of the line that began the turn: the `task_started` and
//! `turn_context` lines just before its first item, else the first item itself. What resuming the
//! new file gives is checked against the history the session cut: a cut no line can express (the
//! turn began inside a compaction's replacement history) is refused and the new file removed.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::Error;
use crate::history::History;
use crate::rollout::{
    CodexWriterLock, Durability, Event, Facts, FileSink, FirstLine, HistoryBase, HistoryMode,
    LineKind, ReadOptions, ResumeOptions, Rollout, RolloutError, RolloutWriteError, RolloutWriter,
    SessionMeta, WriteStep, home_of_tree, resume_file, rollout_file_ids, rollout_id_of,
};

use super::Session;
use super::turns::Turns;

impl Session<FileSink> {
    /// [`Session::fork`] of a paginated thread: the new file's `session_meta` has a
    /// `history_base` where the lineage is cut before `kept` ends.
    pub(super) fn fork_paginated(
        &self,
        codex_lock: Option<CodexWriterLock>,
        kept: History,
        path: &Path,
        meta: SessionMeta,
        durability: Durability,
    ) -> Result<Session<FileSink>, Error> {
        let meta = meta.paginated(self.cut_keeping(&kept)?);
        let writer = RolloutWriter::create(path, &meta, durability)?;
        let (writer, history, turns) = self.checked_start(writer, &kept, self.fork_home(path))?;
        Ok(self.forked(history, writer, &meta, codex_lock, turns))
    }

    /// Reverts the thread to before user turn `turn` (1-based), as Codex's `thread/revert` does:
    /// a new file at `path` continues the thread's lineage up to where that turn began, and the
    /// session appends to it from now on. The thread keeps its id; the old files are not changed.
    ///
    /// The new file holds one line: the current file's `session_meta` as read, with the cut as
    /// its `history_base` (none when the turn is the thread's first: the thread starts empty).
    /// Its name must be a rollout file name of this thread with a rollout id of its own,
    /// `rollout-<timestamp>-<thread id>_<rollout id>.jsonl` ([`rollout_file_name`]), so that a
    /// later fork or revert can find it by that id; for Codex to find it, it belongs in the
    /// Codex home's `sessions/` tree. `turn` past the last turn keeps every line.
    ///
    /// [`rollout_file_name`]: crate::rollout::rollout_file_name
    ///
    /// # Errors
    ///
    /// [`Error::RolloutWrite`] with [`WriteStep::RevertLegacy`] for a thread that is not
    /// paginated (roll it back instead: [`Session::rollback`]), [`WriteStep::RevertName`] for a
    /// name that is not such a file name, [`WriteStep::PaginatedFork`] when no line begins the
    /// turn, or when the new file cannot be written; [`Error::Rollout`] when the thread's files
    /// cannot be read. The session is unchanged after an error.
    pub fn revert(&mut self, turn: usize, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        self.writer.flush()?;
        let refuse = |at: &Path, step| -> Error {
            RolloutWriteError {
                path: at.to_owned(),
                step,
                source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
            }
            .into()
        };
        if self.writer.next_ordinal().is_none() {
            return Err(refuse(self.writer.path(), WriteStep::RevertLegacy));
        }
        let named = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(rollout_file_ids);
        let own = rollout_id_of(self.writer.path(), self.thread_id);
        if !named.is_some_and(|(thread, rollout)| {
            thread == self.thread_id && rollout != thread && rollout != own
        }) {
            return Err(refuse(path, WriteStep::RevertName));
        }
        let kept = self.history.before_user_turn(turn)?;
        let base = self.cut_keeping(&kept)?;
        let payload = self.reverted_meta(base)?;
        let first = FirstLine::Payload {
            json: &payload,
            ordinal: Some(base.map_or(0, |base| base.end_ordinal_exclusive)),
        };
        let writer = RolloutWriter::create_starting(path, first, self.writer.durability())?;
        let home = self.codex_home.clone().or_else(|| home_of_tree(path));
        let (writer, history, turns) = self.checked_start(writer, &kept, home)?;
        // The old writer is dropped here, which gives its file's lock back.
        self.writer = writer;
        self.history = history;
        self.turns = turns;
        self.publish();
        Ok(())
    }

    /// The `history_base` of a new file that continues this thread with `kept`, a history this
    /// one had before one of its user turns (or all of it): the end of the file when `kept` is
    /// all of it, else the start of the line that began the turn after `kept`.
    fn cut_keeping(&self, kept: &History) -> Result<Option<HistoryBase>, Error> {
        let path = self.writer.path();
        let Some(next_ordinal) = self.writer.next_ordinal() else {
            return Err(unsupported_cut(path));
        };
        if kept.len() == self.history.len() {
            let end_byte_offset = std::fs::metadata(path)
                .map_err(|source| RolloutError::Io {
                    path: path.to_owned(),
                    source,
                })?
                .len();
            return Ok(Some(HistoryBase {
                rollout_id: rollout_id_of(path, self.thread_id),
                end_ordinal_exclusive: next_ordinal,
                end_byte_offset,
            }));
        }
        let read = ReadOptions::default();
        let rollout =
            Rollout::read_file(path, read)?.with_lineage(self.codex_home.as_deref(), read)?;
        let resumed = rollout.resume(self.history.truncation())?;
        let place = resumed.entry_lines.get(kept.len()).copied();
        let lines = &rollout.lines;
        // The line of the first entry `kept` leaves out (index 0 is the newest `session_meta`).
        let mut at = place
            .and_then(|place| {
                lines
                    .iter()
                    .position(|line| line.place() == place && line.kind == LineKind::ResponseItem)
            })
            .ok_or_else(|| unsupported_cut(path))?;
        // Back over the lines that opened the turn: its `turn_context`, then its `task_started`.
        while at > 1 && lines[at - 1].file == lines[at].file {
            match lines[at - 1].facts() {
                Facts::TurnContext { .. } => at -= 1,
                Facts::Event(Event::TurnStarted { .. }) => {
                    at -= 1;
                    break;
                }
                _ => break,
            }
        }
        let cut = &lines[at];
        let (rollout_id, own_base) = match rollout
            .lineage()
            .len()
            .checked_sub(1 + usize::from(cut.file))
        {
            Some(index) => {
                let file = &rollout.lineage()[index];
                let base = file.report.pagination.as_ref().and_then(|page| page.base);
                (file.rollout_id, base)
            }
            None => (
                rollout.rollout_id(),
                rollout
                    .report
                    .pagination
                    .as_ref()
                    .and_then(|page| page.base),
            ),
        };
        let first_own = lines.iter().skip(1).position(|line| line.file == cut.file);
        if first_own.map(|index| index + 1) == Some(at) {
            // A cut at a file's first line of its own leaves nothing of it: cut where it began.
            return Ok(own_base);
        }
        let end_ordinal_exclusive = cut.ordinal.ok_or_else(|| unsupported_cut(path))?;
        Ok(Some(HistoryBase {
            rollout_id,
            end_ordinal_exclusive,
            end_byte_offset: cut.offset,
        }))
    }

    /// The `session_meta` payload of a revert's file: the current file's own, as read, with
    /// `base` as its `history_base`.
    fn reverted_meta(&self, base: Option<HistoryBase>) -> Result<String, Error> {
        let path = self.writer.path();
        let rollout = Rollout::read_file(path, ReadOptions::default())?;
        let meta = rollout
            .lines
            .iter()
            .find(|line| line.kind == LineKind::SessionMeta)
            .map(|line| serde_json::from_str::<Map<String, Value>>(line.payload_json()));
        let Some(Ok(mut meta)) = meta else {
            return Err(unsupported_cut(path));
        };
        meta.insert(
            "history_mode".into(),
            serde_json::to_value(HistoryMode::Paginated).unwrap_or(Value::Null),
        );
        match base {
            Some(base) => {
                let base = serde_json::to_value(base).unwrap_or(Value::Null);
                meta.insert("history_base".into(), base);
            }
            None => {
                meta.remove("history_base");
            }
        }
        Ok(Value::Object(meta).to_string())
    }

    /// The new file `writer` started, checked: resuming it (its lineage found under `home`)
    /// must give `kept`'s entries, and the history and turns it gives are returned with the
    /// writer. When it does not, or cannot be read, the new file is removed again (best effort:
    /// the error to report is the check's).
    fn checked_start(
        &self,
        mut writer: RolloutWriter<FileSink>,
        kept: &History,
        home: Option<PathBuf>,
    ) -> Result<(RolloutWriter<FileSink>, History, Turns), Error> {
        let options = ResumeOptions {
            codex_home: home,
            keep_scan_facts: true,
            ..ResumeOptions::new(self.history.truncation())
        };
        let checked = writer
            .flush()
            .map_err(Error::from)
            .and_then(|()| Ok(resume_file(writer.path(), &options)?))
            .and_then(|mut resumed| {
                if resumed.history().entries() == kept.entries() {
                    let turns = Turns::of_resumed(&mut resumed);
                    Ok((resumed.into_history(), turns))
                } else {
                    Err(unsupported_cut(self.writer.path()))
                }
            });
        match checked {
            Ok((history, turns)) => Ok((writer, history, turns)),
            Err(error) => {
                let _ = writer.remove_new_file();
                Err(error)
            }
        }
    }
}

/// The error for a cut no line of the lineage can express.
fn unsupported_cut(path: &Path) -> Error {
    RolloutWriteError {
        path: path.to_owned(),
        step: WriteStep::PaginatedFork,
        source: std::io::Error::from(std::io::ErrorKind::Unsupported),
    }
    .into()
}
