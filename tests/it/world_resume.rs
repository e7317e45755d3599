//! The world-state baseline across a rollout: written by a session as `world_state` lines, rebuilt
//! by resume (from every line, or through a snapshot plus the later lines), and reported when a
//! line cannot be applied.

use crate::common;

use std::path::Path;

use agent_history::testing::CodexRollout;
use agent_history::{
    DEFAULT_TRUNCATION, Durability, LineKind, ResumeOptions, Resumed, Session, SessionMeta,
    SkipReason, WorldSnapshot, WorldStateChange, WorldStateError, WorldStateProblem, open_snapshot,
    resume_file,
};
use common::{assistant, item_line, line, meta_line, temp_dir, thread, user};
use serde_json::{Value, json};

fn snapshot(value: Value) -> WorldSnapshot {
    WorldSnapshot::from_value(value).expect("a valid snapshot")
}

/// The world state at step `step` of a generated session: sections that change now and then,
/// appear and go.
fn world_at(step: u64) -> WorldSnapshot {
    let mut world = json!({
        "environment": {"cwd": format!("/work/{}", step / 3), "shell": "bash"},
        "model": {"slug": if step % 4 < 2 { "gpt-5" } else { "gpt-5-mini" }},
    });
    if !step.is_multiple_of(5) {
        world["agents_md"] = json!({"hash": format!("h{}", step / 5)});
    }
    snapshot(world)
}

fn resume_snapshot_ready(path: &Path) -> Resumed {
    resume_file(
        path,
        &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
    )
    .expect("resumes")
}

/// A generated Codex-shaped rollout with world-state lines: full snapshots, patches, updates that
/// change nothing, patches without a baseline, a state of the wrong shape, compactions and
/// rollbacks (which clear the baseline). The generator's history is the live one.
fn generated(seed: u64) -> CodexRollout {
    let mut rollout = CodexRollout::new(thread(&format!("world-{seed}"))).expect("rollout");
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for step in 0..24u64 {
        rollout.start_turn("gpt-5").expect("turn");
        rollout
            .user(&format!("question {step}"), None)
            .expect("user");
        match next() % 9 {
            0..=2 => {
                rollout.world_state(&world_at(step)).expect("world");
            }
            3 => {
                // Twice the same state: the second persists nothing.
                rollout.world_state(&world_at(step)).expect("world");
                assert_eq!(rollout.world_state(&world_at(step)).expect("world"), None);
            }
            4 => rollout.compact("summary").expect("compacted"),
            5 if step > 2 => rollout
                .rollback(1 + (next() % 2) as u32)
                .expect("rolled back"),
            6 => rollout
                .world_state_change(&WorldStateChange {
                    full: false,
                    state: json!({"model": {"slug": "o3"}}),
                })
                .expect("patch"),
            7 if seed % 2 == 1 => rollout
                .world_state_change(&WorldStateChange {
                    full: true,
                    state: json!(["not", "an", "object"]),
                })
                .expect("invalid"),
            _ => rollout.assistant("answer").expect("assistant"),
        }
        rollout.complete_turn().expect("complete");
    }
    rollout.world_state(&world_at(99)).expect("world");
    rollout
}

