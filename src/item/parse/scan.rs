//! Reading JSON text in place, for the header reader: a cursor over an item's text, each string
//! found and measured in one pass without a copy, and the compact length of other values
//! measured without building them.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::item::estimate::{escaped_len, value_len};
use crate::item::ids::{CallId, ItemId};

use super::typed::{Key, give_up};

/// A JSON string as it stands in the input, checked as serde_json checks a string it decodes into
/// a `String`, and measured without decoding it.
#[derive(Clone, Copy)]
pub(super) struct RawStr<'a> {
    /// The string's JSON text, quotes included.
    pub(super) raw: &'a str,
    /// The length of the decoded string in bytes.
    pub(super) len: usize,
}

impl<'a> RawStr<'a> {
    /// The decoded string (copied only when it has escapes).
    pub(super) fn decoded(&self) -> Option<Cow<'a, str>> {
        let inner = &self.raw[1..self.raw.len() - 1];
        if inner.len() == self.len {
            // Every escape is longer than what it decodes to: no escape, the text is the string.
            Some(Cow::Borrowed(inner))
        } else {
            serde_json::from_str::<String>(self.raw)
                .ok()
                .map(Cow::Owned)
        }
    }

    pub(super) fn call_id(&self) -> Option<CallId> {
        self.decoded().map(CallId::new)
    }

    pub(super) fn item_id(&self) -> Option<ItemId> {
        self.decoded().map(ItemId::new)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: &'a str = <&'de RawValue>::deserialize(deserializer)?.get();
        let measured = raw
            .strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
            .and_then(decoded_len);
        match measured {
            Some(len) => Ok(RawStr { raw, len }),
            None => Err(give_up()),
        }
    }
}

/// The length of the string whose JSON text between the quotes is `inner` — a text serde_json's
/// skip accepted: no unescaped quote or control character, every escape one of `\" \\ \/ \b \f
/// \n \r \t \uXXXX` — once decoded; `None` where decoding it into a `str` fails (a surrogate
/// escape not in a leading-trailing pair) or the text is not what the skip accepts.
pub(crate) fn decoded_len(inner: &str) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES * 0x80;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    let bytes = inner.as_bytes();
    // What the escapes remove: each is longer than what it decodes to.
    let mut removed = 0usize;
    let mut at = 0;
    loop {
        // Eight bytes at a time to the next backslash (one call per string, not per escape: an
        // escape every few dozen bytes is common in tool output). The lowest flagged byte of
        // the zero-byte test is exact.
        while let Some(chunk) = bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(chunk.try_into().ok()?) ^ BACKSLASHES;
            let found = word.wrapping_sub(ONES) & !word & HIGHS;
            if found != 0 {
                at += (found.trailing_zeros() / 8) as usize;
                break;
            }
            at += 8;
        }
        match bytes[at..].iter().position(|&byte| byte == b'\\') {
            Some(offset) => at += offset + 1,
            None => return Some(bytes.len() - removed),
        }
        let (next, shorter) = escape(bytes, at)?;
        at = next;
        removed += shorter;
    }
}

/// Four hex digits, either case.
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, &digit| {
        Some(value * 16 + char::from(digit).to_digit(16)?)
    })
}

/// The header reader's position in an item's text.
///
/// The reader walks the item's object itself, so that each string value is found and measured
/// in one pass ([`scan_string`]) rather than skipped by serde_json and measured again; every
/// other value (parts, tools, metadata, unknown fields) is read by serde_json from the cursor on,
/// with the model's type or fully validated, exactly as the type-first parser reads it.
pub(super) struct Cursor<'a> {
    pub(super) text: &'a str,
    pub(super) at: usize,
}

/// More opening brackets than this in a value read by serde_json from the cursor and the reader
/// gives up: serde_json counts its nesting limit from where it starts, one level below where
/// the typed path counts it from, so deep nesting is left to the typed path.
const MAX_BRACKETS: usize = 64;

impl<'a> Cursor<'a> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Skips JSON white space.
    pub(super) fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The next byte after white space, consumed.
    pub(super) fn next_byte(&mut self) -> Option<u8> {
        self.skip_space();
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    /// A string value.
    pub(super) fn string(&mut self) -> Option<RawStr<'a>> {
        self.skip_space();
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at;
        let (end, len) = scan_string(self.text.as_bytes(), start + 1)?;
        self.at = end;
        Some(RawStr {
            raw: self.text.get(start..end)?,
            len,
        })
    }

    /// `null` or a string.
    pub(super) fn nullable_string(&mut self) -> Option<Option<RawStr<'a>>> {
        self.skip_space();
        if self.peek()? == b'n' {
            let rest = self.text.get(self.at..)?;
            if !rest.starts_with("null") {
                return None;
            }
            self.at += 4;
            return Some(None);
        }
        self.string().map(Some)
    }

    /// A key without escapes (one with escapes gives up: the typed path reads it) and its colon.
    pub(super) fn key(&mut self) -> Option<&'a str> {
        let key = self.string()?;
        let inner = &key.raw[1..key.raw.len() - 1];
        // Every escape is longer than what it decodes to.
        if inner.len() != key.len || self.next_byte()? != b':' {
            return None;
        }
        Some(inner)
    }

    /// A value read by serde_json as a `T`, from the cursor on.
    pub(super) fn value<T: Deserialize<'a>>(&mut self) -> Option<T> {
        self.skip_space();
        let rest = self.text.get(self.at..)?;
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        let value = values.next()?.ok()?;
        let used = values.byte_offset();
        if memchr::memchr2_iter(b'[', b'{', rest.get(..used)?.as_bytes())
            .nth(MAX_BRACKETS)
            .is_some()
        {
            return None;
        }
        self.at += used;
        Some(value)
    }
}

