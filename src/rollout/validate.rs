//! Payload validation: what each line must be for the reader to use it, parsed once into what
//! resume needs.
//!
//! A line is UTF-8 and a JSON envelope (`type` + `payload`); the payloads resume interprets must
//! have their shape (`docs/rollout-format.md`, "Reading: what is skipped, what fails"). An
//! `inter_agent_communication` is converted here into the `agent_message` item resume records.
//! Payloads of other line types are kept as they are.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::item::{
    Entry, InterAgentCommunication, ItemKind, OutputBody, ResponseItem, ThreadId, TurnId,
    error_chain, json_type, parse_item,
};

use super::line::{CompactedPayload, Event, Facts, LineContent, LineKind, MetaFacts};
use super::paginated::{HistoryBase, HistoryMode};
use super::report::{LineRepair, SkipReason};

/// What a line that parsed becomes.
pub(super) enum Parsed {
    /// A usable line.
    Line {
        kind: LineKind,
        content: LineContent,
        /// Ghost snapshots dropped from a `compacted` line's replacement history.
        ghost_snapshots: u64,
        /// What was repaired to use the line (a salvaged `session_meta`).
        repair: Option<LineRepair>,
        /// The envelope's `ordinal` (paginated files).
        ordinal: Option<u64>,
    },
    /// A line that is read and deliberately not used.
    Ignored(Ignored),
}

/// Lines that are read and deliberately not used.
pub(super) enum Ignored {
    /// A legacy `ghost_snapshot` item.
    GhostSnapshot,
    /// A legacy `{"record_type":"state",…}` line.
    StateLine,
}

/// The two line formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// `{timestamp, type, payload}` envelopes.
    Envelope,
    /// A bare session meta object, then bare items and state lines.
    Legacy,
}

/// The format of a file whose first JSON object line is `text` (trimmed, not empty): legacy when
/// it is a bare session meta (an `id` and a `timestamp`, not a `type` + `payload` envelope).
pub(super) fn sniff_format(text: &str) -> Result<Format, SkipReason> {
    #[derive(Deserialize)]
    struct FormatSniff<'a> {
        #[serde(rename = "type", borrow, default)]
        kind: Option<&'a RawValue>,
        #[serde(borrow, default)]
        payload: Option<&'a RawValue>,
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        timestamp: Option<&'a RawValue>,
    }
    let value = json_object(text)?;
    let head: FormatSniff<'_> = serde_json::from_str(value.get())
        .map_err(|error| SkipReason::NotAnEnvelope(error.to_string()))?;
    let legacy_meta = head.id.is_some()
        && head.timestamp.is_some()
        && !(head.kind.is_some() && head.payload.is_some());
    Ok(if legacy_meta {
        Format::Legacy
    } else {
        Format::Envelope
    })
}

/// Parses the bare session meta that opens a legacy file; with `salvage`, a meta without the
/// strict shape is read leniently for its id (see [`session_meta`]).
pub(super) fn parse_legacy_meta(text: &str, salvage: bool) -> Result<Parsed, SkipReason> {
    let value = json_object(text)?;
    let (facts, repair) = session_meta(value.get(), salvage)?;
    Ok(Parsed::Line {
        kind: LineKind::SessionMeta,
        content: LineContent::Payload { raw: value, facts },
        ghost_snapshots: 0,
        repair,
        ordinal: None,
    })
}

