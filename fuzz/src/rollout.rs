//! Checks of a rollout read against the bytes it was read from: line numbers and offsets, skip
//! counts, the listed skipped lines, the torn tail, and the errors a read may give.

use agent_history::{
    BinaryContent, LineRepair, LoadReport, ReadMode, ReadOptions, Rollout, RolloutError,
    SkipReason, SkippedLine,
};

/// The reader's first buffer: 64 KiB, or all of a shorter input.
const FIRST_BUFFER: usize = 64 * 1024;

/// What the first buffer of `data` looks like when it is not text, written from the rule the
/// error documents (gzip magic, zstd magic, a UTF-16 byte-order mark, or a NUL byte), not from the reader's code.
pub fn binary_start(data: &[u8]) -> Option<BinaryContent> {
    let start = &data[..data.len().min(FIRST_BUFFER)];
    if start.starts_with(&[0x1f, 0x8b]) {
        Some(BinaryContent::Gzip)
    } else if start.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some(BinaryContent::Zstd)
    } else if start.starts_with(&[0xff, 0xfe]) || start.starts_with(&[0xfe, 0xff]) {
        Some(BinaryContent::Utf16)
    } else if start.contains(&0) {
        Some(BinaryContent::NulBytes)
    } else {
        None
    }
}

/// What the reader reads of an input: the input itself, or the text a zstd frame at its start
/// decompresses to (decoded here by the zstd library directly, not through the reader).
pub enum Text {
    /// Not compressed: the input is the text.
    Plain,
    /// The decompressed text.
    Decompressed(Vec<u8>),
    /// Compressed data that does not decompress: every read fails.
    Damaged,
    /// More text than a fuzz run should hold (a small frame can expand a thousandfold).
    TooLarge,
}

/// The most decompressed text checked: 8 MiB.
const MAX_TEXT: u64 = 8 * 1024 * 1024;

/// What the reader reads of `input` (see [`Text`]).
pub fn text_of(input: &[u8]) -> Text {
    use std::io::Read as _;
    if !input.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return Text::Plain;
    }
    let Ok(decoder) = zstd::stream::read::Decoder::new(input) else {
        return Text::Damaged;
    };
    let mut text = Vec::new();
    match decoder.take(MAX_TEXT + 1).read_to_end(&mut text) {
        Err(_) => Text::Damaged,
        Ok(_) if text.len() as u64 > MAX_TEXT => Text::TooLarge,
        Ok(_) => Text::Decompressed(text),
    }
}

/// The lines of `data` as the reader cuts them: each line's offset, its content (without the
/// `\n`) and whether a `\n` ended it.
pub struct Lines<'a> {
    /// (offset, content, terminated) per line.
    pub lines: Vec<(u64, &'a [u8], bool)>,
}

