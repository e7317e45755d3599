//! An independent model of which records a Claude Code resume sends and of the messages it
//! builds, written from the transcript format's description alone (the leaf, the walk, the
//! progress bridge, parallel results put back, later branches, the compact boundary, a progress
//! fork and a parent never written re-attached, subagent threads; one assistant message per
//! message id, merged user records, the drops, the pairing), and the fixtures in
//! `tests/fixtures/claude-code/` it is checked against. The library's transcript reader (issue
//! 32) is to be compared with this model on the fixtures and on generated transcripts; until it
//! exists, the model is held to the fixtures' expectations.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use serde_json::Value;

/// One chain record of a transcript, as much of it as choosing the conversation needs.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    uuid: String,
    parent: Option<String>,
    /// `user`, `assistant`, `system`, `attachment` or `progress`.
    kind: String,
    pub(crate) sidechain: bool,
    timestamp: String,
    /// An assistant record's `message.id`.
    message_id: Option<String>,
    /// A user record that holds `tool_result` blocks.
    tool_result: bool,
    /// A `system` record with `subtype: compact_boundary`.
    compact_boundary: bool,
    /// The whole record.
    pub(crate) raw: Value,
}

const CHAIN_KINDS: [&str; 5] = ["user", "assistant", "system", "attachment", "progress"];

/// The chain records of `text`; a later line with a uuid replaces an earlier one (in its place
/// in line order, the later line's).
pub(crate) fn records(text: &str) -> Vec<Record> {
    let mut by_uuid: BTreeMap<String, Record> = BTreeMap::new();
    let mut first_line: BTreeMap<String, usize> = BTreeMap::new();
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
        let raw = Value::Object(record.clone());
        let text = |key: &str| record.get(key).and_then(Value::as_str).map(str::to_owned);
        let message = record.get("message");
        let content = message.and_then(|message| message.get("content"));
        let tool_result = content.and_then(Value::as_array).is_some_and(|blocks| {
            blocks
                .iter()
                .any(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
        });
        first_line.entry(uuid.to_owned()).or_insert(index + 1);
        by_uuid.insert(
            uuid.to_owned(),
            Record {
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
                raw,
            },
        );
    }
    // A later line replaces a record where it was: in the order of each uuid's first line.
    let mut records: Vec<Record> = by_uuid.into_values().collect();
    records.sort_by_key(|record| first_line[&record.uuid]);
    records
}

/// The uuids of the records a resume of the main thread sends, in order.
pub(crate) fn conversation(records: &[Record]) -> Vec<String> {
    thread_conversation(records, None)
}

/// The thread of a record: the main thread (`None`), or a subagent's sidechain by its `agentId`.
fn thread_of(record: &Record) -> Option<&str> {
    if !record.sidechain {
        return None;
    }
    Some(
        record
            .raw
            .get("agentId")
            .and_then(Value::as_str)
            .unwrap_or(""),
    )
}