/// Finds the end of the JSON string whose text starts at `at` (after its opening quote) and the
/// length of the string decoded, in one pass: the position after its closing quote and that
/// length. `None` where serde_json would refuse to decode it into a `str`: a control character,
/// an unknown escape, a surrogate escape not in a leading-trailing pair, no closing quote.
fn scan_string(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES * 0x80;
    let start = at;
    // What the escapes remove: each is longer than what it decodes to.
    let mut removed = 0usize;
    loop {
        // Eight bytes at a time to the next quote, backslash or control character (serde_json's
        // skip does the same). The lowest flagged byte of each zero-byte test is exact.
        while let Some(chunk) = bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(chunk.try_into().ok()?);
            let quote = word ^ (ONES * u64::from(b'"'));
            let backslash = word ^ (ONES * u64::from(b'\\'));
            let found = ((quote.wrapping_sub(ONES) & !quote)
                | (backslash.wrapping_sub(ONES) & !backslash)
                | (word.wrapping_sub(ONES * 0x20) & !word))
                & HIGHS;
            if found != 0 {
                at += (found.trailing_zeros() / 8) as usize;
                break;
            }
            at += 8;
        }
        let special = loop {
            let byte = *bytes.get(at)?;
            if byte == b'"' || byte == b'\\' || byte < 0x20 {
                break byte;
            }
            at += 1;
        };
        match special {
            b'"' => return Some((at + 1, at - start - removed)),
            b'\\' => at += 1,
            _ => return None,
        }
        let (next, shorter) = escape(bytes, at)?;
        at = next;
        removed += shorter;
    }
}

/// The escape whose text starts at `at` (just after its backslash), as serde_json decodes it
/// into a `str`: the position after it and how many bytes shorter it is decoded (`\uXXXX` is
/// six bytes and stands for a character of one to three, a surrogate pair of twelve for one of
/// four). `None` for an unknown escape or a surrogate escape not in a leading-trailing pair.
fn escape(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    match *bytes.get(at)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some((at + 1, 1)),
        b'u' => {
            let unit = hex4(bytes.get(at + 1..at + 5)?)?;
            let at = at + 5;
            match unit {
                0..=0x7f => Some((at, 5)),
                0x80..=0x7ff => Some((at, 4)),
                0xd800..=0xdbff => {
                    let next = bytes.get(at..at + 6)?;
                    let trailing =
                        next.starts_with(b"\\u") && (0xdc00..=0xdfff).contains(&hex4(&next[2..])?);
                    trailing.then_some((at + 6, 8))
                }
                0xdc00..=0xdfff => None,
                _ => Some((at, 3)),
            }
        }
        _ => None,
    }
}

/// The length of a list of JSON values' compact text, as `values_len` counts it for the
/// `serde_json::Value`s the typed item holds, read without building them.
pub(super) struct ValuesLen(pub(super) usize);

impl<'de> Deserialize<'de> for ValuesLen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_seq(CompactLenVisitor)
            .map(ValuesLen)
    }
}

/// The length of one JSON value's compact text, as `value_len` counts it for the
/// `serde_json::Value` the same input deserializes into.
struct CompactLen(usize);

impl<'de> Deserialize<'de> for CompactLen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(CompactLenVisitor)
            .map(CompactLen)
    }
}

/// The key serde_json's `Value` reads as a raw value rather than an object (its `raw_value`
/// feature): such an object is left to the typed path.
const RAW_VALUE_KEY: &str = "$serde_json::private::RawValue";

/// Objects with more keys than this are left to the typed path (duplicate keys are looked for
/// pairwise).
const MAX_KEYS: usize = 64;

struct CompactLenVisitor;

impl CompactLenVisitor {
    fn number<E: de::Error>(value: serde_json::Value) -> Result<usize, E> {
        value_len(&value).map_err(|_| give_up())
    }
}

