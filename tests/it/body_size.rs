//! Request bodies sized up front, a reusable body buffer, and projections for models without
//! image or audio input that check nothing when the history's media did not change.
//!
//! Sizes and reuse are checked through lengths, capacities and buffer addresses; the work a
//! projection does is counted (`testing::media_checks`, `testing::media_strips`), never timed.

use agent_history::testing::{media_checks, media_strips};
use agent_history::{
    History, Modalities, ModelRequest, ProjectionOptions, PromptCompiler, RequestSettings,
    StepContext, ToolPlan,
};

use crate::common::{output, shell_call};

const IMAGE_MESSAGE: &str = r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}"#;
/// An image shorter than the placeholder that replaces it: stripping lengthens the item.
const TINY_IMAGE: &str =
    r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:,"}]}"#;
const AUDIO_AND_IMAGE: &str = r#"{"type":"message","role":"user","content":[{"type":"input_audio","audio_url":"data:audio/wav;base64,AAAA"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#;
const GENERATED: &str =
    r#"{"type":"image_generation_call","id":"ig_1","status":"completed","result":"Zm9v"}"#;
const TEXT: &str =
    r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}"#;
const ALL: [Modalities; 4] = [
    Modalities::TEXT,
    Modalities::TEXT_IMAGE,
    Modalities {
        image: false,
        audio: true,
    },
    Modalities::ALL,
];

fn image_output(id: &str) -> String {
    format!(
        r#"{{"type":"function_call_output","call_id":"{id}","output":[{{"type":"input_image","image_url":"data:image/png;base64,BBBB"}}]}}"#
    )
}

/// Every kind of repair: a call without output (synthetic output added), an orphan output with
/// an image (dropped), an unknown item (held back), media of both kinds, an image shorter than
/// its placeholder, a generated image, and an item with white space around its text.
fn repaired_history() -> History {
    let mut history = History::new();
    for json in [
        TEXT.to_owned(),
        IMAGE_MESSAGE.to_owned(),
        shell_call("c1", "{}"),
        image_output("c1"),
        shell_call("missing", "{}"),
        image_output("orphan"),
        r#"{"type":"future_item","x":1}"#.to_owned(),
        AUDIO_AND_IMAGE.to_owned(),
        TINY_IMAGE.to_owned(),
        GENERATED.to_owned(),
        shell_call("c2", "{}"),
        output("c2", "done"),
        format!(" {TEXT}\n"),
    ] {
        history.record_json(json).expect("an item");
    }
    history
}

fn compiler(modalities: Modalities) -> PromptCompiler {
    PromptCompiler::new(RequestSettings {
        model: "gpt-5".into(),
        prompt_cache_key: Some("key".into()),
        ..RequestSettings::default()
    })
    .with_base_instructions("Line one.\nLine \"two\".")
    .with_tools(
        ToolPlan::new(vec![
            serde_json::json!({"type":"function","name":"shell","parameters":{}}),
        ])
        .expect("a plan"),
        true,
    )
    .with_projection(ProjectionOptions::for_modalities(modalities))
}

fn request(history: &History, modalities: Modalities) -> ModelRequest {
    compiler(modalities)
        .compile(history, StepContext::default())
        .expect("lenient")
}

#[test]
fn the_history_keeps_its_json_byte_total_through_every_edit() {
    let sum = |history: &History| -> u64 { history.iter().map(|e| e.byte_len() as u64).sum() };
    let mut history = History::new();
    assert_eq!(history.json_bytes(), 0);
    for json in [
        TEXT.to_owned(),
        shell_call("a", "{}"),
        output("a", "done"),
        IMAGE_MESSAGE.to_owned(),
    ] {
        history.record_json(json).expect("an item");
        assert_eq!(history.json_bytes(), sum(&history));
    }
    let before_rollback = history.json_bytes();
    history.drop_last_n_user_turns(1).expect("rolls back");
    assert_eq!(history.json_bytes(), sum(&history));
    assert!(history.json_bytes() < before_rollback);
    history.remove_first_item();
    assert_eq!(history.json_bytes(), sum(&history));
    history.compact("summary").expect("compacts");
    assert_eq!(history.json_bytes(), sum(&history));
    history.assert_invariants();
    // Rolling back past the compaction returns to the earlier state and its total.
    let mut history = repaired_history();
    let total = history.json_bytes();
    history.compact("summary").expect("compacts");
    assert_ne!(history.json_bytes(), total);
    history.drop_last_n_user_turns(1).expect("rolls back");
    history.assert_invariants();
    assert_eq!(history.json_bytes(), sum(&history));
}

