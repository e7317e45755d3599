//! Sessions in the shape Codex writes today — envelope, `turn_context`, `task_*` events,
//! `token_count`, exec and patch events, `compacted` with a replacement history, images,
//! `ghost_snapshot`, an interrupted call, a steered turn, a rollback — written by this project
//! (`agent_history::testing::CodexRollout`): resume, projection and snapshots on them.
//!
//! `examples/rollouts/codex-session.jsonl` is the bundled one. Regenerate it (only when the
//! generator changes on purpose) with
//! `AGENT_HISTORY_WRITE_EXAMPLES=1 cargo test --test codex_shaped bundled`.

use crate::common;

use agent_history::testing::CodexRollout;
use agent_history::{
    DEFAULT_TRUNCATION, IMAGE_PLACEHOLDER, Modalities, ProjectionOptions, ResumeOptions,
    resume_file,
};
use common::{example, resume_bytes, temp_dir, thread};
use proptest::prelude::*;
use serde_json::Value;

/// A tiny PNG as a data URL (a pasted screenshot).
const SCREENSHOT: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// The bundled session: seven turns of a debugging session.
fn bundled_session() -> CodexRollout {
    let mut s = CodexRollout::new(thread("codex-session")).expect("started");
    let model = "gpt-5-codex";
    (|| -> Result<(), agent_history::testing::CodexRolloutError> {
        s.start_turn(model)?;
        s.user("The tests fail on main; find out why.", None)?;
        s.reasoning("Looking at the failing test first.")?;
        s.exec("call_1", "cargo test 2>&1 | tail -5", Some("test parse::empty ... FAILED"))?;
        s.token_count()?;
        s.assistant("`parse::empty` fails: an empty input now returns an error.")?;
        s.token_count()?;
        s.complete_turn()?;

        s.start_turn(model)?;
        s.user("Here is the CI output.", Some(SCREENSHOT))?;
        s.ghost_snapshot()?;
        s.patch("call_2", "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-    Err(Empty)\n+    Ok(Vec::new())\n*** End Patch\n")?;
        s.exec("call_3", "cargo test", Some("test result: ok. 42 passed"))?;
        s.token_count()?;
        s.assistant("Fixed: an empty input parses to an empty list again.")?;
        s.complete_turn()?;

        s.start_turn(model)?;
        s.user("Also check the docs mention it.", None)?;
        s.web_search("rust parser empty input convention")?;
        // The user steers the turn: a second message in the same turn.
        s.user("Actually, only the README.", None)?;
        s.assistant("The README now says an empty input gives an empty list.")?;
        s.token_count()?;
        s.complete_turn()?;

        s.start_turn(model)?;
        s.user("Run the slow suite.", None)?;
        // Interrupted before the tool ran: the call has no output.
        s.exec("call_4", "cargo test --release -- --ignored", None)?;
        s.abort_turn()?;

        s.start_turn(model)?;
        s.user("Summarize where we are.", None)?;
        s.compact("Fixed empty-input parsing; README updated; the slow suite was interrupted.")?;
        s.assistant("We fixed the parser and the README; the slow suite did not run.")?;
        s.token_count()?;
        s.complete_turn()?;

        s.start_turn(model)?;
        s.user("Try rewriting the parser with nom.", None)?;
        s.assistant("That would be a large change; here is a sketch.")?;
        s.complete_turn()?;
        s.rollback(1)?;

        s.start_turn(model)?;
        s.user("Write the changelog entry.", None)?;
        s.exec("call_5", "git log --oneline -3", Some("a1b2c3d parse: accept empty input"))?;
        s.assistant("Added: `parse` accepts an empty input again.")?;
        s.token_count()?;
        s.complete_turn()
    })()
    .expect("every line written");
    s
}

fn texts(history: &agent_history::History) -> Vec<String> {
    history
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect()
}

