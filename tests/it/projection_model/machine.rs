//! The state machine: one action list applied to the library and the model, compared after
//! every step; a failure prints the action list as a reproducer.

use super::compare::*;
use super::model::*;
use super::prelude::*;
use super::spec::*;
use super::strategies::*;

/// One step, applied to fork `fork % forks` of both the library and the model: the testing
/// kit's description of history operations (`agent_history::testing::ForkOp`). The model has
/// no compaction and no fork before a user turn: the generators here make neither.
pub(crate) type Action = ForkOp;

/// The operations the state machine generates, and how often: every kind the model has.
pub(crate) const WEIGHTS: OpWeights = OpWeights {
    record: 8,
    project: 2,
    remove_first: 4,
    rollback: 4,
    replace: 1,
    compact: 0,
    set_reference_context: 2,
    fork: 1,
    fork_before_turn: 0,
};

/// A record of `json` on fork `fork`.
pub(crate) fn record_on(fork: usize, json: String) -> Action {
    ForkOp::On {
        fork,
        op: HistoryOp::Record(json),
    }
}

pub(crate) fn text_message(role: &str, texts: &[&str]) -> Value {
    let kind = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    let content: Vec<Value> = texts
        .iter()
        .map(|text| json!({"type": kind, "text": text}))
        .collect();
    json!({"type": "message", "role": role, "content": content})
}

/// Context a harness injects before a user turn: user fragments, and developer fragments alone
/// or mixed with plain text.
pub(crate) fn context_message() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(text_message(
            "user",
            &["<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"]
        )),
        Just(text_message(
            "user",
            &[
                "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>",
                "and also this"
            ]
        )),
        Just(text_message(
            "developer",
            &["<permissions instructions>\nsandbox: read-only"]
        )),
        Just(text_message(
            "developer",
            &["<collaboration_mode>pair</collaboration_mode>", "Be terse."]
        )),
    ]
}

/// The item that opens a user turn.
pub(crate) fn turn_opener() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => Just(text_message("user", &["please fix the bug"])),
        1 => Just(json!({"type": "agent_message", "author": "/root", "recipient": "/root/worker",
            "content": [{"type": "input_text", "text": "go"}]})),
        1 => Just(text_message("assistant", &["{\"author\":\"/root\",\"recipient\":\"/root/worker\",\"content\":\"go\",\"trigger_turn\":true}"])),
    ]
}

pub(crate) fn to_json(item: Value) -> String {
    serde_json::to_string(&item).expect("serialize")
}

pub(crate) fn target() -> impl Strategy<Value = usize> {
    // Most actions go to the first fork, so that forks grow long enough to be interesting.
    fork_index()
}

pub(crate) fn action() -> impl Strategy<Value = Action> {
    fork_op(any_json().boxed(), WEIGHTS)
}

/// A run of `Record` actions shaped like a turn: context, the turn's opener, then whatever the
/// model and tools did.
pub(crate) fn turn() -> impl Strategy<Value = Vec<Action>> {
    (
        target(),
        prop::collection::vec(context_message(), 0..3),
        turn_opener(),
        prop::collection::vec(any_item(), 0..4),
    )
        .prop_map(|(target, context, opener, rest)| {
            context
                .into_iter()
                .chain(std::iter::once(opener))
                .chain(rest)
                .map(|item| record_on(target, to_json(item)))
                .collect()
        })
}

/// A call and its output (in either order) with one call id, for remove-first pairing.
pub(crate) fn exchange() -> impl Strategy<Value = Vec<Action>> {
    (
        target(),
        prop_oneof![
            function_call(),
            local_shell_call(),
            custom_tool_call(),
            tool_search_call()
        ],
        prop_oneof![
            function_call_output(),
            custom_tool_call_output(),
            tool_search_output()
        ],
        call_id(),
        any::<bool>(),
    )
        .prop_map(|(target, mut call, mut output, call_id, output_first)| {
            call["call_id"] = call_id.into();
            output["call_id"] = call_id.into();
            let pair = if output_first {
                [output, call]
            } else {
                [call, output]
            };
            pair.into_iter()
                .map(|item| record_on(target, to_json(item)))
                .collect()
        })
}