/// A full resume gives the generator's history (its entries and version), baseline included; a snapshot taken at every line
/// boundary plus the later lines gives the full resume's, and the snapshot is used at every cut
/// (the snapshot stores the baseline, so no later line makes resume fall back).
#[test]
fn a_snapshot_at_every_line_boundary_resumes_to_the_full_resume_baseline_included() {
    let dir = temp_dir();
    let mut with_baseline = 0;
    for seed in 0..4u64 {
        let rollout = generated(seed);
        let text = rollout.bytes().to_vec();
        let rollout_path = dir.path().join(format!("rollout-{seed}.jsonl"));
        std::fs::write(&rollout_path, &text).expect("write");
        let full = common::resume_path(&rollout_path, DEFAULT_TRUNCATION);
        assert_eq!(
            full.history().world_state_baseline(),
            rollout.history().world_state_baseline(),
            "seed {seed}"
        );
        // The generator sets no reference context item (resume takes it from `turn_context`).
        assert_eq!(
            full.history().entries(),
            rollout.history().entries(),
            "seed {seed}"
        );
        assert_eq!(full.history().version(), rollout.history().version());
        assert!(full.report().world_state.lines > 0);
        assert_eq!(full.report().left_out.line_type("world_state"), 0);
        let line_ends: Vec<usize> = text
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        let mut used = 0;
        for (k, &end) in line_ends.iter().enumerate() {
            let prefix_path = dir.path().join("prefix.jsonl");
            std::fs::write(&prefix_path, &text[..end]).expect("prefix");
            let prefix = resume_snapshot_ready(&prefix_path);
            with_baseline += usize::from(prefix.history().world_state_baseline().is_some());
            let snapshot_path = dir.path().join("cut.snap");
            prefix
                .write_snapshot_with(&snapshot_path, agent_history::Replace::Anything)
                .expect("snapshot written");
            let through = resume_file(
                &rollout_path,
                &ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot_path),
            )
            .expect("resumes");
            let context = format!(
                "seed {seed}, snapshot after line {}: {:?}",
                k + 1,
                through.fallback_reason().map(ToString::to_string)
            );
            assert_eq!(through.history(), full.history(), "{context}");
            assert_eq!(
                through.history().world_state_baseline(),
                full.history().world_state_baseline(),
                "{context}"
            );
            used += usize::from(through.used_snapshot());
        }
        assert_eq!(
            used,
            line_ends.len(),
            "seed {seed}: every cut uses the snapshot"
        );
    }
    // The cuts exercised stored baselines, not only empty ones.
    assert!(with_baseline > 10, "{with_baseline}");
}

/// A snapshot stores the baseline and gives it back when opened; a copy keeps it.
#[test]
fn a_snapshot_stores_the_baseline() {
    let dir = temp_dir();
    let rollout = generated(0);
    let path = dir.path().join("r.jsonl");
    std::fs::write(&path, rollout.bytes()).expect("write");
    let resumed = resume_snapshot_ready(&path);
    let baseline = resumed
        .history()
        .world_state_baseline()
        .cloned()
        .expect("the last line persists a world state");
    assert_eq!(baseline, world_at(99));
    let snap = dir.path().join("r.snap");
    resumed.write_snapshot(&snap).expect("written");
    let opened = open_snapshot(&snap, Default::default()).expect("opens");
    assert_eq!(
        opened.header().format_version,
        agent_history::SNAPSHOT_FORMAT_VERSION
    );
    assert_eq!(opened.history().world_state_baseline(), Some(&baseline));
    assert_eq!(opened.history(), resumed.history());
    let copy = dir.path().join("copy.snap");
    opened.write(&copy).expect("copied");
    assert_eq!(
        std::fs::read(&copy).expect("copy"),
        std::fs::read(&snap).expect("snapshot")
    );
}

