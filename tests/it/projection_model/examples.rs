//! Hand-written edge cases.

use super::compare::*;
use super::machine::*;
use super::model::ModelHistory;
use super::prelude::*;
use super::properties::*;
use super::spec::*;

pub(crate) fn history_of(items: &[Value]) -> History {
    let jsons: Vec<String> = items.iter().map(Value::to_string).collect();
    let (history, model) = record_all(&jsons);
    compare_history(&history, &model).expect("history");
    history
}

pub(crate) fn project_values(
    history: &History,
    options: &ProjectionOptions,
) -> (Vec<Value>, Projection) {
    let projection = history.project(options).expect("projects");
    (projection.iter().map(parse).collect(), projection)
}

/// Checks the hand-written case against the reference under every option combination.
pub(crate) fn agrees_everywhere(history: &History) {
    let texts = texts_of(history);
    for image in [false, true] {
        for audio in [false, true] {
            for repair in [RepairMode::Lenient, RepairMode::Strict] {
                for unknown_items in [UnknownItems::HoldBack, UnknownItems::Send] {
                    let options = ProjectionOptions {
                        modalities: Modalities { image, audio },
                        repair,
                        unknown_items,
                    };
                    if let Err(e) = compare_projection(history, &texts, &options) {
                        panic!("{e}");
                    }
                }
            }
        }
    }
}

#[test]
pub(crate) fn constants_match_the_specification() {
    assert_eq!(
        SYNTHETIC_ID_NAMESPACE.hyphenated().to_string(),
        SPEC_NAMESPACE
    );
    assert_eq!(IMAGE_PLACEHOLDER, SPEC_IMAGE_PLACEHOLDER);
    assert_eq!(AUDIO_PLACEHOLDER, SPEC_AUDIO_PLACEHOLDER);
    assert_eq!(ABORTED_OUTPUT, SPEC_ABORTED);
    // The synthetic id rule's test vectors, through the model's own UUIDv5 computation.
    assert_eq!(
        spec_synthetic_id("fco", Some("fc_existing")).as_deref(),
        Some("fco_742749b0-3645-5d32-a172-676827826a07")
    );
    assert_eq!(
        spec_synthetic_id("tso", Some("tsc_abc")).as_deref(),
        Some("tso_b63461f2-d7a3-5651-b7ba-74201b82b23b")
    );
    assert_eq!(
        spec_synthetic_id("ctco", Some("ctc_1")).as_deref(),
        Some("ctco_ffd2c872-81a7-5a00-b6f6-884096d1f522")
    );
    assert_eq!(spec_synthetic_id("fco", Some("")), None);
}