/// Both calls of the function family and an output sharing one call id, in any order, then a run
/// of `RemoveFirst`: which call an output takes along matters here.
pub(crate) fn shared_call_id_then_remove() -> impl Strategy<Value = Vec<Action>> {
    (
        target(),
        prop::collection::vec(
            prop_oneof![local_shell_call(), function_call(), function_call_output()],
            3..5,
        ),
        call_id(),
        1..4usize,
    )
        .prop_map(|(target, items, call_id, removals)| {
            let records = items.into_iter().map(move |mut item| {
                item["call_id"] = call_id.into();
                record_on(target, to_json(item))
            });
            let removes = std::iter::repeat_n(
                ForkOp::On {
                    fork: target,
                    op: HistoryOp::RemoveFirst,
                },
                removals,
            );
            records.chain(removes).collect()
        })
}

/// Action lists: single actions mixed with turn-shaped and exchange-shaped runs of records.
pub(crate) fn actions() -> impl Strategy<Value = Vec<Action>> {
    prop::collection::vec(
        prop_oneof![
            3 => action().prop_map(|action| vec![action]),
            3 => turn(),
            1 => exchange(),
            1 => shared_call_id_then_remove(),
        ],
        1..32,
    )
    .prop_map(|chunks| chunks.into_iter().flatten().collect())
}

/// A failing action list as a test module that compiles against the public API and this test's
/// modules: save it as `tests/it/projection_model/reproducer.rs` and add `mod reproducer;` to
/// `mod.rs`. The test replays the steps on the library alone (each call spelled out, the forks'
/// indices resolved, invariants checked after each step), then runs the same action list through
/// the state machine, which compares with the model after every step and fails as the property
/// did. `reproducer_sample.rs` is this function's output for `sample_actions()`, compiled and run
/// with the other tests, and compared with a fresh rendering, so a rendering that does not
/// compile fails the build.
pub(crate) fn reproducer(actions: &[Action]) -> String {
    let mut out = String::from(
        "//! A failing run of `history_matches_model_step_by_step`, as a test (rendered by\n\
         //! `machine::reproducer`).\n\
         \n\
         use super::machine::*;\n\
         use super::prelude::*;\n\
         \n\
         #[test]\n\
         fn machine_reproducer() {\n\
         \x20   // The steps on the library alone, through its public API.\n\
         \x20   let mut forks = vec![History::with_truncation(TruncationPolicy::Tokens(1_000_000))];\n",
    );
    let mut forks = 1usize;
    for (step, action) in actions.iter().enumerate() {
        let at = |target: &usize| target % forks;
        let lines = match action {
            ForkOp::On { fork, op } => {
                let fork = at(fork);
                match op {
                    HistoryOp::Record(json) => format!(
                        "forks[{fork}]\n        .record_json({json:?})\n        .expect(\"step {step}\");"
                    ),
                    HistoryOp::Project(options) => format!(
                        "let _ = forks[{fork}].project(&{});",
                        options_expression(options)
                    ),
                    HistoryOp::RemoveFirst => format!("forks[{fork}].remove_first_item();"),
                    HistoryOp::Rollback(n) => format!(
                        "forks[{fork}]\n        .drop_last_n_user_turns({})\n        .expect(\"step {step}\");",
                        turns_expression(*n)
                    ),
                    HistoryOp::Replace { keep, new } => {
                        let (binding, new) = match new {
                            Some(json) => (
                                "let mut kept",
                                format!("\n    kept.extend(Entry::from_json({json:?}).ok());"),
                            ),
                            None => ("let kept", String::new()),
                        };
                        format!(
                            "let entries: Vec<Entry> = forks[{fork}].iter().cloned().collect();\n    \
                             {binding} = {}.pick(&entries);{new}\n    forks[{fork}].replace(kept);",
                            selection_expression(keep)
                        )
                    }
                    HistoryOp::Compact(summary) => format!(
                        "forks[{fork}]\n        .compact({summary:?})\n        .expect(\"step {step}\");"
                    ),
                    HistoryOp::SetReferenceContext(value) => format!(
                        "forks[{fork}].set_reference_context_item({});",
                        reference_expression(value.as_ref())
                    ),
                }
            }
            ForkOp::Fork { from, before_turn } => {
                let from = at(from);
                let fork = match before_turn {
                    None => format!("forks[{from}].clone()"),
                    Some(turn) => format!(
                        "forks[{from}]\n        .before_user_turn({turn})\n        .expect(\"step {step}\")"
                    ),
                };
                if forks < MAX_FORKS {
                    forks += 1;
                    format!("let fork = {fork};\n    forks.push(fork);")
                } else {
                    format!("forks[{}] = {fork};", (from + 1) % forks)
                }
            }
        };
        let _ = writeln!(out, "    // step {step}\n    {lines}");
        if !matches!(
            action,
            ForkOp::On {
                op: HistoryOp::Project(_),
                ..
            }
        ) {
            out.push_str("    forks.iter().for_each(History::assert_invariants);\n");
        }
    }
    out.push_str(
        "    drop(forks);\n\n    // The same steps against the model, compared after each.\n    let actions = vec![\n",
    );
    for action in actions {
        let _ = writeln!(out, "        {},", action_expression(action));
    }
    out.push_str(
        "    ];\n    if let Err(failure) = run_machine(&actions) {\n        panic!(\"{failure}\");\n    }\n}\n",
    );
    out
}