/// What resume does with each kind of `world_state` line, and what the report says: a patch
/// without a baseline is ignored, a state of the wrong shape drops the baseline, a payload
/// without `{full, state}` is skipped as a bad line, and only the lines after the last
/// compaction or rollback are interpreted.
#[test]
fn world_state_lines_are_replayed_in_order_and_problems_reported_with_their_line() {
    let ws = |payload: Value| line("world_state", &payload.to_string());
    let compacted = line(
        "compacted",
        &json!({"message": "s", "replacement_history": [serde_json::from_str::<Value>(&user("kept")).unwrap()]})
            .to_string(),
    );
    let lines = [
        meta_line(),                                                           // 1
        ws(json!({"full": false, "state": {"a": 1}})), // 2: before the reset
        ws(json!({"full": true, "state": {"a": {"x": 1}}})), // 3: before the reset
        item_line(&user("one")),                       // 4
        compacted,                                     // 5: clears
        ws(json!({"full": false, "state": {"a": {"x": 2}}})), // 6: no baseline: ignored
        ws(json!({"full": true, "state": {"a": {"x": 1}, "b": 2}})), // 7
        ws(json!({"full": false, "state": {"a": {"x": 3}}})), // 8
        ws(json!({"full": "yes", "state": {}})),       // 9: not a world_state
        item_line(&assistant("two")),                  // 10
        ws(json!({"full": false, "state": "text"})),   // 11: drops the baseline
        ws(json!({"full": false, "state": {"b": null}})), // 12: no baseline: ignored
        ws(json!({"full": true, "state": {"c": {"on": true, "gone": null}}})), // 13
        ws(json!({"full": false, "state": {"c": {"on": false}, "d": [1]}})), // 14
    ];
    let text = lines.join("\n") + "\n";
    let resumed = common::resume_bytes(text.as_bytes(), DEFAULT_TRUNCATION);
    assert_eq!(
        resumed.history().world_state_baseline(),
        Some(&snapshot(json!({"c": {"on": false}, "d": [1]})))
    );
    let report = &resumed.report().world_state;
    assert_eq!(
        report.lines, 9,
        "the line without {{full, state}} is not one"
    );
    assert_eq!(
        report.replayed, 7,
        "lines 2 and 3 come before the compaction"
    );
    assert_eq!(report.ignored_patches, 2);
    assert_eq!(report.invalid, 1);
    let issues: Vec<(u64, &WorldStateProblem)> = report
        .issues
        .iter()
        .map(|issue| (issue.line, &issue.problem))
        .collect();
    assert_eq!(
        issues,
        [
            (
                6,
                &WorldStateProblem::Change(WorldStateError::PatchWithoutBaseline)
            ),
            (
                11,
                &WorldStateProblem::Change(WorldStateError::PatchNotAnObject { found: "a string" })
            ),
            (
                12,
                &WorldStateProblem::Change(WorldStateError::PatchWithoutBaseline)
            ),
        ]
    );
    assert_eq!(
        report.to_string(),
        "9 lines, 7 replayed, 2 patches without a baseline ignored (line 6, 12), 1 invalid \
         (line 11: a world-state merge patch must be a JSON object, not a string)"
    );
    let skipped: Vec<_> = resumed.report().malformed().collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].line, 9);
    assert!(
        matches!(&skipped[0].reason, SkipReason::InvalidPayload(why) if why.contains("full")),
        "{:?}",
        skipped[0].reason
    );
    assert!(resumed.report().left_out.is_empty());
    // A full snapshot of the wrong shape drops the baseline too, and a rollback clears it.
    let more = [
        ws(json!({"full": true, "state": {"a": null}})),
        ws(json!({"full": false, "state": {"a": 1}})),
    ];
    let dropped = format!("{text}{}\n", more.join("\n"));
    let resumed = common::resume_bytes(dropped.as_bytes(), DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().world_state_baseline(), None);
    assert_eq!(
        resumed.report().world_state.issues.last().map(|i| i.line),
        Some(16)
    );
    assert!(matches!(
        resumed.report().world_state.issues[3].problem,
        WorldStateProblem::Change(WorldStateError::NullSection { .. })
    ));
    let rolled_back = format!(
        "{text}{}\n",
        common::event_line(r#"{"type":"thread_rolled_back","num_turns":1}"#)
    );
    let resumed = common::resume_bytes(rolled_back.as_bytes(), DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().world_state_baseline(), None);
    assert_eq!(resumed.report().world_state.replayed, 0);
    // A rollback of no turns changes nothing, live or on resume.
    let none_rolled_back = format!(
        "{text}{}\n",
        common::event_line(r#"{"type":"thread_rolled_back","num_turns":0}"#)
    );
    let resumed = common::resume_bytes(none_rolled_back.as_bytes(), DEFAULT_TRUNCATION);
    assert!(resumed.history().world_state_baseline().is_some());
}

/// A live session persists world states (full, then patches, then an unchanged one, across a
/// compaction and a rollback); resuming its file gives a history equal to the live one, baseline
/// included, and an update after resume persists nothing when nothing changed.
#[test]
fn a_session_persists_world_states_and_resumes_to_the_same_baseline() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("persist")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    let first = world_at(1);
    let change = session.persist_world_state(&first).expect("persisted");
    assert!(change.as_ref().is_some_and(|change| change.full));
    session.record_json(&user("one")).expect("recorded");
    let second = world_at(2);
    let change = session
        .persist_world_state(&second)
        .expect("persisted")
        .expect("changed");
    assert!(!change.full);
    assert_eq!(
        change.state,
        second.merge_patch_from(&first).expect("differ")
    );
    let length = std::fs::metadata(&path).expect("file").len();
    assert_eq!(
        session.persist_world_state(&second).expect("persisted"),
        None
    );
    assert_eq!(
        std::fs::metadata(&path).expect("file").len(),
        length,
        "nothing changed: nothing written"
    );
    session.record_json(&assistant("a")).expect("recorded");
    let check = |session: &Session, what: &str| {
        let live = session.history().clone();
        let resumed = resume_file(&path, &ResumeOptions::default()).expect("resumes");
        assert_eq!(resumed.history(), &live, "{what}");
        assert_eq!(
            resumed.history().world_state_baseline(),
            live.world_state_baseline(),
            "{what}"
        );
    };
    check(&session, "after patches");
    session.compact("summary").expect("compacted");
    assert_eq!(session.history().world_state_baseline(), None);
    check(&session, "after a compaction");
    let change = session
        .persist_world_state(&world_at(3))
        .expect("persisted")
        .expect("changed");
    assert!(change.full, "the compaction cleared the baseline");
    session.record_json(&user("two")).expect("recorded");
    session
        .persist_world_state(&world_at(4))
        .expect("persisted")
        .expect("changed");
    session.record_json(&user("three")).expect("recorded");
    session
        .persist_world_state(&world_at(6))
        .expect("persisted");
    check(&session, "before the rollback");
    session.rollback(1).expect("rolled back");
    assert_eq!(session.history().world_state_baseline(), None);
    check(&session, "after a rollback");
    let last = world_at(7);
    assert!(
        session
            .persist_world_state(&last)
            .expect("persisted")
            .expect("changed")
            .full
    );
    session
        .persist_world_state(&world_at(8))
        .expect("persisted");
    check(&session, "at the end");
    let live = session.history().clone();
    drop(session);
    let mut resumed = Session::resume(&path, &ResumeOptions::default(), Durability::Flush)
        .expect("resumes")
        .into_session();
    assert_eq!(resumed.history(), &live);
    assert_eq!(
        resumed
            .persist_world_state(&world_at(8))
            .expect("persisted"),
        None,
        "nothing changed since the last persisted state"
    );
    let change = resumed
        .persist_world_state(&world_at(9))
        .expect("persisted")
        .expect("changed");
    assert!(!change.full, "the resumed baseline is used");
}

