//! The session layer, the top floor: [`Session`], a history and its rollout file kept in step.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::error::Error;
use crate::history::{
    Compacted, History, HistoryPublisher, Recorded, SharedHistory, TruncationPolicy,
    WorldStateUpdate,
};
use crate::item::{Entry, ItemError, ItemKind, ResponseItem, ThreadId, TurnId, parse_item};
use crate::request::{PromptCompiler, RequestSettings};
use crate::rollout::{
    CodexWriterLock, Durability, FileSink, IncompleteTurn, LineKind, LoadReport, Pagination,
    ResumeOptions, ResumeSource, RolloutError, RolloutSink, RolloutText, RolloutWriteError,
    RolloutWriter, SessionMeta, WriteStep, home_of_tree, resume_file, rollout_file_ids,
};
use crate::snapshot::SnapshotHeader;
use crate::stream::{RecordFailure, StreamTarget};
use crate::world::{WorldSnapshot, WorldState, WorldStateChange};

mod paginated;
mod turns;

pub use turns::{ActiveTurn, TurnAbortReason};
use turns::{TurnEnd, Turns};

/// A history whose every change is appended to a rollout.
///
/// Recorded items become `response_item` lines, as the history keeps them before truncation
/// (never filtered items, never projection repairs). Compactions become `compacted` lines,
/// rollbacks `thread_rolled_back` events, world states `world_state` lines
/// ([`Session::persist_world_state`]), turns Codex's turn events ([`Session::begin_turn`]).
/// Resuming the file, through a snapshot or not, gives a history equal to this one, entry for
/// entry and world-state baseline included, with the same previous turn's settings and reference
/// context item; a later rollback changes both alike.
///
/// The history changes first, then the line is written. If the write fails, the error is
/// returned, the history keeps the change, and the line stays pending in the writer: it is written
/// before the next line, or by [`Session::flush`].
///
/// A session over a file holds the file's lock while it lives, so a second session on the same
/// rollout is refused ([`WriteStep::Locked`](crate::rollout::WriteStep::Locked)). Reading takes
/// no lock. Other threads read the history through [`Session::share`]. The whole story:
/// `docs/architecture.md`, "Sessions".
///
/// # Examples
///
/// ```
/// use agent_history::{Durability, ResumeOptions, Session, SessionMeta, ThreadId, DEFAULT_TRUNCATION};
///
/// let dir = std::env::temp_dir().join(format!("agent-history-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("rollout.jsonl");
/// # std::fs::remove_file(&path).ok();
/// let meta = SessionMeta::new(ThreadId::random());
/// let mut session = Session::create(&path, meta, DEFAULT_TRUNCATION, Durability::SyncData)?;
/// session.record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#)?;
/// session.record_json(r#"{"type":"function_call","name":"ls","arguments":"{}","call_id":"c1"}"#)?;
/// let live = session.history().clone();
/// drop(session); // it holds the file's lock: no second writer while it lives
///
/// let resumed = Session::resume(&path, &ResumeOptions::default(), Durability::SyncData)?;
/// assert_eq!(resumed.session().history().entries(), live.entries());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Session<S: RolloutSink = FileSink> {
    history: History,
    writer: RolloutWriter<S>,
    thread_id: ThreadId,
    /// The base instructions its `session_meta` records ("" when none), for
    /// [`Session::compiler`].
    base_instructions: Arc<str>,
    assign_ids: bool,
    /// Publishes the history to the readers of [`Session::share`], once there are any.
    publisher: Option<HistoryPublisher>,
    /// The Codex home a paginated thread's lineage is found in, when one was named or the
    /// rollout is in a home's tree.
    codex_home: Option<PathBuf>,
    /// The file's turn facts, and what resume settles over them.
    turns: Turns,
    /// Codex's writer lock on the thread, for a rollout under a Codex home. Declared last, so
    /// dropped last: the writer has written and closed the file when it is given back.
    codex_lock: Option<CodexWriterLock>,
}

/// A session resumed from its rollout ([`Session::resume`]), and what resuming found. Its parts
/// are read through methods, as those of [`Resumed`](crate::Resumed) are;
/// [`ResumedSession::into_session`] takes the session out.
#[derive(Debug)]
pub struct ResumedSession {
    session: Session,
    report: LoadReport,
    source: ResumeSource,
}

impl ResumedSession {
    /// The session, appending to the rollout it was resumed from.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The session, to record into while the rest of the result is still at hand.
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    /// The session, taken out.
    pub fn into_session(self) -> Session {
        self.session
    }

    /// What the reader found in the lines it read.
    pub fn report(&self) -> &LoadReport {
        &self.report
    }