/// `options` as a Rust expression.
fn options_expression(options: &ProjectionOptions) -> String {
    format!(
        "ProjectionOptions {{\n        modalities: {:?},\n        repair: RepairMode::{:?},\n        \
         unknown_items: UnknownItems::{:?},\n    }}",
        options.modalities, options.repair, options.unknown_items
    )
}

/// A rollback's `n` as a Rust expression.
fn turns_expression(n: usize) -> String {
    if n == usize::MAX {
        "usize::MAX".to_owned()
    } else {
        n.to_string()
    }
}

/// `keep` as a Rust expression.
fn selection_expression(keep: &Selection) -> String {
    match keep {
        Selection::Mask(bits) => format!("Selection::Mask({bits:#b})"),
        Selection::Picks(picks) => format!("Selection::Picks(vec!{picks:?})"),
    }
}

/// A reference context item as a Rust expression.
fn reference_expression(value: Option<&Value>) -> String {
    match value {
        Some(value) => format!("Some(json!({value}))"),
        None => "None".to_owned(),
    }
}

/// `op` as a Rust expression.
fn op_expression(op: &HistoryOp) -> String {
    match op {
        HistoryOp::Record(json) => format!("HistoryOp::Record({json:?}.into())"),
        HistoryOp::Project(options) => format!(
            "HistoryOp::Project({})",
            options_expression(options).replace("\n    ", "\n                ")
        ),
        HistoryOp::RemoveFirst => "HistoryOp::RemoveFirst".to_owned(),
        HistoryOp::Rollback(n) => format!("HistoryOp::Rollback({})", turns_expression(*n)),
        HistoryOp::Replace { keep, new } => format!(
            "HistoryOp::Replace {{\n                keep: {},\n                new: {},\n            }}",
            selection_expression(keep),
            match new {
                Some(json) => format!("Some({json:?}.into())"),
                None => "None".to_owned(),
            }
        ),
        HistoryOp::Compact(summary) => format!("HistoryOp::Compact({summary:?}.into())"),
        HistoryOp::SetReferenceContext(value) => format!(
            "HistoryOp::SetReferenceContext({})",
            reference_expression(value.as_ref())
        ),
    }
}

