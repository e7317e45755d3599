//! Tool specs serialized once per plan against once per request (issue 11, "The tool plan of a
//! step").
//!
//! Two pairs, each the median over interleaved runs of the per-pair ratio plan / baseline, with
//! its interquartile range:
//!
//! - **tools field**: the bytes of the body's `tools` for 40 function tools (about 21 KB):
//!   copying the plan's serialized JSON (`ToolPlan::json`) against serializing the
//!   `Vec<Value>` of specs, as the body writer did per request before plans.
//! - **whole request**: compiling a request and writing its body into a warm buffer, for a short
//!   history (12 items, an early step, where the tools are most of the body) and a longer one
//!   (2,002 items): the compiler with the plan against the compiler without tools plus
//!   serializing the specs — the work per request before plans.
//!
//! Before timing, the bytes are checked: the plan's `tools` are serde's for the specs, and the
//! body with the plan is the body without tools with those bytes in place of `[]`.
//!
//! `cargo bench --bench tools` (about 20 seconds).

use std::hint::black_box;
use std::sync::Arc;

use serde_json::{Value, json};

use agent_history::{History, PromptCompiler, RequestSettings, StepContext, ToolPlan};

#[allow(dead_code)] // `median` and `ratio` are for the other benches
mod common;
use common::paired;

const PAIRS: usize = 201;
const BATCH: usize = 200;

fn specs() -> Vec<Value> {
    (0..40)
        .map(|i| {
            json!({
                "type": "function",
                "name": format!("tool_{i}"),
                "description": "Runs a command in the workspace and returns its output. Use it for builds, tests and searches; prefer the narrowest command.",
                "strict": false,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "command": {"type": "array", "items": {"type": "string"}, "description": "The program and its arguments."},
                        "workdir": {"type": "string", "description": "The directory to run in."},
                        "timeout_ms": {"type": "number", "description": "How long to wait."},
                    },
                    "required": ["command"],
                    "additionalProperties": false,
                },
            })
        })
        .collect()
}

fn history(pairs: usize) -> History {
    let mut history = History::new();
    history
        .record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the failing test in src/lib.rs and run the suite."}]}"#)
        .expect("an item");
    for i in 0..pairs {
        history
            .record_json(format!(r#"{{"type":"function_call","name":"tool_{}","arguments":"{{\"command\":[\"cargo\",\"test\",\"case_{i}\"]}}","call_id":"call_{i}"}}"#, i % 40))
            .expect("an item");
        history
            .record_json(format!(r#"{{"type":"function_call_output","call_id":"call_{i}","output":"test case_{i} ... ok\ntest result: ok. 1 passed; 0 failed"}}"#))
            .expect("an item");
    }
    history
        .record_json(r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done: the test passes."}]}"#)
        .expect("an item");
    history
}

fn settings() -> RequestSettings {
    RequestSettings {
        model: "gpt-5.1-codex".into(),
        prompt_cache_key: Some("5973b6c0-94b8-487b-a530-2aeb6098ae0c".into()),
        ..RequestSettings::default()
    }
}

fn print(name: &str, [q1, median, q3]: [f64; 3]) {
    println!("{name:<58} {median:>7.3}×  (IQR {q1:.3}–{q3:.3})");
}

fn main() {
    let specs = specs();
    let plan = Arc::new(ToolPlan::new(specs.clone()).expect("distinct names"));
    let serialized = serde_json::to_vec(&specs).expect("serializable");
    assert_eq!(plan.json().as_bytes(), serialized.as_slice());
    println!(
        "{} tools, {} bytes of JSON; ratios are plan / baseline (below 1: the plan is faster)",
        specs.len(),
        serialized.len()
    );

    let mut buffer = Vec::with_capacity(serialized.len());
    let ratio = paired(
        PAIRS,
        || {
            for _ in 0..BATCH {
                buffer.clear();
                serde_json::to_writer(&mut buffer, black_box(&specs)).expect("a Vec");
                black_box(&buffer);
            }
        },
        || {
            let mut buffer = Vec::with_capacity(serialized.len());
            for _ in 0..BATCH {
                buffer.clear();
                buffer.extend_from_slice(black_box(&plan).json().as_bytes());
                black_box(&buffer);
            }
        },
    );
    print(
        "tools field: copy the plan's bytes / serialize the specs",
        ratio,
    );

    let with_plan = PromptCompiler::new(settings()).with_tools(Arc::clone(&plan), true);
    let without = PromptCompiler::new(settings());
    let without = {
        // The same `parallel_tool_calls`, so that only the tools differ.
        let empty = Arc::new(ToolPlan::empty());
        without.with_tools(empty, true)
    };
    for pairs in [5, 1_000] {
        let history = history(pairs);
        let step = StepContext::default();
        let body = with_plan
            .compile(&history, step.clone())
            .expect("lenient")
            .body()
            .expect("a Vec");
        let bare = without
            .compile(&history, step.clone())
            .expect("lenient")
            .body()
            .expect("a Vec");
        let bare = String::from_utf8(bare).expect("UTF-8");
        let spliced = bare.replacen(r#""tools":[]"#, &format!(r#""tools":{}"#, plan.json()), 1);
        assert_eq!(spliced.as_bytes(), body.as_slice(), "the same body");

        let mut body_buffer = Vec::new();
        let mut tools_buffer = Vec::new();
        let mut plan_buffer = Vec::new();
        let ratio = paired(
            PAIRS,
            || {
                for _ in 0..BATCH {
                    let request = without.compile(&history, step.clone()).expect("lenient");
                    request.write_body_into(&mut body_buffer).expect("a Vec");
                    tools_buffer.clear();
                    serde_json::to_writer(&mut tools_buffer, black_box(&specs)).expect("a Vec");
                    black_box((&body_buffer, &tools_buffer));
                }
            },
            || {
                for _ in 0..BATCH {
                    let request = with_plan.compile(&history, step.clone()).expect("lenient");
                    request.write_body_into(&mut plan_buffer).expect("a Vec");
                    black_box(&plan_buffer);
                }
            },
        );
        print(
            &format!(
                "whole request, {} items ({} KB body)",
                history.len(),
                body.len() / 1024
            ),
            ratio,
        );
    }
}
