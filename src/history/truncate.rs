//! Record-time truncation of tool outputs, as Codex truncates them.
//!
//! When a `function_call_output` or `custom_tool_call_output` is recorded, Codex cuts its
//! `output` down to a per-model budget so that one noisy tool cannot flood the context window.
//! A text body loses its middle (the head and tail of a tool's output are usually the useful
//! parts) and gains a marker saying how much went missing. A body made of content parts is
//! budgeted part by part: texts are kept while they fit, the first one that does not fit is
//! middle-truncated, later ones are dropped and counted; images and encrypted parts are kept and
//! not charged, audio is charged and dropped when it does not fit.
//!
//! Everything here works on untyped `serde_json::Value`s so that keys this crate does not know
//! about survive a rewrite, and nothing here panics on any input.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::item::{BYTES_PER_TOKEN, approx_token_count, tokens_for_bytes};

/// How much of a tool output is kept at record time.
///
/// `Bytes(n)` keeps at most `n` bytes and reports removed characters; `Tokens(n)` keeps about
/// `n` tokens (four bytes each) and reports removed tokens. It serializes as
/// `{"mode":"bytes","limit":n}` or `{"mode":"tokens","limit":n}`, the shape Codex stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "mode", content = "limit", rename_all = "lowercase")]
pub enum TruncationPolicy {
    /// Keep at most this many bytes of text.
    Bytes(usize),
    /// Keep at most this many approximate tokens (four bytes per token).
    Tokens(usize),
}

/// A [`TruncationPolicy`] could not be read from text (its `FromStr`: `tokens:N` or `bytes:N`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseTruncationError {
    /// The text is not `mode:limit`.
    #[error("expected tokens:N or bytes:N, got `{text}`")]
    MissingColon {
        /// The text given.
        text: String,
    },
    /// The mode is neither `tokens` nor `bytes`.
    #[error("unknown truncation mode `{mode}` (tokens or bytes)")]
    UnknownMode {
        /// The mode given.
        mode: String,
    },
    /// The limit is not a whole number that fits a `usize`.
    #[error("truncation limit `{limit}` is not a whole number")]
    InvalidLimit {
        /// The limit given.
        limit: String,
        /// Why it does not parse.
        #[source]
        source: std::num::ParseIntError,
    },
}

impl std::str::FromStr for TruncationPolicy {
    type Err = ParseTruncationError;

    /// `tokens:N` or `bytes:N` (N a whole number), the form [`Display`](std::fmt::Display)
    /// writes.
    fn from_str(text: &str) -> Result<TruncationPolicy, ParseTruncationError> {
        let (mode, limit) = text
            .split_once(':')
            .ok_or_else(|| ParseTruncationError::MissingColon { text: text.into() })?;
        let parse_limit = || {
            limit
                .parse::<usize>()
                .map_err(|source| ParseTruncationError::InvalidLimit {
                    limit: limit.into(),
                    source,
                })
        };
        match mode {
            "tokens" => Ok(TruncationPolicy::Tokens(parse_limit()?)),
            "bytes" => Ok(TruncationPolicy::Bytes(parse_limit()?)),
            _ => Err(ParseTruncationError::UnknownMode { mode: mode.into() }),
        }
    }
}

impl std::fmt::Display for TruncationPolicy {
    /// `tokens:N` or `bytes:N`, which [`from_str`](std::str::FromStr::from_str) reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TruncationPolicy::Tokens(limit) => write!(f, "tokens:{limit}"),
            TruncationPolicy::Bytes(limit) => write!(f, "bytes:{limit}"),
        }
    }
}

impl TruncationPolicy {
    /// Returns the policy with its limit multiplied by 1.2 and rounded up.
    ///
    /// Codex applies this allowance to the per-model policy to make room for serialization
    /// overhead; a saved per-tool override is used as it is. The result saturates at
    /// `usize::MAX` instead of overflowing.
    pub fn with_serialization_allowance(self) -> Self {
        match self {
            Self::Bytes(limit) => Self::Bytes(add_twenty_percent_rounded_up(limit)),
            Self::Tokens(limit) => Self::Tokens(add_twenty_percent_rounded_up(limit)),
        }
    }

    /// Returns the budget in bytes.
    ///
    /// That is the byte limit itself, or the token limit times four, saturating at
    /// `usize::MAX`.
    pub fn byte_budget(self) -> usize {
        match self {
            Self::Bytes(bytes) => bytes,
            Self::Tokens(tokens) => tokens.saturating_mul(BYTES_PER_TOKEN),
        }
    }