#[test]
fn the_projected_array_length_is_known_before_writing() {
    let history = repaired_history();
    for modalities in ALL {
        let projection = history
            .project(&ProjectionOptions::for_modalities(modalities))
            .expect("lenient");
        assert!(!projection.report().is_empty());
        let array = projection.to_json_array();
        assert_eq!(projection.json_array_len(), array.len(), "{modalities}");
        assert_eq!(array.capacity(), array.len(), "{modalities}");
        let mut written = Vec::new();
        projection.write_json_array(&mut written).expect("a Vec");
        assert_eq!(written, array.as_bytes());
        assert_eq!(projection.iter().count(), projection.len());
        assert_eq!(
            format!("[{}]", projection.iter().collect::<Vec<_>>().join(",")),
            array
        );
    }
    let empty = History::new()
        .project(&ProjectionOptions::default())
        .expect("empty");
    assert_eq!(empty.json_array_len(), 2);
    assert_eq!(empty.to_json_array(), "[]");
}

#[test]
fn a_body_is_allocated_once_at_its_size() {
    // The item with white space around it is trimmed in the body: without it the size is exact.
    let mut trimmed = History::new();
    for entry in repaired_history()
        .iter()
        .filter(|e| e.json().starts_with('{'))
    {
        trimmed.record_entry(entry.clone()).expect("recorded");
    }
    for modalities in ALL {
        let request = request(&trimmed, modalities);
        let body = request.body().expect("a body");
        assert_eq!(body.capacity(), body.len(), "{modalities}");
        let mut streamed = Vec::new();
        request.write_body(&mut streamed).expect("a Vec");
        assert_eq!(body, streamed);
        assert_eq!(body, serde_json::to_vec(&request).expect("serializes"));
    }
    // With white space around an item the reservation is an upper bound, still one allocation.
    let request = request(&repaired_history(), Modalities::TEXT);
    let body = request.body().expect("a body");
    assert!(body.capacity() >= body.len());
    assert!(body.capacity() <= body.len() + 2);
}

#[test]
fn a_reused_body_buffer_keeps_its_memory_and_gets_the_same_bytes() {
    let mut history = repaired_history();
    let mut buffer = b"what an earlier request left".repeat(1_000);
    let address = buffer.as_ptr();
    let capacity = buffer.capacity();
    for modalities in ALL {
        for _ in 0..3 {
            let request = request(&history, modalities);
            request.write_body_into(&mut buffer).expect("a body");
            assert_eq!(buffer, request.body().expect("a body"), "{modalities}");
            assert_eq!(buffer.as_ptr(), address, "no new allocation");
            assert_eq!(buffer.capacity(), capacity);
            history.record_json(TEXT).expect("an item");
        }
    }
    // A buffer too small grows once, to at least the body.
    let mut small = Vec::with_capacity(16);
    let request = request(&history, Modalities::TEXT);
    request.write_body_into(&mut small).expect("a body");
    assert_eq!(small, request.body().expect("a body"));
}

#[test]
fn a_second_text_only_projection_checks_no_media_item() {
    let mut history = repaired_history();
    let count = |history: &History, modalities: Modalities| {
        let before = (media_checks(), media_strips());
        let projection = history
            .project(&ProjectionOptions::for_modalities(modalities))
            .expect("lenient");
        (
            media_checks() - before.0,
            media_strips() - before.1,
            projection.to_json_array(),
            projection.report().to_string(),
        )
    };
    let (checks, strips, first, report) = count(&history, Modalities::TEXT);
    assert!(checks > 0 && strips > 0);
    let (checks, strips, again, report_again) = count(&history, Modalities::TEXT);
    assert_eq!((checks, strips), (0, 0));
    assert_eq!((again, report_again), (first, report));
    // A clone shares what was checked; recording an item without media changes nothing either.
    let mut clone = history.clone();
    clone.record_json(TEXT).expect("an item");
    assert_eq!(count(&clone, Modalities::TEXT).0, 0);
    // Each set of stripped media is checked once.
    assert!(count(&history, Modalities::TEXT_IMAGE).0 > 0);
    assert_eq!(count(&history, Modalities::TEXT_IMAGE).0, 0);
    assert_eq!(count(&history, Modalities::ALL).0, 0);
    // An item with media makes the next projection check again, computing only the new form.
    history.record_json(IMAGE_MESSAGE).expect("an item");
    let (checks, strips, body, _) = count(&history, Modalities::TEXT);
    assert!(checks > 0);
    assert_eq!(strips, 1);
    assert!(!body.contains("input_image") && !body.contains("input_audio"));
    assert_eq!(count(&history, Modalities::TEXT).0, 0);
}

