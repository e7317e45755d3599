//! The testing kit (`agent_history::testing`, `docs/testing.md`), used on this crate itself:
//! for generated histories with every knob, every property holds for every available target;
//! the generator reaches every knob's feature (checked by reading the generated items, not the
//! generator's own description); the properties fail, naming where, on pipelines that break them.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use agent_history::testing::properties::{
    self, Property, available_targets, history_unchanged_by, project_for, repeatable_by,
    same_history,
};
use agent_history::testing::strategies::{self, BrokenPairings, HistoryConfig};
use agent_history::testing::{ArbitraryHistory, HistoryOp, apply_ops};
use agent_history::{History, Target};
use arbitrary::{Arbitrary, Unstructured};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

/// 64 cases per property by default (the file runs in a few seconds in a debug build); set
/// `PROPTEST_CASES` for a deeper run.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Each knob alone, all of them, none of them.
fn knob_configs() -> Vec<(&'static str, HistoryConfig)> {
    let none = HistoryConfig {
        images: false,
        images_in_tool_outputs: false,
        compactions: false,
        rollbacks: false,
        ..HistoryConfig::well_formed()
    };
    let pairing = |broken_pairings| HistoryConfig {
        broken_pairings,
        ..none
    };
    vec![
        ("everything", HistoryConfig::everything()),
        ("well formed", HistoryConfig::well_formed()),
        ("nothing", none),
        (
            "missing outputs",
            pairing(BrokenPairings {
                missing_outputs: true,
                ..BrokenPairings::NONE
            }),
        ),
        (
            "orphan outputs",
            pairing(BrokenPairings {
                orphan_outputs: true,
                ..BrokenPairings::NONE
            }),
        ),
        (
            "duplicate call ids",
            pairing(BrokenPairings {
                duplicate_call_ids: true,
                ..BrokenPairings::NONE
            }),
        ),
        (
            "colliding call ids",
            pairing(BrokenPairings {
                colliding_call_ids: true,
                empty_call_ids: true,
                ..BrokenPairings::NONE
            }),
        ),
        (
            "outputs before calls, wrong family",
            pairing(BrokenPairings {
                outputs_before_calls: true,
                wrong_family_outputs: true,
                ..BrokenPairings::NONE
            }),
        ),
        (
            "images",
            HistoryConfig {
                images: true,
                images_in_tool_outputs: true,
                ..none
            },
        ),
        (
            "unknown items",
            HistoryConfig {
                unknown_items: true,
                system_messages: true,
                ..none
            },
        ),
        (
            "compactions and rollbacks",
            HistoryConfig {
                compactions: true,
                rollbacks: true,
                ..none
            },
        ),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Every property, for every available target, on histories with every knob on.
    #[test]
    fn every_property_holds_for_every_target(ops in strategies::operations(HistoryConfig::everything())) {
        // The operations rather than `strategies::history`, so that a failure prints them.
        let history = apply_ops(&ops).expect("valid items");
        history.assert_invariants();
        for &target in available_targets() {
            prop_assert_eq!(properties::projection_never_changes_history(&history, target), Ok(()));
            prop_assert_eq!(properties::projections_are_repeatable(&history, target), Ok(()));
            prop_assert_eq!(properties::projection_passes_validator(&history, target), Ok(()));
        }
    }

    /// The properties compose with `?` in a proptest body (a `PropertyFailure` is an error), as
    /// `docs/testing.md` shows: an adapter given as a closure returning JSON, here this crate's
    /// Chat Completions projection parsed back.
    #[test]
    fn properties_compose_with_the_question_mark(history in strategies::history(HistoryConfig::well_formed())) {
        let adapter = |history: &History| -> Value {
            let json = project_for(Target::ChatCompletions, history).expect("projects");
            let messages: Value = serde_json::from_str(&json).expect("JSON");
            serde_json::json!({"model": "m", "messages": messages})
        };
        let body = history_unchanged_by(&history, "closure", adapter)?;
        if body["messages"].as_array().is_some_and(|messages| !messages.is_empty()) {
            properties::passes_validator_by(&history, Target::ChatCompletions, "closure", |_| body)?;
        }
    }

    /// Generated operations always apply (the generator makes valid items), and the history
    /// strategy keeps them all.
    #[test]
    fn generated_operations_apply(ops in strategies::operations(HistoryConfig::everything())) {
        let history = apply_ops(&ops);
        prop_assert!(history.is_ok(), "{:?}", history.err());
        history.expect("checked").assert_invariants();
    }

    /// The item sequence strategy: items only, which record one by one into the same history as
    /// the operations that carry them.
    #[test]
    fn item_sequences_record(items in strategies::items(HistoryConfig::everything())) {
        let mut history = History::new();
        for item in &items {
            prop_assert!(history.record_json(item.as_str()).is_ok(), "{item}");
        }
        let ops: Vec<HistoryOp> = items.iter().cloned().map(HistoryOp::Record).collect();
        let applied = apply_ops(&ops).expect("valid items");
        prop_assert_eq!(same_history("items", &applied, &history), Ok(()));
    }

    /// A fuzzer's description builds a history with its invariants, and the properties hold on
    /// it.
    #[test]
    fn arbitrary_histories_hold_the_properties(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let description = ArbitraryHistory::arbitrary(&mut Unstructured::new(&bytes))
            .expect("an unbounded description takes any bytes");
        let history = description.to_history().expect("valid items");
        history.assert_invariants();
        prop_assert_eq!(properties::check_all(&history), Ok(()));
    }
}

/// Every knob's configuration: each property for each target, with fewer cases per knob.
#[test]
fn every_property_holds_with_each_knob_alone() {
    for (name, knobs) in knob_configs() {
        let mut runner = TestRunner::new(Config {
            cases: 16,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&strategies::operations(knobs), |ops| {
            let history = apply_ops(&ops).expect("valid items");
            for &target in available_targets() {
                prop_assert_eq!(
                    properties::projection_never_changes_history(&history, target),
                    Ok(())
                );
                prop_assert_eq!(
                    properties::projections_are_repeatable(&history, target),
                    Ok(())
                );
                prop_assert_eq!(
                    properties::projection_passes_validator(&history, target),
                    Ok(())
                );
            }
            Ok(())
        });
        assert!(result.is_ok(), "{name}: {result:?}");
    }
}

/// What a generated history shows, read from the operations' item JSON alone.
fn features(ops: &[HistoryOp]) -> BTreeSet<&'static str> {
    let mut found = BTreeSet::new();
    // (output type, call id) → positions of calls and outputs.
    let mut calls: BTreeMap<(&'static str, String), Vec<usize>> = BTreeMap::new();
    let mut outputs: BTreeMap<(&'static str, String), Vec<usize>> = BTreeMap::new();
    for (position, op) in ops.iter().enumerate() {
        let json = match op {
            HistoryOp::Record(json) => json,
            HistoryOp::Compact(_) => {
                found.insert("compaction");
                continue;
            }
            HistoryOp::Rollback(_) => {
                found.insert("rollback");
                continue;
            }
            other => panic!("the history generator made {other:?}"),
        };
        let item: Value = serde_json::from_str(json).expect("item JSON");
        let ty = item["type"].as_str().expect("a type").to_owned();
        let answered_by = match ty.as_str() {
            "function_call" | "local_shell_call" => Some(("function_call_output", true)),
            "custom_tool_call" => Some(("custom_tool_call_output", true)),
            "tool_search_call" => Some(("tool_search_output", true)),
            "function_call_output" => Some(("function_call_output", false)),
            "custom_tool_call_output" => Some(("custom_tool_call_output", false)),
            "tool_search_output" => Some(("tool_search_output", false)),
            _ => None,
        };
        found.insert(match ty.as_str() {
            "message" => match item["role"].as_str() {
                Some("user") => "user message",
                Some("assistant") => "assistant message",
                Some("developer") => "developer message",
                _ => "system message",
            },
            "reasoning" => "reasoning",
            "function_call" => "function call",
            "local_shell_call" => "local shell call",
            "custom_tool_call" => "custom tool call",
            "tool_search_call" if item["execution"] == "server" => "server tool search call",
            "tool_search_call" => "client tool search call",
            "function_call_output" => "function output",
            "custom_tool_call_output" => "custom output",
            "tool_search_output" => "tool search output",
            "web_search_call" => "web search",
            "image_generation_call" => "image generation",
            "compaction" | "context_compaction" => "compaction item",
            "agent_message" => "agent message",
            _ => "unknown item",
        });
        if ty == "message" && json.contains("input_image") {
            found.insert("image in message");
        }
        if ty.ends_with("_output") && json.contains("input_image") {
            found.insert("image in tool output");
        }
        if let Some((family, is_call)) = answered_by {
            let id = item["call_id"].as_str().expect("a call id").to_owned();
            if id.is_empty() && is_call {
                found.insert("empty call id");
            }
            let map = if is_call { &mut calls } else { &mut outputs };
            map.entry((family, id)).or_default().push(position);
        }
    }
    for (key, positions) in &calls {
        if positions.len() > 1 {
            found.insert("duplicate call id");
        }
        match outputs.get(key) {
            None => {
                found.insert("missing output");
            }
            Some(outs) if outs[0] < positions[0] => {
                found.insert("output before call");
            }
            Some(_) => {}
        }
        if calls
            .keys()
            .any(|other| other.1 == key.1 && other.0 != key.0)
        {
            found.insert("call id colliding across families");
        }
    }
    for key in outputs.keys() {
        if !calls.contains_key(key) {
            found.insert("orphan output");
            if calls.keys().any(|call| call.1 == key.1) {
                found.insert("output of the wrong family");
            }
        }
    }
    found
}

/// Over 200 histories generated with every knob on, each knob's feature occurs; with every
/// knob off, none of the broken or optional ones does.
#[test]
fn the_generator_reaches_every_knob() {
    let expected = [
        "user message",
        "assistant message",
        "developer message",
        "system message",
        "reasoning",
        "function call",
        "local shell call",
        "custom tool call",
        "client tool search call",
        "server tool search call",
        "function output",
        "custom output",
        "tool search output",
        "web search",
        "image generation",
        "compaction item",
        "agent message",
        "unknown item",
        "image in message",
        "image in tool output",
        "empty call id",
        "duplicate call id",
        "missing output",
        "output before call",
        "call id colliding across families",
        "orphan output",
        "output of the wrong family",
        "compaction",
        "rollback",
    ];
    let seen = |knobs: HistoryConfig| {
        let mut runner = TestRunner::deterministic();
        let strategy = strategies::operations(knobs);
        let mut seen = BTreeSet::new();
        for _ in 0..200 {
            let ops = strategy.new_tree(&mut runner).expect("a value").current();
            seen.extend(features(&ops));
        }
        seen
    };
    let all = seen(HistoryConfig::everything());
    let missing: Vec<_> = expected.iter().filter(|f| !all.contains(*f)).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");

    let off = seen(HistoryConfig {
        images: false,
        images_in_tool_outputs: false,
        compactions: false,
        rollbacks: false,
        ..HistoryConfig::well_formed()
    });
    let optional = [
        "system message",
        "compaction item",
        "unknown item",
        "image in message",
        "image in tool output",
        "empty call id",
        "duplicate call id",
        "missing output",
        "output before call",
        "call id colliding across families",
        "orphan output",
        "output of the wrong family",
        "compaction",
        "rollback",
    ];
    let leaked: Vec<_> = optional.iter().filter(|f| off.contains(*f)).collect();
    assert!(leaked.is_empty(), "generated with its knob off: {leaked:?}");
    // The families themselves are always there.
    assert!(off.contains("server tool search call") && off.contains("custom output"));
}

fn history_of(items: &[&str]) -> History {
    let mut history = History::new();
    for item in items {
        history.record_json(*item).expect("valid item");
    }
    history
}

const USER: &str =
    r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#;
const CALL: &str = r#"{"type":"function_call","name":"ls","arguments":"{}","call_id":"c1"}"#;
const OTHER: &str =
    r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}"#;

/// `same_history` names the first item that differs, and the field when only a field does.
#[test]
fn a_changed_history_is_named_by_position() {
    let before = history_of(&[USER, CALL, USER]);
    let after = history_of(&[USER, OTHER, USER]);
    let failure = same_history("my step", &before, &after).expect_err("item 1 differs");
    assert_eq!(failure.property, Property::HistoryUnchanged);
    assert_eq!(failure.position, Some(1));
    assert!(failure.detail.contains(CALL) && failure.detail.contains(OTHER));
    assert!(failure.to_string().contains("my step at 1"), "{failure}");

    let shorter = history_of(&[USER, CALL]);
    let failure = same_history("s", &before, &shorter).expect_err("lengths differ");
    assert_eq!(failure.position, None);
    assert!(failure.detail.contains("3 items before and 2 after"));

    let mut bumped = before.clone();
    bumped.drop_last_n_user_turns(0).expect("no-op");
    bumped.set_reference_context_item(None);
    // Same items; a rollback of 0 turns changes nothing, a rollback of many bumps the version.
    assert_eq!(same_history("s", &before, &bumped), Ok(()));
    let mut rolled = history_of(&[USER, CALL]);
    rolled.drop_last_n_user_turns(5).expect("rollback");
    let reference = history_of(&[USER, CALL]);
    let failure = same_history("s", &reference, &rolled).expect_err("the history changed");
    assert_eq!(failure.property, Property::HistoryUnchanged);
}

/// `repeatable_by` catches an adapter whose output depends on how often it ran, and names the
/// first differing byte; `history_unchanged_by` passes the adapter's result through.
#[test]
fn a_non_repeatable_adapter_fails_with_the_byte_offset() {
    let history = history_of(&[USER, CALL]);
    let runs = Cell::new(0);
    let counting = |history: &History| -> Result<String, String> {
        runs.set(runs.get() + 1);
        Ok(format!(
            "{{\"items\":{},\"run\":{}}}",
            history.len(),
            runs.get()
        ))
    };
    let failure = repeatable_by(&history, "counting adapter", counting).expect_err("differs");
    assert_eq!(failure.property, Property::Repeatable);
    assert_eq!(failure.subject, "counting adapter");
    assert_eq!(failure.position, Some(r#"{"items":2,"run":"#.len()));

    let failing = |_: &History| -> Result<String, String> { Err("no route".to_owned()) };
    let failure = repeatable_by(&history, "failing", failing).expect_err("fails");
    assert_eq!(failure.property, Property::Projects);
    assert!(failure.to_string().contains("no route"));

    let stable = |history: &History| -> Result<String, String> { Ok(history.len().to_string()) };
    assert_eq!(repeatable_by(&history, "stable", stable), Ok(()));
    assert_eq!(
        history_unchanged_by(&history, "len", |history| history.len()),
        Ok(2)
    );
}

/// `passes_validator_by` rejects an adapter whose body breaks the target's rules, positioned at
/// the first rejected message and quoting the provider's error.
#[test]
fn an_invalid_body_fails_the_validator_property() {
    let history = history_of(&[USER, CALL]);
    let unanswered = |_: &History| {
        serde_json::json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        ]})
    };
    let failure =
        properties::passes_validator_by(&history, Target::ChatCompletions, "mine", unanswered)
            .expect_err("no tool message answers c1");
    assert_eq!(failure.property, Property::PassesValidator);
    assert_eq!(failure.position, Some(1));
    assert!(
        failure.detail.contains("must be followed by tool messages")
            && failure.detail.contains("c1"),
        "{failure}"
    );
}

/// The built-in Responses projection is what `History::project` writes: synthetic output
/// after the unanswered call, checked against the documented text.
#[test]
fn the_responses_projection_is_the_input_array() {
    let history = history_of(&[USER, CALL]);
    let input = project_for(agent_history::Target::Responses, &history).expect("projects");
    let items: Vec<Value> = serde_json::from_str(&input).expect("a JSON array");
    assert_eq!(items.len(), 3);
    assert_eq!(items[2]["type"], "function_call_output");
    assert_eq!(items[2]["call_id"], "c1");
    assert_eq!(items[2]["output"], "aborted");
}

/// The smallest histories on which the kit first found the Chat Completions projection sending
/// two `tool` messages with one `tool_call_id` (two calls sharing a call id, in one family and
/// across families), kept as a regression test for every target.
#[test]
fn reused_call_ids_project_to_valid_inputs() {
    const FUNCTION: &str =
        r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"call_1"}"#;
    const FUNCTION_OUTPUT: &str =
        r#"{"type":"function_call_output","call_id":"call_1","output":"ok"}"#;
    const CUSTOM: &str =
        r#"{"type":"custom_tool_call","call_id":"call_1","name":"apply_patch","input":"x"}"#;
    const CUSTOM_OUTPUT: &str =
        r#"{"type":"custom_tool_call_output","call_id":"call_1","output":"ok"}"#;
    let duplicate = history_of(&[FUNCTION, FUNCTION, FUNCTION_OUTPUT]);
    let colliding = history_of(&[CUSTOM_OUTPUT, CUSTOM, FUNCTION, FUNCTION_OUTPUT]);
    for history in [duplicate, colliding] {
        for target in Target::ALL {
            assert_eq!(
                properties::projection_passes_validator(&history, target),
                Ok(())
            );
        }
    }
}