impl<'a> Lines<'a> {
    /// Cuts `data` at each `\n`; a last line without one counts when it is not empty.
    pub fn of(data: &'a [u8]) -> Lines<'a> {
        let mut lines = Vec::new();
        let mut start = 0;
        for (index, byte) in data.iter().enumerate() {
            if *byte == b'\n' {
                lines.push((start as u64, &data[start..index], true));
                start = index + 1;
            }
        }
        if start < data.len() {
            lines.push((start as u64, &data[start..], false));
        }
        Lines { lines }
    }

    /// The line with this 1-based number.
    pub fn get(&self, number: u64) -> (u64, &'a [u8], bool) {
        let index = usize::try_from(number).expect("small") - 1;
        self.lines[index]
    }

    /// Whether line `number` (1-based) is over the limit.
    fn too_long(&self, number: u64, limit: usize) -> bool {
        self.get(number).1.len() > limit
    }

    /// Whether line `number` is blank as the reader sees it: not over the limit, UTF-8 (after a
    /// byte-order mark at the very start of the file), and only white space.
    fn blank(&self, number: u64, limit: usize) -> bool {
        let (offset, mut content, _) = self.get(number);
        if content.len() > limit {
            return false;
        }
        if offset == 0 {
            content = content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(content);
        }
        std::str::from_utf8(content).is_ok_and(|text| text.trim().is_empty())
    }
}

fn check_skipped(lines: &Lines<'_>, skipped: &SkippedLine, limit: usize) {
    let (offset, content, _) = lines.get(skipped.line);
    assert_eq!(
        skipped.offset, offset,
        "offset of skipped line {}",
        skipped.line
    );
    match &skipped.reason {
        SkipReason::TooLong { bytes, limit: said } => {
            assert_eq!(
                *bytes,
                content.len() as u64,
                "length of line {}",
                skipped.line
            );
            assert_eq!(*said, limit);
            assert!(*bytes > limit as u64);
        }
        SkipReason::Blank => assert!(lines.blank(skipped.line, limit), "not blank"),
        _ => assert!(
            !lines.too_long(skipped.line, limit) && !lines.blank(skipped.line, limit),
            "line {} skipped as {:?}",
            skipped.line,
            skipped.reason
        ),
    }
}

/// Checks a report against the bytes: counts, listed lines, torn tail, repairs.
pub fn check_report(data: &[u8], options: ReadOptions, report: &LoadReport, usable: u64) {
    let lines = Lines::of(data);
    let limit = options.max_line_bytes;
    let total = lines.lines.len() as u64;
    assert_eq!(report.lines, total, "line count");
    let counts = report.skip_counts;
    assert_eq!(
        counts.total(),
        counts.blank + counts.malformed(),
        "skip counts do not add up"
    );
    let too_long = (1..=total).filter(|&n| lines.too_long(n, limit)).count() as u64;
    assert_eq!(counts.too_long, too_long, "lines over the limit");
    let blank = (1..=total).filter(|&n| lines.blank(n, limit)).count() as u64;
    assert_eq!(counts.blank, blank, "blank lines");
    // Every line is usable, skipped, a legacy state line, or a ghost snapshot (which are also
    // counted when dropped from a replacement history).
    let accounted = usable + counts.total() + report.left_out.state_lines;
    assert!(
        accounted <= total,
        "{accounted} lines accounted for, {total} read"
    );
    assert!(
        total <= accounted + report.left_out.ghost_snapshots,
        "{total} lines read, {accounted} accounted for"
    );
    // The first `max_reported` blank lines and the first `max_reported` malformed ones are
    // listed (blank lines never hide a malformed one), and a torn last line always.
    let listed = report.skipped.len() as u64;
    let max = options.max_reported as u64;
    let malformed = counts.malformed();
    let expected =
        counts.blank.min(max) + malformed.min(max) + u64::from(report.torn_tail && malformed > max);
    assert_eq!(listed, expected, "listed skipped lines");
    let listed_blank = report
        .skipped
        .iter()
        .filter(|skipped| skipped.reason == SkipReason::Blank)
        .count() as u64;
    assert_eq!(listed_blank, counts.blank.min(max), "listed blank lines");
    assert!(
        report
            .skipped
            .windows(2)
            .all(|pair| pair[0].line < pair[1].line),
        "skipped lines out of order"
    );
    for skipped in &report.skipped {
        check_skipped(&lines, skipped, limit);
    }
    let last_torn = lines
        .lines
        .last()
        .is_some_and(|(_, _, terminated)| !terminated);
    if report.torn_tail {
        assert!(last_torn, "a torn tail in a file that ends with a newline");
        let last = report.skipped.last().expect("a torn tail is listed");
        assert_eq!(last.line, total);
        assert!(last.reason.is_malformed());
    } else if last_torn {
        assert!(
            report
                .skipped
                .last()
                .is_none_or(|last| last.line != total || !last.reason.is_malformed()),
            "an unusable unterminated last line is not reported as torn"
        );
    }
    assert!(report.repaired.len() <= options.max_reported);
    assert!(
        report
            .repaired
            .windows(2)
            .all(|pair| pair[0].line <= pair[1].line),
        "repairs out of order"
    );
    for repaired in &report.repaired {
        assert_eq!(repaired.offset, lines.get(repaired.line).0);
    }
}

/// Checks what `Rollout::read` returned for `data` read with `options`.
pub fn check_read(data: &[u8], options: ReadOptions, result: &Result<Rollout, RolloutError>) {
    let lines = Lines::of(data);
    match result {
        Ok(rollout) => {
            let usable = rollout.lines.len() as u64;
            check_report(data, options, &rollout.report, usable);
            assert!(
                rollout
                    .lines
                    .windows(2)
                    .all(|pair| pair[0].number < pair[1].number),
                "usable lines out of order"
            );
            let listed: Vec<u64> = rollout
                .report
                .skipped
                .iter()
                .map(|line| line.line)
                .collect();
            for line in &rollout.lines {
                let (offset, content, _) = lines.get(line.number);
                assert_eq!(line.offset, offset, "offset of line {}", line.number);
                assert!(content.len() <= options.max_line_bytes);
                assert!(
                    !listed.contains(&line.number),
                    "line {} used and skipped",
                    line.number
                );
                if let Some(entry) = line.item() {
                    assert_eq!(entry.json(), line.payload_json());
                }
            }
            if options.mode == ReadMode::Strict {
                assert_eq!(rollout.report.skip_counts.malformed(), 0);
            }
        }
        Err(RolloutError::Empty { .. }) => {
            let total = lines.lines.len() as u64;
            assert!(
                (1..=total).all(|n| lines.blank(n, options.max_line_bytes)),
                "Empty for a file with a non-blank line"
            );
        }
        Err(RolloutError::NoSessionMeta { lines: count, .. }) => {
            assert_eq!(*count, lines.lines.len() as u64);
        }
        Err(RolloutError::NotText { looks_like, .. }) => {
            // Said instead of "no session_meta" (or, strictly, of line 1's error) for an input
            // whose start is not text.
            assert_eq!(
                Some(*looks_like),
                binary_start(data),
                "what the input looks like"
            );
        }
        Err(RolloutError::BadLine {
            line,
            offset,
            reason,
            torn_tail,
            ..
        }) => {
            assert_eq!(
                options.mode,
                ReadMode::Strict,
                "a bad line fails a lenient read"
            );
            assert!(reason.is_malformed());
            let (expected_offset, _, terminated) = lines.get(*line);
            assert_eq!(*offset, expected_offset);
            assert_eq!(*torn_tail, !terminated);
            check_skipped(
                &lines,
                &SkippedLine {
                    line: *line,
                    offset: *offset,
                    reason: reason.clone(),
                },
                options.max_line_bytes,
            );
        }
        Err(error) => panic!("reading bytes failed with {error:?}"),
    }
}

/// Checks a strict read against the lenient read of the same bytes and against the bytes
/// themselves: a strict read fails with `BadLine` when a lenient read (that succeeds) skips a
/// malformed line, and names the first one, for the reason the lenient read lists, or an earlier
/// `session_meta` line the lenient read repaired (not UTF-8, or a payload read leniently); the
/// reason is the right one for the line's bytes, judged without the reader (over the limit: its
/// length; `InvalidUtf8`: `std::str::from_utf8` refuses it; `InvalidJson`: UTF-8 that
/// `serde_json::Value` does not parse; the envelope, payload and item reasons: a line that starts
/// with a JSON value).
pub fn check_strict(
    data: &[u8],
    max_reported: usize,
    lenient: &Result<Rollout, RolloutError>,
    strict: &Result<Rollout, RolloutError>,
) {
    if let Err(RolloutError::BadLine { line, reason, .. }) = strict {
        let lines = Lines::of(data);
        let (offset, mut content, _) = lines.get(*line);
        if offset == 0 {
            content = content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(content);
        }
        let text = std::str::from_utf8(content);
        let parses = || serde_json::from_slice::<serde_json::Value>(content).is_ok();
        match reason {
            SkipReason::Blank => panic!("a blank line failed a strict read"),
            // `check_read` compares the length with the limit.
            SkipReason::TooLong { .. } => {}
            SkipReason::InvalidUtf8 => assert!(text.is_err(), "line {line} is UTF-8"),
            SkipReason::InvalidJson(_) => {
                assert!(text.is_ok(), "line {line} is not UTF-8");
                assert!(!parses(), "line {line} is JSON");
            }
            SkipReason::NotAnEnvelope(_)
            | SkipReason::InvalidPayload(_)
            | SkipReason::InvalidItem(_) => {
                // The line is text. Whether it starts with a whole JSON value is not checked:
                // the reader reads the envelope's fields as it parses, so an envelope problem
                // (a duplicate `type`, a field of the wrong type) is reported before a syntax
                // error later in the line, and a line whose first value is not an envelope and
                // has more after it is reported for the envelope.
                assert!(text.is_ok(), "line {line} is not UTF-8: {reason:?}");
            }
            other => panic!("a reason this check does not know: {other:?}"),
        }
    }
    let Ok(lenient) = lenient else {
        return;
    };
    let first = lenient.report.malformed().next();
    match strict {
        Err(RolloutError::BadLine { line, reason, .. }) => {
            // A lenient read uses a `session_meta` line that is not UTF-8 (read lossily) or
            // whose payload is not strictly shaped (read for its thread id), and says so among
            // its repairs (the first `max_reported` listed); a strict read fails on it.
            let repaired = lenient.report.repaired.iter().find(|repaired| {
                repaired.line == *line
                    && matches!(
                        repaired.repair,
                        LineRepair::LossyUtf8 | LineRepair::LenientSessionMeta(_)
                    )
            });
            if let Some(repaired) = repaired {
                if repaired.repair == LineRepair::LossyUtf8 {
                    assert_eq!(*reason, SkipReason::InvalidUtf8);
                }
            }
            let repairs_unlisted = lenient.report.repaired.len() >= max_reported;
            match first {
                Some(first) if first.line == *line => {
                    assert_eq!(&first.reason, reason, "the reason for line {line}");
                }
                Some(first) => {
                    assert!(
                        *line < first.line,
                        "strict fails on line {line}, after the first malformed line {}",
                        first.line
                    );
                    assert!(
                        repaired.is_some() || repairs_unlisted,
                        "strict fails on line {line}, which lenient neither skipped nor repaired"
                    );
                }
                None => assert!(
                    repaired.is_some()
                        || repairs_unlisted
                        || lenient.report.skip_counts.malformed() > max_reported as u64,
                    "strict fails on line {line}, which lenient neither skipped nor repaired"
                ),
            }
        }
        Ok(_) => assert_eq!(
            lenient.report.skip_counts.malformed(),
            0,
            "strict reads a file with a malformed line"
        ),
        // Said instead of the first bad line's error when the input's start is not text
        // (`check_read` compares what it looks like with the bytes).
        Err(RolloutError::NotText { .. }) => assert!(
            lenient.report.skip_counts.malformed() > 0 || !lenient.report.repaired.is_empty(),
            "strict finds no text where lenient skips and repairs nothing"
        ),
        Err(error) => panic!("a lenient read succeeds, a strict one fails with {error:?}"),
    }
}
