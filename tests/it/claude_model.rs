//! An independent model of which records a Claude Code resume sends, written from the
//! transcript format's description alone (the leaf, the walk, the progress bridge, parallel
//! results put back, later branches, the compact boundary, a parent never written), and the
//! fixtures in `tests/fixtures/claude-code/` it is checked against. The library's transcript
//! reader (issue 32) is to be compared with this model on the fixtures and on generated
//! transcripts; until it exists, the model is held to the fixtures' expectations.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use serde_json::Value;

/// One chain record of a transcript, as much of it as choosing the conversation needs.
#[derive(Debug, Clone)]
struct Record {
    /// The record's line, from 1.
    line: usize,
    uuid: String,
    parent: Option<String>,
    /// `user`, `assistant`, `system`, `attachment` or `progress`.
    kind: String,
    sidechain: bool,
    timestamp: String,
    /// An assistant record's `message.id`.
    message_id: Option<String>,
    /// A user record that holds `tool_result` blocks.
    tool_result: bool,
    /// A `system` record with `subtype: compact_boundary`.
    compact_boundary: bool,
}

const CHAIN_KINDS: [&str; 5] = ["user", "assistant", "system", "attachment", "progress"];

/// The chain records of `text`; a later line with a uuid replaces an earlier one (in its place
/// in line order, the later line's).
fn records(text: &str) -> Vec<Record> {
    let mut by_uuid: BTreeMap<String, Record> = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let Some(uuid) = record.get("uuid").and_then(Value::as_str) else {
            continue;
        };
        if !CHAIN_KINDS.contains(&kind) {
            continue;
        }
        let text = |key: &str| record.get(key).and_then(Value::as_str).map(str::to_owned);
        let message = record.get("message");
        let content = message.and_then(|message| message.get("content"));
        let tool_result = content.and_then(Value::as_array).is_some_and(|blocks| {
            blocks
                .iter()
                .any(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
        });
        by_uuid.insert(
            uuid.to_owned(),
            Record {
                line: index + 1,
                uuid: uuid.to_owned(),
                parent: text("parentUuid"),
                kind: kind.to_owned(),
                sidechain: record.get("isSidechain").and_then(Value::as_bool) == Some(true),
                timestamp: text("timestamp").unwrap_or_default(),
                message_id: message
                    .and_then(|message| message.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                tool_result,
                compact_boundary: kind == "system"
                    && text("subtype").as_deref() == Some("compact_boundary"),
            },
        );
    }
    let mut records: Vec<Record> = by_uuid.into_values().collect();
    records.sort_by_key(|record| record.line);
    records
}

/// The uuids of the user and assistant records a resume sends, in order.
fn conversation(records: &[Record]) -> Vec<String> {
    let index: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .map(|(at, record)| (record.uuid.as_str(), at))
        .collect();
    // Parents as the walk follows them: a progress parent bridged to its nearest non-progress
    // ancestor; a parent never written re-attached to the nearest earlier record of the same
    // thread (the file's first record keeps its missing parent: the file starts mid-session).
    let parent_of = |at: usize| -> Option<usize> {
        let mut parent = records[at].parent.as_deref();
        let mut seen = HashSet::new();
        loop {
            let uuid = parent?;
            let Some(&up) = index.get(uuid) else {
                let first_of_thread = !records[..at]
                    .iter()
                    .any(|earlier| earlier.sidechain == records[at].sidechain);
                if first_of_thread {
                    return None;
                }
                return (0..at).rev().find(|&earlier| {
                    records[earlier].sidechain == records[at].sidechain
                        && records[earlier].kind != "progress"
                });
            };
            if records[up].kind != "progress" || !seen.insert(up) {
                return Some(up);
            }
            parent = records[up].parent.as_deref();
        }
    };
    let parents: Vec<Option<usize>> = (0..records.len()).map(parent_of).collect();
    let mut has_child = vec![false; records.len()];
    for parent in parents.iter().flatten() {
        has_child[*parent] = true;
    }
    let talk = |at: usize| matches!(records[at].kind.as_str(), "user" | "assistant");
    // The leaf: of the main-thread records nobody points at, each walked back to its nearest
    // user or assistant record, the latest; a tie goes to the earlier line.
    let leaf = (0..records.len())
        .filter(|&at| !has_child[at] && !records[at].sidechain && records[at].kind != "progress")
        .filter_map(|mut at| {
            let mut seen = HashSet::new();
            while !talk(at) {
                at = parents[at].filter(|_| seen.insert(at))?;
            }
            Some(at)
        })
        .min_by(|&a, &b| {
            (records[b].timestamp.as_str(), records[a].line)
                .cmp(&(records[a].timestamp.as_str(), records[b].line))
        });
    let Some(leaf) = leaf else {
        return Vec::new();
    };
    // The walk, to a root, a missing parent or a cycle; a compact boundary has no parent.
    let mut chain = vec![leaf];
    let mut on_chain: HashSet<usize> = HashSet::from([leaf]);
    while let Some(parent) = parents[*chain.last().expect("not empty")] {
        if !on_chain.insert(parent) {
            break;
        }
        chain.push(parent);
    }
    chain.reverse();
    if let Some(boundary) = chain.iter().rposition(|&at| records[at].compact_boundary) {
        chain.drain(..=boundary);
    }
    // Parallel calls: the lines of a chain message id off the chain, and the results under
    // them, go back after the chain's last line of that id, in timestamp order.
    let mut sent = Vec::new();
    for (position, &at) in chain.iter().enumerate() {
        sent.push(at);
        let Some(id) = records[at].message_id.as_deref() else {
            continue;
        };
        let later_of_id = chain[position + 1..]
            .iter()
            .any(|&next| records[next].message_id.as_deref() == Some(id));
        if later_of_id {
            continue;
        }
        let lines_of_id: HashSet<usize> = (0..records.len())
            .filter(|&other| records[other].message_id.as_deref() == Some(id))
            .collect();
        let mut back: Vec<usize> = (0..records.len())
            .filter(|&other| !on_chain.contains(&other))
            .filter(|&other| {
                lines_of_id.contains(&other)
                    || (records[other].tool_result
                        && parents[other].is_some_and(|parent| lines_of_id.contains(&parent)))
            })
            .collect();
        back.sort_by(|&a, &b| {
            (records[a].timestamp.as_str(), records[a].line)
                .cmp(&(records[b].timestamp.as_str(), records[b].line))
        });
        sent.extend(back);
    }
    sent.into_iter()
        .filter(|&at| talk(at))
        .map(|at| records[at].uuid.clone())
        .collect()
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code")
}

#[test]
fn the_model_sends_what_each_fixture_expects() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("expected.json")).expect("expected.json"),
    )
    .expect("JSON");
    let expected = expected["sent"].as_object().expect("an object of fixtures");
    assert!(expected.len() >= 6, "every fixture has its expectation");
    for (name, sent) in expected {
        let text = std::fs::read_to_string(fixtures().join(format!("{name}.jsonl")))
            .unwrap_or_else(|error| panic!("{name}.jsonl: {error}"));
        let sent: Vec<String> = serde_json::from_value(sent.clone()).expect("a list of uuids");
        assert_eq!(conversation(&records(&text)), sent, "{name}");
    }
}

