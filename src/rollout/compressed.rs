//! Compressed rollouts: a `.jsonl.zst` file (Codex's rollout maintenance writes them) is read as
//! the text it decompresses to. Whether bytes are compressed is decided by their first four bytes
//! (the zstd frame magic), not by the file name, so a renamed file or standard input reads too.
//! Every position a reader reports (line offsets, a snapshot's covered prefix, a lineage cut) is
//! a position in that text, as Codex's are.

use std::fmt;
use std::io::{self, Cursor, Read};

/// The first four bytes of a zstd frame (RFC 8878, 3.1.1).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The buffer rollout text is read through (`reader.rs`), and the most bytes read to tell plain
/// text from compressed data: a whole buffer, so the line reader's first one is as it would be.
pub(super) const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Whether `start` (a file's first bytes) begins a zstd frame.
pub fn is_compressed(start: &[u8]) -> bool {
    start.starts_with(&ZSTD_MAGIC)
}

/// The first bytes, read back before the rest of the input.
type Head<R> = io::Chain<Cursor<Vec<u8>>, R>;

/// A rollout's text from its bytes: the bytes themselves, or what they decompress to when they
/// start a zstd frame.
pub struct RolloutText<R: Read> {
    inner: Inner<R>,
    /// Bytes of text given out so far: where damaged compressed data is reported.
    given: u64,
}

enum Inner<R: Read> {
    Plain(Head<R>),
    Zstd(Box<zstd::stream::read::Decoder<'static, io::BufReader<Head<R>>>>),
}

impl<R: Read> RolloutText<R> {
    /// Reads the first bytes of `reader` to tell plain text from compressed data.
    ///
    /// # Errors
    ///
    /// What reading those bytes fails with.
    pub fn new(mut reader: R) -> io::Result<RolloutText<R>> {
        // A whole first read, as a reader without this one in front would get it: the line
        // reader looks at its first buffer to say what a binary input looks like.
        let mut head = vec![0u8; READ_BUFFER_BYTES];
        let mut filled = 0;
        // A pipe can give fewer bytes at a time than the magic is long.
        while filled < ZSTD_MAGIC.len() {
            match reader.read(&mut head[filled..]) {
                Ok(0) => break,
                Ok(read) => filled += read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        head.truncate(filled);
        let compressed = is_compressed(&head);
        let rest = Cursor::new(head).chain(reader);
        let inner = if compressed {
            // Decoding a multi-frame file as zstd's own tool does: frames one after the other.
            Inner::Zstd(Box::new(zstd::stream::read::Decoder::new(rest)?))
        } else {
            Inner::Plain(rest)
        };
        Ok(RolloutText { inner, given: 0 })
    }

    /// Whether the bytes are compressed.
    pub fn is_compressed(&self) -> bool {
        matches!(self.inner, Inner::Zstd(_))
    }
}

impl<R: Read> Read for RolloutText<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = match &mut self.inner {
            Inner::Plain(reader) => reader.read(buffer)?,
            Inner::Zstd(decoder) => decoder.read(buffer).map_err(|source| {
                io::Error::new(
                    source.kind(),
                    Damaged {
                        at: self.given,
                        source,
                    },
                )
            })?,
        };
        self.given += read as u64;
        Ok(read)
    }
}

/// Compressed data that does not decompress (damaged, or cut short): where in the text it stops.
#[derive(Debug)]
struct Damaged {
    at: u64,
    source: io::Error,
}

impl fmt::Display for Damaged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "compressed (zstd) data does not decompress after {} byte(s) of text: {}",
            self.at, self.source
        )
    }
}

impl std::error::Error for Damaged {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> io::Result<(bool, Vec<u8>)> {
        let mut text = RolloutText::new(bytes)?;
        let mut out = Vec::new();
        text.read_to_end(&mut out)?;
        Ok((text.is_compressed(), out))
    }

    #[test]
    fn plain_bytes_are_given_back_as_they_are_short_ones_too() {
        for bytes in [&b""[..], b"{", b"{\"a\":1}\n{\"b\":2}\n", &ZSTD_MAGIC[..3]] {
            assert_eq!(text(bytes).expect("reads"), (false, bytes.to_vec()));
        }
    }

    #[test]
    fn compressed_bytes_are_decompressed_frame_after_frame() {
        let mut bytes = zstd::encode_all(&b"{\"a\":1}\n"[..], 3).expect("compresses");
        bytes.extend(zstd::encode_all(&b"{\"b\":2}\n"[..], 19).expect("compresses"));
        assert_eq!(
            text(&bytes).expect("reads"),
            (true, b"{\"a\":1}\n{\"b\":2}\n".to_vec())
        );
    }

    #[test]
    fn a_pipe_that_gives_one_byte_at_a_time_is_still_recognised() {
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let Some((first, rest)) = self.0.split_first() else {
                    return Ok(0);
                };
                out[0] = *first;
                self.0 = rest;
                Ok(1)
            }
        }
        let bytes = zstd::encode_all(&b"line\n"[..], 3).expect("compresses");
        let mut text = RolloutText::new(OneByte(&bytes)).expect("reads");
        let mut out = Vec::new();
        text.read_to_end(&mut out).expect("decompresses");
        assert!(text.is_compressed());
        assert_eq!(out, b"line\n");
    }

    #[test]
    fn cut_short_compressed_data_is_an_error_that_says_where_the_text_stops() {
        let line = b"{\"type\":\"x\"}\n".repeat(10_000);
        let bytes = zstd::encode_all(&line[..], 3).expect("compresses");
        let error = text(&bytes[..bytes.len() - 8]).expect_err("cut short");
        let message = error.to_string();
        assert!(
            message.starts_with("compressed (zstd) data does not decompress after "),
            "{message}"
        );
        let damaged = error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<Damaged>())
            .expect("a Damaged error");
        assert!(damaged.at <= line.len() as u64, "{}", damaged.at);
    }
}
