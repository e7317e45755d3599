//! The line loop every JSON Lines reader shares (Codex rollouts, Claude Code transcripts): an
//! input split into lines chunk by chunk, with bounded memory. A line within the length limit is
//! handed over where it lies in the buffer, or gathered when it spans buffers; a longer one is
//! passed over as it streams (hashed when a digest is kept) and reported by its length only.

use std::io::{self, BufRead, BufReader, ErrorKind, Read};

use super::compressed::READ_BUFFER_BYTES;

/// The UTF-8 byte-order mark, which some editors put at the start of a file.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// The first line's content after a byte-order mark, when it starts with one (`offset` 0);
/// `None` otherwise. A mark anywhere else is the line's own bytes.
pub(crate) fn without_byte_order_mark(content: &[u8], offset: u64) -> Option<&[u8]> {
    content
        .strip_prefix(BYTE_ORDER_MARK)
        .filter(|_| offset == 0)
}

/// What a reader does with each line [`split_lines`] finds.
pub(crate) trait LineVisitor {
    /// The error that ends the read.
    type Error;

    /// The input's first buffer, before any line (to tell what a non-text input looks like).
    fn first_bytes(&mut self, _bytes: &[u8]) {}

    /// Line `number` (from 1), without its `\n`, which starts at byte `offset`; `terminated`
    /// says whether a `\n` ended it (only the last line of an input may lack one).
    fn line(
        &mut self,
        number: u64,
        content: &[u8],
        offset: u64,
        terminated: bool,
    ) -> Result<(), Self::Error>;

    /// Line `number`, `bytes` long without its `\n`, longer than the limit: passed over unread.
    fn too_long(
        &mut self,
        number: u64,
        bytes: u64,
        offset: u64,
        terminated: bool,
    ) -> Result<(), Self::Error>;

    /// The error of a failed read.
    fn io_error(&mut self, error: io::Error) -> Self::Error;
}

/// Where and how [`split_lines`] reads.
pub(crate) struct LineLoop<'h> {
    /// Lines longer than this (without their `\n`) are passed over.
    pub(crate) max_line_bytes: usize,
    /// Lines before the first one read (their numbers go on from there).
    pub(crate) lines_before: u64,
    /// Bytes before the first one read (offsets go on from there).
    pub(crate) bytes_before: u64,
    /// Read only newline-terminated lines: a last line without its `\n` (torn, or still being
    /// written) is left unread and unreported. (A last line over the length limit is passed
    /// over as it streams; if it has no `\n` it is counted, and the prefix then ends inside it.)
    pub(crate) complete_lines_only: bool,
    /// A digest of every line read, continued from the bytes before.
    pub(crate) hasher: Option<&'h mut blake3::Hasher>,
}

/// What [`split_lines`] read.
pub(crate) struct LinesSplit {
    /// The number of the last line read (lines before included).
    pub(crate) lines: u64,
    /// The byte offset after the last line read.
    pub(crate) end: u64,
    /// Bytes of a last line left unread because it has no `\n` yet and holds more than white
    /// space (complete lines only).
    pub(crate) unfinished: u64,
}

/// Splits `reader` into lines for `visitor`.
pub(crate) fn split_lines<V: LineVisitor>(
    reader: impl Read,
    settings: LineLoop<'_>,
    visitor: &mut V,
) -> Result<LinesSplit, V::Error> {
    let LineLoop {
        max_line_bytes,
        lines_before,
        bytes_before,
        complete_lines_only,
        mut hasher,
    } = settings;
    let limit = max_line_bytes as u64;
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, reader);
    let mut number = lines_before;
    let mut unfinished = 0;
    // The current line: its bytes while within the limit, and its length in any case.
    let mut line = Vec::new();
    let mut length = 0u64;
    let mut too_long = false;
    let mut offset = bytes_before;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(visitor.io_error(error)),
        };
        let at_end = available.is_empty();
        if offset == 0 && number == 0 && length == 0 {
            visitor.first_bytes(available);
        }
        let (chunk, terminated) = match memchr::memchr(b'\n', available) {
            Some(newline) => (&available[..=newline], true),
            None => (available, false),
        };
        let taken = chunk.len();
        // A whole line within the buffer (the common case: lines are shorter than it) is read
        // where it is, not gathered into `line` first.
        if terminated && length == 0 && (taken as u64 - 1) <= limit {
            if let Some(hasher) = hasher.as_deref_mut() {
                hasher.update(chunk);
            }
            number += 1;
            visitor.line(number, &chunk[..taken - 1], offset, true)?;
            offset += taken as u64;
            reader.consume(taken);
            continue;
        }
        if !at_end {
            length += taken as u64;
            let content_length = length - u64::from(terminated);
            if !too_long && content_length > limit {
                too_long = true;
                // What was gathered is passed over too: hash it as the rest of the line will be.
                if let Some(hasher) = hasher.as_deref_mut() {
                    hasher.update(&line);
                }
                line = Vec::new();
            }
            if too_long {
                if let Some(hasher) = hasher.as_deref_mut() {
                    hasher.update(chunk);
                }
            } else {
                line.extend_from_slice(chunk);
            }
            reader.consume(taken);
            if !terminated {
                continue;
            }
        } else if length == 0 {
            break;
        }
        // A whole line: ended by `\n`, or the last one of the input.
        if !terminated && complete_lines_only && !too_long {
            if line.iter().any(|byte| !byte.is_ascii_whitespace()) {
                unfinished = length;
            }
            break;
        }
        if !too_long && let Some(hasher) = hasher.as_deref_mut() {
            hasher.update(&line);
        }
        number += 1;
        if too_long {
            let bytes = length - u64::from(terminated);
            visitor.too_long(number, bytes, offset, terminated)?;
        } else {
            let content = if terminated {
                &line[..line.len() - 1]
            } else {
                &line[..]
            };
            visitor.line(number, content, offset, terminated)?;
        }
        offset += length;
        line.clear();
        length = 0;
        too_long = false;
        if at_end {
            break;
        }
    }
    Ok(LinesSplit {
        lines: number,
        end: offset,
        unfinished,
    })
}