/// The bundled file is what the generator writes: it cannot drift from the code that checks it.
#[test]
fn the_bundled_codex_session_is_what_the_generator_writes() {
    let path = example("codex-session.jsonl");
    let session = bundled_session();
    if std::env::var_os("AGENT_HISTORY_WRITE_EXAMPLES").is_some() {
        std::fs::write(&path, session.bytes()).expect("example written");
    }
    let bundled = std::fs::read(&path).expect("the bundled session");
    assert!(
        bundled == session.bytes(),
        "regenerate: see the file's docs"
    );
    // It has the lines it promises.
    let text = String::from_utf8(bundled).expect("UTF-8");
    for needle in [
        r#""type":"task_started""#,
        r#""type":"task_complete""#,
        r#""type":"turn_aborted""#,
        r#""type":"turn_context""#,
        r#""type":"token_count""#,
        r#""type":"exec_command_end""#,
        r#""type":"patch_apply_end""#,
        r#""type":"compacted""#,
        r#""replacement_history""#,
        r#""type":"input_image""#,
        r#""type":"ghost_snapshot""#,
        r#""type":"thread_rolled_back""#,
        r#""type":"web_search_call""#,
    ] {
        assert!(text.contains(needle), "{needle}");
    }
}

/// Resuming the file gives the history the session kept live, with Codex's turn settings; the
/// ghost snapshot is dropped and counted.
#[test]
fn the_codex_session_resumes_to_its_live_history() {
    let session = bundled_session();
    let resumed = resume_bytes(session.bytes(), DEFAULT_TRUNCATION);
    assert_eq!(texts(resumed.history()), texts(session.history()));
    assert_eq!(resumed.history().version(), session.history().version());
    assert_eq!(resumed.report().left_out.ghost_snapshots, 1);
    assert!(!resumed.ends_inside_turn());
    let settings: Value =
        serde_json::from_str(resumed.previous_turn_settings().expect("settings").get())
            .expect("JSON");
    assert_eq!(settings["model"], "gpt-5-codex");
    assert_eq!(
        resumed.history().reference_context_item().expect("set")["turn_id"],
        settings["turn_id"]
    );
    // The rolled-back turn is gone; the compaction is the base.
    let all = texts(resumed.history()).concat();
    assert!(!all.contains("nom"));
    assert!(all.contains("Write the changelog entry."));
    assert!(
        resumed
            .compactions()
            .expect("every line read")
            .base
            .is_some()
    );
    // Rolling back past the compaction returns to the history before it, as live.
    let (mut from_file, mut live) = (resumed.history().clone(), session.history().clone());
    for history in [&mut from_file, &mut live] {
        history.drop_last_n_user_turns(3).expect("rolled back");
    }
    assert_eq!(texts(&from_file), texts(&live));
    assert_eq!(from_file.compactions_reachable(), 0);
}