    /// How the history was resumed: from every line, or from a snapshot plus the later lines
    /// (or why the snapshot could not be used).
    pub fn source(&self) -> &ResumeSource {
        &self.source
    }

    /// The previous turn's settings (the `turn_context` payload resume settled on), for the next
    /// turn's settings diff: [`Session::previous_turn_settings`].
    pub fn previous_turn_settings(&self) -> Option<&RawValue> {
        self.session.previous_turn_settings()
    }

    /// The rollout's last turn when it was started and neither completed nor aborted (the
    /// session stopped inside it): [`LoadReport::incomplete_turn`]. The calls it lists have no
    /// output; the next projection repairs them, and nothing is written for them.
    pub fn incomplete_turn(&self) -> Option<&IncompleteTurn> {
        self.report.incomplete_turn.as_ref()
    }
}

impl Session<FileSink> {
    /// Starts a session: creates the rollout at `path` (it must not exist) with `meta` as its
    /// first line, and holds the file's lock while the session lives (see [`FileSink`]). If the
    /// first line cannot be written, the file is removed again ([`RolloutWriter::create`]).
    ///
    /// # Errors
    ///
    /// [`Error::RolloutWrite`] when the file cannot be created, locked or written.
    pub fn create(
        path: impl AsRef<Path>,
        meta: SessionMeta,
        truncation: TruncationPolicy,
        durability: Durability,
    ) -> Result<Self, Error> {
        let path = path.as_ref();
        let codex_lock = codex_writer_lock(path, meta.id)?;
        let writer = RolloutWriter::create(path, &meta, durability)?;
        Ok(Session {
            history: History::with_truncation(truncation),
            writer,
            thread_id: meta.id,
            base_instructions: instructions_of(&meta),
            assign_ids: true,
            publisher: None,
            codex_home: home_of_tree(path),
            turns: Turns::default(),
            codex_lock,
        })
    }

    /// Resumes the session in the rollout at `path` and continues appending to it.
    ///
    /// The file is opened and locked first (see [`FileSink`]), so no other writer can append
    /// between what is read and what is appended. It is then read, through the snapshot
    /// [`ResumeOptions::snapshot`] names when it stands for a prefix of the file, and a torn last
    /// line is ended with a newline. [`ResumeOptions::snapshot_ready`] does not apply: a session
    /// resumes every line, since it appends after them.
    ///
    /// # Errors
    ///
    /// [`Error::RolloutWrite`] when the file cannot be opened for appending or locked
    /// ([`WriteStep::Locked`](crate::rollout::WriteStep::Locked) when another writer holds it)
    /// or is in the legacy format ([`WriteStep::LegacyFormat`]), compressed
    /// ([`WriteStep::Compressed`]), or paginated without an ordinal to continue from
    /// ([`WriteStep::Paginated`]), [`Error::Rollout`] when it
    /// cannot be read as a rollout.
    pub fn resume(
        path: impl AsRef<Path>,
        options: &ResumeOptions,
        durability: Durability,
    ) -> Result<ResumedSession, Error> {
        let path = path.as_ref();
        let options = ResumeOptions {
            snapshot_ready: false,
            keep_scan_facts: true,
            ..options.clone()
        };
        let mut sink = FileSink::open_locked(path)?;
        let home = options.codex_home.clone().or_else(|| home_of_tree(path));
        // Codex's lock before reading, keyed by the thread id the file's name gives; by the one
        // its `session_meta` gives when the name gives none or another.
        let named = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(rollout_file_ids)
            .map(|(thread, _)| thread);
        let mut codex_lock = match (&home, named) {
            (Some(home), Some(thread)) => {
                Some((thread, CodexWriterLock::acquire(home, thread, path)?))
            }
            _ => None,
        };
        let mut resumed = resume_file(path, &options)?;
        let thread_id = resumed.report.thread_id;
        if let Some(home) = &home
            && codex_lock
                .as_ref()
                .is_none_or(|(thread, _)| *thread != thread_id)
        {
            codex_lock = Some((thread_id, CodexWriterLock::acquire(home, thread_id, path)?));
        }
        let codex_lock = codex_lock.map(|(_, lock)| lock);
        let refused = if is_compressed_file(path)? {
            // A line appended to compressed data would not decompress.
            Some(WriteStep::Compressed)
        } else if resumed.report.legacy {
            // What this writer appends would read back as unknown items of the legacy format.
            Some(WriteStep::LegacyFormat)
        } else {
            match &resumed.report.pagination {
                // No line to number after: Codex refuses such a file too.
                Some(pagination) if pagination.next_ordinal().is_none() => {
                    Some(WriteStep::Paginated)
                }
                _ => None,
            }
        };
        if let Some(step) = refused {
            return Err(RolloutWriteError {
                path: path.to_owned(),
                step,
                source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
            }
            .into());
        }
        // After reading, so that the report still tells a torn tail.
        sink.end_torn_line(path)?;
        let mut writer =
            RolloutWriter::with_sink(sink, path, durability).after_lines(resumed.report.lines);
        if let Some(next) = resumed
            .report
            .pagination
            .as_ref()
            .and_then(Pagination::next_ordinal)
        {
            writer = writer.numbered_from(next);
        }
        let turns = Turns::of_resumed(&mut resumed);
        Ok(ResumedSession {
            session: Session {
                history: resumed.history,
                writer,
                thread_id: resumed.report.thread_id,
                base_instructions: resumed
                    .report
                    .base_instructions
                    .as_ref()
                    .map_or_else(|| Arc::from(""), |found| Arc::from(found.text.as_str())),
                assign_ids: true,
                publisher: None,
                codex_home: home,
                turns,
                codex_lock,
            },
            report: resumed.report,
            source: resumed.source,
        })
    }

