//! Reading a transcript: the shared line loop, each line into a record, and [`Transcript`], the
//! records it keeps.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::rollout::{
    BinaryContent, LineLoop, LineRepair, LineVisitor, ReadMode, ReadOptions, RepairedLine,
    RolloutText, SkipReason, SkippedLine, open_input, split_lines, without_byte_order_mark,
};

use crate::snapshot::RolloutPosition;

use super::error::TranscriptError;
use super::record::{ParseProblem, Parsed, Record, RecordKind, parse_line};
use super::report::TranscriptReport;

/// A Claude Code transcript read into memory: its chain records and the load report.
///
/// [`Transcript::read`] streams the file line by line with the rollout reader's guarantees:
/// memory bounded by the longest line plus the records kept (a line over
/// [`ReadOptions::max_line_bytes`] is passed over unheld), a line it cannot use skipped and
/// reported with its number, byte offset and reason (or, in [`ReadMode::Strict`],
/// [`TranscriptError::BadLine`]), a byte-order mark or invalid UTF-8 repaired and reported.
/// Records outside the chain are counted by kind ([`TranscriptReport::read_past`]). What a resume
/// sends is [`Transcript::conversation`]; `docs/claude-code.md` has the rules.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The chain records, in the order of their first lines (a record whose uuid a later line
    /// reused is replaced by that line, at its place: lines are then not in order).
    pub(crate) records: Vec<Record>,
    /// What else the reader found.
    pub report: TranscriptReport,
    path: PathBuf,
    /// What was read: every line, its bytes (of the text a compressed file decompresses to) and
    /// their BLAKE3 digest.
    pub(crate) read: RolloutPosition,
}

impl Transcript {
    /// Reads the transcript at `path` (plain or zstd-compressed). The file is only read.
    ///
    /// # Errors
    ///
    /// [`TranscriptError::Io`] when it cannot be opened or read, [`TranscriptError::NotAFile`]
    /// for a directory or a device, [`TranscriptError::Empty`] for a file of blank lines,
    /// [`TranscriptError::NoRecords`] when no line is a record, [`TranscriptError::NotText`]
    /// for a binary file, and in strict mode [`TranscriptError::BadLine`].
    pub fn read_file(
        path: impl AsRef<Path>,
        options: impl Into<ReadOptions>,
    ) -> Result<Transcript, TranscriptError> {
        let path = path.as_ref();
        let file = open_input(path).map_err(|error| TranscriptError::from_open(path, error))?;
        Transcript::read(file, path, options)
    }

    /// Reads a transcript from `reader`; `label` is the path errors name.
    ///
    /// # Errors
    ///
    /// As [`Transcript::read_file`].
    pub fn read(
        reader: impl Read,
        label: impl AsRef<Path>,
        options: impl Into<ReadOptions>,
    ) -> Result<Transcript, TranscriptError> {
        let label = label.as_ref();
        let options = options.into();
        let text = RolloutText::new(reader).map_err(|source| TranscriptError::Io {
            path: label.to_owned(),
            source,
        })?;
        let mut state = ReadState {
            path: label,
            options,
            report: TranscriptReport::default(),
            slots: Vec::new(),
            by_uuid: HashMap::new(),
            non_blank: false,
            binary: None,
        };
        // The digest of what is read, for a snapshot that stands for the file as read.
        let mut hasher = blake3::Hasher::new();
        let settings = LineLoop {
            max_line_bytes: options.max_line_bytes,
            lines_before: 0,
            bytes_before: 0,
            complete_lines_only: false,
            hasher: Some(&mut hasher),
        };
        let split = split_lines(text, settings, &mut state)?;
        state.report.lines = split.lines;
        let ReadState {
            report,
            slots,
            non_blank,
            binary,
            ..
        } = state;
        let records = slots;
        let other_records: u64 = report.read_past.values().sum::<u64>();
        if records.is_empty() && other_records == 0 {
            if let Some(looks_like) = binary {
                return Err(TranscriptError::NotText {
                    path: label.to_owned(),
                    looks_like,
                });
            }
            if !non_blank && report.skip_counts.too_long == 0 {
                return Err(TranscriptError::Empty {
                    path: label.to_owned(),
                });
            }
            return Err(TranscriptError::NoRecords {
                path: label.to_owned(),
                lines: split.lines,
            });
        }
        Ok(Transcript {
            records,
            report,
            path: label.to_owned(),
            read: RolloutPosition {
                lines: split.lines,
                bytes: split.end,
                digest: hasher.finalize(),
            },
        })
    }