/// The uuids of the records a resume of `thread` sends, in order: the main thread, or the
/// subagent whose sidechain records carry that `agentId`.
pub(crate) fn thread_conversation(records: &[Record], thread: Option<&str>) -> Vec<String> {
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
    let mut parents: Vec<Option<usize>> = (0..records.len()).map(parent_of).collect();
    // A progress fork (versions before 2.1.85): a record whose parent is a progress record
    // hangs, once bridged, off an ancestor that real records were written under since; it is
    // re-attached to the last of them, so that the turns between are not cut off.
    for at in 0..records.len() {
        let through_progress = records[at]
            .parent
            .as_deref()
            .and_then(|uuid| index.get(uuid))
            .is_some_and(|&up| records[up].kind == "progress");
        let Some(ancestor) = parents[at].filter(|_| through_progress) else {
            continue;
        };
        let descends = |mut from: usize| {
            let mut seen = HashSet::new();
            while let Some(up) = parents[from] {
                if up == ancestor {
                    return true;
                }
                if !seen.insert(up) {
                    return false;
                }
                from = up;
            }
            false
        };
        let last_under = (ancestor + 1..at).rev().find(|&other| {
            records[other].kind != "progress"
                && records[other].sidechain == records[at].sidechain
                && descends(other)
        });
        if let Some(last) = last_under {
            parents[at] = Some(last);
        }
    }
    let mut has_child = vec![false; records.len()];
    for parent in parents.iter().flatten() {
        has_child[*parent] = true;
    }
    // Sent: user and assistant records, and the output of a local command as user text.
    let talk = |at: usize| {
        matches!(records[at].kind.as_str(), "user" | "assistant")
            || (records[at].kind == "system"
                && records[at].raw.get("subtype").and_then(Value::as_str) == Some("local_command"))
    };
    // The leaf: of the main-thread records nobody points at, each walked back to its nearest
    // user or assistant record, the latest; a tie goes to the record read first.
    let leaf = (0..records.len())
        .filter(|&at| {
            // A progress record nobody points at is an end too, walked back like any other.
            !has_child[at] && thread_of(&records[at]) == thread
        })
        .filter_map(|mut at| {
            let mut seen = HashSet::new();
            // The nearest user or assistant record (a local command's output is sent, but is
            // not where a leaf is looked for).
            while !matches!(records[at].kind.as_str(), "user" | "assistant") {
                at = parents[at].filter(|_| seen.insert(at))?;
            }
            Some(at)
        })
        .min_by(|&a, &b| {
            (records[b].timestamp.as_str(), a).cmp(&(records[a].timestamp.as_str(), b))
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
            (records[a].timestamp.as_str(), a).cmp(&(records[b].timestamp.as_str(), b))
        });
        sent.extend(back);
    }
    sent.into_iter()
        .filter(|&at| talk(at))
        .map(|at| records[at].uuid.clone())
        .collect()
}

