//! `Projection::common_prefix` and `ModelRequest::common_prefix`: how much of a prompt two
//! versions share from the start, checked against comparing the bytes one by one.

use crate::common;

use agent_history::{
    BodyPart, History, ItemKind, Modalities, Projection, ProjectionOptions, PromptCompiler,
    RequestSettings, StepContext, ToolPlan, TruncationPolicy,
};
use common::{assistant, item_line, meta_line, resume_bytes, user};
use proptest::prelude::*;

/// How many leading bytes two byte strings share: the oracle.
fn common_bytes(a: &[u8], b: &[u8]) -> u64 {
    a.iter().zip(b).take_while(|(x, y)| x == y).count() as u64
}

/// How many leading items two projections send with the same text: the oracle.
fn common_items(a: &Projection, b: &Projection) -> usize {
    a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count()
}

fn project(history: &History) -> Projection {
    history
        .project(&ProjectionOptions::default())
        .expect("lenient")
}

/// Checks a prefix against the oracles and returns it.
fn checked(a: &Projection, b: &Projection) -> agent_history::CommonPrefix {
    let prefix = a.common_prefix(b);
    let (array_a, array_b) = (a.to_json_array(), b.to_json_array());
    assert_eq!(
        prefix.bytes,
        common_bytes(array_a.as_bytes(), array_b.as_bytes()),
        "bytes"
    );
    assert_eq!(prefix.items, common_items(a, b), "items");
    assert_eq!(prefix.is_identical(), array_a == array_b);
    // Symmetric, but for the sides.
    let back = b.common_prefix(a);
    assert_eq!((back.items, back.bytes), (prefix.items, prefix.bytes));
    prefix
}

/// A history of `n` items: user messages, calls with outputs, assistant messages.
fn history(n: usize) -> History {
    let mut history = History::new();
    let mut i = 0;
    while history.len() < n {
        let json = match i % 4 {
            0 => user(&format!("request {i}")),
            1 => format!(
                r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"call-{i}"}}"#
            ),
            2 => format!(
                r#"{{"type":"function_call_output","call_id":"call-{}","output":"done {i}"}}"#,
                i - 1
            ),
            _ => assistant(&format!("answer {i}")),
        };
        history.record_json(json).expect("valid");
        i += 1;
    }
    history
}

#[test]
fn a_clone_plus_appends_shares_every_item_of_the_old_version() {
    for n in [0, 1, 63, 64, 65, 1000] {
        let old = history(n);
        let mut new = old.clone();
        new.record_json(user("one more")).expect("valid");
        new.record_json(assistant("and another")).expect("valid");
        let (a, b) = (project(&old), project(&new));
        let prefix = checked(&a, &b);
        assert_eq!(prefix.items, old.len());
        assert!(prefix.is_extension(), "n = {n}");
        // Every byte of the old array but its closing bracket.
        assert_eq!(prefix.bytes, a.json_array_len() as u64 - 1);
        let difference = prefix.first_difference.expect("differs");
        assert_eq!(difference.item, old.len());
        assert_eq!(
            difference.right.map(|item| (item.position, item.kind)),
            Some((old.len(), ItemKind::Message))
        );
    }
}

#[test]
fn a_projection_and_its_history_clone_are_identical() {
    let history = history(500);
    let (a, b) = (project(&history), project(&history.clone()));
    let prefix = checked(&a, &b);
    assert!(prefix.is_identical());
    assert_eq!(prefix.items, 500);
    assert_eq!(prefix.bytes, a.json_array_len() as u64);
}

#[test]
fn an_edit_at_position_p_shares_p_items() {
    let old = history(700);
    for p in [0, 1, 63, 64, 300, 699] {
        let mut entries = old.entries().clone();
        let edited = agent_history::Entry::from_json(user(&format!("edited {p}"))).expect("valid");
        entries.set(p, edited);
        let mut new = old.clone();
        new.replace(entries);
        let prefix = checked(&project(&old), &project(&new));
        assert_eq!(prefix.items, p, "edit at {p}");
        let difference = prefix.first_difference.expect("differs");
        assert_eq!(difference.left.expect("left").position, p);
        assert_eq!(difference.right.expect("right").position, p);
    }
}

