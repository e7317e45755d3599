//! Media stripping is computed once per entry and shared: a projection for a model without image
//! or audio input looks each stripped form up instead of parsing and rewriting the item on every
//! request. The stripping work is counted (`testing::media_strips`), never timed.

use crate::common;

use agent_history::testing::media_strips;
use agent_history::{
    DEFAULT_TRUNCATION, History, Modalities, ProjectionOptions, ResumeOptions, SnapshotOptions,
    open_snapshot, resume_file,
};
use common::{item_line, meta_line, temp_dir};

const IMAGE_MESSAGE: &str = r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#;
const AUDIO_AND_IMAGE: &str = r#"{"type":"message","role":"user","content":[{"type":"input_audio","audio_url":"data:audio/wav;base64,AAAA"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#;
const IMAGE_OUTPUT: &str = r#"{"type":"function_call_output","call_id":"c1","output":[{"type":"input_image","image_url":"data:image/png;base64,BBBB"}]}"#;
const GENERATED: &str =
    r#"{"type":"image_generation_call","id":"ig_1","status":"completed","result":"Zm9v"}"#;
const TEXT: &str =
    r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}"#;

fn items() -> Vec<&'static str> {
    vec![
        TEXT,
        IMAGE_MESSAGE,
        r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{}","call_id":"c1"}"#,
        IMAGE_OUTPUT,
        AUDIO_AND_IMAGE,
        GENERATED,
        TEXT,
    ]
}

fn history() -> History {
    let mut history = History::new();
    for json in items() {
        history.record_json(json).expect("valid");
    }
    history
}

/// Bodies and reports of a projection, for comparing two projections.
fn project(history: &History, modalities: Modalities) -> (String, String) {
    let projection = history
        .project(&ProjectionOptions::for_modalities(modalities))
        .expect("lenient");
    (
        projection.to_json_array(),
        format!("{:?}", projection.report()),
    )
}

/// Strips done by `f` on this thread.
fn strips(f: impl FnOnce()) -> u64 {
    let before = media_strips();
    f();
    media_strips() - before
}

#[test]
fn a_stripped_form_is_computed_once_then_shared_by_projections_and_clones() {
    let history = history();
    let mut first = None;
    // Images: four items; then audio on the images-stripped form of the one with both.
    assert_eq!(
        strips(|| first = Some(project(&history, Modalities::TEXT))),
        5
    );
    let first = first.expect("projected");
    assert!(first.0.contains("image content omitted"));
    assert!(first.0.contains("audio content omitted"));
    assert!(!first.0.contains("input_image"));

    let mut again = None;
    assert_eq!(
        strips(|| again = Some(project(&history, Modalities::TEXT))),
        0
    );
    assert_eq!(again.expect("projected"), first);

    // A clone, and a later version that still holds the entries, share the forms.
    let mut later = history.clone();
    later.record_json(TEXT).expect("valid");
    assert_eq!(strips(|| drop(project(&later, Modalities::TEXT))), 0);
    let mut grown = None;
    assert_eq!(
        strips(|| grown = Some(project(&later, Modalities::TEXT))),
        0
    );
    assert!(
        grown
            .expect("projected")
            .0
            .starts_with(&first.0[..first.0.len() - 1])
    );

    // Another modality set computes its own forms once: audio only from the stored text.
    assert_eq!(
        strips(|| drop(project(&history, Modalities::TEXT_IMAGE))),
        1
    );
    assert_eq!(
        strips(|| drop(project(&history, Modalities::TEXT_IMAGE))),
        0
    );
    // A model that takes everything strips nothing.
    assert_eq!(strips(|| drop(project(&history, Modalities::ALL))), 0);
}

#[test]
fn the_cache_never_changes_what_is_stored_or_sent() {
    let all = [
        Modalities::TEXT,
        Modalities::TEXT_IMAGE,
        Modalities {
            image: false,
            audio: true,
        },
        Modalities::ALL,
    ];
    // In both orders, so that each form is computed after the others as well as before.
    for order in [all, [all[3], all[2], all[1], all[0]]] {
        let history = history();
        let stored: Vec<String> = history
            .iter()
            .map(|entry| entry.json().to_owned())
            .collect();
        for modalities in order {
            // A fresh history computes; the shared one looks up: the same bytes and report.
            let fresh = project(&self::history(), modalities);
            assert_eq!(project(&history, modalities), fresh, "{modalities}");
            assert_eq!(project(&history, modalities), fresh, "{modalities}");
        }
        let after: Vec<String> = history
            .iter()
            .map(|entry| entry.json().to_owned())
            .collect();
        assert_eq!(after, stored);
        assert_eq!(stored, items());
    }
}

#[test]
fn projections_on_other_threads_share_the_forms() {
    let history = history();
    let expected = project(&history.clone(), Modalities::TEXT);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let history = history.clone();
            let expected = &expected;
            scope.spawn(move || {
                // Computed on the main thread already: nothing to strip here.
                assert_eq!(strips(|| drop(project(&history, Modalities::TEXT))), 0);
                assert_eq!(&project(&history, Modalities::TEXT), expected);
            });
        }
    });
}

#[test]
fn entries_opened_from_a_snapshot_compute_lazily_once() {
    let dir = temp_dir();
    let rollout = dir.path().join("media.jsonl");
    let mut text = format!("{}\n", meta_line());
    for json in items() {
        text.push_str(&item_line(json));
        text.push('\n');
    }
    std::fs::write(&rollout, text).expect("written");
    let resumed = resume_file(
        &rollout,
        &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
    )
    .expect("resumes");
    let expected = project(resumed.history(), Modalities::TEXT);
    let path = dir.path().join("media.snap");
    resumed.write_snapshot(&path).expect("snapshot written");

    let opened = open_snapshot(&path, SnapshotOptions::default()).expect("opens");
    let history = opened.history();
    assert!(history.iter().all(|entry| entry.is_mapped()));
    let mut first = None;
    assert_eq!(
        strips(|| first = Some(project(history, Modalities::TEXT))),
        5
    );
    assert_eq!(first.expect("projected"), expected);
    assert_eq!(strips(|| drop(project(history, Modalities::TEXT))), 0);
    assert_eq!(project(history, Modalities::TEXT), expected);
}
