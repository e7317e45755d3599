//! Codex's paginated thread history: the mode and ordinals of a file, ordinal damage reported and
//! never renumbered, and the lineage a fork or a revert leaves — ancestors found by rollout id
//! under the Codex home, each cut at its byte offset — resumed exactly as a legacy file of the
//! same lines would be. The fixtures follow the worked example of a two-turn thread with one
//! function call, in the shapes of Codex 0.150's files.

use std::fs;
use std::path::{Path, PathBuf};

use agent_history::{
    DEFAULT_TRUNCATION, HistoryMode, LineageProblem, ReadMode, ResumeOptions, Rollout,
    RolloutError, rollout_file_ids,
};

use crate::common::jsons;
use crate::common::paginated::{
    F, Home, Paged, R, T, TOKEN_COUNT, as_legacy, message, meta, root, turn,
};

fn resume(path: &Path) -> Result<agent_history::Resumed, RolloutError> {
    agent_history::resume_file(path, &ResumeOptions::new(DEFAULT_TRUNCATION))
}

#[test]
fn a_root_file_is_read_with_its_mode_and_ordinals_and_resumes_as_the_same_legacy_lines() {
    let (file, _) = root();
    let home = Home::new();
    let path = home.write("10-00-00", T, &file.text);
    let rollout = Rollout::read_file(&path, ReadMode::Strict).expect("reads");
    assert_eq!(rollout.report.history_mode(), HistoryMode::Paginated);
    let pagination = rollout.report.pagination.as_ref().expect("paginated");
    assert_eq!(pagination.base, None);
    assert_eq!(pagination.first_ordinal, Some(0));
    assert_eq!(pagination.last_ordinal, Some(file.next - 1));
    assert!(pagination.is_sound(), "{pagination:?}");
    let ordinals: Vec<Option<u64>> = rollout.lines.iter().map(|line| line.ordinal).collect();
    let expected: Vec<Option<u64>> = (0..file.next).map(Some).collect();
    assert_eq!(
        ordinals, expected,
        "every line keeps its ordinal, the fast path's too"
    );
    assert!(rollout.lineage().is_empty());

    let paginated = resume(&path).expect("resumes");
    let legacy_path = home.path().join("legacy.jsonl");
    fs::write(&legacy_path, as_legacy(&file.text)).expect("writes");
    let legacy = resume(&legacy_path).expect("resumes");
    assert_eq!(legacy.report().history_mode(), HistoryMode::Legacy);
    assert_eq!(jsons(paginated.history()), jsons(legacy.history()));
    assert_eq!(
        paginated.history().len(),
        8,
        "the response items, no item_completed"
    );
    assert_eq!(
        paginated
            .previous_turn_settings()
            .map(|raw| raw.get().to_owned()),
        legacy
            .previous_turn_settings()
            .map(|raw| raw.get().to_owned())
    );
    assert_eq!(
        paginated
            .history()
            .reference_context_item()
            .map(|item| item.to_string()),
        legacy
            .history()
            .reference_context_item()
            .map(|item| item.to_string())
    );
    assert_eq!(
        paginated.report().base_instructions,
        legacy.report().base_instructions
    );
}