#[test]
pub(crate) fn synthetic_outputs_have_the_exact_wire_form() {
    let history = history_of(&[
        json!({"type":"function_call","id":"fc_existing","name":"shell","arguments":"{}","call_id":"c1"}),
        json!({"type":"function_call","name":"shell","arguments":"{}","call_id":"c2"}),
        json!({"type":"custom_tool_call","id":"ctc_1","call_id":"c3","name":"p","input":"x"}),
        json!({"type":"tool_search_call","id":"tsc_abc","call_id":"c4","execution":"server","arguments":{}}),
        json!({"type":"function_call","id":"","name":"shell","arguments":"{}","call_id":"c5"}),
    ]);
    let projection = history
        .project(&ProjectionOptions::default())
        .expect("lenient");
    let sent: Vec<&str> = projection.iter().collect();
    assert_eq!(sent.len(), 10);
    assert_eq!(
        sent[1],
        r#"{"type":"function_call_output","id":"fco_742749b0-3645-5d32-a172-676827826a07","call_id":"c1","output":"aborted"}"#
    );
    assert_eq!(
        sent[3],
        r#"{"type":"function_call_output","call_id":"c2","output":"aborted"}"#
    );
    assert_eq!(
        sent[5],
        r#"{"type":"custom_tool_call_output","id":"ctco_ffd2c872-81a7-5a00-b6f6-884096d1f522","call_id":"c3","output":"aborted"}"#
    );
    // The call's own `execution` is not looked at: the synthetic output is client-executed.
    assert_eq!(
        sent[7],
        r#"{"type":"tool_search_output","id":"tso_b63461f2-d7a3-5651-b7ba-74201b82b23b","call_id":"c4","status":"completed","execution":"client","tools":[]}"#
    );
    assert_eq!(
        sent[9],
        r#"{"type":"function_call_output","call_id":"c5","output":"aborted"}"#
    );
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn output_before_call_pairs() {
    let history = history_of(&[
        json!({"type":"function_call_output","call_id":"a","output":"ok"}),
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"custom_tool_call_output","call_id":"b","output":"ok"}),
        json!({"type":"custom_tool_call","call_id":"b","name":"p","input":"x"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default().strict());
    assert_eq!(items.len(), 4);
    assert!(projection.report().is_empty());
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn duplicate_calls_share_one_output() {
    let history = history_of(&[
        json!({"type":"function_call","id":"fc_1","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"function_call","id":"fc_2","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"function_call_output","call_id":"a","output":"ok"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default());
    assert_eq!(items.len(), 3);
    assert!(projection.report().is_empty());
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn two_calls_with_one_call_id_and_no_output_get_two_synthetic_outputs() {
    let history = history_of(&[
        json!({"type":"function_call","id":"fc_1","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"between"}]}),
        json!({"type":"function_call","id":"fc_1","name":"f","arguments":"{}","call_id":"a"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default());
    let types: Vec<&str> = items.iter().map(type_of).collect();
    assert_eq!(
        types,
        [
            "function_call",
            "function_call_output",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    // The same call item id gives the same synthetic id.
    assert_eq!(items[1], items[4]);
    let positions: Vec<usize> = projection
        .report()
        .repairs()
        .iter()
        .map(|r| r.at.position)
        .collect();
    assert_eq!(positions, [0, 2]);
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn empty_call_id_is_a_call_id_but_an_absent_one_is_not() {
    let history = history_of(&[
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":""}),
        json!({"type":"function_call_output","call_id":"","output":"ok"}),
        json!({"type":"function_call","name":"g","arguments":"{}","call_id":"b"}),
        // No call id: an external tool event, kept, and it answers nothing.
        json!({"type":"function_call_output","name":"external","output":"ok"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default().strict());
    assert_eq!(items.len(), 5);
    assert_eq!(projection.report().len(), 1);
    assert_eq!(projection.report().repairs()[0].at.position, 2);
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn null_call_ids_and_server_tool_search_outputs_are_left_alone() {
    let history = history_of(&[
        json!({"type":"local_shell_call","call_id":null,"status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}),
        // (A client call without a call id is not recorded at all: canonicalization.)
        json!({"type":"tool_search_call","call_id":null,"execution":"server","arguments":{}}),
        json!({"type":"tool_search_output","call_id":null,"status":"completed","execution":"client","tools":[]}),
        json!({"type":"tool_search_output","call_id":"nowhere","status":"completed","execution":"server","tools":[]}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default().strict());
    assert_eq!(items.len(), 4);
    assert!(projection.report().is_empty());
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn a_server_tool_search_output_answers_a_call() {
    let history = history_of(&[
        json!({"type":"tool_search_call","call_id":"a","execution":"client","arguments":{"query":"q"}}),
        json!({"type":"tool_search_output","call_id":"a","status":"completed","execution":"server","tools":[]}),
    ]);
    let (items, _) = project_values(&history, &ProjectionOptions::default());
    assert_eq!(items.len(), 2);
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn families_do_not_answer_each_other() {
    let history = history_of(&[
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"custom_tool_call_output","call_id":"a","output":"ok"}),
        json!({"type":"local_shell_call","call_id":"b","status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}),
        json!({"type":"function_call_output","call_id":"b","output":"ok"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default());
    let types: Vec<&str> = items.iter().map(type_of).collect();
    assert_eq!(
        types,
        [
            "function_call",
            "function_call_output",
            "local_shell_call",
            "function_call_output"
        ]
    );
    assert_eq!(projection.report().len(), 2);
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn strict_mode_repairs_function_calls_but_refuses_custom_calls_and_orphans() {
    let quiet = history_of(&[
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"tool_search_call","call_id":"b","execution":"client","arguments":{"query":"q"}}),
    ]);
    let strict = quiet
        .project(&ProjectionOptions::default().strict())
        .expect("not a violation");
    assert_eq!(strict.len(), 4);

    let loud = history_of(&[
        json!({"type":"custom_tool_call","call_id":"a","name":"p","input":"x"}),
        json!({"type":"function_call_output","call_id":"zzz","output":"ok"}),
        json!({"type":"local_shell_call","call_id":"","status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}),
    ]);
    match loud.project(&ProjectionOptions::default().strict()) {
        Err(ProjectionError::Violations(violations)) => {
            let positions: Vec<usize> = violations.iter().map(|v| v.at.position).collect();
            assert_eq!(positions, [0, 1, 2]);
        }
        other => panic!("expected violations, got {other:?}"),
    }
    agrees_everywhere(&quiet);
    agrees_everywhere(&loud);
}

#[test]
pub(crate) fn a_dropped_orphan_is_not_stripped() {
    let history = history_of(&[
        json!({"type":"function_call_output","call_id":"a","output":[
        {"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}),
    ]);
    let (items, projection) = project_values(
        &history,
        &ProjectionOptions::for_modalities(Modalities::TEXT),
    );
    assert!(items.is_empty());
    assert_eq!(projection.report().len(), 1);
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn unknown_items_are_kept_held_back_or_sent_verbatim() {
    let unknown =
        r#"{"type":"future_thing","id":"x","content":[{"type":"input_image","image_url":"u"}]}"#;
    let mut history = fresh_history();
    assert!(matches!(
        history.record_json(unknown).expect("stored"),
        Recorded::Stored { position: 0, .. }
    ));
    let held = history
        .project(&ProjectionOptions::for_modalities(Modalities::TEXT))
        .expect("ok");
    assert!(held.is_empty());
    let sent = history
        .project(&ProjectionOptions {
            modalities: Modalities::TEXT,
            repair: RepairMode::Strict,
            unknown_items: UnknownItems::Send,
        })
        .expect("ok");
    assert_eq!(sent.iter().collect::<Vec<_>>(), [unknown]);
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn system_messages_and_compaction_triggers_are_not_recorded() {
    let mut history = fresh_history();
    let system = history
        .record_json(
            r#"{"type":"message","role":"system","content":[{"type":"input_text","text":"x"}]}"#,
        )
        .expect("ok");
    let trigger = history
        .record_json(r#"{"type":"compaction_trigger"}"#)
        .expect("ok");
    assert_eq!(system, Recorded::Filtered(FilterReason::SystemMessage));
    assert_eq!(trigger, Recorded::Filtered(FilterReason::CompactionTrigger));
    assert!(history.is_empty());
}

#[test]
pub(crate) fn media_stripping_covers_messages_outputs_and_generated_images() {
    let history = history_of(&[
        json!({"type":"message","role":"user","content":[
            {"type":"input_text","text":"look"},
            {"type":"input_image","file_id":"file_1"},
            {"type":"input_audio","audio_url":"data:audio/wav;base64,AA=="},
            {"type":"input_image","image_url":"u","detail":"low"}]}),
        json!({"type":"custom_tool_call","call_id":"a","name":"p","input":"x"}),
        json!({"type":"custom_tool_call_output","call_id":"a","output":[
            {"type":"input_audio","audio_url":"data:audio/wav;base64,AA=="}]}),
        json!({"type":"image_generation_call","id":"ig_1","status":"completed","result":"Zm9v"}),
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"b"}),
        json!({"type":"function_call_output","call_id":"b","output":"input_image"}),
    ]);
    let (items, projection) = project_values(
        &history,
        &ProjectionOptions::for_modalities(Modalities::TEXT),
    );
    assert_eq!(items[0]["content"][1]["text"], SPEC_IMAGE_PLACEHOLDER);
    assert_eq!(items[0]["content"][2]["text"], SPEC_AUDIO_PLACEHOLDER);
    assert_eq!(items[2]["output"][0]["text"], SPEC_AUDIO_PLACEHOLDER);
    assert_eq!(items[3]["result"], "");
    assert_eq!(items[5]["output"], "input_image");
    let kinds: Vec<RepairWhat> = projection
        .report()
        .repairs()
        .iter()
        .map(|r| observed_repair(r).what)
        .collect();
    // In position order: the message's images, then its audio (the passes' order within one
    // item), the tool output's audio, the generated image.
    assert_eq!(
        kinds,
        [
            RepairWhat::StrippedImages(2),
            RepairWhat::StrippedAudio(1),
            RepairWhat::StrippedAudio(1),
            RepairWhat::ClearedImageGeneration,
        ]
    );
    agrees_everywhere(&history);
}

#[test]
pub(crate) fn remove_first_item_takes_the_first_counterpart() {
    let shell = json!({"type":"local_shell_call","call_id":"a","status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}});
    let items = [
        json!({"type":"function_call_output","call_id":"a","output":"1"}),
        shell.clone(),
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"function_call_output","call_id":"a","output":"2"}),
    ];
    let mut history = history_of(&items);
    let version = history.version();
    let removed: Vec<Value> = history
        .remove_first_item()
        .iter()
        .map(|e| parse(e.json()))
        .collect();
    // A function output looks for a function_call first, even when a local shell call comes
    // earlier.
    assert_eq!(removed, [items[0].clone(), items[2].clone()]);
    assert_eq!(history.version(), version);
    let removed: Vec<Value> = history
        .remove_first_item()
        .iter()
        .map(|e| parse(e.json()))
        .collect();
    assert_eq!(removed, [shell, items[3].clone()]);
    assert!(history.is_empty());
    assert!(history.remove_first_item().is_empty());
    history.assert_invariants();
}

#[test]
pub(crate) fn rollback_keeps_the_session_prefix_and_trims_context_above_the_cut() {
    let user = |text: &str| json!({"type":"message","role":"user","content":[{"type":"input_text","text":text}]});
    let developer = |texts: &[&str]| {
        json!({"type":"message","role":"developer","content":
            texts.iter().map(|t| json!({"type":"input_text","text":t})).collect::<Vec<_>>()})
    };
    let items = [
        developer(&["<permissions instructions>\nread-only"]),
        user("first"),
        json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}),
        developer(&["<permissions instructions>\nworkspace-write", "be brief"]),
        user("<environment_context>\n<cwd>/x</cwd>\n</environment_context>"),
        user("second"),
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
    ];
    let jsons: Vec<String> = items.iter().map(Value::to_string).collect();
    let (mut history, mut model) = record_all(&jsons);
    history.set_reference_context_item(Some(json!({})));
    model.has_reference_context = true;

    history.drop_last_n_user_turns(1).expect("rolled back");
    model.drop_last_n_user_turns(1);
    compare_history(&history, &model).expect("agrees");
    assert_eq!(history.len(), 3);
    assert_eq!(history.version(), 1);
    // The trimmed developer bundle also held plain text: full context is re-injected next turn.
    assert!(history.reference_context_item().is_none());

    history.drop_last_n_user_turns(5).expect("rolled back");
    model.drop_last_n_user_turns(5);
    compare_history(&history, &model).expect("agrees");
    assert_eq!(history.len(), 1);
    assert_eq!(history.version(), 2);

    // No boundary left: the items stay, the version still moves.
    history.drop_last_n_user_turns(1).expect("rolled back");
    assert_eq!(history.len(), 1);
    assert_eq!(history.version(), 3);
    history.drop_last_n_user_turns(0).expect("rolled back");
    assert_eq!(history.version(), 3);
}

/// The reproducer of the sample action list is the checked-in `reproducer_sample.rs`, which the
/// build compiles and the test run runs: the rendering names only functions that exist. The
/// sample has every kind of action.
#[test]
fn the_samples_reproducer_is_the_checked_in_test() {
    let actions = sample_actions();
    let mut variants: Vec<usize> = actions
        .iter()
        .map(|action| variant(action).expect("a variant the machine runs"))
        .collect();
    variants.sort_unstable();
    variants.dedup();
    assert_eq!(variants, (0..VARIANTS).collect::<Vec<_>>());
    // Both ways a fork goes: pushed while there is room, then overwriting.
    let forks = actions
        .iter()
        .filter(|action| matches!(action, ForkOp::Fork { .. }))
        .count();
    assert!(forks > MAX_FORKS - 1, "{forks}");
    run_machine(&actions).expect("the library and the model agree on the sample");
    let rendered = reproducer(&actions);
    let checked_in = include_str!("reproducer_sample.rs");
    assert!(
        rendered == checked_in,
        "the reproducer's rendering changed: write it to tests/it/projection_model/reproducer_sample.rs\n{rendered}"
    );
}

/// A deliberately broken model (it forgets to remove its first item) makes the state machine
/// fail at the first removal that matters, and the failure carries the reproducer of the steps
/// up to it.
#[test]
fn a_broken_model_fails_with_the_reproducer_of_the_steps_so_far() {
    let actions = sample_actions();
    let broken = |forks: &mut Vec<(History, ModelHistory)>, action: &Action| {
        if let ForkOp::On {
            fork,
            op: HistoryOp::RemoveFirst,
        } = action
        {
            let len = forks.len();
            let (history, model) = &mut forks[fork % len];
            history.remove_first_item();
            return compare_history(history, model);
        }
        apply(forks, action)
    };
    let failure = run_machine_with(&actions, broken).expect_err("the broken model is caught");
    let step = actions
        .iter()
        .position(|action| {
            matches!(
                action,
                ForkOp::On {
                    op: HistoryOp::RemoveFirst,
                    ..
                }
            )
        })
        .expect("a removal");
    assert!(
        failure.starts_with(&format!("step {step} (On {{ fork: 0, op: RemoveFirst }})")),
        "{failure}"
    );
    let (_, printed) = failure
        .split_once(&format!(
            "reproducer ({} of {} actions):\n",
            step + 1,
            actions.len()
        ))
        .unwrap_or_else(|| panic!("no reproducer in {failure}"));
    assert_eq!(printed, reproducer(&actions[..=step]));
    assert!(
        printed.contains("#[test]\nfn machine_reproducer()"),
        "{printed}"
    );
    assert!(
        printed.contains("forks[0].remove_first_item();"),
        "{printed}"
    );
    // The steps after the failure are not in it.
    assert!(!printed.contains("drop_last_n_user_turns"), "{printed}");
    // Without the break, the same steps agree.
    run_machine(&actions[..=step]).expect("the real model agrees");
}

#[test]
fn truncated_outputs_keep_their_pairing_and_media() {
    // Tokens(1) with the 1.2 allowance leaves a budget of 2 tokens: the text is cut, the image
    // part is kept.
    let mut history = History::with_truncation(TruncationPolicy::Tokens(1));
    history
        .record_json(
            r#"{"type":"function_call","id":"fc_1","name":"f","arguments":"{}","call_id":"a"}"#,
        )
        .expect("records");
    let output = json!({"type":"function_call_output","call_id":"a","output":[
        {"type":"input_text","text":"x".repeat(1000)},
        {"type":"input_image","image_url":"data:image/png;base64,AAAA"}]});
    let recorded = history.record_json(output.to_string()).expect("records");
    assert_eq!(
        recorded,
        Recorded::Stored {
            position: 1,
            truncated: true
        }
    );
    let entry = history.get(1).expect("stored");
    assert_eq!(entry.call_id().map(|id| id.as_str()), Some("a"));
    assert!(entry.json().len() < 300, "{}", entry.json());
    history.assert_invariants();
    let (items, projection) = project_values(
        &history,
        &ProjectionOptions::for_modalities(Modalities::TEXT),
    );
    assert_eq!(items.len(), 2);
    let kinds: Vec<RepairWhat> = projection
        .report()
        .repairs()
        .iter()
        .map(|r| observed_repair(r).what)
        .collect();
    assert_eq!(kinds, [RepairWhat::StrippedImages(1)]);
    agrees_everywhere(&history);
}