#[test]
fn a_repair_breaks_the_run_at_the_synthetic_output() {
    let base = history(200);
    let call = r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"late"}"#;
    let mut answered = base.clone();
    answered.record_json(call).expect("valid");
    answered
        .record_json(r#"{"type":"function_call_output","call_id":"late","output":"ok"}"#)
        .expect("valid");
    let mut unanswered = base.clone();
    unanswered.record_json(call).expect("valid");
    unanswered.record_json(assistant("gave up")).expect("valid");
    let prefix = checked(&project(&answered), &project(&unanswered));
    // The call is shared; its real output and the synthetic one differ.
    assert_eq!(prefix.items, 201);
    let difference = prefix.first_difference.expect("differs");
    let (left, right) = (
        difference.left.expect("left"),
        difference.right.expect("right"),
    );
    assert_eq!((left.position, left.synthetic_output), (201, false));
    assert_eq!((right.position, right.synthetic_output), (200, true));
    assert_eq!(left.kind, ItemKind::FunctionCallOutput);
    assert_eq!(right.kind, ItemKind::FunctionCallOutput);
}

/// A rollout of `turns` turns, each a user message, a call, its output and an answer.
fn rollout(turns: usize) -> Vec<u8> {
    let mut text = meta_line() + "\n";
    for turn in 0..turns {
        for item in [
            user(&format!("turn {turn}")),
            format!(
                r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"c{turn}"}}"#
            ),
            format!(
                r#"{{"type":"function_call_output","call_id":"c{turn}","output":"out {turn}"}}"#
            ),
            assistant(&format!("done {turn}")),
        ] {
            text.push_str(&item_line(&item));
            text.push('\n');
        }
    }
    text.into_bytes()
}

#[test]
fn two_resumes_of_one_rollout_share_no_pointer_and_the_whole_prefix() {
    let bytes = rollout(100);
    let first = resume_bytes(&bytes, TruncationPolicy::Tokens(10_000)).into_history();
    let second = resume_bytes(&bytes, TruncationPolicy::Tokens(10_000)).into_history();
    assert_eq!(first.len(), 400);
    for (a, b) in first.iter().zip(second.iter()) {
        assert!(!a.shares_payload_with(b), "independent resumes");
    }
    let prefix = checked(&project(&first), &project(&second));
    assert!(prefix.is_identical());
    assert_eq!(prefix.items, 400);
}

#[test]
fn a_rollback_leaves_a_prefix_of_the_old_version() {
    let bytes = rollout(50);
    let old = resume_bytes(&bytes, TruncationPolicy::Tokens(10_000)).into_history();
    let mut new = old.clone();
    new.drop_last_n_user_turns(3).expect("rolls back");
    assert!(new.user_turn_count() < old.user_turn_count());
    let prefix = checked(&project(&old), &project(&new));
    assert_eq!(prefix.items, new.len());
    let difference = prefix.first_difference.expect("differs");
    assert_eq!(difference.left.expect("left").position, new.len());
    assert!(difference.right.is_none());
}

#[test]
fn a_compaction_replaces_the_history_and_breaks_the_run_where_it_changed_it() {
    let old = history(400);
    let mut new = old.clone();
    new.compact("the summary").expect("compacts");
    let prefix = checked(&project(&old), &project(&new));
    // The replacement keeps the first user message and drops what followed it.
    assert_eq!(prefix.items, 1);
    let difference = prefix.first_difference.expect("differs");
    assert_eq!(difference.left.expect("left").kind, ItemKind::FunctionCall);
    assert_eq!(difference.right.expect("right").kind, ItemKind::Message);
}