    /// Returns the budget in tokens.
    ///
    /// That is the token limit itself, or the byte limit divided by four and rounded up.
    pub fn token_budget(self) -> usize {
        match self {
            Self::Bytes(bytes) => tokens_for_bytes(bytes),
            Self::Tokens(tokens) => tokens,
        }
    }

    /// The limit in the policy's own unit, which is what content-part budgeting spends.
    fn limit(self) -> usize {
        match self {
            Self::Bytes(limit) | Self::Tokens(limit) => limit,
        }
    }

    /// A policy of the same kind with another limit.
    fn with_limit(self, limit: usize) -> Self {
        match self {
            Self::Bytes(_) => Self::Bytes(limit),
            Self::Tokens(_) => Self::Tokens(limit),
        }
    }

    /// What `byte_len` bytes of text cost in the policy's own unit.
    fn cost_of_bytes(self, byte_len: usize) -> usize {
        match self {
            Self::Bytes(_) => byte_len,
            Self::Tokens(_) => tokens_for_bytes(byte_len),
        }
    }
}

/// ceil(limit × 1.2) in integer arithmetic.
///
/// Codex computes `(limit as f64 * 1.2).ceil()`. The double nearest 1.2 is slightly below 1.2,
/// so the float product never overshoots an exact multiple and the two forms agree (checked
/// exhaustively for every limit up to two million). The integer form is used because it keeps
/// that agreement without depending on float rounding, cannot lose precision above 2^53, and
/// saturates instead of overflowing.
fn add_twenty_percent_rounded_up(limit: usize) -> usize {
    limit.saturating_add(limit.div_ceil(5))
}

/// Middle-truncates `text` to the policy, as Codex's `truncate_text` does.
///
/// Text within the byte budget (the byte limit, or four bytes per token) is returned borrowed
/// and unchanged, as is empty text. Otherwise half of the budget (rounded down) goes to a
/// prefix, the rest to a suffix, both cut on character boundaries as `split_string` does, and
/// the marker `…N tokens truncated…` (N = ceil((length − budget) / 4)) or `…N chars
/// truncated…` (N = characters actually removed) goes between them, with U+2026 on both
/// sides and nothing else added. A zero budget leaves only the marker.
pub fn truncate_text(text: &str, policy: TruncationPolicy) -> Cow<'_, str> {
    let budget = policy.byte_budget();
    // This also covers the empty string under a zero budget, which Codex returns unchanged.
    if text.len() <= budget {
        return Cow::Borrowed(text);
    }

    let prefix_budget = budget / 2;
    let suffix_budget = budget.saturating_sub(prefix_budget);
    let (removed_chars, prefix, suffix) = split_string(text, prefix_budget, suffix_budget);

    // The token marker reports the excess over the budget rather than the bytes actually cut,
    // which can differ by a few bytes when a cut lands inside a multi-byte character.
    let marker = match policy {
        TruncationPolicy::Tokens(_) => {
            let removed_tokens = tokens_for_bytes(text.len().saturating_sub(budget));
            format!("\u{2026}{removed_tokens} tokens truncated\u{2026}")
        }
        TruncationPolicy::Bytes(_) => format!("\u{2026}{removed_chars} chars truncated\u{2026}"),
    };

    let mut out = String::with_capacity(
        prefix
            .len()
            .saturating_add(marker.len())
            .saturating_add(suffix.len()),
    );
    out.push_str(prefix);
    out.push_str(&marker);
    out.push_str(suffix);
    Cow::Owned(out)
}

/// Splits `text` into a prefix of at most `prefix_bytes` and a suffix of at most
/// `suffix_bytes`, both cut on UTF-8 character boundaries.
///
/// A character belongs to the prefix only if it ends within `prefix_bytes`, and to the suffix
/// only if it starts at or after `len − suffix_bytes`; a character that qualifies for both goes
/// to the prefix, so the two never overlap. Returns the number of characters between them
/// (removed), the prefix and the suffix.
fn split_string(text: &str, prefix_bytes: usize, suffix_bytes: usize) -> (usize, &str, &str) {
    let suffix_from = text.len().saturating_sub(suffix_bytes);
    let mut prefix_end = 0;
    let mut suffix_start = text.len();
    let mut removed = 0;
    // Characters come in order: first those that end within the prefix budget, then the removed
    // ones, then those that start within the suffix budget, so the walk stops at the suffix.
    for (start, character) in text.char_indices() {
        let end = start + character.len_utf8();
        if end <= prefix_bytes {
            prefix_end = end;
        } else if start >= suffix_from {
            suffix_start = start;
            break;
        } else {
            removed += 1;
        }
    }
    // Both cut points are starts or ends of characters the walk saw, and ordered: `split_at`
    // cannot fail on them.
    let (prefix, rest) = text.split_at(prefix_end);
    let (_, suffix) = rest.split_at(suffix_start - prefix_end);
    (removed, prefix, suffix)
}