/// Parses an envelope line (`text` is trimmed, not empty); with `salvage`, a `session_meta`
/// without the strict shape is read leniently for its id (see [`session_meta`]).
pub(super) fn parse_envelope(text: &str, salvage: bool) -> Result<Parsed, SkipReason> {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
        payload: Box<RawValue>,
        #[serde(default)]
        ordinal: Option<u64>,
    }
    if let Some(parsed) = response_item_line(text) {
        return Ok(parsed);
    }
    if !text.starts_with('{') {
        return Err(not_an_object(text));
    }
    // Tell invalid JSON (a torn line, say) from valid JSON of the wrong shape.
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(error) if error.is_data() => return Err(SkipReason::NotAnEnvelope(error.to_string())),
        Err(error) => return Err(SkipReason::InvalidJson(error.to_string())),
    };
    let kind = LineKind::from_type(&envelope.kind);
    let raw = envelope.payload;
    let ordinal = envelope.ordinal;
    let mut ghost_snapshots = 0;
    let mut repair = None;
    let facts = match &kind {
        LineKind::SessionMeta => {
            let (facts, salvaged) = session_meta(raw.get(), salvage)?;
            repair = salvaged;
            facts
        }
        LineKind::ResponseItem => {
            return Ok(match item_entry(raw.get())? {
                Some((entry, output)) => Parsed::Line {
                    kind,
                    content: LineContent::Item {
                        entry,
                        output,
                        payload: None,
                    },
                    ghost_snapshots: 0,
                    repair: None,
                    ordinal,
                },
                None => Parsed::Ignored(Ignored::GhostSnapshot),
            });
        }
        LineKind::Compacted => {
            let (compacted, ghosts) = parse_compacted(raw.get())?;
            ghost_snapshots = ghosts;
            Facts::Compacted(Arc::new(compacted))
        }
        LineKind::EventMsg => {
            Facts::Event(parse_event(raw.get()).map_err(SkipReason::InvalidPayload)?)
        }
        LineKind::TurnContext => {
            parse_turn_context(raw.get()).map_err(SkipReason::InvalidPayload)?
        }
        LineKind::InterAgentCommunication => {
            let (entry, output) = inter_agent_entry(raw.get())?;
            return Ok(Parsed::Line {
                kind,
                content: LineContent::Item {
                    entry,
                    output,
                    payload: Some(raw),
                },
                ghost_snapshots: 0,
                repair: None,
                ordinal,
            });
        }
        LineKind::WorldState => parse_world_state(raw.get()).map_err(SkipReason::InvalidPayload)?,
        LineKind::Other(_) => Facts::None,
    };
    Ok(Parsed::Line {
        kind,
        content: LineContent::Payload { raw, facts },
        ghost_snapshots,
        repair,
        ordinal,
    })
}

/// A `world_state` payload's shape: an object with a boolean `full` and a `state` of any JSON
/// (Codex's decoding; a line it cannot decode it skips). Whether `state` is a snapshot or a patch
/// of the right kind is for resume to decide, and only for the lines that can matter: here it is
/// only checked to be JSON, without building a value.
fn parse_world_state(payload: &str) -> Result<Facts, String> {
    #[derive(Deserialize)]
    struct Shape<'a> {
        full: bool,
        // Checked to be there and to be JSON; read by resume.
        #[serde(rename = "state", borrow)]
        _state: &'a RawValue,
    }
    let shape: Shape<'_> = serde_json::from_str(payload)
        .map_err(|error| format!("not a world_state payload {{full, state}}: {error}"))?;
    Ok(Facts::WorldState { full: shape.full })
}

/// The hot path of [`parse_envelope`]: a `response_item` line exactly as Codex and this library
/// write it — `{"timestamp":"…","type":"response_item","payload":{…}}`, no white space between
/// the tokens, a timestamp without escapes — whose payload is an item. The payload is then the
/// text between the fixed head and the closing brace, and it is parsed once, as the item it is:
/// the envelope is not parsed first, nor the payload's bytes validated twice.
///
/// A paginated file's line has an `"ordinal":N,` between the timestamp and the type, read here
/// too.
///
/// Such a line is a valid envelope (the head is valid JSON by the checks made here, the payload
/// by the item's parse), so [`parse_envelope`]'s generic path would find the same payload text
/// and make the same entry of it. `None` for any other line, and for a payload that is not an
/// item: the generic path then reads the line and says what is wrong with it.
fn response_item_line(text: &str) -> Option<Parsed> {
    const HEAD: &str = "{\"timestamp\":\"";
    const ORDINAL: &str = "\",\"ordinal\":";
    const TYPE: &str = "\"type\":\"response_item\",\"payload\":";
    let rest = text.strip_prefix(HEAD)?;
    let stamp_end = memchr::memchr(b'"', rest.as_bytes())?;
    // A JSON string without escapes holds no backslash and no control character.
    if rest.as_bytes()[..stamp_end]
        .iter()
        .any(|&byte| byte == b'\\' || byte < 0x20)
    {
        return None;
    }
    let after_stamp = &rest[stamp_end..];
    let (ordinal, typed) = match after_stamp.strip_prefix(ORDINAL) {
        Some(numbered) => {
            let digits = numbered.bytes().take_while(u8::is_ascii_digit).count();
            // JSON has no leading zeros; a number that does not fit is left to the slow path.
            if digits == 0 || (digits > 1 && numbered.starts_with('0')) {
                return None;
            }
            let ordinal = numbered[..digits].parse::<u64>().ok()?;
            (Some(ordinal), numbered[digits..].strip_prefix(',')?)
        }
        None => (None, after_stamp.strip_prefix("\",")?),
    };
    let payload = typed
        .strip_prefix(TYPE)?
        .strip_suffix('}')?
        // JSON's white space only: any other character there is not JSON.
        .trim_end_matches([' ', '\t', '\n', '\r']);
    if !payload.starts_with('{') {
        return None;
    }
    let (entry, output) = match item_entry(payload) {
        Ok(Some(item)) => item,
        Ok(None) => return Some(Parsed::Ignored(Ignored::GhostSnapshot)),
        Err(_) => return None,
    };
    Some(Parsed::Line {
        kind: LineKind::ResponseItem,
        content: LineContent::Item {
            entry,
            output,
            payload: None,
        },
        ghost_snapshots: 0,
        repair: None,
        ordinal,
    })
}