/// A dropped orphan is not sent, but a call recorded later makes it sent, while the index's image
/// set stays the same: its stripped form must exist by then.
#[test]
fn an_orphan_with_an_image_that_gets_its_call_later_is_sent_stripped() {
    let mut history = History::new();
    history.record_json(image_output("late")).expect("an item");
    let text = ProjectionOptions::for_modalities(Modalities::TEXT);
    let first = history.project(&text).expect("lenient");
    assert_eq!(first.len(), 0);
    history
        .record_json(shell_call("late", "{}"))
        .expect("an item");
    let before = media_checks();
    let second = history.project(&text).expect("lenient");
    assert_eq!(media_checks(), before, "the image set did not change");
    let body = second.to_json_array();
    assert_eq!(second.len(), 2);
    assert!(!body.contains("input_image"), "{body}");
    assert!(body.contains("image content omitted"), "{body}");
    assert_eq!(second.report().len(), 1, "{}", second.report());
}

/// Clones that share the history's memo and then diverge — rolling back, recording other media,
/// compacting — each send their own items, stripped, and report them.
#[test]
fn diverging_clones_each_strip_their_own_media() {
    let text = ProjectionOptions::for_modalities(Modalities::TEXT);
    let base = repaired_history();
    let expected = |history: &History| {
        // A history built from the same items, never projected: what a projection must give.
        let mut fresh = History::new();
        for entry in history.iter() {
            fresh.record_json(entry.json()).expect("an item");
        }
        let projection = fresh.project(&text).expect("lenient");
        (projection.to_json_array(), projection.report().to_string())
    };
    let project = |history: &History| {
        let projection = history.project(&text).expect("lenient");
        (projection.to_json_array(), projection.report().to_string())
    };
    assert_eq!(project(&base), expected(&base));
    let mut a = base.clone();
    let mut b = base.clone();
    let mut c = base.clone();
    a.record_json(TINY_IMAGE).expect("an item");
    b.drop_last_n_user_turns(2).expect("rolls back");
    b.record_json(AUDIO_AND_IMAGE).expect("an item");
    c.remove_first_item();
    c.remove_first_item();
    for _ in 0..2 {
        for history in [&base, &a, &b, &c] {
            let (body, report) = project(history);
            assert!(!body.contains("input_image"), "{body}");
            assert_eq!((body, report), expected(history));
        }
    }
    c.compact("summary").expect("compacts");
    c.drop_last_n_user_turns(1)
        .expect("back to before the compaction");
    assert_eq!(project(&c), expected(&c));
}

/// The report is listed when first read, from the projection's own slots: later edits of the
/// history do not change it, and it lists what a projection listed before the lists were lazy.
#[test]
fn a_report_read_late_is_the_report_of_its_projection() {
    let text = ProjectionOptions::for_modalities(Modalities::TEXT);
    let mut history = repaired_history();
    let early = history.project(&text).expect("lenient");
    history.drop_last_n_user_turns(3).expect("rolls back");
    history.record_json(IMAGE_MESSAGE).expect("an item");
    history
        .record_json(output("orphan-2", "done"))
        .expect("an item");
    let _ = history.project(&text).expect("lenient").report().len();
    let fresh = repaired_history().project(&text).expect("lenient");
    assert_eq!(early.report(), fresh.report());
    assert_eq!(early.report().to_string(), EXPECTED_TEXT_ONLY_REPORT);
}

const EXPECTED_TEXT_ONLY_REPORT: &str = "\
item 1 (message): 1 image part(s) replaced by a placeholder
item 3 (function_call_output, call_id \"c1\"): 1 image part(s) replaced by a placeholder
item 4 (function_call, call_id \"missing\"): no output; synthesized `function_call_output` \"aborted\" with id fco_d86b73f9-e0c0-51fa-8f04-c34c88ff96f5
item 5 (function_call_output, call_id \"orphan\"): output without a call; dropped
item 6 (unknown): unknown item type; not sent
item 7 (message): 1 image part(s) replaced by a placeholder
item 7 (message): 1 audio part(s) replaced by a placeholder
item 8 (message): 1 image part(s) replaced by a placeholder
item 9 (image_generation_call): generated image cleared from `result`";