/// Truncates the `output` value of a `function_call_output` / `custom_tool_call_output` in
/// place.
///
/// A JSON string is middle-truncated with `truncate_text`. A JSON array of content parts is
/// budgeted part by part (Codex's content-items rule): empty texts are dropped, texts are
/// kept while they fit, the first that does not fit is middle-truncated to what is left, later
/// texts are omitted, audio that does not fit is omitted, images, encrypted and unknown parts
/// are kept uncharged, and `[omitted N text items ...]` / `[omitted N audio items ...]` parts
/// are appended. Anything else is left alone. Returns true if the value was changed.
pub(crate) fn truncate_output(output: &mut Value, policy: TruncationPolicy) -> bool {
    match output {
        Value::String(text) => {
            let truncated = match truncate_text(text, policy) {
                Cow::Borrowed(_) => None,
                Cow::Owned(truncated) => Some(truncated),
            };
            match truncated {
                Some(truncated) => {
                    *text = truncated;
                    true
                }
                None => false,
            }
        }
        Value::Array(parts) => truncate_content_parts(parts, policy),
        _ => false,
    }
}

/// Codex's content-items rule, applied to an array of content parts.
fn truncate_content_parts(parts: &mut Vec<Value>, policy: TruncationPolicy) -> bool {
    // The budget is spent in the policy's own unit: bytes for `Bytes`, tokens for `Tokens`.
    let mut remaining = policy.limit();
    let mut omitted_text_items = 0usize;
    let mut omitted_audio_items = 0usize;
    let mut changed = false;
    let mut kept = Vec::with_capacity(parts.len());

    for mut part in std::mem::take(parts) {
        if let Some(text) = typed_string_field(&part, "input_text", "text") {
            if text.is_empty() {
                // Empty text carries nothing for the model but still takes an array slot; it
                // is dropped without being counted as omitted.
                changed = true;
                continue;
            }
            if remaining == 0 {
                // Codex omits outright once the budget is spent instead of leaving a bare
                // marker, so a budget used up exactly by earlier parts omits this one.
                omitted_text_items = omitted_text_items.saturating_add(1);
                changed = true;
                continue;
            }
            let cost = policy.cost_of_bytes(text.len());
            if cost <= remaining {
                remaining = remaining.saturating_sub(cost);
                kept.push(part);
                continue;
            }
            let snippet = truncate_text(text, policy.with_limit(remaining)).into_owned();
            remaining = 0;
            changed = true;
            if snippet.is_empty() {
                omitted_text_items = omitted_text_items.saturating_add(1);
                continue;
            }
            // Replacing the value of an existing key keeps its position (preserve_order) and
            // leaves any other keys of the part as they were.
            if let Value::Object(fields) = &mut part {
                fields.insert("text".to_owned(), Value::String(snippet));
            }
            kept.push(part);
        } else if let Some(audio_url) = typed_string_field(&part, "input_audio", "audio_url") {
            // Codex estimates audio from its decoded duration and falls back to the size of the
            // data URL (ceil(len / 4) tokens) when it cannot decode it. Only that fallback is
            // implemented here; the sample-accurate estimator is out of scope. As in Codex, the
            // estimate is made in tokens and converted to bytes (× 4) under a byte policy.
            let tokens = approx_token_count(audio_url);
            let cost = match policy {
                TruncationPolicy::Bytes(_) => tokens.saturating_mul(BYTES_PER_TOKEN),
                TruncationPolicy::Tokens(_) => tokens,
            };
            if cost <= remaining {
                remaining = remaining.saturating_sub(cost);
                kept.push(part);
            } else {
                omitted_audio_items = omitted_audio_items.saturating_add(1);
                changed = true;
            }
        } else {
            // Images, encrypted content and anything this crate does not recognise (including
            // malformed text or audio parts) pass through untouched and cost nothing: dropping
            // what we cannot interpret would lose data that Codex itself would have kept.
            kept.push(part);
        }
    }

    if omitted_text_items > 0 {
        kept.push(omission_notice(omitted_text_items, "text"));
        changed = true;
    }
    if omitted_audio_items > 0 {
        kept.push(omission_notice(omitted_audio_items, "audio"));
        changed = true;
    }

    *parts = kept;
    changed
}