/// A line of a legacy file after the session meta: a state line or a bare item.
pub(super) fn parse_legacy(text: &str) -> Result<Parsed, SkipReason> {
    #[derive(Deserialize)]
    struct StateSniff<'a> {
        #[serde(borrow, default)]
        record_type: Option<Cow<'a, str>>,
    }
    let value = json_object(text)?;
    let sniff: StateSniff<'_> = serde_json::from_str(value.get())
        .map_err(|error| SkipReason::NotAnEnvelope(error.to_string()))?;
    if sniff.record_type.as_deref() == Some("state") {
        return Ok(Parsed::Ignored(Ignored::StateLine));
    }
    Ok(match item_entry(value.get())? {
        Some((entry, output)) => Parsed::Line {
            kind: LineKind::ResponseItem,
            content: LineContent::Item {
                entry,
                output,
                payload: None,
            },
            ghost_snapshots: 0,
            repair: None,
            ordinal: None,
        },
        None => Parsed::Ignored(Ignored::GhostSnapshot),
    })
}

/// Parses `text` (trimmed, not empty) as a JSON object.
fn json_object(text: &str) -> Result<Box<RawValue>, SkipReason> {
    if !text.starts_with('{') {
        return Err(not_an_object(text));
    }
    serde_json::from_str(text).map_err(|error| SkipReason::InvalidJson(error.to_string()))
}

/// Why `text`, which does not start with `{`, is not a line.
fn not_an_object(text: &str) -> SkipReason {
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Ok(_) => SkipReason::NotAnEnvelope("not a JSON object".to_owned()),
        Err(error) => SkipReason::InvalidJson(error.to_string()),
    }
}

/// Checks that a payload is a JSON object (serde would also read a struct from an array).
fn expect_object(payload: &str, kind: &str) -> Result<(), String> {
    if payload.trim_start().starts_with('{') {
        Ok(())
    } else {
        Err(format!("{kind}: the payload is not a JSON object"))
    }
}

/// An item, parsed once into its entry and what it shows of a tool output's body (so that
/// replaying it does not read the text again); `None` for a legacy `ghost_snapshot`, which is
/// dropped.
fn item_entry(json: &str) -> Result<Option<(Entry, OutputBody)>, SkipReason> {
    let invalid = |error| SkipReason::InvalidItem(error_chain(&error));
    // Tool calls and outputs, reasoning: read without building the typed item (never a
    // `ghost_snapshot`).
    if let Some(header) = Entry::read_header(json) {
        return Entry::from_header(json.into(), header)
            .map(Some)
            .map_err(invalid);
    }
    let item = parse_item(json).map_err(invalid)?;
    let output = OutputBody::of(&item);
    let entry = Entry::from_parts(json.into(), &item).map_err(invalid)?;
    // `ghost_snapshot` is not a type this library models, so only unknown items need a look.
    if entry.kind() == ItemKind::Unknown && is_ghost_snapshot(json) {
        return Ok(None);
    }
    Ok(Some((entry, output)))
}

/// The `agent_message` item an `inter_agent_communication` payload stands for, as Codex converts
/// it on resume ([`InterAgentCommunication::to_agent_message`]). A payload that is not a
/// communication is an invalid payload: Codex cannot read the line either, and skips it.
fn inter_agent_entry(payload: &str) -> Result<(Entry, OutputBody), SkipReason> {
    let communication = InterAgentCommunication::from_json(payload).map_err(|error| {
        SkipReason::InvalidPayload(format!("inter_agent_communication: {error}"))
    })?;
    let item = ResponseItem::AgentMessage(communication.to_agent_message());
    let entry = Entry::from_item(&item).map_err(|error| {
        SkipReason::InvalidPayload(format!("inter_agent_communication: {error}"))
    })?;
    Ok((entry, OutputBody::of(&item)))
}