#[test]
fn a_front_removal_shifts_every_leaf_and_is_compared_by_entry() {
    let old = history(300);
    let mut new = old.clone();
    let removed = new.remove_first_item();
    assert_eq!(removed.len(), 1);
    let prefix = checked(&project(&old), &project(&new));
    assert_eq!(prefix.items, 0);
}

#[test]
fn media_stripped_in_one_projection_only_differs_at_the_media_item() {
    let mut history = history(100);
    history
        .record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#)
        .expect("valid");
    history.record_json(assistant("seen")).expect("valid");
    let with_images = project(&history);
    let text_only = history
        .project(&ProjectionOptions::for_modalities(Modalities::TEXT))
        .expect("lenient");
    let prefix = checked(&with_images, &text_only);
    assert_eq!(prefix.items, 100);
    // The same stripping in both: shared.
    let again = history
        .project(&ProjectionOptions::for_modalities(Modalities::TEXT))
        .expect("lenient");
    assert!(checked(&text_only, &again).is_identical());
}

fn compiler() -> PromptCompiler {
    PromptCompiler::new(RequestSettings {
        model: "gpt-5".into(),
        ..RequestSettings::default()
    })
    .with_base_instructions("Be brief.")
}

/// Checks a request prefix against comparing the bodies byte by byte.
fn checked_bodies(
    a: &agent_history::ModelRequest,
    b: &agent_history::ModelRequest,
) -> agent_history::BodyPrefix {
    let prefix = a.common_prefix(b).expect("writes");
    let (body_a, body_b) = (a.body().expect("body"), b.body().expect("body"));
    assert_eq!(prefix.bytes, common_bytes(&body_a, &body_b), "body bytes");
    assert_eq!(prefix.is_identical(), body_a == body_b);
    prefix
}

#[test]
fn request_bodies_name_the_part_that_differs() {
    let history = history(150);
    let base = compiler()
        .compile(&history, StepContext::default())
        .expect("compiles");
    let same = compiler()
        .compile(&history.clone(), StepContext::default())
        .expect("compiles");
    assert!(checked_bodies(&base, &same).is_identical());

    let mut longer = history.clone();
    longer.record_json(user("more")).expect("valid");
    let appended = compiler()
        .compile(&longer, StepContext::default())
        .expect("compiles");
    let prefix = checked_bodies(&base, &appended);
    assert_eq!(prefix.first_difference, Some(BodyPart::Input));
    assert!(prefix.input.expect("compared").is_extension());

    let other_model = PromptCompiler::new(RequestSettings {
        model: "gpt-4".into(),
        ..RequestSettings::default()
    })
    .with_base_instructions("Be brief.")
    .compile(&history, StepContext::default())
    .expect("compiles");
    let prefix = checked_bodies(&base, &other_model);
    assert_eq!(prefix.first_difference, Some(BodyPart::Model));
    assert!(prefix.input.is_none());

    let other_instructions = compiler()
        .with_base_instructions("Be thorough.")
        .compile(&history, StepContext::default())
        .expect("compiles");
    let prefix = checked_bodies(&base, &other_instructions);
    assert_eq!(prefix.first_difference, Some(BodyPart::Instructions));

    let tools = std::sync::Arc::new(
        ToolPlan::new(vec![
            serde_json::json!({"type": "function", "name": "shell"}),
        ])
        .expect("a plan"),
    );
    let with_tools = compiler()
        .with_tools(std::sync::Arc::clone(&tools), false)
        .compile(&history, StepContext::default())
        .expect("compiles");
    let prefix = checked_bodies(&base, &with_tools);
    assert_eq!(prefix.first_difference, Some(BodyPart::Tools));
    assert_eq!(
        prefix.input.expect("compared").items,
        base.prompt.input.len()
    );

    let parallel = compiler()
        .with_tools(tools, true)
        .compile(&history, StepContext::default())
        .expect("compiles");
    let prefix = checked_bodies(&with_tools, &parallel);
    assert_eq!(prefix.first_difference, Some(BodyPart::Settings));
}