/// The Messages API `messages` a resume sends for the records `sent` (in order), with the
/// pairing repaired: one assistant message per `message.id`, consecutive user records merged
/// with their results first, the records and blocks Claude Code drops left out, and each
/// `tool_use` answered at the start of the next user message.
pub(crate) fn messages(records: &[Record], sent: &[String]) -> Vec<Value> {
    let by_uuid: HashMap<&str, &Record> = records
        .iter()
        .map(|record| (record.uuid.as_str(), record))
        .collect();
    let flag =
        |record: &Record, key: &str| record.raw.get(key).and_then(Value::as_bool) == Some(true);
    let blocks_of = |record: &Record| -> Vec<Value> {
        let blocks = match record.raw.pointer("/message/content") {
            Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => Vec::new(),
        };
        let empty_text = |block: &Value| {
            block["type"] == "text"
                && block["text"]
                    .as_str()
                    .is_some_and(|text| text.trim().is_empty())
        };
        blocks
            .into_iter()
            .filter(|block| !empty_text(block))
            .collect()
    };
    // The message ids whose lines hold more than thinking: a thinking-only id is dropped.
    let mut substantive: HashSet<&str> = HashSet::new();
    for record in records {
        if let Some(id) = record.message_id.as_deref()
            && blocks_of(record)
                .iter()
                .any(|block| block["type"] != "thinking")
        {
            substantive.insert(id);
        }
    }
    // (role, blocks, the assistant's message id)
    let mut out: Vec<(String, Vec<Value>, Option<String>)> = Vec::new();
    for uuid in sent {
        let record = by_uuid[uuid.as_str()];
        if flag(record, "isVirtual") || flag(record, "isApiErrorMessage") {
            continue;
        }
        let blocks = if record.kind == "system" {
            // A local command's output, sent as user text.
            let text = record
                .raw
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or("");
            vec![serde_json::json!({"type": "text", "text": text})]
        } else {
            blocks_of(record)
        };
        if record.kind == "assistant" {
            let id = record.message_id.clone();
            if id.as_deref().is_some_and(|id| !substantive.contains(id)) {
                continue;
            }
            let open = out
                .iter()
                .rposition(|(role, _, of)| role == "assistant" && of.is_some() && *of == id);
            match open {
                Some(at) => {
                    for block in blocks {
                        let known = &out[at].1;
                        let repeated = known.contains(&block)
                            || (block["type"] == "tool_use"
                                && known.iter().any(|other| {
                                    other["type"] == "tool_use" && other["id"] == block["id"]
                                }));
                        if !repeated {
                            out[at].1.push(block);
                        }
                    }
                }
                None => out.push(("assistant".into(), blocks, id)),
            }
        } else if let Some((role, known, _)) = out.last_mut().filter(|(role, ..)| role == "user") {
            debug_assert_eq!(role, "user");
            known.extend(blocks);
        } else if !blocks.is_empty() {
            out.push(("user".into(), blocks, None));
        }
    }
    // Results first in each user message, in the order written.
    for (role, blocks, _) in &mut out {
        if role == "user" {
            blocks.sort_by_key(|block| block["type"] != "tool_result");
        }
    }
    // The pairing: each assistant's tool_use ids answered first in the next user message.
    let mut used: HashSet<String> = HashSet::new();
    let mut at = 0;
    while at < out.len() {
        if out[at].0 != "assistant" {
            // A result that answers no call of the assistant message before it is dropped.
            let asked: HashSet<String> = at
                .checked_sub(1)
                .map(|before| {
                    out[before]
                        .1
                        .iter()
                        .filter(|block| block["type"] == "tool_use")
                        .filter_map(|block| block["id"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let mut answered = HashSet::new();
            out[at].1.retain(|block| {
                block["type"] != "tool_result"
                    || block["tool_use_id"]
                        .as_str()
                        .is_some_and(|id| asked.contains(id) && answered.insert(id.to_owned()))
            });
            at += 1;
            continue;
        }
        // A tool_use id used before is dropped.
        out[at].1.retain(|block| {
            block["type"] != "tool_use"
                || block["id"]
                    .as_str()
                    .is_some_and(|id| used.insert(id.to_owned()))
        });
        let calls: Vec<String> = out[at]
            .1
            .iter()
            .filter(|block| block["type"] == "tool_use")
            .filter_map(|block| block["id"].as_str().map(str::to_owned))
            .collect();
        if !calls.is_empty() {
            if out.get(at + 1).is_none_or(|(role, ..)| role != "user") {
                out.insert(at + 1, ("user".into(), Vec::new(), None));
            }
            let next = &mut out[at + 1].1;
            let answered: HashSet<String> = next
                .iter()
                .filter(|block| block["type"] == "tool_result")
                .filter_map(|block| block["tool_use_id"].as_str().map(str::to_owned))
                .collect();
            let missing = calls.iter().filter(|id| !answered.contains(*id)).map(|id| {
                serde_json::json!({"type": "tool_result", "tool_use_id": id, "content": "aborted", "is_error": true})
            });
            let missing: Vec<Value> = missing.collect();
            next.splice(0..0, missing);
        }
        at += 1;
    }
    out.into_iter()
        .filter(|(_, blocks, _)| !blocks.is_empty())
        .map(|(role, content, _)| serde_json::json!({"role": role, "content": content}))
        .collect()
}

pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code")
}

/// The transcripts of [`fixtures`], in name order.
pub(crate) fn fixture_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("the fixtures")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
        })
        .collect();
    files.sort();
    files
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
fn every_fixtures_messages_pair_every_call_and_alternate_roles() {
    for entry in std::fs::read_dir(fixtures()).expect("the fixtures") {
        let path = entry.expect("an entry").path();
        if path
            .extension()
            .is_none_or(|extension| extension != "jsonl")
        {
            continue;
        }
        let records = records(&std::fs::read_to_string(&path).expect("read"));
        let messages = messages(&records, &conversation(&records));
        assert!(!messages.is_empty(), "{}", path.display());
        for pair in messages.windows(2) {
            assert_ne!(pair[0]["role"], pair[1]["role"], "{}", path.display());
            let calls: Vec<&Value> = pair[0]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "tool_use")
                .map(|block| &block["id"])
                .collect();
            let results: Vec<&Value> = pair[1]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .take(calls.len())
                .map(|block| &block["tool_use_id"])
                .collect();
            assert_eq!(results.len(), calls.len(), "{}", path.display());
            for call in &calls {
                assert!(
                    results.contains(call),
                    "{}: {call} unanswered",
                    path.display()
                );
            }
        }
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
    fn a_session_start_hook_at_the_root_bridges_to_nothing() {
        let text = [
            line("p0", None, "progress", 0),
            line("u1", Some("p0"), "user", 1),
            line("a1", Some("u1"), "assistant", 2),
        ]
        .join("\n");
        assert_eq!(conversation(&records(&text)), ["u1", "a1"]);
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

    fn sent_messages(lines: &[Value]) -> Vec<Value> {
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        let records = records(&text.join("\n"));
        messages(&records, &conversation(&records))
    }

    fn record(uuid: &str, parent: Option<&str>, kind: &str, message: Value) -> Value {
        serde_json::json!({"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": false,
            "timestamp": "2026-11-20T10:00:00.000Z", "message": message})
    }

    #[test]
    fn one_assistant_message_per_message_id_across_results_and_the_drops() {
        let use1 = serde_json::json!({"type": "tool_use", "id": "t1", "name": "Read", "input": {}});
        let use2 = serde_json::json!({"type": "tool_use", "id": "t2", "name": "Read", "input": {}});
        let result = |id: &str| serde_json::json!({"type": "tool_result", "tool_use_id": id, "content": "ok"});
        let lines = [
            record("u1", None, "user", serde_json::json!({"role": "user", "content": "read"})),
            record("a1", Some("u1"), "assistant", serde_json::json!({"id": "m1", "role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "sig"}]})),
            record("a2", Some("a1"), "assistant", serde_json::json!({"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "reading"}, use1.clone(), {"type": "text", "text": "  "}]})),
            record("r1", Some("a2"), "user", serde_json::json!({"role": "user", "content": [result("t1")]})),
            record("a3", Some("r1"), "assistant", serde_json::json!({"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "reading"}, use1.clone(), use2.clone()]})),
            record("r2", Some("a3"), "user", serde_json::json!({"role": "user", "content": [result("t2"), result("nobody")]})),
            record("x", Some("r2"), "assistant", serde_json::json!({"id": "m2", "role": "assistant", "model": "<synthetic>", "content": [{"type": "text", "text": "API Error"}]}))
                .as_object().cloned().map(|mut x| { x.insert("isApiErrorMessage".into(), true.into()); Value::Object(x) }).expect("an object"),
            record("m", Some("x"), "user", serde_json::json!({"role": "user", "content": "and now?"})),
        ];
        let messages = sent_messages(&lines);
        assert_eq!(
            messages,
            [
                serde_json::json!({"role": "user", "content": [{"type": "text", "text": "read"}]}),
                serde_json::json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "sig"}, {"type": "text", "text": "reading"}, use1, use2]}),
                serde_json::json!({"role": "user", "content": [result("t1"), result("t2"), {"type": "text", "text": "and now?"}]}),
            ]
        );
    }

    #[test]
    fn merged_user_records_put_results_first_and_a_reused_call_id_is_dropped() {
        let call = |id: &str| serde_json::json!({"type": "tool_use", "id": id, "name": "Bash", "input": {}});
        let result =
            serde_json::json!({"type": "tool_result", "tool_use_id": "t1", "content": "ok"});
        let lines = [
            record(
                "u1",
                None,
                "user",
                serde_json::json!({"role": "user", "content": "go"}),
            ),
            record(
                "a1",
                Some("u1"),
                "assistant",
                serde_json::json!({"id": "m1", "role": "assistant", "content": [call("t1")]}),
            ),
            record(
                "w",
                Some("a1"),
                "user",
                serde_json::json!({"role": "user", "content": "wait"}),
            ),
            record(
                "r",
                Some("w"),
                "user",
                serde_json::json!({"role": "user", "content": [result.clone()]}),
            ),
            record(
                "a2",
                Some("r"),
                "assistant",
                serde_json::json!({"id": "m2", "role": "assistant", "content": [call("t1"), {"type": "text", "text": "again"}]}),
            ),
        ];
        assert_eq!(
            sent_messages(&lines),
            [
                serde_json::json!({"role": "user", "content": [{"type": "text", "text": "go"}]}),
                serde_json::json!({"role": "assistant", "content": [call("t1")]}),
                serde_json::json!({"role": "user", "content": [result, {"type": "text", "text": "wait"}]}),
                serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": "again"}]}),
            ]
        );
    }

    #[test]
    fn an_unanswered_call_at_the_end_gets_an_aborted_result_in_a_new_user_message() {
        let lines = [
            record(
                "u1",
                None,
                "user",
                serde_json::json!({"role": "user", "content": "go"}),
            ),
            record(
                "a1",
                Some("u1"),
                "assistant",
                serde_json::json!({"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}),
            ),
        ];
        let messages = sent_messages(&lines);
        assert_eq!(
            messages[2],
            serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "aborted", "is_error": true}]})
        );
    }

    #[test]
    fn a_subagents_sidechain_is_its_own_thread() {
        let side = |uuid: &str, parent: Option<&str>, kind: &str, second: u32, agent: &str| {
            line(uuid, parent, kind, second).replace(
                "\"isSidechain\":false",
                &format!("\"isSidechain\":true,\"agentId\":\"{agent}\""),
            )
        };
        let text = [
            line("u1", None, "user", 1),
            side("s1", None, "user", 2, "agent-a"),
            side("s2", Some("s1"), "assistant", 3, "agent-a"),
            side("t1", None, "user", 4, "agent-b"),
            line("a1", Some("u1"), "assistant", 5),
        ]
        .join("\n");
        let records = records(&text);
        assert_eq!(conversation(&records), ["u1", "a1"]);
        assert_eq!(thread_conversation(&records, Some("agent-a")), ["s1", "s2"]);
        assert_eq!(thread_conversation(&records, Some("agent-b")), ["t1"]);
    }

    #[test]
    fn a_local_commands_output_is_sent_as_user_text_and_other_system_records_are_not() {
        let system = |uuid: &str, parent: &str, subtype: &str, second: u32| {
            serde_json::json!({"type": "system", "uuid": uuid, "parentUuid": parent, "isSidechain": false,
                "timestamp": format!("2026-11-20T10:00:{second:02}.000Z"), "subtype": subtype,
                "content": "<local-command-stdout>3 files</local-command-stdout>"})
        };
        let lines = [
            record(
                "u1",
                None,
                "user",
                serde_json::json!({"role": "user", "content": "ls"}),
            ),
            system("c1", "u1", "local_command", 1),
            system("d1", "c1", "turn_duration", 2),
            // The leaf is a user or assistant record: a local command's output at the very end
            // is not sent (the walk starts at the prompt before it).
            record(
                "u2",
                Some("d1"),
                "user",
                serde_json::json!({"role": "user", "content": "and now?"}),
            ),
        ];
        let messages = sent_messages(&lines);
        assert_eq!(messages.len(), 1);
        assert_eq!(
            messages[0]["content"][1]["text"],
            "<local-command-stdout>3 files</local-command-stdout>"
        );
    }

    #[test]
    fn a_transcript_of_sidechain_records_only_has_no_main_thread() {
        let text =
            line("s1", None, "user", 1).replace("\"isSidechain\":false", "\"isSidechain\":true");
        assert_eq!(conversation(&records(&text)), Vec::<String>::new());
    }
}