/// The string `field` of `part` if `part` is an object whose `"type"` is `part_type`.
fn typed_string_field<'a>(part: &'a Value, part_type: &str, field: &str) -> Option<&'a str> {
    let fields = part.as_object()?;
    if fields.get("type").and_then(Value::as_str) != Some(part_type) {
        return None;
    }
    fields.get(field).and_then(Value::as_str)
}

/// The `input_text` part Codex appends to report omitted parts of one kind.
fn omission_notice(count: usize, kind: &str) -> Value {
    let mut fields = Map::new();
    fields.insert("type".to_owned(), Value::String("input_text".to_owned()));
    fields.insert(
        "text".to_owned(),
        Value::String(format!("[omitted {count} {kind} items ...]")),
    );
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EMOJI_TEXT: &str = "😀😀😀😀😀😀😀😀😀😀\nsecond line with text\n";

    // --- FromStr and Display ---

    #[test]
    fn policies_round_trip_through_text() {
        for policy in [
            TruncationPolicy::Tokens(10_000),
            TruncationPolicy::Bytes(0),
            TruncationPolicy::Bytes(usize::MAX),
        ] {
            let text = policy.to_string();
            assert_eq!(text.parse::<TruncationPolicy>(), Ok(policy), "{text}");
        }
        assert_eq!(TruncationPolicy::Tokens(7).to_string(), "tokens:7");
        assert_eq!("bytes:512".parse(), Ok(TruncationPolicy::Bytes(512)));
    }

    #[test]
    fn a_bad_policy_names_what_was_wrong() {
        assert_eq!(
            "10000".parse::<TruncationPolicy>(),
            Err(ParseTruncationError::MissingColon {
                text: "10000".into()
            })
        );
        assert_eq!(
            "lines:5".parse::<TruncationPolicy>(),
            Err(ParseTruncationError::UnknownMode {
                mode: "lines".into()
            })
        );
        let error = "tokens:-1".parse::<TruncationPolicy>().unwrap_err();
        assert!(
            matches!(&error, ParseTruncationError::InvalidLimit { limit, .. } if limit == "-1"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "truncation limit `-1` is not a whole number"
        );
        assert!(std::error::Error::source(&error).is_some());
        assert!("bytes:".parse::<TruncationPolicy>().is_err());
        assert!(
            "bytes:99999999999999999999999"
                .parse::<TruncationPolicy>()
                .is_err()
        );
    }

    // --- split_string (Codex's tests) ---

    #[test]
    fn split_string_works() {
        assert_eq!(split_string("hello world", 5, 5), (1, "hello", "world"));
        assert_eq!(split_string("abc", 0, 0), (3, "", ""));
    }

    #[test]
    fn split_string_handles_empty_string() {
        assert_eq!(split_string("", 4, 4), (0, "", ""));
        assert_eq!(split_string("", 0, 0), (0, "", ""));
    }

    #[test]
    fn split_string_only_keeps_prefix_when_tail_budget_is_zero() {
        assert_eq!(split_string("abcdef", 3, 0), (3, "abc", ""));
    }

    #[test]
    fn split_string_only_keeps_suffix_when_prefix_budget_is_zero() {
        assert_eq!(split_string("abcdef", 0, 3), (3, "", "def"));
    }

    #[test]
    fn split_string_handles_overlapping_budgets_without_removal() {
        assert_eq!(split_string("abcdef", 4, 4), (0, "abcd", "ef"));
        assert_eq!(split_string("abc", 10, 10), (0, "abc", ""));
        assert_eq!(split_string("abc", usize::MAX, usize::MAX), (0, "abc", ""));
    }

    #[test]
    fn split_string_respects_utf8_boundaries() {
        assert_eq!(split_string("😀abc😀", 5, 5), (1, "😀a", "c😀"));
        assert_eq!(split_string("😀😀😀😀😀", 1, 1), (5, "", ""));
        assert_eq!(split_string("😀😀😀😀😀", 7, 7), (3, "😀", "😀"));
        assert_eq!(split_string("😀😀😀😀😀", 8, 8), (1, "😀😀", "😀😀"));
    }

    // --- truncate_text (Codex's vectors) ---

    #[test]
    fn truncate_with_token_budget_returns_original_when_under_limit() {
        let text = "short output";
        let out = truncate_text(text, TruncationPolicy::Tokens(100));
        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!(out, "short output");
        // Exactly at the budget is still unchanged.
        assert!(matches!(
            truncate_text("abcdefgh", TruncationPolicy::Tokens(2)),
            Cow::Borrowed("abcdefgh")
        ));
        assert!(matches!(
            truncate_text("abcdefgh", TruncationPolicy::Bytes(8)),
            Cow::Borrowed("abcdefgh")
        ));
    }

    #[test]
    fn truncate_with_token_budget_reports_truncation_at_zero_limit() {
        assert_eq!(
            truncate_text("abcdef", TruncationPolicy::Tokens(0)),
            "…2 tokens truncated…"
        );
    }

    #[test]
    fn truncate_text_leaves_empty_text_borrowed_at_zero_limit() {
        assert!(matches!(
            truncate_text("", TruncationPolicy::Tokens(0)),
            Cow::Borrowed("")
        ));
        assert!(matches!(
            truncate_text("", TruncationPolicy::Bytes(0)),
            Cow::Borrowed("")
        ));
    }

    #[test]
    fn truncate_text_at_zero_bytes_reports_every_character() {
        assert_eq!(
            truncate_text("😀ab", TruncationPolicy::Bytes(0)),
            "…3 chars truncated…"
        );
    }

    #[test]
    fn truncate_middle_tokens_handles_utf8_content() {
        assert_eq!(
            truncate_text(EMOJI_TEXT, TruncationPolicy::Tokens(8)),
            "😀😀😀😀…8 tokens truncated… line with text\n"
        );
    }

    #[test]
    fn truncate_middle_bytes_handles_utf8_content() {
        assert_eq!(
            truncate_text(EMOJI_TEXT, TruncationPolicy::Bytes(20)),
            "😀😀…21 chars truncated…with text\n"
        );
    }

    #[test]
    fn truncate_text_reports_36250_tokens_for_2500_long_lines() {
        let line = format!("{}\n", "x".repeat(61));
        assert_eq!(line.len(), 62);
        let text = line.repeat(2_500);
        let out = truncate_text(&text, TruncationPolicy::Tokens(2_500));
        // 5,000 bytes of head: 80 whole lines and 40 bytes of the 81st; the tail mirrors it.
        let expected = format!(
            "{}{}…36250 tokens truncated…{}\n{}",
            line.repeat(80),
            "x".repeat(40),
            "x".repeat(39),
            line.repeat(80),
        );
        assert_eq!(out, expected);
    }

    // --- policy ---

    #[test]
    fn policy_serializes_as_mode_and_limit() {
        assert_eq!(
            serde_json::to_string(&TruncationPolicy::Tokens(10)).unwrap(),
            r#"{"mode":"tokens","limit":10}"#
        );
        assert_eq!(
            serde_json::to_string(&TruncationPolicy::Bytes(5)).unwrap(),
            r#"{"mode":"bytes","limit":5}"#
        );
        let back: TruncationPolicy = serde_json::from_str(r#"{"mode":"bytes","limit":7}"#).unwrap();
        assert_eq!(back, TruncationPolicy::Bytes(7));
    }

    #[test]
    fn serialization_allowance_rounds_up() {
        let cases = [
            (TruncationPolicy::Tokens(4), TruncationPolicy::Tokens(5)),
            (TruncationPolicy::Bytes(10), TruncationPolicy::Bytes(12)),
            (
                TruncationPolicy::Tokens(10_000),
                TruncationPolicy::Tokens(12_000),
            ),
            (TruncationPolicy::Tokens(0), TruncationPolicy::Tokens(0)),
            (TruncationPolicy::Bytes(1), TruncationPolicy::Bytes(2)),
            (TruncationPolicy::Tokens(5), TruncationPolicy::Tokens(6)),
            (
                TruncationPolicy::Bytes(usize::MAX),
                TruncationPolicy::Bytes(usize::MAX),
            ),
        ];
        for (policy, expected) in cases {
            assert_eq!(
                policy.with_serialization_allowance(),
                expected,
                "{policy:?}"
            );
        }
    }

    #[test]
    fn serialization_allowance_matches_float_arithmetic() {
        for limit in 0..20_000usize {
            let float = (limit as f64 * 1.2).ceil() as usize;
            assert_eq!(add_twenty_percent_rounded_up(limit), float, "{limit}");
        }
    }

    #[test]
    fn budgets_convert_between_units() {
        assert_eq!(TruncationPolicy::Tokens(3).byte_budget(), 12);
        assert_eq!(TruncationPolicy::Bytes(9).byte_budget(), 9);
        assert_eq!(TruncationPolicy::Bytes(9).token_budget(), 3);
        assert_eq!(TruncationPolicy::Bytes(8).token_budget(), 2);
        assert_eq!(TruncationPolicy::Tokens(7).token_budget(), 7);
        assert_eq!(
            TruncationPolicy::Tokens(usize::MAX).byte_budget(),
            usize::MAX
        );
        assert_eq!(
            TruncationPolicy::Bytes(usize::MAX).token_budget(),
            usize::MAX / 4 + 1
        );
    }

    #[test]
    fn approx_token_count_rounds_up() {
        assert_eq!(approx_token_count(""), 0);
        assert_eq!(approx_token_count("a"), 1);
        assert_eq!(approx_token_count("abcd"), 1);
        assert_eq!(approx_token_count("abcde"), 2);
        assert_eq!(approx_token_count("😀"), 1);
    }

    // --- truncate_output: text bodies and other values ---

    #[test]
    fn truncate_output_truncates_string_bodies() {
        let mut output = json!("abcdef");
        assert!(truncate_output(&mut output, TruncationPolicy::Tokens(0)));
        assert_eq!(output, json!("…2 tokens truncated…"));

        let mut output = json!("short");
        assert!(!truncate_output(&mut output, TruncationPolicy::Tokens(10)));
        assert_eq!(output, json!("short"));
    }

    #[test]
    fn truncate_output_leaves_other_values_alone() {
        for value in [
            json!(null),
            json!(3),
            json!({"content": "abcdef"}),
            json!(true),
        ] {
            let mut output = value.clone();
            assert!(!truncate_output(&mut output, TruncationPolicy::Tokens(0)));
            assert_eq!(output, value);
        }
    }

    // --- truncate_output: content items ---

    #[test]
    fn content_items_all_fit() {
        let original = json!([
            {"type": "input_text", "text": "abcd"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "high"},
            {"type": "input_text", "text": "efgh"},
        ]);
        let mut output = original.clone();
        assert!(!truncate_output(&mut output, TruncationPolicy::Tokens(2)));
        assert_eq!(output, original);

        let mut output = original.clone();
        assert!(!truncate_output(&mut output, TruncationPolicy::Bytes(8)));
        assert_eq!(output, original);
    }

    #[test]
    fn content_items_truncate_first_overflow_and_omit_later_texts() {
        let mut output = json!([
            {"type": "input_text", "text": "aaaa"},
            {"type": "input_text", "text": "bbbbbbbbbbbbbbbb"},
            {"type": "input_image", "image_url": "https://example.com/x.png"},
            {"type": "input_text", "text": "cc"},
            {"type": "input_text", "text": "dd"},
        ]);
        assert!(truncate_output(&mut output, TruncationPolicy::Tokens(3)));
        // "aaaa" costs 1 token; 2 remain, so the 16-byte text keeps 4 + 4 bytes and loses
        // ceil((16 − 8) / 4) = 2 tokens.
        assert_eq!(
            output,
            json!([
                {"type": "input_text", "text": "aaaa"},
                {"type": "input_text", "text": "bbbb…2 tokens truncated…bbbb"},
                {"type": "input_image", "image_url": "https://example.com/x.png"},
                {"type": "input_text", "text": "[omitted 2 text items ...]"},
            ])
        );
    }

    #[test]
    fn content_items_truncate_in_bytes_mode() {
        let mut output = json!([
            {"type": "input_text", "text": "0123456789"},
            {"type": "input_text", "text": "abcdefghij"},
            {"type": "input_text", "text": "z"},
        ]);
        assert!(truncate_output(&mut output, TruncationPolicy::Bytes(14)));
        assert_eq!(
            output,
            json!([
                {"type": "input_text", "text": "0123456789"},
                {"type": "input_text", "text": "ab…6 chars truncated…ij"},
                {"type": "input_text", "text": "[omitted 1 text items ...]"},
            ])
        );
    }

    #[test]
    fn content_items_omit_texts_once_budget_is_exactly_spent() {
        let mut output = json!([
            {"type": "input_text", "text": "abcd"},
            {"type": "input_text", "text": "efgh"},
        ]);
        assert!(truncate_output(&mut output, TruncationPolicy::Tokens(1)));
        assert_eq!(
            output,
            json!([
                {"type": "input_text", "text": "abcd"},
                {"type": "input_text", "text": "[omitted 1 text items ...]"},
            ])
        );

        let mut output = json!([{"type": "input_text", "text": "abc"}]);
        assert!(truncate_output(&mut output, TruncationPolicy::Tokens(0)));
        assert_eq!(
            output,
            json!([{"type": "input_text", "text": "[omitted 1 text items ...]"}])
        );
    }

    #[test]
    fn content_items_drop_empty_texts() {
        let mut output = json!([
            {"type": "input_text", "text": ""},
            {"type": "input_text", "text": "abc"},
            {"type": "input_text", "text": ""},
        ]);
        assert!(truncate_output(&mut output, TruncationPolicy::Tokens(10)));
        assert_eq!(output, json!([{"type": "input_text", "text": "abc"}]));

        // An empty text is not counted as omitted even after the budget is spent.
        let mut output = json!([
            {"type": "input_text", "text": "abcd"},
            {"type": "input_text", "text": ""},
        ]);
        assert!(truncate_output(&mut output, TruncationPolicy::Tokens(1)));
        assert_eq!(output, json!([{"type": "input_text", "text": "abcd"}]));
    }

    #[test]
    fn content_items_keep_images_and_encrypted_parts_uncharged() {
        let image_url = format!("data:image/png;base64,{}", "A".repeat(4_000));
        let original = json!([
            {"type": "input_image", "image_url": image_url, "detail": "high"},
            {"type": "encrypted_content", "encrypted_content": "E".repeat(4_000)},
            {"type": "input_image", "file_id": "file_123", "detail": "original"},
            {"type": "input_text", "text": "abcdefgh"},
        ]);
        let mut output = original.clone();
        assert!(!truncate_output(&mut output, TruncationPolicy::Tokens(2)));
        assert_eq!(output, original);

        let mut output = json!([{"type": "input_image", "image_url": "x"}]);
        assert!(!truncate_output(&mut output, TruncationPolicy::Tokens(0)));
        assert_eq!(output, json!([{"type": "input_image", "image_url": "x"}]));
    }

    #[test]
    fn content_items_drop_audio_over_budget() {
        let mut output = json!([
            {"type": "input_text", "text": "abcd"},
            {"type": "input_audio", "audio_url": "data:audio/wav;base64,AAAAAAAAAAAAAAAA"},
            {"type": "input_audio", "audio_url": "abcd"},
            {"type": "input_text", "text": "efgh"},
        ]);
        // 1 token for the text leaves 2; the 38-byte audio costs 10 and is dropped, the 4-byte
        // audio costs 1 and fits, the last text costs 1 and fits exactly.
        assert!(truncate_output(&mut output, TruncationPolicy::Tokens(3)));
        assert_eq!(
            output,
            json!([
                {"type": "input_text", "text": "abcd"},
                {"type": "input_audio", "audio_url": "abcd"},
                {"type": "input_text", "text": "efgh"},
                {"type": "input_text", "text": "[omitted 1 audio items ...]"},
            ])
        );
    }

    #[test]
    fn content_items_charge_audio_in_bytes_as_four_per_token() {
        // A 5-byte URL is 2 tokens, so 8 bytes under a byte policy: it fits in 8, not in 7.
        let original = json!([{"type": "input_audio", "audio_url": "abcde"}]);
        let mut output = original.clone();
        assert!(!truncate_output(&mut output, TruncationPolicy::Bytes(8)));
        assert_eq!(output, original);

        let mut output = original.clone();
        assert!(truncate_output(&mut output, TruncationPolicy::Bytes(7)));
        assert_eq!(
            output,
            json!([{"type": "input_text", "text": "[omitted 1 audio items ...]"}])
        );
    }

    #[test]
    fn content_items_report_text_before_audio_omissions() {
        let mut output = json!([
            {"type": "input_audio", "audio_url": "a".repeat(100)},
            {"type": "input_text", "text": "abcdefgh"},
            {"type": "input_text", "text": "ij"},
        ]);
        assert!(truncate_output(&mut output, TruncationPolicy::Tokens(1)));
        assert_eq!(
            output,
            json!([
                {"type": "input_text", "text": "ab…1 tokens truncated…gh"},
                {"type": "input_text", "text": "[omitted 1 text items ...]"},
                {"type": "input_text", "text": "[omitted 1 audio items ...]"},
            ])
        );
    }

    #[test]
    fn content_items_preserve_unknown_keys() {
        let original = json!([
            {"type": "input_text", "text": "abcd", "x_meta": {"k": [1, 2]}, "annotations": []},
            {"type": "mystery_part", "payload": "z".repeat(1_000)},
            "not an object",
            {"no_type": true},
            {"type": "input_text", "text": 42},
        ]);
        let mut output = original.clone();
        assert!(!truncate_output(&mut output, TruncationPolicy::Tokens(1)));
        assert_eq!(output, original);

        // A truncated part keeps its other keys, and its key order.
        let mut output = json!([
            {"type": "input_text", "text": "abcdefghijkl", "x_meta": "keep"},
        ]);
        assert!(truncate_output(&mut output, TruncationPolicy::Bytes(4)));
        assert_eq!(
            serde_json::to_string(&output).unwrap(),
            r#"[{"type":"input_text","text":"ab…8 chars truncated…kl","x_meta":"keep"}]"#
        );
    }

    #[test]
    fn content_items_empty_array_is_unchanged() {
        let mut output = json!([]);
        assert!(!truncate_output(&mut output, TruncationPolicy::Tokens(0)));
        assert_eq!(output, json!([]));
    }

    // --- property-style sweep ---

    #[test]
    fn never_panics_and_respects_byte_and_token_budgets() {
        let samples = [
            "",
            "a",
            "abc",
            "hello world",
            "é",
            "héllo wörld",
            "日本語のテキスト",
            "😀",
            "😀abc😀",
            "😀😀😀😀😀",
            EMOJI_TEXT,
            "a\u{0301}e\u{0301}👩‍👩‍👧‍👦 mixed ß ∑ 🎉",
            "\n\n\t\r\n",
        ];
        let budgets = [0usize, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 20, 33, 64, 100];
        for text in samples {
            let total_chars = text.chars().count();
            for &prefix in &budgets {
                for &suffix in &budgets {
                    let (removed, head, tail) = split_string(text, prefix, suffix);
                    assert!(head.len() <= prefix, "{text:?} {prefix} {suffix}");
                    assert!(tail.len() <= suffix, "{text:?} {prefix} {suffix}");
                    assert!(text.starts_with(head) && text.ends_with(tail));
                    assert_eq!(
                        head.chars().count() + removed + tail.chars().count(),
                        total_chars
                    );
                    assert!(head.len() + tail.len() <= text.len());
                }
            }
            for &budget in budgets.iter().chain(&[usize::MAX / 4, usize::MAX]) {
                let out = truncate_text(text, TruncationPolicy::Bytes(budget));
                if text.len() <= budget {
                    assert_eq!(out, text);
                } else {
                    let (head, rest) = out.split_once('\u{2026}').unwrap();
                    let (_, tail) = rest.split_once(" chars truncated\u{2026}").unwrap();
                    assert!(head.len() + tail.len() <= budget, "{text:?} {budget}");
                    assert!(text.starts_with(head) && text.ends_with(tail));
                }
                // Tokens: a budget of 4 bytes a token, the head at most half of it, and the
                // marker counting the tokens of the bytes over the budget, rounded up.
                let out = truncate_text(text, TruncationPolicy::Tokens(budget));
                let bytes = budget.saturating_mul(4);
                if text.len() <= bytes {
                    assert_eq!(out, text);
                } else {
                    let (head, rest) = out.split_once('\u{2026}').unwrap();
                    let (count, tail) = rest.split_once(" tokens truncated\u{2026}").unwrap();
                    assert!(head.len() <= bytes / 2, "{text:?} {budget}");
                    assert!(head.len() + tail.len() <= bytes, "{text:?} {budget}");
                    assert!(text.starts_with(head) && text.ends_with(tail));
                    let over = text.len() - bytes;
                    assert_eq!(count, (over / 4 + usize::from(over % 4 != 0)).to_string());
                }
                let mut string = json!(text);
                let changed = truncate_output(&mut string, TruncationPolicy::Tokens(budget));
                assert_eq!(changed, text.len() > bytes);
                assert_eq!(string, json!(out));
                let mut output = json!([
                    {"type": "input_text", "text": text},
                    {"type": "input_audio", "audio_url": text},
                    {"type": "input_text", "text": text},
                ]);
                let _ = truncate_output(&mut output, TruncationPolicy::Tokens(budget));
                let _ = truncate_output(&mut output, TruncationPolicy::Bytes(budget));
                let mut output = json!(text);
                let _ = truncate_output(&mut output, TruncationPolicy::Bytes(budget));
            }
        }
    }
}
