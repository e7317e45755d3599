//! The state machine: one action list applied to the library and the model, compared after
//! every step; a failure prints the action list as a reproducer.

use super::compare::*;
use super::model::*;
use super::prelude::*;
use super::spec::*;
use super::strategies::*;

/// At most this many live forks.
pub(crate) const MAX_FORKS: usize = 4;

/// One step, applied to fork `target % forks` of both the library and the model.
#[derive(Clone, Debug)]
pub(crate) enum Action {
    Record {
        target: usize,
        json: String,
    },
    Project {
        target: usize,
        options: ProjectionOptions,
    },
    RemoveFirst {
        target: usize,
    },
    DropLastNTurns {
        target: usize,
        n: usize,
    },
    /// Clone fork `from`; the clone is appended (or overwrites the next fork when full).
    Fork {
        from: usize,
    },
    /// `replace` with the entries whose bit in `keep` is set.
    Replace {
        target: usize,
        keep: u32,
    },
    SetReferenceContext {
        target: usize,
    },
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
    prop_oneof![2 => Just(0usize), 1 => 0..MAX_FORKS]
}

pub(crate) fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        8 => (target(), any_json()).prop_map(|(target, json)| Action::Record { target, json }),
        2 => (target(), options()).prop_map(|(target, options)| Action::Project { target, options }),
        4 => target().prop_map(|target| Action::RemoveFirst { target }),
        4 => (target(), prop_oneof![4 => 0..4usize, 1 => Just(usize::MAX)])
            .prop_map(|(target, n)| Action::DropLastNTurns { target, n }),
        1 => target().prop_map(|from| Action::Fork { from }),
        1 => (target(), any::<u32>()).prop_map(|(target, keep)| Action::Replace { target, keep }),
        2 => target().prop_map(|target| Action::SetReferenceContext { target }),
    ]
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
                .map(|item| Action::Record {
                    target,
                    json: to_json(item),
                })
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
                .map(|item| Action::Record {
                    target,
                    json: to_json(item),
                })
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
                Action::Record {
                    target,
                    json: to_json(item),
                }
            });
            let removes = std::iter::repeat_n(Action::RemoveFirst { target }, removals);
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
            Action::Record { target, json } => format!(
                "forks[{}]\n        .record_json({json:?})\n        .expect(\"step {step}\");",
                at(target)
            ),
            Action::Project { target, options } => format!(
                "let _ = forks[{}].project(&{});",
                at(target),
                options_expression(options)
            ),
            Action::RemoveFirst { target } => {
                format!("forks[{}].remove_first_item();", at(target))
            }
            Action::DropLastNTurns { target, n } => {
                let n = if *n == usize::MAX {
                    "usize::MAX".to_owned()
                } else {
                    n.to_string()
                };
                format!(
                    "forks[{}]\n        .drop_last_n_user_turns({n})\n        .expect(\"step {step}\");",
                    at(target)
                )
            }
            Action::Fork { from } => {
                let from = at(from);
                if forks < MAX_FORKS {
                    forks += 1;
                    format!("let fork = forks[{from}].clone();\n    forks.push(fork);")
                } else {
                    format!("forks[{}] = forks[{from}].clone();", (from + 1) % forks)
                }
            }
            Action::Replace { target, keep } => format!(
                "let kept: Vec<Entry> = forks[{target}]\n        .iter()\n        .enumerate()\n        \
                 .filter(|(position, _)| *position < 32 && {keep:#b}u32 & (1 << position) != 0)\n        \
                 .map(|(_, entry)| entry.clone())\n        .collect();\n    forks[{target}].replace(kept);",
                target = at(target)
            ),
            Action::SetReferenceContext { target } => format!(
                "forks[{}].set_reference_context_item(Some(json!({{\"cwd\": \"/repo\"}})));",
                at(target)
            ),
        };
        let _ = writeln!(out, "    // step {step}\n    {lines}");
        if !matches!(action, Action::Project { .. }) {
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

/// `action` as a Rust expression.
fn action_expression(action: &Action) -> String {
    match action {
        Action::Record { target, json } => {
            format!(
                "Action::Record {{\n            target: {target},\n            json: {json:?}.into(),\n        }}"
            )
        }
        Action::Project { target, options } => format!(
            "Action::Project {{\n            target: {target},\n            options: {},\n        }}",
            options_expression(options).replace("\n    ", "\n            ")
        ),
        Action::RemoveFirst { target } => format!("Action::RemoveFirst {{ target: {target} }}"),
        Action::DropLastNTurns { target, n } => {
            let n = if *n == usize::MAX {
                "usize::MAX".to_owned()
            } else {
                n.to_string()
            };
            format!("Action::DropLastNTurns {{ target: {target}, n: {n} }}")
        }
        Action::Fork { from } => format!("Action::Fork {{ from: {from} }}"),
        Action::Replace { target, keep } => {
            format!(
                "Action::Replace {{\n            target: {target},\n            keep: {keep:#b},\n        }}"
            )
        }
        Action::SetReferenceContext { target } => {
            format!("Action::SetReferenceContext {{ target: {target} }}")
        }
    }
}

/// Which variant `action` is (a new variant fails to compile here until the sample below has it).
pub(crate) fn variant(action: &Action) -> usize {
    match action {
        Action::Record { .. } => 0,
        Action::Project { .. } => 1,
        Action::RemoveFirst { .. } => 2,
        Action::DropLastNTurns { .. } => 3,
        Action::Fork { .. } => 4,
        Action::Replace { .. } => 5,
        Action::SetReferenceContext { .. } => 6,
    }
}

/// The number of variants `variant` tells apart.
pub(crate) const VARIANTS: usize = 7;

/// An action list with every variant (a fork that pushes and one that overwrites, `usize::MAX`
/// turns, strict and lenient projections, item JSON holding `"#` and non-ASCII text), whose
/// reproducer is checked in as `reproducer_sample.rs`.
pub(crate) fn sample_actions() -> Vec<Action> {
    let record = |target: usize, json: &str| Action::Record {
        target,
        json: json.to_owned(),
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
        Action::Fork { from: 0 },
        record(
            1,
            r#"{"type":"function_call_output","call_id":"a","output":"ok"}"#,
        ),
        Action::Project {
            target: 1,
            options: STEP_OPTIONS[1],
        },
        Action::Project {
            target: 0,
            options: ProjectionOptions::default(),
        },
        Action::SetReferenceContext { target: 5 },
        Action::Fork { from: 1 },
        Action::Fork { from: 2 },
        Action::Fork { from: 3 },
        Action::Replace {
            target: 2,
            keep: 0b10,
        },
        Action::RemoveFirst { target: 0 },
        Action::DropLastNTurns { target: 1, n: 1 },
        Action::DropLastNTurns {
            target: 3,
            n: usize::MAX,
        },
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
        Action::Record { target, json } => {
            let (history, model) = &mut forks[target % len];
            let got = history
                .record_json(json.as_str())
                .map_err(|e| format!("record_json failed: {e}"))?;
            let want = model.record(json);
            if got != want {
                return Err(format!("record_json returned {got:?}, model {want:?}"));
            }
        }
        Action::Project { target, options } => {
            let (history, model) = &forks[target % len];
            compare_projection(history, &model.items, options)?;
        }
        Action::RemoveFirst { target } => {
            let (history, model) = &mut forks[target % len];
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
        Action::DropLastNTurns { target, n } => {
            let (history, model) = &mut forks[target % len];
            history
                .drop_last_n_user_turns(*n)
                .map_err(|error| format!("drop_last_n_user_turns failed: {error}"))?;
            model.drop_last_n_user_turns(*n);
        }
        Action::Fork { from } => {
            let fork = forks[from % len].clone();
            if len < MAX_FORKS {
                forks.push(fork);
            } else {
                forks[(from + 1) % len] = fork;
            }
        }
        Action::Replace { target, keep } => {
            let (history, model) = &mut forks[target % len];
            let kept = |position: usize| position < 32 && keep & (1 << position) != 0;
            let entries: Vec<Entry> = history
                .iter()
                .enumerate()
                .filter(|(position, _)| kept(*position))
                .map(|(_, entry)| entry.clone())
                .collect();
            history.replace(entries);
            let items = model
                .items
                .iter()
                .enumerate()
                .filter(|(position, _)| kept(*position))
                .map(|(_, json)| json.clone())
                .collect();
            model.replace(items);
        }
        Action::SetReferenceContext { target } => {
            let (history, model) = &mut forks[target % len];
            history.set_reference_context_item(Some(json!({"cwd": "/repo"})));
            model.has_reference_context = true;
        }
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