#[test]
fn a_repeated_or_decreasing_ordinal_is_reported_with_its_line_and_never_renumbered() {
    let mut file = Paged::new(T, 0, None);
    file.push("response_item", &message("user", "input_text", "one"));
    file.push("event_msg", TOKEN_COUNT);
    // Codex bug #35746: the line after a float-bearing one reuses its ordinal.
    file.numbered(2, "event_msg", r#"{"type":"thread_settings_applied"}"#);
    file.numbered(
        1,
        "response_item",
        &message("assistant", "output_text", "two"),
    );
    // A gap is legal.
    file.numbered(9, "response_item", &message("user", "input_text", "three"));
    let text = format!(
        "{}{}\n",
        file.text,
        r#"{"timestamp":"2026-09-20T08:01:00.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"four"}]}}"#
    );
    let rollout = Rollout::read(text.as_bytes(), "x.jsonl", ReadMode::Lenient).expect("reads");
    let pagination = rollout.report.pagination.as_ref().expect("paginated");
    assert!(!pagination.is_sound());
    assert_eq!(pagination.damaged, 2);
    let damage: Vec<(u64, u64, u64, u64)> = pagination
        .damage
        .iter()
        .map(|at| (at.line, at.offset, at.ordinal, at.highest_before))
        .collect();
    assert_eq!(damage, [(4, file.start(3), 2, 2), (5, file.start(4), 1, 2)]);
    assert_eq!(pagination.last_ordinal, Some(9));
    assert_eq!(pagination.without_ordinal, 1, "the last line has none");
    assert_eq!(
        pagination.damage[0].to_string(),
        format!(
            "line 4 (byte {}): ordinal 2 repeats ordinal 2",
            file.start(3)
        )
    );
    let ordinals: Vec<Option<u64>> = rollout.lines.iter().map(|line| line.ordinal).collect();
    assert_eq!(
        ordinals,
        [Some(0), Some(1), Some(2), Some(2), Some(1), Some(9), None]
    );
    assert_eq!(
        serde_json::to_value(pagination).expect("serializes"),
        serde_json::json!({"base": null, "first_ordinal": 0, "last_ordinal": 9,
        "without_ordinal": 1, "damaged": 2,
        "damage": [
            {"line": 4, "offset": file.start(3), "ordinal": 2, "highest_before": 2},
            {"line": 5, "offset": file.start(4), "ordinal": 1, "highest_before": 2},
        ],
        "events": {"thread_settings_applied": 1, "token_count": 1}, "other_events": 0}),
        "docs/json-output.md, Pagination"
    );
    // Damage is reported, not refused: every line is resumed.
    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("resumes");
    assert_eq!(resumed.history().len(), 4);
}

#[test]
fn an_unknown_history_mode_is_refused_as_codex_refuses_it() {
    let text = format!(
        "{{\"timestamp\":\"2026-09-20T08:00:00.000Z\",\"type\":\"session_meta\",\"payload\":{}}}\n",
        meta(T, "paged", None)
    );
    let error = Rollout::read(text.as_bytes(), "x.jsonl", ReadMode::Lenient).expect_err("refused");
    let RolloutError::NoSessionMeta {
        rejected: Some(rejected),
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(rejected.line, 1);
    assert!(
        rejected.reason.to_string().contains("paged"),
        "{}",
        rejected.reason
    );
}

/// Thread F forked from T where T's ordinal `cut_ordinal` begins at byte `cut_bytes`, with one
/// turn of its own (a call and its output).
fn fork_of(cut_ordinal: u64, cut_bytes: u64) -> Paged {
    let mut child = Paged::new(F, cut_ordinal, Some((T, cut_ordinal, cut_bytes)));
    child.push("event_msg", r#"{"type":"thread_settings_applied"}"#);
    turn(
        &mut child,
        "V1",
        "Now in the fork",
        Some("call_2"),
        "Forked.",
    );
    child
}

#[test]
fn a_fork_continues_the_parents_prefix_and_what_the_parent_wrote_after_the_cut_is_invisible() {
    let home = Home::new();
    let (mut parent, _) = root();
    let cut = (parent.next, parent.len());
    let (cut_ordinal, cut_bytes) = cut;
    // The parent goes on after the fork: invisible to the child.
    turn(
        &mut parent,
        "U3",
        "Later in the parent",
        None,
        "Parent only.",
    );
    let parent_path = home.write("10-00-00", T, &parent.text);

    let child = fork_of(cut_ordinal, cut_bytes);
    let child_path = home.write("11-00-00", F, &child.text);

    let resumed = resume(&child_path).expect("resumes");
    // The expected history: the parent's prefix as a legacy file, then the child's own lines.
    let (prefix, _) = root();
    let mut expected_text = as_legacy(&prefix.text);
    let child_own: String = child
        .text
        .lines()
        .skip(1)
        .map(|line| format!("{line}\n"))
        .collect();
    expected_text.push_str(&as_legacy(&child_own));
    let expected = crate::common::resume_bytes(expected_text.as_bytes(), DEFAULT_TRUNCATION);
    assert_eq!(jsons(resumed.history()), jsons(expected.history()));
    assert!(
        !jsons(resumed.history())
            .iter()
            .any(|json| json.contains("Parent only"))
    );
    assert_eq!(
        resumed.thread_id().to_string(),
        F,
        "the newest session_meta is canonical"
    );

    let rollout = Rollout::read_file(&child_path, ReadMode::Lenient)
        .and_then(|rollout| rollout.with_lineage(None, ReadMode::Lenient.into()))
        .expect("reads the lineage");
    let files: Vec<(String, PathBuf, Option<u64>, Option<u64>)> = rollout
        .lineage()
        .iter()
        .map(|file| {
            (
                file.rollout_id.to_string(),
                file.path.clone(),
                file.first_ordinal,
                file.last_ordinal,
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            (T.to_owned(), parent_path, Some(1), Some(cut_ordinal - 1)),
            (
                F.to_owned(),
                child_path,
                Some(cut_ordinal + 1),
                Some(child.next - 1)
            ),
        ]
    );
    assert_eq!(
        rollout.lineage()[0].cut.map(|cut| cut.end_byte_offset),
        Some(cut_bytes)
    );
}

#[test]
fn a_revert_file_named_thread_underscore_rollout_keeps_only_the_turns_before_the_cut() {
    let home = Home::new();
    let (parent, second) = root();
    home.write("10-00-00", T, &parent.text);
    // Revert before U2: a new file of the same thread, holding only its session_meta.
    let cut_ordinal = second as u64;
    let revert = Paged::new(T, cut_ordinal, Some((T, cut_ordinal, parent.start(second))));
    let revert_path = home.write("12-00-00", &format!("{T}_{R}"), &revert.text);
    let name = revert_path
        .file_name()
        .and_then(|name| name.to_str())
        .expect("name");
    let (thread, rollout) = rollout_file_ids(name).expect("ids");
    assert_eq!(
        (thread.to_string(), rollout.to_string()),
        (T.to_owned(), R.to_owned())
    );

    let resumed = resume(&revert_path).expect("resumes");
    let texts = jsons(resumed.history()).join("\n");
    assert!(texts.contains("List the files") && texts.contains("There is one file"));
    assert!(!texts.contains("Thanks"), "U2 is cut off");
    assert_eq!(resumed.history().len(), 6);
    assert_eq!(resumed.report().lines, 1, "the newest file's own report");
}

#[test]
fn an_ancestor_in_archived_sessions_is_found_too() {
    let home = Home::new();
    let (parent, _) = root();
    let archived = home.path().join(format!(
        "archived_sessions/rollout-2026-09-20T10-00-00-{T}.jsonl"
    ));
    fs::write(&archived, &parent.text).expect("writes");
    let child = Paged::new(F, parent.next, Some((T, parent.next, parent.len())));
    let child_path = home.write("11-00-00", F, &child.text);
    let resumed = resume(&child_path).expect("resumes");
    assert_eq!(resumed.history().len(), 8);
}

/// The lineage error of resuming `path`, with the rollout id and the file it names.
fn lineage_error(path: &Path, options: &ResumeOptions) -> (PathBuf, String, LineageProblem) {
    match agent_history::resume_file(path, options) {
        Err(RolloutError::Lineage {
            path,
            rollout_id,
            problem,
        }) => (path, rollout_id.to_string(), problem),
        other => panic!("not a lineage error: {other:?}"),
    }
}

#[test]
fn a_missing_ancestor_is_an_error_naming_its_rollout_id_never_an_empty_history() {
    let home = Home::new();
    let child = Paged::new(F, 23, Some((T, 23, 4096)));
    let child_path = home.write("11-00-00", F, &child.text);
    let options = ResumeOptions::new(DEFAULT_TRUNCATION);
    let (path, rollout_id, problem) = lineage_error(&child_path, &options);
    assert_eq!((path, rollout_id.as_str()), (child_path.clone(), T));
    assert_eq!(
        problem,
        LineageProblem::Missing {
            home: std::path::absolute(home.path()).expect("absolute")
        }
    );
    let message = RolloutError::Lineage {
        path: child_path,
        rollout_id: T.parse().expect("id"),
        problem,
    }
    .to_string();
    assert!(
        message.contains(T) && message.contains("archived_sessions"),
        "{message}"
    );
}

#[test]
fn a_cut_past_the_end_of_the_ancestor_and_a_cycle_are_errors() {
    let home = Home::new();
    let (parent, _) = root();
    let parent_path = home.write("10-00-00", T, &parent.text);
    let child = Paged::new(F, parent.next, Some((T, parent.next, parent.len() + 1)));
    let child_path = home.write("11-00-00", F, &child.text);
    let options = ResumeOptions::new(DEFAULT_TRUNCATION).with_codex_home(home.path());
    let (path, rollout_id, problem) = lineage_error(&child_path, &options);
    assert_eq!((path, rollout_id.as_str()), (child_path.clone(), T));
    assert_eq!(
        problem,
        LineageProblem::CutPastEnd {
            ancestor: parent_path,
            end_byte_offset: parent.len() + 1,
            length: parent.len(),
        }
    );

    // Two files that each continue the other, cut after their session_meta.
    let cycle = Home::new();
    let mut a = Paged::new(T, 5, Some((F, 5, 999)));
    let mut b = Paged::new(F, 5, Some((T, 5, 999)));
    for file in [&mut a, &mut b] {
        file.push(
            "response_item",
            &message("user", "input_text", &"x".repeat(600)),
        );
        assert!(file.start(1) < 999 && file.len() > 999);
    }
    let a_path = cycle.write("10-00-00", T, &a.text);
    cycle.write("11-00-00", F, &b.text);
    let (_, rollout_id, problem) = lineage_error(&a_path, &options.with_codex_home(cycle.path()));
    assert_eq!((rollout_id.as_str(), problem), (T, LineageProblem::Cycle));
}

#[test]
fn a_legacy_ancestor_is_not_taken_for_a_paginated_one() {
    let home = Home::new();
    let (parent, _) = root();
    let legacy = as_legacy(&parent.text);
    home.write("10-00-00", T, &legacy);
    let child = Paged::new(F, 23, Some((T, 23, legacy.len() as u64)));
    let child_path = home.write("11-00-00", F, &child.text);
    let (_, _, problem) = lineage_error(&child_path, &ResumeOptions::new(DEFAULT_TRUNCATION));
    assert!(
        matches!(problem, LineageProblem::NotPaginated { .. }),
        "{problem:?}"
    );
}

#[test]
fn a_session_refuses_to_append_to_a_paginated_file_without_ordinals_and_leaves_it_as_it_was() {
    // Paginated, but no line has an ordinal: there is no number to go on from (Codex refuses
    // such a file too).
    let home = Home::new();
    let (file, _) = root();
    let text = as_legacy(&file.text).replace(
        r#""history_mode":"legacy""#,
        r#""history_mode":"paginated""#,
    );
    let path = home.write("10-00-00", T, &text);
    let Err(error) = agent_history::Session::resume(
        &path,
        &ResumeOptions::new(DEFAULT_TRUNCATION),
        agent_history::Durability::Flush,
    ) else {
        panic!("a paginated file without ordinals was resumed for writing");
    };
    assert!(
        matches!(
            &error,
            agent_history::Error::RolloutWrite(write)
                if write.step == agent_history::WriteStep::Paginated
        ),
        "{error:?}"
    );
    assert_eq!(fs::read_to_string(&path).expect("reads"), text);
}

#[test]
fn the_ui_history_is_counted_by_event_type_and_a_snapshot_keeps_the_count() {
    let (file, second) = root();
    let home = Home::new();
    let path = home.write("10-00-00", T, &file.text);
    let full = resume(&path).expect("resumes");
    let pagination = full.report().pagination.as_ref().expect("paginated");
    let events: Vec<(&str, u64)> = pagination
        .events
        .iter()
        .map(|(kind, count)| (kind.as_str(), *count))
        .collect();
    assert_eq!(
        events,
        [
            ("item_completed", 5),
            ("task_complete", 2),
            ("task_started", 2),
            ("token_count", 2),
        ]
    );
    assert_eq!(pagination.other_events, 0);
    // A snapshot of the first turn, then the file as it grew: the same report as a full read.
    let dir = crate::common::temp_dir();
    let first = dir.path().join("first.jsonl");
    fs::write(&first, &file.text[..file.start(second) as usize]).expect("writes");
    let snapshot = dir.path().join("first.snap");
    agent_history::resume_file(
        &first,
        &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
    )
    .expect("resumes")
    .write_snapshot(&snapshot)
    .expect("snapshot");
    let through = agent_history::resume_file(
        &path,
        &ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot),
    )
    .expect("resumes");
    assert!(
        matches!(
            through.source(),
            agent_history::ResumeSource::Snapshot { .. }
        ),
        "{:?}",
        through.source()
    );
    assert_eq!(through.report(), full.report());
    assert_eq!(jsons(through.history()), jsons(full.history()));
}

#[test]
fn a_snapshot_of_a_fork_covers_its_lineage_and_falls_back_once_an_ancestor_changed() {
    let home = Home::new();
    let (mut parent, _) = root();
    let (cut_ordinal, cut_bytes) = (parent.next, parent.len());
    let parent_path = home.write("10-00-00", T, &parent.text);
    let mut child = fork_of(cut_ordinal, cut_bytes);
    let child_path = home.write("11-00-00", F, &child.text);
    let snapshot = home.path().join("fork.snap");
    let ready = ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready();
    agent_history::resume_file(&child_path, &ready)
        .expect("resumes")
        .write_snapshot(&snapshot)
        .expect("a snapshot of a lineage");
    // The fork goes on; the snapshot stands for its first part and for the parent's prefix.
    turn(&mut child, "V2", "And then", None, "Done.");
    fs::write(&child_path, &child.text).expect("writes");
    let through_snapshot = || {
        agent_history::resume_file(
            &child_path,
            &ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot),
        )
    };
    let through = through_snapshot().expect("resumes");
    let full = resume(&child_path).expect("resumes");
    assert!(through.used_snapshot(), "{:?}", through.source());
    assert_eq!(jsons(through.history()), jsons(full.history()));
    assert_eq!(through.report(), full.report());
    assert_eq!(
        through.previous_turn_settings().map(|raw| raw.get()),
        full.previous_turn_settings().map(|raw| raw.get())
    );

    // What the parent appends after the cut, and moving it to the archive, change nothing the
    // snapshot stands for.
    turn(
        &mut parent,
        "U3",
        "Later in the parent",
        None,
        "Parent only.",
    );
    fs::write(&parent_path, &parent.text).expect("writes");
    assert!(through_snapshot().expect("resumes").used_snapshot());
    let archived = home.path().join(format!(
        "archived_sessions/rollout-2026-09-20T10-00-00-{T}.jsonl"
    ));
    fs::rename(&parent_path, &archived).expect("archived");
    assert!(through_snapshot().expect("resumes").used_snapshot());

    // A byte of the parent's prefix changed (same length): the snapshot no longer stands for it.
    let changed = parent.text.replacen("List the files", "List the FILES", 1);
    assert_eq!(changed.len(), parent.text.len());
    fs::write(&archived, &changed).expect("writes");
    let fallen_back = through_snapshot().expect("resumes");
    let reason = fallen_back.fallback_reason().expect("fell back");
    let json = serde_json::to_value(reason).expect("JSON");
    assert_eq!(json["reason"], "lineage_changed");
    assert_eq!(json["rollout_id"], T);
    assert!(
        jsons(fallen_back.history())
            .join("\n")
            .contains("List the FILES")
    );
    assert_eq!(
        jsons(fallen_back.history()),
        jsons(resume(&child_path).expect("resumes").history())
    );

    // The parent gone: the snapshot is not used, and the full resume's error is the answer.
    fs::remove_file(&archived).expect("removed");
    assert!(matches!(
        through_snapshot(),
        Err(RolloutError::Lineage {
            problem: LineageProblem::Missing { .. },
            ..
        })
    ));
}