fn is_ghost_snapshot(json: &str) -> bool {
    #[derive(Deserialize)]
    struct TypeSniff<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
    }
    serde_json::from_str::<TypeSniff<'_>>(json).is_ok_and(|item| item.kind == "ghost_snapshot")
}

/// The facts of a `session_meta` payload: its `id`, a UUID. With `salvage`, a payload that does
/// not have the strict shape (a duplicate key, say) is read again leniently — as a JSON object,
/// the last of duplicate keys winning — and used when its `id` is a UUID, with the strict
/// reading's message as the repair: one bad field must not make the thread unreadable.
fn session_meta(payload: &str, salvage: bool) -> Result<(Facts, Option<LineRepair>), SkipReason> {
    #[derive(Deserialize)]
    struct SessionMetaHead {
        id: ThreadId,
        #[serde(default)]
        history_mode: HistoryMode,
        #[serde(default)]
        history_base: Option<HistoryBase>,
    }
    let strict = expect_object(payload, "session_meta").and_then(|()| {
        serde_json::from_str::<SessionMetaHead>(payload)
            .map(|meta| MetaFacts {
                id: meta.id,
                mode: meta.history_mode,
                base: meta.history_base,
            })
            .map_err(|error| format!("session_meta: {error}"))
    });
    match strict {
        Ok(meta) => Ok((Facts::SessionMeta(meta), None)),
        Err(why) => match salvage.then(|| lenient_meta(payload)).flatten() {
            Some(meta) => Ok((
                Facts::SessionMeta(meta),
                Some(LineRepair::LenientSessionMeta(why)),
            )),
            None => Err(SkipReason::InvalidPayload(why)),
        },
    }
}

/// A damaged `session_meta` read for what a resume needs: its id, and its mode and base where
/// they are intact. A mode that is there and not known is never salvaged (Codex refuses the
/// file): a paginated file read as a legacy one would lose its lineage.
fn lenient_meta(payload: &str) -> Option<MetaFacts> {
    let meta = serde_json::from_str::<serde_json::Map<String, Value>>(payload).ok()?;
    let id = meta.get("id")?.as_str()?.parse::<ThreadId>().ok()?;
    let mode = match meta.get("history_mode") {
        None | Some(Value::Null) => HistoryMode::Legacy,
        Some(mode) => HistoryMode::deserialize(mode).ok()?,
    };
    let base = match meta.get("history_base") {
        None | Some(Value::Null) => None,
        Some(base) => Some(HistoryBase::deserialize(base).ok()?),
    };
    Some(MetaFacts { id, mode, base })
}

/// Parses and checks a `compacted` payload; also returns how many ghost snapshots its
/// replacement history held (they are dropped).
fn parse_compacted(payload: &str) -> Result<(CompactedPayload, u64), SkipReason> {
    #[derive(Deserialize)]
    struct Compacted<'a> {
        message: String,
        #[serde(borrow, default)]
        replacement_history: Option<Vec<&'a RawValue>>,
    }
    expect_object(payload, "compacted").map_err(SkipReason::InvalidPayload)?;
    let compacted: Compacted<'_> = serde_json::from_str(payload)
        .map_err(|error| SkipReason::InvalidPayload(format!("compacted: {error}")))?;
    let mut ghost_snapshots = 0;
    let replacement_history = match compacted.replacement_history {
        None => None,
        Some(items) => {
            let mut entries = Vec::with_capacity(items.len());
            for (position, item) in items.iter().enumerate() {
                match item_entry(item.get()) {
                    Ok(Some((entry, _))) => entries.push(entry),
                    Ok(None) => ghost_snapshots += 1,
                    Err(SkipReason::InvalidItem(why)) => {
                        return Err(SkipReason::InvalidItem(format!(
                            "replacement_history[{position}]: {why}"
                        )));
                    }
                    Err(other) => return Err(other),
                }
            }
            Some(entries)
        }
    };
    let compacted = CompactedPayload {
        message: compacted.message,
        replacement_history,
    };
    Ok((compacted, ghost_snapshots))
}