    /// Writes a snapshot of the session's rollout to `path` (replaced atomically), so that a later
    /// [`Session::resume`] with [`ResumeOptions::with_snapshot`] reads only the lines appended
    /// after it. Pending lines are flushed first.
    ///
    /// The snapshot already at `path` is tried as a base, so a refresh reads only the lines
    /// appended since. One that cannot be used (an older format version, another rollout) is
    /// replaced after one read of the whole file (`docs/snapshot-format.md`, "Resume").
    ///
    /// # Errors
    ///
    /// [`Error::RolloutWrite`] when pending lines cannot be flushed, [`Error::Rollout`] when the
    /// rollout cannot be read, [`Error::Snapshot`] when the snapshot cannot be written.
    pub fn write_snapshot(&mut self, path: impl AsRef<Path>) -> Result<SnapshotHeader, Error> {
        let path = path.as_ref();
        self.writer.flush()?;
        let options = ResumeOptions::new(self.history.truncation())
            .with_snapshot(path)
            .snapshot_ready();
        let resumed = resume_file(self.writer.path(), &options)?;
        Ok(resumed.write_snapshot(path)?)
    }

    /// Forks the session at user turn `turn` (1-based): a new session whose history is this
    /// one before that turn began ([`History::before_user_turn`]; `turn` past the last turn forks
    /// everything), written to a new rollout at `path` whose `session_meta` carries
    /// `forked_from_id`. The new history shares structure with this one.
    ///
    /// Resuming the new rollout gives the forked history (its lines: `docs/rollout-format.md`,
    /// "Forks"). A paginated thread's fork copies no line: its `history_base` cuts the lineage
    /// where the turn began, and the new session's history is what resuming it gives ("Writing
    /// paginated files"). When writing it fails, the new file is removed again (best effort).
    ///
    /// # Errors
    ///
    /// [`Error::RolloutWrite`] when this session's pending lines cannot be flushed or the new
    /// file cannot be written; [`Error::Rollout`] when this session's file cannot be read;
    /// [`Error::Item`] when a message above the cut cannot be read (see
    /// [`History::drop_last_n_user_turns`]); for a paginated thread [`WriteStep::PaginatedFork`]
    /// when no line begins the turn (it began inside a compaction's replacement history).
    pub fn fork(
        &mut self,
        turn: usize,
        path: impl AsRef<Path>,
        mut meta: SessionMeta,
        durability: Durability,
    ) -> Result<Session<FileSink>, Error> {
        self.writer.flush()?;
        let history = self.history.before_user_turn(turn)?;
        let dropped_turns = self.history.reachable_user_turns() - history.reachable_user_turns();
        meta.forked_from_id = Some(self.thread_id);
        let codex_lock = codex_writer_lock(path.as_ref(), meta.id)?;
        if self.writer.next_ordinal().is_some() {
            return self.fork_paginated(codex_lock, history, path.as_ref(), meta, durability);
        }
        let mut writer = RolloutWriter::create(path.as_ref(), &meta, durability)?;
        let parent = self.writer.path().to_owned();
        let copied = copy_complete_lines(&parent, &mut writer).and_then(|()| {
            if dropped_turns > 0 {
                writer.append_rollback(dropped_turns as u64)?;
            }
            Ok(())
        });
        if let Err(error) = copied {
            // A fork without all its lines would resume to another history: remove it, as
            // `RolloutWriter::create` removes a file it could not start (best effort: the error
            // to report is the copy's).
            let _ = writer.remove_new_file();
            return Err(error);
        }
        let mut fork = self.forked(history, writer, &meta, codex_lock, self.turns.clone());
        if dropped_turns > 0 {
            fork.turns
                .wrote_rollback(dropped_turns as u64, &mut fork.history);
        }
        Ok(fork)
    }