    /// The file, or the label of the reader.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session id: the first record's `sessionId` that names one.
    pub fn session_id(&self) -> Option<&str> {
        self.records
            .iter()
            .find_map(|record| record.session_id.as_deref())
    }

    /// The working directory the session ran in: the first record's `cwd` that names one.
    pub fn cwd(&self) -> Option<&str> {
        self.records.iter().find_map(|record| record.cwd.as_deref())
    }

    /// The Claude Code version that wrote the last record naming one.
    pub fn version(&self) -> Option<&str> {
        self.records
            .iter()
            .rev()
            .find_map(|record| record.version.as_deref())
    }

    /// The model of the last assistant record that names a real one (not `<synthetic>`), of
    /// the main thread, or of the subagents in a subagent's own file.
    pub fn model(&self) -> Option<&str> {
        let subagent_file = self.is_subagent_file();
        self.records
            .iter()
            .rev()
            .filter(|record| {
                record.kind == RecordKind::Assistant && record.sidechain == subagent_file
            })
            .find_map(|record| {
                record
                    .model
                    .as_deref()
                    .filter(|model| *model != "<synthetic>")
            })
    }

    /// How many chain records the file holds (progress records included).
    pub fn record_count(&self) -> usize {
        self.records.len()
    }

    /// The subagents whose records this file holds inline (`isSidechain`), by `agentId`, in
    /// the order they first appear.
    pub fn subagents(&self) -> Vec<&str> {
        let mut agents: Vec<&str> = Vec::new();
        for record in &self.records {
            if let Some(agent) = record.thread()
                && !agents.contains(&agent)
            {
                agents.push(agent);
            }
        }
        agents
    }

    /// The transcripts of the subagents this session spawned that Claude Code keeps in a folder
    /// beside it (`<session>/subagents/*.jsonl`, newer versions), in name order; empty for a
    /// transcript read from a reader, or without such a folder. Each is read on its own: its
    /// [`Transcript::conversation`] is the subagent's thread.
    pub fn subagent_files(&self) -> Vec<PathBuf> {
        subagent_files_beside(&self.path)
    }

    /// Whether the file holds only sidechain records: a subagent's own transcript.
    pub fn is_subagent_file(&self) -> bool {
        !self.records.is_empty() && self.records.iter().all(|record| record.sidechain)
    }
}

/// The transcripts in the `<session>/subagents/` folder beside the transcript at `path`, in
/// name order.
pub(crate) fn subagent_files_beside(path: &Path) -> Vec<PathBuf> {
    let Some(stem) = path.file_stem() else {
        return Vec::new();
    };
    let folder = path.with_file_name(stem).join("subagents");
    let Ok(entries) = std::fs::read_dir(&folder) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
                && path.is_file()
        })
        .collect();
    files.sort();
    files
}

/// The reader's state between lines.
struct ReadState<'p> {
    path: &'p Path,
    options: ReadOptions,
    report: TranscriptReport,
    /// Records in the order of their uuids' first lines.
    slots: Vec<Record>,
    by_uuid: HashMap<Box<str>, usize>,
    non_blank: bool,
    binary: Option<BinaryContent>,
}