impl<'de> Visitor<'de> for CompactLenVisitor {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<usize, E> {
        Ok(if value { 4 } else { 5 })
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<usize, E> {
        Self::number(value.into())
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<usize, E> {
        Self::number(value.into())
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<usize, E> {
        Self::number(value.into())
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<usize, E> {
        Ok(escaped_len(value))
    }
    fn visit_unit<E: de::Error>(self) -> Result<usize, E> {
        Ok(4)
    }
    fn visit_none<E: de::Error>(self) -> Result<usize, E> {
        Ok(4)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_any(CompactLenVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let (mut total, mut count) = (2usize, 0usize);
        while let Some(CompactLen(len)) = seq.next_element()? {
            total = total.saturating_add(len);
            count += 1;
        }
        Ok(total.saturating_add(count.saturating_sub(1)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        let mut total = 2usize;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            // A repeated key is one entry of a `Value` (the last value in the first place), and
            // the raw-value key is not an object at all: the typed path decides.
            if key == RAW_VALUE_KEY || keys.len() >= MAX_KEYS || keys.contains(&key) {
                return Err(give_up());
            }
            let CompactLen(len) = map.next_value()?;
            total = total
                .saturating_add(escaped_len(&key))
                .saturating_add(1)
                .saturating_add(len);
            keys.push(key);
        }
        Ok(total.saturating_add(keys.len().saturating_sub(1)))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A string written as JSON with each character escaped or not at random: `\uXXXX` (a
    /// surrogate pair above the BMP), the short escapes, or as it is.
    fn escaped(text: &str, choices: &[u8]) -> String {
        let mut json = String::from("\"");
        for (index, c) in text.chars().enumerate() {
            let choice = choices
                .get(index % choices.len().max(1))
                .copied()
                .unwrap_or(0);
            let short = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                '\u{8}' => Some("\\b"),
                '\u{c}' => Some("\\f"),
                '/' if choice % 2 == 0 => Some("\\/"),
                _ => None,
            };
            if choice % 3 == 0 || (short.is_none() && (c < ' ')) {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    if choice % 4 == 0 {
                        json.push_str(&format!("\\u{unit:04X}"));
                    } else {
                        json.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            } else if let Some(short) = short {
                json.push_str(short);
            } else {
                json.push(c);
            }
        }
        json.push('"');
        json
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]


        #[test]
        fn the_measured_length_is_the_decoded_length(
            text in any::<String>(),
            choices in prop::collection::vec(any::<u8>(), 1..8),
        ) {
            let json = escaped(&text, &choices);
            prop_assert_eq!(serde_json::from_str::<String>(&json).expect("JSON"), text.clone());
            prop_assert_eq!(decoded_len(&json[1..json.len() - 1]), Some(text.len()));
            // Found and measured in one pass, followed by anything.
            let followed = format!("{json},\"x\"");
            prop_assert_eq!(scan_string(followed.as_bytes(), 1), Some((json.len(), text.len())));
        }

        #[test]
        fn surrogate_escapes_measure_only_in_pairs(
            units in prop::collection::vec(prop_oneof![0xd7f0..0xe010u32, 0..0x80u32], 0..6),
            tail in "[a-z\\\\]{0,2}",
        ) {
            let mut json = String::from("\"");
            for unit in &units {
                json.push_str(&format!("\\u{unit:04x}"));
            }
            json.push_str(&tail.replace('\\', "\\\\"));
            json.push('"');
            let decoded = serde_json::from_str::<String>(&json);
            let measured = decoded_len(&json[1..json.len() - 1]);
            prop_assert_eq!(measured, decoded.as_ref().ok().map(String::len), "{}", json);
            let scanned = scan_string(json.as_bytes(), 1).map(|(_, len)| len);
            prop_assert_eq!(scanned, decoded.as_ref().ok().map(String::len), "{}", json);
        }

        #[test]
        fn the_scanner_refuses_what_serde_json_refuses(
            body in prop::collection::vec(prop_oneof![
                Just("a".to_owned()), Just("\\".to_owned()), Just("\"".to_owned()),
                Just("\u{1}".to_owned()), Just("\n".to_owned()), Just("é".to_owned()),
                Just("\\u00".to_owned()), Just("\\x".to_owned()), Just("\\ud83d".to_owned()),
                Just("\\ude00".to_owned()), Just("\\\\".to_owned()), Just("\\\"".to_owned()),
            ], 0..24),
        ) {
            // Any bytes after an opening quote: the scanner finds the string serde_json reads
            // (or refuses it where serde_json does), whatever follows it.
            let json = format!("\"{}", body.concat());
            let decoded = serde_json::Deserializer::from_str(&json)
                .into_iter::<String>()
                .next()
                .and_then(Result::ok);
            match scan_string(json.as_bytes(), 1) {
                Some((end, len)) => {
                    let string = serde_json::from_str::<String>(&json[..end]).expect("a string");
                    prop_assert_eq!(string.len(), len, "{}", json);
                }
                None => prop_assert!(
                    serde_json::from_str::<String>(&json).is_err()
                        && decoded.is_none_or(|text| !json.starts_with(&serde_json::to_string(&text).unwrap_or_default())),
                    "{}", json
                ),
            }
        }
    }
}