    /// The session a fork of this one starts: `history` written by `writer` as thread
    /// `meta.id` with the turn facts `turns`, its lineage found under the home of the tree its
    /// file is in, else this one's.
    fn forked(
        &self,
        history: History,
        writer: RolloutWriter<FileSink>,
        meta: &SessionMeta,
        codex_lock: Option<CodexWriterLock>,
        turns: Turns,
    ) -> Session<FileSink> {
        Session {
            codex_home: self.fork_home(writer.path()),
            history,
            writer,
            thread_id: meta.id,
            base_instructions: instructions_of(meta),
            assign_ids: self.assign_ids,
            publisher: None,
            turns,
            codex_lock,
        }
    }

    /// The Codex home a fork's new file at `path` finds its lineage under.
    fn fork_home(&self, path: &Path) -> Option<PathBuf> {
        home_of_tree(path).or_else(|| self.codex_home.clone())
    }
}

/// Codex's writer lock on `thread`, when the new rollout at `path` is in a Codex home's
/// `sessions/` or `archived_sessions/` tree; `None` elsewhere, where Codex does not write.
fn codex_writer_lock(path: &Path, thread: ThreadId) -> Result<Option<CodexWriterLock>, Error> {
    let Some(home) = home_of_tree(path) else {
        return Ok(None);
    };
    Ok(Some(CodexWriterLock::acquire(&home, thread, path)?))
}

/// Whether the file at `path` holds zstd-compressed data.
fn is_compressed_file(path: &Path) -> Result<bool, Error> {
    let io_error = |source| RolloutError::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    Ok(RolloutText::new(file).map_err(io_error)?.is_compressed())
}

/// The text of `meta`'s base instructions, "" when it records none.
fn instructions_of(meta: &SessionMeta) -> Arc<str> {
    Arc::from(meta.base_instructions_text().unwrap_or_default())
}

/// Appends every newline-terminated line of the rollout at `from` to `writer`, verbatim. A torn
/// last line is left out.
fn copy_complete_lines<S: RolloutSink>(
    from: &Path,
    writer: &mut RolloutWriter<S>,
) -> Result<(), Error> {
    let read_error = |source| RolloutError::Io {
        path: from.to_owned(),
        source,
    };
    let mut reader = BufReader::new(File::open(from).map_err(read_error)?);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(read_error)?;
        if read == 0 || line.last() != Some(&b'\n') {
            break;
        }
        writer.append_verbatim_line(&line)?;
    }
    writer.flush()?;
    Ok(())
}

impl<S: RolloutSink> Session<S> {
    /// A session over an existing history and a writer whose rollout already holds that history
    /// (for custom sinks). It knows no turn of that rollout: none is active, and no previous
    /// turn's settings are settled until it writes turns of its own.
    pub fn from_parts(history: History, writer: RolloutWriter<S>, thread_id: ThreadId) -> Self {
        Session {
            history,
            writer,
            thread_id,
            base_instructions: Arc::from(""),
            assign_ids: true,
            publisher: None,
            codex_home: None,
            turns: Turns::default(),
            codex_lock: None,
        }
    }

    /// A request compiler with `settings` and this session's base instructions (those its
    /// `session_meta` records, [`SessionMeta::with_base_instructions`]; empty when none), so
    /// that they are given once, when the session is created.
    pub fn compiler(&self, settings: RequestSettings) -> PromptCompiler {
        PromptCompiler::new(settings).with_base_instructions(Arc::clone(&self.base_instructions))
    }

    /// Whether items recorded without an id get one (`<prefix>_<UUIDv7>`, as Codex assigns at
    /// the persistence boundary). On by default: an id makes the item, and the synthetic
    /// output of a call, stable across resumes. Server ids and any id already present are kept.
    pub fn with_id_assignment(mut self, assign: bool) -> Self {
        self.assign_ids = assign;
        self
    }