/// The projection repairs the interrupted call and, for a text-only model, the screenshot — in
/// the request, never in the history. (The session up to its compaction, which summarises both
/// away.)
#[test]
fn the_codex_session_projects_with_its_repairs() {
    let session = bundled_session();
    let text = std::str::from_utf8(session.bytes()).expect("UTF-8");
    let compaction = text
        .find(r#""type":"context_compacted""#)
        .expect("a compaction");
    let cut = text[..compaction].rfind('\n').expect("a line before") + 1;
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    std::fs::write(&path, &text[..cut]).expect("written");
    let resumed = resume_file(&path, &ResumeOptions::new(DEFAULT_TRUNCATION)).expect("resumes");
    let projection = resumed
        .history()
        .project(&ProjectionOptions::for_modalities(Modalities::TEXT))
        .expect("lenient");
    let sent = projection.to_json_array();
    assert!(
        sent.contains(r#""call_id":"call_4","output":"aborted""#),
        "{sent}"
    );
    assert!(sent.contains(IMAGE_PLACEHOLDER));
    assert!(!sent.contains("data:image/png"));
    let stored = texts(resumed.history()).concat();
    assert!(
        stored.contains("data:image/png"),
        "the history keeps the image"
    );
    assert!(!stored.contains("aborted"), "and gets no synthetic output");
    assert_eq!(projection.report().len(), 2, "{:?}", projection.report());
}

/// A snapshot taken after any complete line, then the rest of the file: the resume through the
/// snapshot equals a full resume.
#[test]
fn a_snapshot_at_every_line_of_the_codex_session_resumes_like_the_file() {
    let dir = temp_dir();
    let session = bundled_session();
    let bytes = session.bytes();
    let full = resume_bytes(bytes, DEFAULT_TRUNCATION);
    let ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .map(|(at, _)| at + 1)
        .collect();
    let rollout = dir.path().join("rollout.jsonl");
    let snapshot = dir.path().join("rollout.snap");
    for &end in &ends[..ends.len() - 1] {
        std::fs::write(&rollout, &bytes[..end]).expect("prefix");
        let prefix = resume_file(
            &rollout,
            &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
        )
        .expect("the prefix resumes");
        prefix.write_snapshot(&snapshot).expect("snapshot written");
        std::fs::write(&rollout, bytes).expect("whole file");
        let through = resume_file(
            &rollout,
            &ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot),
        )
        .expect("resumes");
        assert_eq!(
            texts(through.history()),
            texts(full.history()),
            "snapshot after byte {end}"
        );
        assert_eq!(through.history().version(), full.history().version());
        assert_eq!(
            through.previous_turn_settings().map(|raw| raw.get()),
            full.previous_turn_settings().map(|raw| raw.get())
        );
        assert_eq!(
            through.history().reference_context_item(),
            full.history().reference_context_item()
        );
    }
}

/// One step of a generated Codex-shaped session.
#[derive(Debug, Clone)]
enum Step {
    Turn {
        steer: bool,
        image: bool,
        tool: u8,
        interrupted: bool,
    },
    Compact,
    Rollback(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (any::<bool>(), any::<bool>(), 0u8..3, any::<bool>()).prop_map(
            |(steer, image, tool, interrupted)| Step::Turn { steer, image, tool, interrupted }
        ),
        1 => Just(Step::Compact),
        2 => (1u8..4).prop_map(Step::Rollback),
    ]
}

fn generate(steps: &[Step]) -> CodexRollout {
    let mut s = CodexRollout::new(thread("generated")).expect("started");
    for (n, step) in steps.iter().enumerate() {
        match step {
            Step::Turn {
                steer,
                image,
                tool,
                interrupted,
            } => {
                s.start_turn(if n % 2 == 0 { "gpt-5-codex" } else { "gpt-5" })
                    .expect("turn");
                s.user(&format!("question {n}"), image.then_some(SCREENSHOT))
                    .expect("user");
                let call = format!("call_{n}");
                let output = (!interrupted).then_some("ok");
                match tool {
                    0 => s.exec(&call, "ls", output).expect("exec"),
                    1 => s
                        .patch(&call, "*** Begin Patch\n*** End Patch\n")
                        .expect("patch"),
                    _ => s.web_search("query").expect("search"),
                }
                if *steer {
                    s.user(&format!("steer {n}"), None).expect("steer");
                }
                if *interrupted {
                    s.abort_turn().expect("aborted");
                } else {
                    s.assistant(&format!("answer {n}")).expect("answer");
                    s.token_count().expect("tokens");
                    s.complete_turn().expect("complete");
                }
            }
            Step::Compact => s.compact(&format!("summary {n}")).expect("compacted"),
            Step::Rollback(k) => s.rollback(u32::from(*k)).expect("rolled back"),
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any generated Codex-shaped session resumes to its live history, and rolls back from there
    /// as the live one does.
    #[test]
    fn generated_codex_sessions_resume_to_their_live_history(steps in proptest::collection::vec(step(), 0..24)) {
        let session = generate(&steps);
        let resumed = resume_bytes(session.bytes(), DEFAULT_TRUNCATION);
        prop_assert_eq!(texts(resumed.history()), texts(session.history()));
        prop_assert_eq!(resumed.history().version(), session.history().version());
        let live = session.history();
        for depth in 1..=live.reachable_user_turns() + 1 {
            let (mut a, mut b) = (resumed.history().clone(), live.clone());
            a.drop_last_n_user_turns(depth).expect("rolled back");
            b.drop_last_n_user_turns(depth).expect("rolled back");
            prop_assert_eq!(texts(&a), texts(&b), "depth {}", depth);
        }
    }
}
