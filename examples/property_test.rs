//! Property-testing a provider adapter of your own with the testing kit (`docs/testing.md`).
//!
//! The "adapter" here is a toy: it turns a history into a Chat Completions request body by hand,
//! message by message. Two versions are checked with the kit's properties — the output passes
//! the Chat Completions validator, converting never changes the history, and converting twice
//! (or a clone) gives the same bytes:
//!
//! * `naive_adapter` converts the stored history directly, so a call without its output, an
//!   orphan output or an output before its call reach the request as they are;
//! * `repaired_adapter` converts the history's repaired Responses projection
//!   (`History::project`): synthetic outputs right after unanswered calls, orphans dropped.
//!
//! The example generates well-formed histories and histories with every broken pairing, runs
//! both adapters through the properties, and prints how many histories each one gets wrong and
//! the smallest failing history proptest shrinks to. It is deterministic (a fixed seed).
//!
//! Run it with `cargo run --example property_test --features testing`.

use std::collections::BTreeMap;

use agent_history::testing::properties::{
    PropertyFailure, history_unchanged_by, passes_validator_by, repeatable_by,
};
use agent_history::testing::strategies::{self, HistoryConfig};
use agent_history::testing::{HistoryOp, apply_ops};
use agent_history::{History, ProjectionOptions, Target};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde_json::{Value, json};

/// A provider adapter: a history in, a request body out.
type Adapter = fn(&History) -> Value;

/// Chat Completions messages from Responses items, the way a hand-written adapter does it.
fn to_chat<'a>(items: impl Iterator<Item = &'a str>) -> Value {
    let mut messages = vec![json!({"role": "system", "content": "You are a helpful assistant."})];
    for text in items {
        let Ok(item) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let texts = |parts: &Value| -> String {
            match parts {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            }
        };
        let call = |name: &str, arguments: String| {
            json!({"id": item["call_id"], "type": "function",
                   "function": {"name": name, "arguments": arguments}})
        };
        let tool_call = match item["type"].as_str().unwrap_or_default() {
            "message" => {
                let role = match item["role"].as_str() {
                    Some("user") => "user",
                    Some("assistant") => "assistant",
                    _ => "system",
                };
                messages.push(json!({"role": role, "content": texts(&item["content"])}));
                None
            }
            "function_call" => Some(call(
                item["name"].as_str().unwrap_or("tool"),
                item["arguments"].as_str().unwrap_or("{}").to_owned(),
            )),
            "custom_tool_call" => Some(call(
                item["name"].as_str().unwrap_or("tool"),
                json!({"input": item["input"]}).to_string(),
            )),
            "local_shell_call" => Some(call("local_shell", item["action"].to_string())),
            "function_call_output" | "custom_tool_call_output" => {
                messages.push(json!({"role": "tool", "tool_call_id": item["call_id"],
                                     "content": texts(&item["output"])}));
                None
            }
            // Reasoning, tool search, web search, image generation, compaction and unknown
            // items have no Chat Completions equivalent in this adapter.
            _ => None,
        };
        if let Some(tool_call) = tool_call {
            // Calls in a row share one assistant message.
            match messages.last_mut() {
                Some(last) if last["role"] == "assistant" && last.get("tool_calls").is_some() => {
                    last["tool_calls"]
                        .as_array_mut()
                        .expect("an array")
                        .push(tool_call);
                }
                _ => messages
                    .push(json!({"role": "assistant", "content": null, "tool_calls": [tool_call]})),
            }
        }
    }
    json!({"model": "gpt-4.1", "messages": messages})
}

/// Converts the stored items as they are.
fn naive_adapter(history: &History) -> Value {
    to_chat(history.iter().map(|entry| entry.json()))
}

/// Converts the repaired Responses projection.
fn repaired_adapter(history: &History) -> Value {
    match history.project(&ProjectionOptions::default()) {
        Ok(projection) => to_chat(projection.iter()),
        Err(error) => json!({"error": error.to_string()}),
    }
}

/// The three properties for one adapter, on one history.
fn check(name: &str, adapter: Adapter, history: &History) -> Result<(), PropertyFailure> {
    let body = history_unchanged_by(history, name, adapter)?;
    repeatable_by(history, name, |history| {
        serde_json::to_string(&adapter(history))
    })?;
    passes_validator_by(history, Target::ChatCompletions, name, |_| body)
}

/// Runs `adapter` on `cases` histories of `config`; counts the failures by property and
/// returns the first failure's message, shrunk by proptest to a smallest history.
fn run(
    name: &str,
    adapter: Adapter,
    config: HistoryConfig,
    cases: u32,
) -> (u32, BTreeMap<String, u32>, Option<String>) {
    let strategy = strategies::operations(config);
    let mut failures = BTreeMap::new();
    let mut failed = 0;
    // A fixed seed: the same histories on every run.
    let mut runner = TestRunner::deterministic();
    for _ in 0..cases {
        let ops = strategy.new_tree(&mut runner).expect("a history").current();
        let history = apply_ops(&ops).expect("generated items are valid");
        if let Err(failure) = check(name, adapter, &history) {
            failed += 1;
            *failures
                .entry(failure.property.describe().to_owned())
                .or_insert(0) += 1;
        }
    }
    // proptest's own loop finds a failing history and shrinks it to a smallest one.
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let smallest = runner
        .run(&strategy, |ops| {
            let history = apply_ops(&ops).expect("generated items are valid");
            check(name, adapter, &history)
                .map_err(|failure| TestCaseError::fail(describe(&failure, &ops)))
        })
        .err()
        .map(|error| match error {
            TestError::Fail(reason, _) => reason.message().to_owned(),
            other => other.to_string(),
        });
    (failed, failures, smallest)
}

fn describe(failure: &PropertyFailure, ops: &[HistoryOp]) -> String {
    let mut text = format!("{failure}\n    history:");
    for op in ops {
        match op {
            HistoryOp::Record(json) => text.push_str(&format!("\n      record {json}")),
            HistoryOp::Compact(summary) => text.push_str(&format!("\n      compact {summary:?}")),
            HistoryOp::Rollback(turns) => text.push_str(&format!("\n      roll back {turns}")),
            // The kit's history generator makes only the three above.
            other => text.push_str(&format!("\n      {other:?}")),
        }
    }
    text
}

fn main() {
    const CASES: u32 = 200;
    let configs = [
        ("well-formed histories", HistoryConfig::well_formed()),
        (
            "histories with every broken pairing",
            HistoryConfig::everything(),
        ),
    ];
    let adapters: [(&str, Adapter); 2] = [
        ("naive adapter", naive_adapter),
        ("repaired adapter", repaired_adapter),
    ];
    for (config_name, config) in configs {
        println!("{CASES} {config_name}:");
        for (name, adapter) in adapters {
            let (failed, by_property, smallest) = run(name, adapter, config, CASES);
            println!("  {name}: {failed} of {CASES} fail");
            for (property, count) in by_property {
                println!("    {count} × {property}");
            }
            if let Some(smallest) = smallest {
                println!("    smallest failing case: {smallest}");
            }
        }
    }
}