impl ReadState<'_> {
    fn skip(
        &mut self,
        number: u64,
        offset: u64,
        terminated: bool,
        reason: SkipReason,
    ) -> Result<(), TranscriptError> {
        let torn = !terminated && reason.is_malformed();
        if self.options.mode == ReadMode::Strict && reason.is_malformed() {
            return Err(TranscriptError::BadLine {
                path: self.path.to_owned(),
                line: number,
                offset,
                reason,
            });
        }
        self.report.torn_tail = torn;
        let line = SkippedLine {
            line: number,
            offset,
            reason,
        };
        let report = &mut self.report;
        report
            .skip_counts
            .skip(&mut report.skipped, line, torn, self.options.max_reported);
        Ok(())
    }

    fn repair(&mut self, line: u64, offset: u64, repair: LineRepair) {
        if self.report.repaired.len() < self.options.max_reported {
            self.report.repaired.push(RepairedLine {
                line,
                offset,
                repair,
            });
        }
    }

    fn keep(&mut self, record: Record) {
        match record.kind {
            RecordKind::Progress => self.report.count_read_past("progress"),
            RecordKind::Attachment => self.report.count_read_past("attachment"),
            RecordKind::System if !record.is_system("local_command") => {
                let subtype = record.subtype.as_deref().unwrap_or("");
                self.report.count_read_past(&format!("system/{subtype}"));
            }
            RecordKind::User | RecordKind::Assistant | RecordKind::System => {}
        }
        // A later line with a record's uuid replaces it where it was (as a map keyed by uuid
        // keeps its first place), so that what depends on the order of records (the nearest
        // earlier record, the last one written since) does not change when a record is
        // written again.
        if let Some(&earlier) = self.by_uuid.get(&record.uuid) {
            self.slots[earlier] = record;
            self.report.replaced += 1;
        } else {
            self.by_uuid.insert(record.uuid.clone(), self.slots.len());
            self.slots.push(record);
        }
    }
}

impl LineVisitor for ReadState<'_> {
    type Error = TranscriptError;

    fn first_bytes(&mut self, bytes: &[u8]) {
        self.binary = BinaryContent::sniff(bytes);
    }

    fn line(
        &mut self,
        number: u64,
        content: &[u8],
        offset: u64,
        terminated: bool,
    ) -> Result<(), TranscriptError> {
        let mut content = content;
        if let Some(rest) = without_byte_order_mark(content, offset) {
            content = rest;
            self.repair(number, offset, LineRepair::ByteOrderMark);
        }
        let lossy;
        let text = match simdutf8::basic::from_utf8(content) {
            Ok(text) => text,
            Err(_) if self.options.mode == ReadMode::Lenient => {
                // A transcript's text is the user's: a bad byte costs that character, not the
                // record (it is replaced by U+FFFD, and the repair reported).
                lossy = String::from_utf8_lossy(content);
                self.repair(number, offset, LineRepair::LossyUtf8);
                &lossy
            }
            Err(_) => return self.skip(number, offset, terminated, SkipReason::InvalidUtf8),
        };
        let text = text.trim();
        if text.is_empty() {
            return self.skip(number, offset, terminated, SkipReason::Blank);
        }
        self.non_blank = true;
        match parse_line(text, number) {
            Ok(Parsed::Record(record)) => self.keep(*record),
            Ok(Parsed::Other(kind)) => self.report.count_read_past(&kind),
            Err(ParseProblem::Json(why)) => {
                return self.skip(number, offset, terminated, SkipReason::InvalidJson(why));
            }
            Err(ParseProblem::Shape(why)) => {
                return self.skip(number, offset, terminated, SkipReason::InvalidPayload(why));
            }
        }
        Ok(())
    }

    fn too_long(
        &mut self,
        number: u64,
        bytes: u64,
        offset: u64,
        terminated: bool,
    ) -> Result<(), TranscriptError> {
        let reason = SkipReason::TooLong {
            bytes,
            limit: self.options.max_line_bytes,
        };
        self.skip(number, offset, terminated, reason)
    }

    fn io_error(&mut self, source: std::io::Error) -> TranscriptError {
        TranscriptError::Io {
            path: self.path.to_owned(),
            source,
        }
    }
}