    /// The history.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// A handle through which other threads (a UI, a request builder) read this session's
    /// history: [`SharedHistory::load`] returns the latest version, lock-free, without ever
    /// blocking the session.
    ///
    /// From the first call on, the session publishes its history after each operation that
    /// changed it — a recorded item, a batch of [`Session::record_all_json`] (once, for the whole
    /// batch), a compaction, a rollback — when the operation returns, after its line was handed to
    /// the writer. A reader thus sees the state of a completed operation, never half of one, and
    /// sees what [`Session::history`] holds once the session's method has returned. A change whose
    /// line could not be written is published too, since the history keeps it. An operation that
    /// changed nothing publishes nothing. A fork starts unshared.
    ///
    /// Time: O(1); each later publication costs O(1) and one allocation.
    pub fn share(&mut self) -> SharedHistory {
        let history = &self.history;
        self.publisher
            .get_or_insert_with(|| HistoryPublisher::new(history.clone()))
            .share()
    }

    /// Publishes the history to the readers of [`Session::share`], if it is shared.
    fn publish(&mut self) {
        if let Some(publisher) = &mut self.publisher {
            publisher.publish(self.history.clone());
        }
    }

    /// The writer (durable lines, path, sink).
    pub fn writer(&self) -> &RolloutWriter<S> {
        &self.writer
    }

    /// Codex's writer lock on the thread, held while the session lives, when its rollout is
    /// under a Codex home (`docs/rollout-format.md`, "Codex's writer lock").
    pub fn codex_lock(&self) -> Option<&CodexWriterLock> {
        self.codex_lock.as_ref()
    }

    /// The thread id of the session.
    pub fn thread_id(&self) -> ThreadId {
        self.thread_id
    }

    /// The rollout's path (or the sink's label).
    pub fn path(&self) -> PathBuf {
        self.writer.path().to_owned()
    }

    /// Records an item given as JSON and appends it as a `response_item` line if it was stored.
    /// Multi-line JSON is stored in compact form and surrounding white space is trimmed, so that
    /// the line and the entry hold the same text.
    ///
    /// # Errors
    ///
    /// [`Error::Item`] when the text is not an item (nothing changes);
    /// [`Error::RolloutWrite`] when the line could not be written (the history has the item).
    pub fn record_json(&mut self, json: &str) -> Result<Recorded, Error> {
        let (recorded, line) = self.record_prepared(json)?;
        if let Some(entry) = line {
            let written = self.writer.append_entries([&entry]);
            self.turns.wrote_entries([&entry], &mut self.history);
            self.publish();
            written?;
        }
        Ok(recorded)
    }

    /// Records several items and appends the stored ones as one batch (one flush or sync). All
    /// or nothing: the items are recorded into a copy of the history (O(1)), which replaces it
    /// only when every item was recorded.
    ///
    /// # Errors
    ///
    /// As [`Session::record_json`]; on an invalid item nothing is recorded or written.
    pub fn record_all_json<'a>(
        &mut self,
        items: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<Recorded>, Error> {
        let mut next = self.history.clone();
        let mut outcomes = Vec::new();
        let mut lines: Vec<Entry> = Vec::new();
        for json in items {
            let (recorded, line) = Self::record_into(&mut next, self.prepare(json)?)?;
            lines.extend(line);
            outcomes.push(recorded);
        }
        self.history = next;
        if !lines.is_empty() {
            let written = self.writer.append_entries(&lines);
            self.turns.wrote_entries(&lines, &mut self.history);
            self.publish();
            written?;
        }
        Ok(outcomes)
    }

    /// Records a typed item (serialized once) and appends it if it was stored.
    ///
    /// # Errors
    ///
    /// As [`Session::record_json`].
    pub fn record(&mut self, item: &ResponseItem) -> Result<Recorded, Error> {
        let json = serde_json::to_string(item).map_err(ItemError::Serialize)?;
        self.record_json(&json)
    }

    /// Compacts the history locally ([`History::compact`]) and appends the `compacted` line.
    ///
    /// # Errors
    ///
    /// [`Error::Item`] when the history cannot be compacted (nothing changes);
    /// [`Error::RolloutWrite`] when the line could not be written (the history is compacted).
    pub fn compact(&mut self, summary_text: &str) -> Result<Compacted, Error> {
        let compacted = self.history.compact(summary_text)?;
        let written = self.writer.append_compacted(&compacted);
        self.turns.wrote_compaction(&mut self.history);
        self.publish();
        written?;
        Ok(compacted)
    }