/// `action` as a Rust expression.
fn action_expression(action: &Action) -> String {
    match action {
        ForkOp::On { fork, op } => format!(
            "ForkOp::On {{\n            fork: {fork},\n            op: {},\n        }}",
            op_expression(op)
        ),
        ForkOp::Fork { from, before_turn } => format!(
            "ForkOp::Fork {{\n            from: {from},\n            before_turn: {before_turn:?},\n        }}"
        ),
    }
}

/// Which variant `action` is, among those the machine generates (a new variant fails to
/// compile here until the sample below has it); `None` for those it does not.
pub(crate) fn variant(action: &Action) -> Option<usize> {
    match action {
        ForkOp::On { op, .. } => match op {
            HistoryOp::Record(_) => Some(0),
            HistoryOp::Project(_) => Some(1),
            HistoryOp::RemoveFirst => Some(2),
            HistoryOp::Rollback(_) => Some(3),
            HistoryOp::Replace { .. } => Some(5),
            HistoryOp::SetReferenceContext(_) => Some(6),
            HistoryOp::Compact(_) => None,
        },
        ForkOp::Fork {
            before_turn: None, ..
        } => Some(4),
        ForkOp::Fork {
            before_turn: Some(_),
            ..
        } => None,
    }
}

/// The number of variants `variant` tells apart.
pub(crate) const VARIANTS: usize = 7;

/// An action list with every variant (a fork that pushes and one that overwrites, `usize::MAX`
/// turns, strict and lenient projections, item JSON holding `"#` and non-ASCII text), whose
/// reproducer is checked in as `reproducer_sample.rs`.
pub(crate) fn sample_actions() -> Vec<Action> {
    let record = |fork: usize, json: &str| record_on(fork, json.to_owned());
    let on = |fork: usize, op: HistoryOp| ForkOp::On { fork, op };
    let fork = |from: usize| ForkOp::Fork {
        from,
        before_turn: None,
    };
    vec![
        record(
            0,
            r##"{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md \"quoted\" é"}]}"##,
        ),
        record(
            0,
            r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"a"}"#,
        ),
        fork(0),
        record(
            1,
            r#"{"type":"function_call_output","call_id":"a","output":"ok"}"#,
        ),
        on(1, HistoryOp::Project(STEP_OPTIONS[1])),
        on(0, HistoryOp::Project(ProjectionOptions::default())),
        on(5, HistoryOp::SetReferenceContext(Some(json!({"cwd": "/repo"})))),
        fork(1),
        fork(2),
        fork(3),
        on(
            2,
            HistoryOp::Replace {
                keep: Selection::Mask(0b10),
                new: None,
            },
        ),
        on(
            3,
            HistoryOp::Replace {
                keep: Selection::Picks(vec![1, 0, 1]),
                new: Some(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"new"}]}"#.to_owned()),
            },
        ),
        on(0, HistoryOp::RemoveFirst),
        on(1, HistoryOp::Rollback(1)),
        on(3, HistoryOp::SetReferenceContext(None)),
        on(3, HistoryOp::Rollback(usize::MAX)),
    ]
}

/// The projection options checked after every step, besides those of `Project` actions.
pub(crate) const STEP_OPTIONS: [ProjectionOptions; 2] = [
    ProjectionOptions {
        modalities: Modalities {
            image: true,
            audio: false,
        },
        repair: RepairMode::Lenient,
        unknown_items: UnknownItems::HoldBack,
    },
    ProjectionOptions {
        modalities: Modalities {
            image: false,
            audio: false,
        },
        repair: RepairMode::Strict,
        unknown_items: UnknownItems::Send,
    },
];