/// A session does not write a raw `world_state` line: resume would change the baseline where the
/// live history does not.
#[test]
fn a_session_refuses_a_raw_world_state_line() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("raw")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    let error = session
        .append_raw("world_state", r#"{"full":true,"state":{}}"#)
        .expect_err("refused");
    assert!(error.to_string().contains("world_state"), "{error}");
    assert_eq!(LineKind::from_type("world_state"), LineKind::WorldState);
}

/// A snapshot of a prefix without `world_state` lines holds no baseline; a `world_state` line
/// after it is applied as in a full resume.
#[test]
fn a_world_state_line_after_a_snapshot_without_a_baseline_is_applied() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let text = std::fs::read(fixtures.join("snapshot-v2.jsonl")).expect("rollout");
    assert!(!String::from_utf8_lossy(&text).contains("world_state"));
    let dir = temp_dir();
    let path = dir.path().join("r.jsonl");
    std::fs::write(&path, &text).expect("write");
    let prefix = resume_snapshot_ready(&path);
    let snap = dir.path().join("r.snap");
    prefix.write_snapshot(&snap).expect("written");
    let opened = open_snapshot(&snap, Default::default()).expect("opens");
    assert_eq!(opened.history().world_state_baseline(), None);
    let covered = opened.header().rollout;
    let mut text = text[..covered.bytes as usize].to_vec();
    text.extend_from_slice(
        format!(
            "{}\n",
            line("world_state", r#"{"full":true,"state":{"a":1}}"#)
        )
        .as_bytes(),
    );
    std::fs::write(&path, &text).expect("write");
    let through = resume_file(
        &path,
        &ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snap),
    )
    .expect("resumes");
    assert!(through.used_snapshot(), "{:?}", through.source());
    assert_eq!(
        through.history(),
        common::resume_path(&path, DEFAULT_TRUNCATION).history()
    );
    assert_eq!(
        through.history().world_state_baseline(),
        Some(&snapshot(json!({"a": 1})))
    );
}

/// A sink whose writes fail while `failing` is set.
struct SwitchSink {
    data: Vec<u8>,
    failing: std::rc::Rc<std::cell::Cell<bool>>,
}

