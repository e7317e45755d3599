//! Recording items given as JSON text, against a typed baseline from the same run.
//!
//! - `History::record_json` vs a typed parse + push: `serde_json::from_str` into serde-derived
//!   Codex-style item types written here (an internally tagged enum, as Codex has), then a `Vec`
//!   push.
//! - `Session::record_json` (Buffered durability, in-memory sink) vs the same typed parse + push
//!   plus a rollout line written with serde (envelope with timestamp, type and the item
//!   serialized from its typed form) into a buffer.
//!
//! Each ratio is library / baseline, median and interquartile range over interleaved pairs.
//! Run with `cargo bench --bench record` (`AGENT_HISTORY_BENCH_QUICK=1` for fewer pairs).

use std::hint::black_box;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use agent_history::{
    DEFAULT_TRUNCATION, Durability, Entry, History, RolloutWriter, Session, ThreadId,
};

#[allow(dead_code)]
mod common;
use common::paired;
mod items;

// ---------------------------------------------------------------------------------------------
// The typed baseline: Codex-style item types, serde-derived.

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(dead_code)]
enum Item {
    Message {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        role: String,
        content: Vec<Part>,
    },
    Reasoning {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        summary: Vec<Part>,
        #[serde(default)]
        content: Option<Vec<Part>>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    FunctionCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        name: String,
        arguments: String,
        call_id: String,
    },
    FunctionCallOutput {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        output: Output,
    },
    LocalShellCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: Option<String>,
        status: String,
        action: Action,
    },
    CustomToolCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        status: Option<String>,
        call_id: String,
        name: String,
        input: String,
    },
    CustomToolCallOutput {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        output: Output,
    },
    ToolSearchCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: Option<String>,
        status: Option<String>,
        execution: String,
        arguments: serde_json::Value,
    },
    ToolSearchOutput {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: Option<String>,
        status: String,
        execution: String,
        tools: Vec<serde_json::Value>,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(dead_code)]
enum Part {
    InputText { text: String },
    OutputText { text: String },
    InputImage { image_url: String },
    SummaryText { text: String },
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
#[allow(dead_code)]
enum Output {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(dead_code)]
enum Action {
    Exec {
        command: Vec<String>,
        timeout_ms: Option<u64>,
        working_directory: Option<String>,
        env: Option<std::collections::BTreeMap<String, String>>,
        user: Option<String>,
    },
}

#[derive(Serialize)]
struct Line<'a> {
    timestamp: String,
    #[serde(rename = "type")]
    kind: &'static str,
    payload: &'a Item,
}

fn typed_record(items: &[String]) -> Vec<Item> {
    let mut stored = Vec::new();
    for json in items {
        let item: Item = serde_json::from_str(json).expect("typed");
        stored.push(item);
    }
    stored
}

fn typed_record_with_lines(items: &[String], lines: &mut Vec<u8>) -> Vec<Item> {
    let mut stored = Vec::new();
    for json in items {
        let item: Item = serde_json::from_str(json).expect("typed");
        let line = Line {
            timestamp: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            kind: "response_item",
            payload: &item,
        };
        serde_json::to_writer(&mut *lines, &line).expect("written");
        lines.push(b'\n');
        stored.push(item);
    }
    stored
}

fn library_record(items: &[String]) -> History {
    let mut history = History::with_truncation(DEFAULT_TRUNCATION);
    for json in items {
        history.record_json(json.as_str()).expect("recorded");
    }
    history
}

fn library_session(items: &[String]) -> Session<Vec<u8>> {
    let writer = RolloutWriter::with_sink(Vec::new(), "memory", Durability::Buffered);
    let mut session = Session::from_parts(
        History::with_truncation(DEFAULT_TRUNCATION),
        writer,
        ThreadId::random(),
    );
    for json in items {
        session.record_json(json).expect("recorded");
    }
    session.flush().expect("flushed");
    session
}

fn report(name: &str, baseline: &str, [q1, median, q3]: [f64; 3]) {
    println!("{name:<58} {median:>7.3}× {baseline} (IQR {q1:.3}–{q3:.3})");
}

fn main() {
    let quick = std::env::var_os("AGENT_HISTORY_BENCH_QUICK").is_some();
    let pairs = if quick { 11 } else { 31 };
    let items = items::generate(4_000, 7);
    let bytes: usize = items.iter().map(String::len).sum();
    println!(
        "-- {} items, {:.1} MB of JSON, {pairs} pairs",
        items.len(),
        bytes as f64 / 1e6
    );
    // `AGENT_HISTORY_BENCH_PROFILE=record` (or `session`): the library side alone, in a loop,
    // for `perf record`.
    match std::env::var("AGENT_HISTORY_BENCH_PROFILE").as_deref() {
        Ok("record") => {
            for _ in 0..40 {
                drop(black_box(library_record(&items)));
            }
            return;
        }
        Ok("session") => {
            for _ in 0..40 {
                drop(black_box(library_session(&items)));
            }
            return;
        }
        _ => {}
    }
    // Both sides accept every item, and the session's lines resume to its history.
    assert_eq!(typed_record(&items).len(), library_record(&items).len());
    let session = library_session(&items);
    assert_eq!(session.history().len(), items.len());

    let typed_ms = common::median(5, || drop(black_box(typed_record(&items))));
    let library_ms = common::median(5, || drop(black_box(library_record(&items))));
    println!(
        "   typed parse + push {:.1} MB/s, record_json {:.1} MB/s",
        bytes as f64 / 1e6 / typed_ms.as_secs_f64(),
        bytes as f64 / 1e6 / library_ms.as_secs_f64()
    );
    report(
        "History::record_json vs typed parse + push",
        "typed",
        paired(
            pairs,
            || drop(black_box(typed_record(&items))),
            || drop(black_box(library_record(&items))),
        ),
    );
    // What bounds record_json: building the entries alone (parse, header, token estimate, the
    // text copied into the entry), and keeping a copy of each text, which the typed baseline does
    // not (it keeps the typed values).
    report(
        "  of which Entry::from_json into a Vec vs typed",
        "typed",
        paired(
            pairs,
            || drop(black_box(typed_record(&items))),
            || {
                let entries: Vec<Entry> = items
                    .iter()
                    .map(|json| Entry::from_json(json.as_str()).expect("an item"))
                    .collect();
                drop(black_box(entries));
            },
        ),
    );
    report(
        "  of which a Box<str> copy of each text vs typed",
        "typed",
        paired(
            pairs,
            || drop(black_box(typed_record(&items))),
            || {
                let texts: Vec<Box<str>> =
                    items.iter().map(|json| Box::from(json.as_str())).collect();
                drop(black_box(texts));
            },
        ),
    );
    report(
        "Session::record_json (Buffered) vs typed + push + serde line",
        "typed",
        paired(
            pairs,
            || {
                // A fresh buffer, as the session's in-memory sink is.
                let mut lines = Vec::new();
                drop(black_box(typed_record_with_lines(&items, &mut lines)));
                black_box(lines);
            },
            || drop(black_box(library_session(&items))),
        ),
    );
}