    /// Rolls back the last `n` user turns and appends the `thread_rolled_back` event.
    ///
    /// # Errors
    ///
    /// [`Error::Item`] when a message above the cut cannot be read (nothing changes);
    /// [`Error::RolloutWrite`] when the line could not be written (the history is rolled back),
    /// or with [`WriteStep::PaginatedRollback`] for a paginated file, which Codex reverts rather
    /// than rolls back (nothing changes).
    pub fn rollback(&mut self, n: usize) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        if self.writer.next_ordinal().is_some() {
            // Refused before the history changes.
            return Err(RolloutWriteError {
                path: self.writer.path().to_owned(),
                step: WriteStep::PaginatedRollback,
                source: std::io::Error::from(std::io::ErrorKind::Unsupported),
            }
            .into());
        }
        self.history.drop_last_n_user_turns(n)?;
        let written = self.writer.append_rollback(n as u64);
        self.turns.wrote_rollback(n as u64, &mut self.history);
        self.publish();
        written?;
        Ok(())
    }

    /// Persists the world state `snapshot`: the change from the history's baseline
    /// ([`WorldSnapshot::change_from`]) — the whole snapshot when there is none (after a
    /// compaction, a rollback, a resume of a file that had none), else the merge patch — is
    /// appended as a `world_state` line with the session's durability, and once that succeeded
    /// the snapshot becomes the baseline. Returns the change; `None` when nothing changed, and
    /// then nothing is written. Resuming the file gives the same baseline.
    ///
    /// # Errors
    ///
    /// [`Error::RolloutWrite`] when the line could not be written. The baseline is then cleared,
    /// not kept: the line stays pending in the writer and may still reach the file, so neither
    /// the old baseline nor the new one is certain, and the next update is written in full.
    pub fn persist_world_state(
        &mut self,
        snapshot: &WorldSnapshot,
    ) -> Result<Option<WorldStateChange>, Error> {
        let Some(change) = snapshot.change_from(self.history.world_state_baseline()) else {
            return Ok(None);
        };
        let written = self.writer.append_world_state(&change);
        let baseline = written.is_ok().then(|| snapshot.clone());
        self.history.set_world_state_baseline(baseline);
        self.publish();
        written?;
        Ok(Some(change))
    }

    /// Brings the model up to date with `state`: renders it against the history's world-state
    /// baseline and items ([`History::diff_world_state`]), records the items that show the
    /// change (a `response_item` line each), and appends the change as a `world_state` line.
    /// Once both are written, the new snapshot is the baseline.
    ///
    /// Without a baseline (a new session, or after a compaction or a rollback) every section
    /// renders in full; with one, only what changed. Resuming the file gives the same items and
    /// baseline (`docs/world-state.md`, "The baseline in the history").
    ///
    /// The returned [`WorldStateUpdate::items`] are the recorded copies, with the ids recording
    /// gave them: they are in the history already.
    ///
    /// The items go after everything recorded so far; a caller that places them elsewhere in
    /// its turn uses [`History::diff_world_state`], [`Session::record`] and
    /// [`Session::persist_world_state`] itself.
    ///
    /// # Errors
    ///
    /// [`Error::WorldState`] when the history cannot be read for rendering; nothing changes.
    /// [`Error::Item`] or [`Error::RolloutWrite`] when an item or a line could not be recorded
    /// or written. The items recorded before stay, and the baseline is cleared, so the next
    /// update renders in full.
    pub fn update_world_state(&mut self, state: &WorldState) -> Result<WorldStateUpdate, Error> {
        let mut update = self.history.diff_world_state(state)?;
        let rendered = std::mem::take(&mut update.items);
        let written = rendered
            .iter()
            .try_for_each(|item| {
                // Hand back the copy the history holds (with the id recording gave it), so
                // that nobody records the rendered one again.
                if let Recorded::Stored { position, .. } = self.record(item)?
                    && let Some(entry) = self.history.get(position)
                {
                    update.items.push(entry.to_item()?);
                }
                Ok(())
            })
            .and_then(|()| match &update.change {
                Some(change) => Ok(self.writer.append_world_state(change)?),
                None => Ok(()),
            });
        if let Err(error) = written {
            self.history.set_world_state_baseline(None);
            self.publish();
            return Err(error);
        }
        if self.history.world_state_baseline() != Some(&update.snapshot) {
            self.history
                .set_world_state_baseline(Some(update.snapshot.clone()));
            self.publish();
        }
        Ok(update)
    }

    /// Appends a line that resume does not interpret — `token_usage_record`, an
    /// `event_msg` such as `agent_message` or `token_count`, a `session_meta` — with a JSON
    /// payload. The history does not change, and resuming the file still gives it.
    ///
    /// Lines that resume interprets are refused, and nothing is written: the live history would
    /// not change while the resumed one would. Record, compact, roll back and
    /// [`persist_world_state`](Session::persist_world_state) through the session instead; the
    /// refused lines are listed in `docs/rollout-format.md`, "Raw lines through a session". An
    /// `event_msg` payload must be an object with a string `type`. [`RolloutWriter::append_raw`]
    /// writes any line: it keeps no history.
    ///
    /// # Errors
    ///
    /// [`WriteStep::Interpreted`](crate::rollout::WriteStep::Interpreted), naming the line type
    /// and the event type, for a refused line; otherwise as [`RolloutWriter::append_raw`].
    pub fn append_raw(&mut self, kind: &str, payload: &str) -> Result<(), RolloutWriteError> {
        self.writer.append_uninterpreted(kind, payload)
    }

    /// Begins a turn: appends its `task_started` event and its `turn_context` line (as one
    /// batch), with a new turn id (a UUIDv7), and returns the id. `settings` is the
    /// `turn_context` payload, a JSON object (for Codex to read it: `cwd`, `approval_policy`,
    /// `sandbox_policy` and `model`, `docs/rollout-format.md`, "Turns"); its `turn_id` is the
    /// turn's. Record the turn's items, then [`Session::complete_turn`] or
    /// [`Session::abort_turn`].
    ///
    /// Resume then follows the turn as Codex does: the turn's settings become the previous
    /// turn's settings ([`Session::previous_turn_settings`]) and the history's reference context
    /// item once the turn holds a user message, a rollback counts it, and a file that ends inside
    /// it resumes with [`IncompleteTurn`]. The live session settles those as resume does.
    ///
    /// # Errors
    ///
    /// [`WriteStep::TurnActive`] while a turn is active and [`WriteStep::Build`] for `settings`
    /// that are not a JSON object (nothing is written); otherwise as
    /// [`RolloutWriter::append_raw`] (the turn has begun, its lines pending).
    pub fn begin_turn(&mut self, settings: &str) -> Result<TurnId, RolloutWriteError> {
        let id = TurnId::new(uuid::Uuid::now_v7().to_string());
        self.begin_turn_with_id(id.clone(), settings)?;
        Ok(id)
    }

    /// [`Session::begin_turn`] with the turn id `id` (one the caller's runtime gave the turn).
    ///
    /// # Errors
    ///
    /// As [`Session::begin_turn`], and [`WriteStep::Build`] for an empty `id`.
    pub fn begin_turn_with_id(
        &mut self,
        id: TurnId,
        settings: &str,
    ) -> Result<(), RolloutWriteError> {
        if let Some(active) = self.turns.active() {
            let turn_id = active.id().cloned();
            return Err(self.refused(WriteStep::TurnActive { turn_id }, "a turn is active"));
        }
        let build = |what| {
            self.refused(
                WriteStep::Build {
                    line_type: LineKind::TurnContext,
                },
                what,
            )
        };
        if id.is_empty() {
            return Err(build("a turn id is not empty"));
        }
        let Some(context) = turns::context_payload(&id, settings) else {
            return Err(build("a turn's settings are a JSON object"));
        };
        let started = turns::started_event(&id);
        let written = self.writer.append_lines(&[
            (LineKind::EventMsg, &started),
            (LineKind::TurnContext, &context),
        ]);
        self.turns.began(&id, &context, &mut self.history);
        self.publish();
        written
    }

    /// Completes the active turn: appends its `task_complete` event, with the last message the
    /// agent gave in it.
    ///
    /// # Errors
    ///
    /// [`WriteStep::NoActiveTurn`] when no turn is active (nothing is written); otherwise as
    /// [`RolloutWriter::append_raw`] (the turn has ended, its line pending).
    pub fn complete_turn(
        &mut self,
        last_agent_message: Option<&str>,
    ) -> Result<(), RolloutWriteError> {
        self.end_turn(&TurnEnd::Completed { last_agent_message })
    }

    /// Aborts the active turn: appends its `turn_aborted` event with `reason`. A session resumed
    /// inside a turn ([`ResumedSession::incomplete_turn`]) aborts it with
    /// [`TurnAbortReason::Interrupted`] before it begins the next.
    ///
    /// # Errors
    ///
    /// As [`Session::complete_turn`].
    pub fn abort_turn(&mut self, reason: TurnAbortReason) -> Result<(), RolloutWriteError> {
        self.end_turn(&TurnEnd::Aborted(reason))
    }

    fn end_turn(&mut self, end: &TurnEnd<'_>) -> Result<(), RolloutWriteError> {
        let Some(active) = self.turns.active() else {
            return Err(self.refused(WriteStep::NoActiveTurn, "no turn is active"));
        };
        let event = turns::ended_event(active.id(), end);
        let written = self.writer.append_lines(&[(LineKind::EventMsg, &event)]);
        self.turns.ended(&mut self.history);
        self.publish();
        written
    }

    /// The turn begun and not yet completed or aborted: one [`Session::begin_turn`] began, or
    /// the one the file ended inside when it was resumed.
    pub fn active_turn(&self) -> Option<&ActiveTurn> {
        self.turns.active()
    }

    /// The previous turn's settings: the `turn_context` payload of the newest turn that holds a
    /// user message and no rollback undid, as resuming the file now would give it.
    pub fn previous_turn_settings(&self) -> Option<&RawValue> {
        self.turns.previous_turn_settings()
    }

    /// A refusal before anything was written, at `step`.
    fn refused(&self, step: WriteStep, why: &str) -> RolloutWriteError {
        RolloutWriteError {
            path: self.writer.path().to_owned(),
            step,
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
        }
    }

    /// Writes everything pending, flushes, and syncs under [`Durability::SyncData`].
    ///
    /// # Errors
    ///
    /// The sink's error.
    pub fn flush(&mut self) -> Result<(), RolloutWriteError> {
        self.writer.flush()
    }

    /// Records an item into the history; returns the outcome and, when it was stored, the entry
    /// whose text the `response_item` line holds (as recorded — a client tool search with
    /// canonical arguments — before truncation).
    fn record_prepared(&mut self, json: &str) -> Result<(Recorded, Option<Entry>), ItemError> {
        let prepared = self.prepare(json)?;
        Self::record_into(&mut self.history, prepared)
    }

    /// Records a prepared item (its text and parsed form) into `history`: the record filter and
    /// canonicalization, so the line holds what the history keeps.
    fn record_into(
        history: &mut History,
        (text, item): (String, ResponseItem),
    ) -> Result<(Recorded, Option<Entry>), ItemError> {
        let entry = match History::durable_entry(text.into_boxed_str(), &item)? {
            Ok(entry) => entry,
            Err(reason) => return Ok((Recorded::Filtered(reason), None)),
        };
        let recorded = history.record_durable_entry(entry.clone(), &item)?;
        Ok((recorded, Some(entry)))
    }

    /// The text a session stores and writes for an item — trimmed, compact when it spans lines,
    /// and with an id when it has none and id assignment is on — and the item it parses into.
    /// The common case (one line, an id or no assignment) parses the text once.
    fn prepare(&self, json: &str) -> Result<(String, ResponseItem), ItemError> {
        let trimmed = json.trim();
        let item = parse_item(trimmed)?;
        let prefix = if self.assign_ids {
            missing_id_prefix(&item)
        } else {
            None
        };
        if prefix.is_none() && memchr::memchr2(b'\n', b'\r', trimmed.as_bytes()).is_none() {
            return Ok((trimmed.to_owned(), item));
        }
        let mut value: serde_json::Value =
            serde_json::from_str(trimmed).map_err(|source| ItemError::InvalidJson {
                item_type: None,
                source,
            })?;
        if let (Some(prefix), Some(object)) = (prefix, value.as_object_mut()) {
            let id = format!("{prefix}_{}", uuid::Uuid::now_v7());
            // Right after `type`, where Codex's serialization puts it.
            let at = usize::from(object.contains_key("type"));
            object.shift_insert(at, "id".into(), serde_json::Value::String(id));
        }
        let text = value.to_string();
        let item = parse_item(&text)?;
        Ok((text, item))
    }
}