/// Parses an `event_msg` payload, in one pass: an object with a string `type`; the events resume
/// reads must have their fields (a turn event's `turn_id`, when present and not `null`, is a
/// string; a rollback has a whole `num_turns`).
fn parse_event(payload: &str) -> Result<Event, String> {
    #[derive(Deserialize)]
    struct Fields<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
        #[serde(borrow, default)]
        turn_id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        num_turns: Option<&'a RawValue>,
    }
    expect_object(payload, "event_msg")?;
    let fields: Fields<'_> =
        serde_json::from_str(payload).map_err(|error| format!("event_msg: {error}"))?;
    let kind = fields.kind.as_ref();
    let turn_id = || match fields.turn_id {
        None => Ok(None),
        Some(raw) => serde_json::from_str::<Option<TurnId>>(raw.get())
            .map_err(|error| format!("{kind}: `turn_id`: {error}")),
    };
    Ok(match kind {
        // Codex writes `task_started` / `task_complete` and reads `turn_started` /
        // `turn_complete` as aliases: both spellings mean the same event.
        "task_started" | "turn_started" => Event::TurnStarted {
            turn_id: turn_id()?,
        },
        "task_complete" | "turn_complete" | "turn_aborted" => Event::TurnEnded {
            turn_id: turn_id()?,
        },
        "user_message" => Event::UserMessage,
        "thread_rolled_back" => {
            let raw = fields
                .num_turns
                .ok_or_else(|| format!("{kind}: missing field `num_turns`"))?;
            let num_turns = serde_json::from_str::<u64>(raw.get())
                .map_err(|error| format!("{kind}: `num_turns`: {error}"))?;
            Event::ThreadRolledBack { num_turns }
        }
        _ => Event::Other,
    })
}

/// A `turn_context` payload: an object whose `turn_id`, when present and not `null`, is a string.
fn parse_turn_context(payload: &str) -> Result<Facts, String> {
    expect_object(payload, "turn_context")?;
    let value: Value =
        serde_json::from_str(payload).map_err(|error| format!("turn_context: {error}"))?;
    let turn_id = match value.get("turn_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(TurnId::new(id)),
        Some(other) => {
            return Err(format!(
                "turn_context: `turn_id` is {}, not a string",
                json_type(other)
            ));
        }
    };
    Ok(Facts::TurnContext { turn_id })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ITEM: &str =
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#;

    /// The ordinal the hot path reads, or `None` when it leaves the line to the slow path.
    fn hot_ordinal(head: &str) -> Option<Option<u64>> {
        let line = format!(
            r#"{{"timestamp":"2026-09-20T08:00:00.000Z"{head}"type":"response_item","payload":{ITEM}}}"#
        );
        match response_item_line(&line)? {
            Parsed::Line { ordinal, .. } => Some(ordinal),
            Parsed::Ignored(_) => None,
        }
    }

    #[test]
    fn the_hot_path_reads_a_paginated_lines_ordinal_and_leaves_odd_numbers_to_the_slow_path() {
        assert_eq!(hot_ordinal(","), Some(None));
        assert_eq!(hot_ordinal(r#","ordinal":0,"#), Some(Some(0)));
        assert_eq!(hot_ordinal(r#","ordinal":1234,"#), Some(Some(1234)));
        for odd in [
            r#","ordinal":01,"#,
            r#","ordinal":1.0,"#,
            r#","ordinal":-1,"#,
            r#","ordinal":99999999999999999999,"#,
            r#","ordinal":,"#,
        ] {
            assert_eq!(hot_ordinal(odd), None, "{odd}");
        }
        // The slow path reads what is JSON (a leading zero is not) and refuses what is no u64.
        let slow = |head: &str| {
            let line =
                format!(r#"{{"timestamp":"t"{head}"type":"response_item","payload":{ITEM}}}"#);
            match parse_envelope(&line, false) {
                Ok(Parsed::Line { ordinal, .. }) => Ok(ordinal),
                Ok(Parsed::Ignored(_)) => Ok(None),
                Err(reason) => Err(reason.to_string()),
            }
        };
        assert_eq!(slow(r#","ordinal" : 7 ,"#), Ok(Some(7)));
        assert!(slow(r#","ordinal":1.5,"#).is_err());
        assert!(slow(r#","ordinal":-1,"#).is_err());
        assert!(slow(r#","ordinal":"3","#).is_err());
    }
}