#[test]
fn request_bodies_count_items_as_written_without_surrounding_space() {
    let mut history = History::new();
    history
        .record_json(format!("  {}\n", user("padded")))
        .expect("valid");
    history.record_json(assistant("plain")).expect("valid");
    let mut longer = history.clone();
    longer
        .record_json(format!("\t{} ", user("padded too")))
        .expect("valid");
    let a = compiler()
        .compile(&history, StepContext::default())
        .expect("compiles");
    let b = compiler()
        .compile(&longer, StepContext::default())
        .expect("compiles");
    checked_bodies(&a, &b);
}

/// One step of building a history for the property tests.
#[derive(Debug, Clone)]
enum Op {
    User(u8),
    Assistant(u8),
    Call(u8),
    Output(u8),
    Unknown(u8),
    Image(u8),
    /// A user message with white space around its text.
    Padded(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u8>().prop_map(Op::User),
        3 => any::<u8>().prop_map(Op::Assistant),
        3 => (0u8..8).prop_map(Op::Call),
        3 => (0u8..8).prop_map(Op::Output),
        1 => any::<u8>().prop_map(Op::Unknown),
        1 => any::<u8>().prop_map(Op::Image),
        1 => any::<u8>().prop_map(Op::Padded),
    ]
}

fn json(op: &Op) -> String {
    match op {
        Op::User(i) => user(&format!("u{i}")),
        Op::Assistant(i) => assistant(&format!("a{i}")),
        Op::Call(i) => format!(
            r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"c{i}"}}"#
        ),
        Op::Output(i) => {
            format!(r#"{{"type":"function_call_output","call_id":"c{i}","output":"o"}}"#)
        }
        Op::Unknown(i) => format!(r#"{{"type":"future_item","n":{i}}}"#),
        Op::Image(i) => format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"i{i}"}},{{"type":"input_image","image_url":"data:image/png;base64,AAAA"}}]}}"#
        ),
        Op::Padded(i) => format!(" {} \n", user(&format!("p{i}"))),
    }
}

fn record(history: &mut History, ops: &[Op]) {
    for op in ops {
        history.record_json(json(op)).expect("valid");
    }
}

/// How the second version comes from the first.
#[derive(Debug, Clone)]
enum Edit {
    Append(Vec<Op>),
    /// Replace the entry at (this modulo the length) and append.
    Replace(usize, Op, Vec<Op>),
    Rollback(usize),
    Compact,
    RemoveFirst,
    /// Record the same items again into a new history: equal texts, no shared pointers.
    Rebuild(Vec<Op>),
    /// The same history projected for a text-only model.
    TextOnly,
}

fn edit() -> impl Strategy<Value = Edit> {
    let ops = || prop::collection::vec(op(), 0..8);
    prop_oneof![
        3 => ops().prop_map(Edit::Append),
        3 => (any::<usize>(), op(), ops()).prop_map(|(p, op, ops)| Edit::Replace(p, op, ops)),
        1 => (0usize..4).prop_map(Edit::Rollback),
        1 => Just(Edit::Compact),
        1 => Just(Edit::RemoveFirst),
        2 => ops().prop_map(Edit::Rebuild),
        1 => Just(Edit::TextOnly),
    ]
}

