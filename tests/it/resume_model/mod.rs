//! An independent resume model (issue 14, "Independent models"): generated Codex-shaped
//! rollouts, written as raw JSON lines by the test itself, are resumed by the library and by a
//! model written from the format documents alone (`model.rs`: plain `Vec`s and
//! `serde_json::Value`s, no code shared with `src/`), and the two must agree. Then every line
//! boundary of those rollouts is a snapshot cut: a resume through the snapshot must equal a full
//! resume, and must actually take the fast path (`docs/verification.md`, "Independent models").

mod compare;
mod model;
mod rollouts;

use agent_history::{FallbackReason, ResumeOptions, ResumeSource, TruncationPolicy, resume_file};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use compare::{disagreement, policy, snapshot_disagreement, texts};

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("written");
    path
}

/// The library's resume equals the model's on 128 generated rollouts.
#[test]
fn the_library_resumes_generated_rollouts_as_the_model_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let seen = std::cell::RefCell::new(std::collections::BTreeMap::<String, usize>::new());
    runner(
        std::env::var("MODEL_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(128),
    )
    .run(&rollouts::steps(), |steps| {
        let lines = rollouts::lines(&steps);
        let text = rollouts::text(&lines);
        let path = write(dir.path(), "rollout.jsonl", &text);
        let resumed = compare::resume(&path);
        let model = model::resume(&text, compare::LIMIT);
        for (what, count) in &model.seen {
            *seen.borrow_mut().entry(what.clone()).or_default() += count;
        }
        if let Some(difference) = disagreement(&resumed, &model) {
            return Err(TestCaseError::fail(format!(
                "{difference}\nrollout:\n{text}"
            )));
        }
        Ok(())
    })
    .expect("the library agrees with the model");
    let seen = seen.into_inner();
    eprintln!("{seen:#?}");
    // The generated rollouts covered what the model distinguishes.
    let missing: Vec<&str> = COVERED
        .iter()
        .copied()
        .filter(|what| seen.get(*what).copied().unwrap_or(0) == 0)
        .collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}

/// The same lines as a paginated file (every line numbered, the first `session_meta` saying
/// `"history_mode": "paginated"`): a line that is not a JSON object is left as it is.
fn as_paginated(text: &str) -> String {
    let mut marked = false;
    let mut out = String::new();
    for (ordinal, line) in text.split_inclusive('\n').enumerate() {
        let Ok(serde_json::Value::Object(fields)) = serde_json::from_str(line.trim_end()) else {
            out.push_str(line);
            continue;
        };
        let mut numbered = serde_json::Map::new();
        for (key, mut value) in fields {
            if key == "payload" && !marked && numbered.get("type") == Some(&"session_meta".into()) {
                value["history_mode"] = "paginated".into();
                marked = true;
            }
            let after_timestamp = key == "timestamp";
            numbered.insert(key, value);
            if after_timestamp {
                numbered.insert("ordinal".into(), (ordinal as u64).into());
            }
        }
        out.push_str(&serde_json::Value::Object(numbered).to_string());
        out.push('\n');
    }
    out
}

/// The library resumes the paginated form of 48 generated rollouts as the model resumes their
/// lines: a paginated file's model context is rebuilt exactly as a legacy file's.
#[test]
fn the_library_resumes_the_paginated_form_of_generated_rollouts_as_the_model_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    runner(48)
        .run(&rollouts::steps(), |steps| {
            let text = rollouts::text(&rollouts::lines(&steps));
            let paginated = as_paginated(&text);
            let path = write(dir.path(), "rollout.jsonl", &paginated);
            let resumed = compare::resume(&path);
            prop_assert!(
                resumed.report().pagination.is_some(),
                "not read as paginated:\n{paginated}"
            );
            let model = model::resume(&text, compare::LIMIT);
            if let Some(difference) = disagreement(&resumed, &model) {
                return Err(TestCaseError::fail(format!(
                    "{difference}\nrollout:\n{paginated}"
                )));
            }
            Ok(())
        })
        .expect("the library agrees with the model on paginated files");
}