impl agent_history::RolloutSink for SwitchSink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.failing.get() {
            return Err(std::io::Error::other("injected failure"));
        }
        self.data.extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn sync_data(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A session writing into a [`SwitchSink`], its `session_meta` written, and the switch that
/// makes its writes fail.
fn switch_session() -> (Session<SwitchSink>, std::rc::Rc<std::cell::Cell<bool>>) {
    let failing = std::rc::Rc::new(std::cell::Cell::new(false));
    let sink = SwitchSink {
        data: Vec::new(),
        failing: failing.clone(),
    };
    let writer = agent_history::RolloutWriter::with_sink(sink, "switch", Durability::Flush);
    let mut session = Session::from_parts(agent_history::History::new(), writer, thread("switch"));
    session
        .append_raw("session_meta", &common::meta_payload())
        .expect("meta");
    (session, failing)
}

/// A failed write sets no baseline and clears the old one (the line stays pending and may still
/// reach the file): the next update is written in full, and the file resumes to the live
/// baseline once it is written.
#[test]
fn a_failed_world_state_write_clears_the_baseline_and_the_next_update_is_full() {
    let (mut session, failing) = switch_session();
    session
        .persist_world_state(&world_at(1))
        .expect("persisted");
    assert_eq!(session.history().world_state_baseline(), Some(&world_at(1)));
    failing.set(true);
    session
        .persist_world_state(&world_at(2))
        .expect_err("the write fails");
    assert_eq!(session.history().world_state_baseline(), None);
    failing.set(false);
    let change = session
        .persist_world_state(&world_at(2))
        .expect("persisted")
        .expect("written");
    assert!(change.full, "after a failed write the update is full");
    let resumed = common::resume_bytes(&session.writer().sink().data, DEFAULT_TRUNCATION);
    assert_eq!(resumed.history(), session.history());
    assert_eq!(
        resumed.report().world_state.lines,
        3,
        "the pending patch was written too"
    );
}

/// `Session::update_world_state` when a write fails: the error is returned, the baseline is
/// cleared (neither the old nor the new one is certain), the next update renders every section
/// again, and the file, once written, resumes to the live history.
#[test]
fn a_failed_write_during_a_world_state_update_makes_the_next_update_full() {
    let (mut session, failing) = switch_session();
    let state = |cwd: &str| {
        let mut state = agent_history::WorldState::new();
        let section = agent_history::JsonSection::new("environment", json!({"cwd": cwd}));
        state.add(section).expect("a new id");
        state
    };
    session.update_world_state(&state("/a")).expect("updated");
    assert!(session.history().world_state_baseline().is_some());
    failing.set(true);
    session
        .update_world_state(&state("/b"))
        .expect_err("the write fails");
    assert_eq!(session.history().world_state_baseline(), None);
    failing.set(false);
    let again = session.update_world_state(&state("/b")).expect("updated");
    assert!(again.change.as_ref().is_some_and(|change| change.full));
    assert_eq!(again.items.len(), 1, "rendered in full again");
    session.flush().expect("flushed");
    let resumed = common::resume_bytes(&session.writer().sink().data, DEFAULT_TRUNCATION);
    assert_eq!(resumed.history(), session.history());
}

/// A fork resumes to the forked history, baseline included: cut before a turn (a rollback in the
/// fork's file, no baseline) or after the last one (the parent's baseline).
#[test]
fn a_fork_resumes_to_its_baseline() {
    let dir = temp_dir();
    let path = dir.path().join("parent.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("parent")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    session.record_json(&user("one")).expect("recorded");
    session
        .persist_world_state(&world_at(1))
        .expect("persisted");
    session.record_json(&user("two")).expect("recorded");
    session
        .persist_world_state(&world_at(2))
        .expect("persisted");
    for (turn, name) in [(2, "cut.jsonl"), (3, "whole.jsonl")] {
        let fork_path = dir.path().join(name);
        let fork = session
            .fork(
                turn,
                &fork_path,
                SessionMeta::new(thread(name)),
                Durability::Flush,
            )
            .expect("forked");
        let live = fork.history().clone();
        assert_eq!(
            live.world_state_baseline().is_some(),
            turn == 3,
            "fork before turn {turn}"
        );
        drop(fork);
        let resumed = resume_file(&fork_path, &ResumeOptions::default()).expect("resumes");
        assert_eq!(resumed.history(), &live, "fork before turn {turn}");
    }
}