/// The first version, its projection options, the second version and its options.
fn versions(ops: &[Op], edit: &Edit) -> (History, ProjectionOptions, History, ProjectionOptions) {
    let mut old = History::new();
    record(&mut old, ops);
    let options = ProjectionOptions::default();
    let mut new = old.clone();
    let mut new_options = options;
    match edit {
        Edit::Append(more) => record(&mut new, more),
        Edit::Replace(p, op, more) => {
            if !old.is_empty() {
                let mut entries = old.entries().clone();
                let entry = agent_history::Entry::from_json(json(op)).expect("valid");
                entries.set(p % old.len(), entry);
                new.replace(entries);
            }
            record(&mut new, more);
        }
        Edit::Rollback(turns) => {
            let _ = new.drop_last_n_user_turns(*turns);
        }
        Edit::Compact => {
            new.compact("summary").expect("compacts");
        }
        Edit::RemoveFirst => {
            new.remove_first_item();
        }
        Edit::Rebuild(more) => {
            new = History::new();
            for entry in old.iter() {
                new.record_json(entry.json()).expect("valid");
            }
            record(&mut new, more);
        }
        Edit::TextOnly => new_options = ProjectionOptions::for_modalities(Modalities::TEXT),
    }
    (old, options, new, new_options)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_prefix_of_two_projections_is_the_prefix_of_their_arrays(
        ops in prop::collection::vec(op(), 0..150),
        edit in edit(),
    ) {
        let (old, options, new, new_options) = versions(&ops, &edit);
        let a = old.project(&options).expect("lenient");
        let b = new.project(&new_options).expect("lenient");
        checked(&a, &b);
    }

    #[test]
    fn the_prefix_of_two_request_bodies_is_their_byte_by_byte_prefix(
        ops in prop::collection::vec(op(), 0..150),
        edit in edit(),
        instructions in prop_oneof![Just("Be brief."), Just("Be brief!"), Just("")],
        tools in any::<bool>(),
    ) {
        let (old, options, new, new_options) = versions(&ops, &edit);
        let a = compiler()
            .with_projection(options)
            .compile(&old, StepContext::default())
            .expect("compiles");
        let mut second = compiler().with_projection(new_options).with_base_instructions(instructions);
        if tools {
            second = second.with_tools(
                ToolPlan::new(vec![serde_json::json!({"type": "function", "name": "shell"})])
                    .expect("a plan"),
                false,
            );
        }
        let b = second.compile(&new, StepContext::default()).expect("compiles");
        let prefix = checked_bodies(&a, &b);
        if let Some(input) = &prefix.input {
            // A request body writes each item without the white space around it.
            let trim = |text: &str| text.trim_matches([' ', '\t', '\n', '\r']).to_owned();
            let written = a.prompt.input.iter().map(trim).zip(b.prompt.input.iter().map(trim));
            let shared = written.take_while(|(x, y)| x == y).count();
            prop_assert_eq!(input.items, shared);
        }
    }
}

/// The slots `common_prefix` reads while `f` runs.
fn slots_read(f: impl FnOnce()) -> u64 {
    let before = agent_history::testing::prefix_slots_read();
    f();
    agent_history::testing::prefix_slots_read() - before
}

#[test]
fn a_clone_plus_an_append_reads_the_changed_leaves_only_whatever_the_length() {
    // An append copies the last leaf (up to 64 entries) of the clone: those slots are compared
    // one by one on both sides, every other leaf is passed by pointer.
    for n in [1_000, 10_000, 100_000] {
        let old = history(n);
        let mut new = old.clone();
        new.record_json(user("one more")).expect("valid");
        let (a, b) = (project(&old), project(&new));
        let read = slots_read(|| {
            assert!(a.common_prefix(&b).is_extension());
        });
        assert!(read <= 2 * 64 + 1, "{read} slots read at {n} items");
    }
}

#[test]
fn independent_histories_are_compared_slot_by_slot() {
    let old = history(2_000);
    let mut rebuilt = History::new();
    for entry in old.iter() {
        rebuilt.record_json(entry.json()).expect("valid");
    }
    let (a, b) = (project(&old), project(&rebuilt));
    let read = slots_read(|| {
        assert!(a.common_prefix(&b).is_identical());
    });
    // Every slot of both, and the shared bytes counted over the rest of the first (none).
    assert_eq!(read, 2 * 2_000);
}