#[test]
fn every_fixture_has_an_expectation() {
    let expected = std::fs::read_to_string(fixtures().join("expected.json")).expect("read");
    for entry in std::fs::read_dir(fixtures()).expect("the fixtures") {
        let path = entry.expect("an entry").path();
        if path
            .extension()
            .is_some_and(|extension| extension == "jsonl")
        {
            let name = path.file_stem().expect("a name").to_string_lossy();
            assert!(
                expected.contains(&format!("\"{name}\"")),
                "{name} has no expectation"
            );
        }
    }
}

/// The rules the model follows, each shown on a transcript made for it.
mod rules {
    use super::*;

    fn line(uuid: &str, parent: Option<&str>, kind: &str, second: u32) -> String {
        serde_json::json!({
            "type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": false,
            "timestamp": format!("2026-11-20T10:00:{second:02}.000Z"),
            "message": {"role": kind, "content": "x"},
        })
        .to_string()
    }

    #[test]
    fn a_tie_of_timestamps_goes_to_the_earlier_line() {
        let text = [
            line("u1", None, "user", 1),
            line("a", Some("u1"), "assistant", 2),
            line("b", Some("u1"), "assistant", 2),
        ]
        .join("\n");
        assert_eq!(conversation(&records(&text)), ["u1", "a"]);
    }

    #[test]
    fn a_later_line_with_the_same_uuid_replaces_the_earlier() {
        let text = [
            line("u1", None, "user", 1),
            line("a", Some("u1"), "assistant", 2),
            line("a", Some("u1"), "assistant", 3),
            line("u2", Some("a"), "user", 4),
        ]
        .join("\n");
        let records = records(&text);
        assert_eq!(records.len(), 3);
        assert_eq!(conversation(&records), ["u1", "a", "u2"]);
    }

    #[test]
    fn a_cycle_ends_the_walk() {
        let text = [
            line("u1", Some("a2"), "user", 1),
            line("a1", Some("u1"), "assistant", 2),
            line("a2", Some("a1"), "assistant", 3),
            line("u3", Some("a2"), "user", 4),
        ]
        .join("\n");
        assert_eq!(conversation(&records(&text)), ["u1", "a1", "a2", "u3"]);
    }

    #[test]
    fn the_conversation_starts_after_a_compact_boundary_even_one_with_a_parent() {
        let boundary = line("b1", Some("a1"), "system", 3)
            .replace("\"message\"", "\"subtype\":\"compact_boundary\",\"m\"");
        let text = [
            line("u1", None, "user", 1),
            line("a1", Some("u1"), "assistant", 2),
            boundary,
            line("s1", Some("b1"), "user", 4),
        ]
        .join("\n");
        assert_eq!(conversation(&records(&text)), ["s1"]);
    }

    #[test]
    fn results_put_back_go_in_timestamp_order_not_line_order() {
        let call = |uuid: &str, parent: &str, second: u32| {
            line(uuid, Some(parent), "assistant", second)
                .replace("\"content\":\"x\"", "\"id\":\"msg_1\",\"content\":[]")
        };
        let result = |uuid: &str, parent: &str, second: u32| {
            line(uuid, Some(parent), "user", second).replace(
                "\"content\":\"x\"",
                "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"ok\"}]",
            )
        };
        let text = [
            line("u1", None, "user", 1),
            call("c1", "u1", 2),
            call("c2", "c1", 3),
            call("c3", "c2", 4),
            // Written out of timestamp order: r2 before r1.
            result("r2", "c2", 6),
            result("r1", "c1", 5),
            result("r3", "c3", 7),
        ]
        .join("\n");
        assert_eq!(
            conversation(&records(&text)),
            ["u1", "c1", "c2", "c3", "r1", "r2", "r3"]
        );
    }

    #[test]
    fn a_transcript_of_sidechain_records_only_has_no_main_thread() {
        let text =
            line("s1", None, "user", 1).replace("\"isSidechain\":false", "\"isSidechain\":true");
        assert_eq!(conversation(&records(&text)), Vec::<String>::new());
    }
}