/// A session records a stream's complete items ([`ResponsesAccumulator`](crate::stream::ResponsesAccumulator)
/// and the others) through [`Session::record_json`]: one `response_item` line per item, written
/// with the session's durability as the item completes (an item held for output order, when
/// the stream ends), ids assigned as for any recorded item. Nothing is written for a dropped
/// item, nor for deltas.
///
/// An item the history refuses is bad input ([`StreamError::Item`](crate::stream::StreamError::Item));
/// a line that could not be written is [`Error::RolloutWrite`], after which the history has the
/// item, its line is pending (written before the next one, or by [`Session::flush`]) and the
/// stream goes on.
impl<S: RolloutSink> StreamTarget for Session<S> {
    type Error = Error;

    fn record_item(&mut self, json: &str) -> Result<Recorded, RecordFailure<Error>> {
        match self.record_json(json) {
            Ok(recorded) => Ok(recorded),
            Err(Error::Item(error)) => Err(RecordFailure::Refused(error)),
            Err(error) => Err(RecordFailure::Failed(error)),
        }
    }
}

/// The id prefix of an item that has no (or an empty) id and whose kind takes one.
fn missing_id_prefix(item: &ResponseItem) -> Option<&'static str> {
    if item.id().is_some_and(|id| !id.is_empty()) {
        return None;
    }
    ItemKind::of(item).and_then(ItemKind::id_prefix)
}