/// A snapshot at every line boundary of 16 generated rollouts: the resume of the whole rollout
/// through it equals a full resume (entries byte for byte and the report fields,
/// `compare::snapshot_disagreement`), the resume of the prefix it was written from equals the
/// model's resume of that prefix, and the fast path is taken at every cut.
///
/// The share is 100 % by rule (`docs/snapshot-format.md`, "Resume"): a snapshot of the current
/// format version, written with the same truncation policy from a prefix that holds the
/// `session_meta` line, of a file that still starts with that prefix, is used whatever lines
/// follow. The only reasons the rules give for falling back at these cuts would be a prefix
/// without a `session_meta` line (never: it is the first line) or an older format version (never:
/// the snapshot is written by this build), so any fallback fails the test, with its reason. Then
/// the rules' fallbacks are made to happen with the snapshot of the whole rollout — another
/// truncation policy, a changed prefix, a rollout shorter than the covered prefix — and each must
/// be reported with its reason and give a full resume's history.
#[test]
fn a_snapshot_at_every_line_boundary_resumes_like_the_whole_file_and_is_used() {
    // Writing a snapshot syncs it and its directory, hundreds of times here: in memory where the
    // system has such a directory, the syncs cost nothing.
    let dir = match std::path::Path::new("/dev/shm") {
        shm if shm.is_dir() => tempfile::tempdir_in(shm),
        _ => tempfile::tempdir(),
    }
    .expect("temp dir");
    let counts = std::cell::Cell::new((0usize, 0usize));
    let fallbacks = std::cell::Cell::new(0usize);
    runner(
        std::env::var("SNAPSHOT_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(16),
    )
    .run(&rollouts::steps(), |steps| {
        let lines = rollouts::lines(&steps);
        let text = rollouts::text(&lines);
        let rollout = dir.path().join("rollout.jsonl");
        let snapshot = dir.path().join("rollout.snap");
        std::fs::write(&rollout, &text).expect("written");
        let full = compare::resume(&rollout);
        let mut end = 0;
        for (cut, line) in lines.iter().enumerate() {
            end += line.len() + 1;
            let prefix = &text[..end];
            std::fs::write(&rollout, prefix).expect("prefix written");
            let covered = resume_file(&rollout, &ResumeOptions::new(policy()).snapshot_ready())
                .expect("the prefix resumes");
            if let Some(difference) = disagreement(&covered, &model::resume(prefix, compare::LIMIT))
            {
                return Err(TestCaseError::fail(format!(
                    "prefix of {} lines: {difference}\nrollout:\n{prefix}",
                    cut + 1
                )));
            }
            covered.write_snapshot(&snapshot).expect("snapshot written");
            std::fs::write(&rollout, &text).expect("whole file written");
            let through = resume_file(
                &rollout,
                &ResumeOptions::new(policy()).with_snapshot(&snapshot),
            )
            .expect("resumes through the snapshot");
            let (cuts, fast) = counts.get();
            let used = through.used_snapshot();
            counts.set((cuts + 1, fast + usize::from(used)));
            if !used {
                return Err(TestCaseError::fail(format!(
                    "the snapshot after line {} was not used: {:?}\nrollout:\n{text}",
                    cut + 1,
                    through.fallback_reason()
                )));
            }
            // The snapshot stood for exactly the prefix it was written from.
            let ResumeSource::Snapshot { covered } = through.source() else {
                unreachable!("used");
            };
            prop_assert_eq!((covered.lines, covered.bytes), (cut as u64 + 1, end as u64));
            if let Some(difference) = snapshot_disagreement(&through, &full) {
                return Err(TestCaseError::fail(format!(
                    "snapshot after line {}: {difference}\nrollout:\n{text}",
                    cut + 1
                )));
            }
        }
        // The snapshot on disk now covers the whole rollout. The rules' fallbacks happen, each
        // with its reason, and give a full resume's history.
        let other = TruncationPolicy::Bytes(compare::LIMIT + 1);
        let through = resume_file(
            &rollout,
            &ResumeOptions::new(other).with_snapshot(&snapshot),
        )
        .expect("resumes");
        prop_assert!(
            matches!(
                through.fallback_reason(),
                Some(FallbackReason::TruncationMismatch { .. })
            ),
            "{:?}",
            through.fallback_reason()
        );
        let full_other = resume_file(&rollout, &ResumeOptions::new(other)).expect("resumes");
        prop_assert_eq!(texts(through.history()), texts(full_other.history()));
        for (changed, expected) in [
            (
                text.replacen("codex_cli_rs", "codex_cli_rt", 1),
                "prefix_changed",
            ),
            (text[..lines[0].len() + 1].to_owned(), "rollout_shorter"),
        ] {
            // (A rollout of one line cannot be made shorter and still hold its `session_meta`.)
            if expected == "prefix_changed" || lines.len() > 1 {
                std::fs::write(&rollout, &changed).expect("written");
                let through = resume_file(
                    &rollout,
                    &ResumeOptions::new(policy()).with_snapshot(&snapshot),
                )
                .expect("resumes");
                prop_assert_eq!(
                    through.fallback_reason().map(FallbackReason::name),
                    Some(expected)
                );
                prop_assert_eq!(
                    texts(through.history()),
                    texts(compare::resume(&rollout).history())
                );
                fallbacks.set(fallbacks.get() + 1);
            }
        }
        Ok(())
    })
    .expect("every cut resumes like the whole file, through the snapshot");
    assert!(fallbacks.get() >= 16, "the rules' fallbacks were tried");
    let (cuts, fast) = counts.get();
    eprintln!("{fast} of {cuts} cuts took the fast path");
    assert!(cuts >= 200, "only {cuts} cuts");
    assert_eq!(fast, cuts, "every cut takes the fast path");
}

/// What 128 generated rollouts must have covered (each is counted by the model as it resumes).
const COVERED: &[&str] = &[
    "line session_meta",
    "line response_item",
    "line turn_context",
    "line compacted",
    "line inter_agent_communication",
    "line token_usage_record",
    "line not JSON",
    "event task_started",
    "event task_complete",
    "event turn_started",
    "event turn_complete",
    "event turn_aborted",
    "event user_message",
    "event thread_rolled_back",
    "event agent_message",
    "item message",
    "item reasoning",
    "item function_call",
    "item function_call_output",
    "item custom_tool_call",
    "item custom_tool_call_output",
    "item local_shell_call",
    "item tool_search_call",
    "item tool_search_output",
    "item web_search_call",
    "item image_generation_call",
    "item future_item",
    "item compaction_trigger",
    "item ghost_snapshot",
    "not recorded",
    "rewritten \"function_call_output\"",
    "rewritten \"custom_tool_call_output\"",
    "rewritten \"tool_search_call\"",
    "user turn \"message\"",
    "legacy compaction",
    "rollback removing items",
    "rollback into an earlier state",
    "contextual message trimmed",
    "ends inside a turn",
];