pub(crate) fn apply(
    forks: &mut Vec<(History, ModelHistory)>,
    action: &Action,
) -> Result<(), String> {
    let len = forks.len();
    match action {
        ForkOp::On { fork, op } => {
            let (history, model) = &mut forks[fork % len];
            match op {
                HistoryOp::Record(json) => {
                    let got = history
                        .record_json(json.as_str())
                        .map_err(|e| format!("record_json failed: {e}"))?;
                    let want = model.record(json);
                    if got != want {
                        return Err(format!("record_json returned {got:?}, model {want:?}"));
                    }
                }
                HistoryOp::Project(options) => {
                    compare_projection(history, &model.items, options)?;
                }
                HistoryOp::RemoveFirst => {
                    let got: Vec<String> = history
                        .remove_first_item()
                        .iter()
                        .map(|e| e.json().to_owned())
                        .collect();
                    let want = model.remove_first_item();
                    if got != want {
                        return Err(format!(
                            "remove_first_item removed {got:#?}, model {want:#?}"
                        ));
                    }
                }
                HistoryOp::Rollback(n) => {
                    history
                        .drop_last_n_user_turns(*n)
                        .map_err(|error| format!("drop_last_n_user_turns failed: {error}"))?;
                    model.drop_last_n_user_turns(*n);
                }
                HistoryOp::Replace { keep, new } => {
                    let entries: Vec<Entry> = history.iter().cloned().collect();
                    let mut kept = keep.pick(&entries);
                    let new = new_entry(new.as_deref());
                    replace_in_model(model, keep, new.as_ref());
                    kept.extend(new);
                    history.replace(kept);
                }
                HistoryOp::SetReferenceContext(value) => {
                    history.set_reference_context_item(value.clone());
                    model.has_reference_context = value.is_some();
                }
                HistoryOp::Compact(_) => return Err("the model has no compaction".to_owned()),
            }
        }
        ForkOp::Fork {
            from,
            before_turn: None,
        } => {
            let fork = forks[from % len].clone();
            place_fork(forks, *from, fork, MAX_FORKS);
        }
        ForkOp::Fork {
            before_turn: Some(_),
            ..
        } => return Err("the model has no fork before a user turn".to_owned()),
    }
    for (i, (history, model)) in forks.iter().enumerate() {
        compare_history(history, model).map_err(|e| format!("fork {i}: {e}"))?;
        for options in &STEP_OPTIONS {
            compare_projection(history, &model.items, options)
                .map_err(|e| format!("fork {i}: {e}"))?;
        }
    }
    Ok(())
}

/// The new item of a replacement as an entry: it goes in as given (replace does not filter),
/// and one that is not an item is left out.
pub(crate) fn new_entry(json: Option<&str>) -> Option<Entry> {
    json.and_then(|json| Entry::from_json(json).ok())
}

/// A replacement on the model: the items `keep` selects, then `new`.
pub(crate) fn replace_in_model(model: &mut ModelHistory, keep: &Selection, new: Option<&Entry>) {
    let mut items = keep.pick(&model.items);
    items.extend(new.map(|entry| entry.json().to_owned()));
    model.replace(items);
}

pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

pub(crate) fn run_machine(actions: &[Action]) -> Result<(), String> {
    run_machine_with(actions, apply)
}

/// `run_machine` with `step` in place of `apply`: the failure path is tested with a step that
/// breaks the model on purpose.
pub(crate) fn run_machine_with(
    actions: &[Action],
    mut step: impl FnMut(&mut Vec<(History, ModelHistory)>, &Action) -> Result<(), String>,
) -> Result<(), String> {
    let mut forks = vec![(fresh_history(), ModelHistory::default())];
    for (index, action) in actions.iter().enumerate() {
        let outcome = catch_unwind(AssertUnwindSafe(|| step(&mut forks, action)));
        let failure = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(message)) => message,
            Err(payload) => format!("panicked: {}", panic_text(&*payload)),
        };
        return Err(format!(
            "step {index} ({action:?}) failed: {failure}\n\nreproducer ({} of {} actions):\n{}",
            index + 1,
            actions.len(),
            reproducer(&actions[..=index])
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// 6. Actions applied to the library and the model agree after every step.
    #[test]
    fn history_matches_model_step_by_step(actions in actions()) {
        check(run_machine(&actions))?;
    }
}
