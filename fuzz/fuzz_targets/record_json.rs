//! Arbitrary bytes as item JSON, one item a line (the fuzzed-text half of the item round trip;
//! `item_roundtrip` is the structured half), and as rollout lines.
//!
//! Checked for each line: the item parser's fast path agrees with serde's derived deserializer
//! (same error message, or an item with the same header); `Entry::from_json` and
//! `History::record_json` agree (both refuse what
//! is not an item, with the same error; `compaction_trigger` is refused as an entry and filtered
//! as a record; `system` messages and client tool searches without a call id are filtered; a
//! client tool search stored with other text has canonical arguments); a built entry keeps the
//! text verbatim; its
//! typed item, serialized and built again, gives an entry with the same header (kind, role, call
//! id, item id, flags, token estimate), and the typed model reaches a fixed point after one more
//! round. For the whole input: the history keeps its invariants and projects as the reference
//! says, twice the same; as rollout bytes, a resume never panics, and what it resumes keeps its
//! invariants.
#![no_main]

use agent_history::{
    Entry, FilterReason, History, ItemError, READER_LABEL, Recorded, ResponseItem, ResumeOptions,
    TruncationPolicy, resume_reader,
};
use agent_history_fuzz::reference::{KNOWN_TYPES, project_and_check};
use agent_history_fuzz::{
    check_canonicalized, client_tool_search_without_call_id, projection_options,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn same_header(a: &Entry, b: &Entry) {
    assert_eq!(a.kind(), b.kind());
    assert_eq!(a.role(), b.role());
    assert_eq!(a.call_id(), b.call_id());
    assert_eq!(a.item_id(), b.item_id());
    assert_eq!(a.flags(), b.flags());
    assert_eq!(a.tokens(), b.tokens());
}

/// The item parser (a type-first fast path, then serde's derived deserializer) gives what the
/// derived deserializer alone gives: the same error message, or an item with the same header.
fn check_fast_path(line: &str, built: &Result<Entry, ItemError>) {
    if !line.trim_start().starts_with('{') {
        return;
    }
    match (serde_json::from_str::<ResponseItem>(line), built) {
        (Err(derived), Err(ItemError::InvalidJson { source, .. })) => {
            assert_eq!(derived.to_string(), source.to_string(), "{line:?}");
        }
        (Err(derived), Ok(entry)) => panic!("{line:?}: built {entry:?}, derived {derived}"),
        (Ok(item), built) => match Entry::from_item(&item) {
            Ok(reference) => same_header(built.as_ref().expect("derived parses"), &reference),
            Err(_) => assert!(matches!(
                (item, built),
                (ResponseItem::Other, Ok(_)) | (ResponseItem::CompactionTrigger, Err(_))
            )),
        },
        (Err(_), Err(_)) => {}
    }
}

/// The stored kind is the line's `type`: the same name, `compaction` for the
/// `compaction_summary` alias, `unknown` for a type the library does not know.
fn check_kind(line: &str, stored: &Entry) {
    let Ok(Value::Object(item)) = serde_json::from_str::<Value>(line) else {
        // What the library parsed and serde_json's `Value` does not (or a non-object) is for
        // the fast-path check to judge.
        return;
    };
    let Some(Value::String(tag)) = item.get("type") else {
        panic!(
            "{line:?}: stored without a string type, as {:?}",
            stored.kind()
        );
    };
    let kind = stored.kind().as_str();
    match tag.as_str() {
        "compaction_summary" => assert_eq!(kind, "compaction", "{line:?}"),
        tag if KNOWN_TYPES.contains(&tag) => assert_eq!(kind, tag, "{line:?}"),
        _ => assert_eq!(kind, "unknown", "{line:?}"),
    }
}

/// A truncated output is the line with only `output` changed, as the documented truncation
/// changes it: a string middle-truncated around a marker, an array of parts budgeted.
fn check_truncation(line: &str, stored: &Entry) {
    let kind = stored.kind().as_str();
    assert!(
        kind == "function_call_output" || kind == "custom_tool_call_output",
        "a {kind} was truncated: {line:?}"
    );
    let (Ok(Value::Object(mut original)), Ok(Value::Object(mut truncated))) = (
        serde_json::from_str::<Value>(line),
        serde_json::from_str::<Value>(stored.json()),
    ) else {
        panic!("a truncated output or its line is not a JSON object: {line:?}");
    };
    let (before, after) = (original.remove("output"), truncated.remove("output"));
    assert_eq!(original, truncated, "truncation changed more than `output`");
    match (before, after) {
        (Some(Value::String(before)), Some(Value::String(after))) => {
            // Some `…N tokens truncated…` or `…N chars truncated…` in the kept text is the
            // marker, with a prefix of the original before it and a suffix after it.
            let middle_truncated = ["tokens truncated…", "chars truncated…"]
                .iter()
                .flat_map(|word| {
                    after
                        .match_indices(word)
                        .map(move |(start, _)| (start, start + word.len()))
                })
                .any(|(word, tail)| {
                    let Some(open) = after[..word].rfind('…') else {
                        return false;
                    };
                    let count = after[open + '…'.len_utf8()..word].trim_end();
                    let (head, tail) = (&after[..open], &after[tail..]);
                    !count.is_empty()
                        && count.bytes().all(|byte| byte.is_ascii_digit())
                        && before.starts_with(head)
                        && before.ends_with(tail)
                        && head.len() + tail.len() < before.len()
                });
            assert!(
                middle_truncated,
                "not a middle truncation of the original: {after:?}"
            );
        }
        (Some(Value::Array(before)), Some(Value::Array(after))) => {
            assert!(
                after.len() <= before.len() + 2,
                "{} parts after truncation of {}",
                after.len(),
                before.len()
            );
        }
        (before, after) => panic!("output {before:?} truncated to {after:?}"),
    }
}

fn check_line(history: &mut History, line: &str) {
    let built = Entry::from_json(line);
    check_fast_path(line, &built);
    let previous = history.clone();
    let recorded = history.record_json(line);
    if !matches!(recorded, Ok(Recorded::Stored { .. })) {
        // A failed or filtered record stores nothing.
        assert_eq!(history.len(), previous.len(), "{line:?}: {recorded:?}");
        assert_eq!(*history, previous, "{line:?}: {recorded:?}");
    } else {
        assert_eq!(history.len(), previous.len() + 1);
    }
    let entry = match (built, recorded) {
        (Err(ItemError::NotStorable { .. }), Ok(Recorded::Filtered(reason))) => {
            assert_eq!(reason, FilterReason::CompactionTrigger);
            return;
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string());
            return;
        }
        (Ok(entry), Ok(Recorded::Filtered(reason))) => {
            let item = entry.to_item().expect("a built entry parses");
            if client_tool_search_without_call_id(&item) {
                assert_eq!(reason, FilterReason::ClientToolSearchWithoutCallId);
            } else {
                assert_eq!(reason, FilterReason::SystemMessage);
                assert_eq!(entry.role(), Some(agent_history::Role::System));
            }
            entry
        }
        (
            Ok(entry),
            Ok(Recorded::Stored {
                position,
                truncated,
            }),
        ) => {
            let stored = history.get(position).expect("stored");
            assert_eq!(position, history.len() - 1, "stored at the end");
            check_kind(line, stored);
            if truncated {
                assert_ne!(stored.json(), line);
                check_truncation(line, stored);
            } else if stored.json() != line {
                // Canonicalized: a client tool search's arguments.
                check_canonicalized(&entry.to_item().expect("parses"), stored);
            } else {
                assert_eq!(stored, &entry);
            }
            entry
        }
        (built, recorded) => panic!("{line:?}: entry {built:?}, record {recorded:?}"),
    };
    assert_eq!(entry.json(), line);
    assert_eq!(entry.byte_len(), line.len());

    let item = entry.to_item().expect("a built entry parses");
    let text = serde_json::to_string(&item).expect("serializes");
    let again = Entry::from_json(text.as_str()).expect("a serialized item builds");
    if !matches!(item, ResponseItem::Other) {
        same_header(&entry, &again);
    }
    let second = again.to_item().expect("parses");
    let third: ResponseItem =
        serde_json::from_str(&serde_json::to_string(&second).expect("serializes")).expect("parses");
    assert_eq!(
        second, third,
        "the typed model has no fixed point for {line}"
    );
}

fuzz_target!(|data: &[u8]| {
    // Bit 4 of the first byte records with a 64-byte budget, so that outputs the fuzzer writes
    // are truncated (the default budget is 10,000 tokens, longer than most inputs).
    let mut history = if data.first().is_some_and(|byte| byte & 0x10 != 0) {
        History::with_truncation(TruncationPolicy::Bytes(64))
    } else {
        History::new()
    };
    if let Ok(text) = std::str::from_utf8(data) {
        for line in text.lines().take(32) {
            check_line(&mut history, line);
        }
    }
    history.assert_invariants();
    let choice = data.first().copied().unwrap_or(0);
    project_and_check(&history, &projection_options(choice));

    // The same bytes as a rollout: a typed error or a history, never a panic.
    if let Ok(resumed) = resume_reader(data, READER_LABEL, &ResumeOptions::default()) {
        resumed.history().assert_invariants();
        let _ = resumed.history().project(&projection_options(4));
    }
});
