//! Snapshots: write, open (zero copy), use, and survive every damaged byte.

use std::path::{Path, PathBuf};

use agent_history::rollout::Rollout;
use agent_history::snapshot::{
    self, RolloutPosition, SnapshotExtras, SnapshotOptions, open_snapshot, write_snapshot,
};
use agent_history::{
    DEFAULT_TRUNCATION, History, ProjectionOptions, PromptCompiler, RequestSettings, SnapshotError,
    StepContext,
};

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("agent-history-snap-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/rollouts")
        .join(name)
}

/// A small history with every interesting shape: context, a call without output, an image, an
/// orphan, an unknown item, a reference context item.
fn small_history() -> History {
    let mut history = History::new();
    for json in [
        r#"{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>x"}]}"#,
        r#"{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"héllo"}]}"#,
        r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{}","call_id":"c1"}"#,
        r#"{"type":"function_call_output","call_id":"gone","output":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#,
        r#"{"type":"future_thing","x":1}"#,
    ] {
        history.record_json(json).expect("recorded");
    }
    history.set_reference_context_item(Some(serde_json::json!({"model":"m"})));
    history
}

fn texts(history: &History) -> Vec<String> {
    history.iter().map(|e| e.json().to_owned()).collect()
}

#[test]
fn a_snapshot_opens_to_the_same_history_without_copying_item_text() {
    let dir = temp_dir("open");
    let path = dir.join("history.snap");
    let history = small_history();
    let position = RolloutPosition::of_prefix(b"line\n", 1);
    let extras = SnapshotExtras {
        thread_id: Some("t-1".into()),
        previous_turn_settings: Some(r#"{"model":"m"}"#.into()),
        ends_inside_turn: true,
        legacy: false,
    };
    let header = write_snapshot(&path, &history, position, &extras).expect("written");
    assert!(snapshot::is_snapshot(&path));
    let opened = open_snapshot(&path, SnapshotOptions::default()).expect("opens");
    assert_eq!(opened.header, header);
    assert_eq!(opened.header.rollout, position);
    assert_eq!(opened.extras, extras);
    assert_eq!(
        opened.history, history,
        "entries, version, policy and reference equal"
    );
    assert!(
        opened.history.iter().all(|e| e.is_mapped()),
        "no item text was copied"
    );
    opened.history.assert_invariants();
    // Same projection and request bytes as the original.
    let options = ProjectionOptions::default();
    assert_eq!(
        opened
            .history
            .project(&options)
            .expect("lenient")
            .to_json_array(),
        history.project(&options).expect("lenient").to_json_array()
    );
    let compiler = PromptCompiler::new(RequestSettings::default());
    assert_eq!(
        compiler
            .compile(&opened.history, StepContext::default())
            .expect("ok")
            .body()
            .expect("body"),
        compiler
            .compile(&history, StepContext::default())
            .expect("ok")
            .body()
            .expect("body"),
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_resumed_history_is_fully_usable_after_the_file_is_replaced() {
    let dir = temp_dir("usable");
    let path = dir.join("history.snap");
    let history = small_history();
    write_snapshot(
        &path,
        &history,
        RolloutPosition::default(),
        &SnapshotExtras::default(),
    )
    .expect("written");
    let mut opened = open_snapshot(&path, SnapshotOptions::default())
        .expect("opens")
        .history;
    // Replacing the file (a new snapshot) does not disturb the mapped history.
    write_snapshot(
        &path,
        &History::new(),
        RolloutPosition::default(),
        &SnapshotExtras::default(),
    )
    .expect("rewritten");
    let fork = opened.clone();
    opened
        .record_json(r#"{"type":"function_call_output","call_id":"c1","output":"ok"}"#)
        .expect("recorded");
    opened
        .record_json(
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"again"}]}"#,
        )
        .expect("recorded");
    opened.drop_last_n_user_turns(1);
    opened.assert_invariants();
    assert_eq!(opened.len(), history.len() + 1);
    assert_eq!(texts(&fork), texts(&history), "the fork is untouched");
    let projection = opened
        .project(&ProjectionOptions::default())
        .expect("lenient");
    assert!(projection.to_json_array().contains("héllo"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_truncation_and_every_changed_byte_is_an_error() {
    let dir = temp_dir("damage");
    let path = dir.join("history.snap");
    let history = small_history();
    write_snapshot(
        &path,
        &history,
        RolloutPosition::of_prefix(b"x\n", 1),
        &SnapshotExtras::default(),
    )
    .expect("written");
    let original = std::fs::read(&path).expect("file");
    let damaged = dir.join("damaged.snap");
    for len in 0..original.len() {
        std::fs::write(&damaged, &original[..len]).expect("write");
        let error = open_snapshot(&damaged, SnapshotOptions::default())
            .expect_err("a truncated snapshot opens");
        assert!(
            matches!(
                error,
                SnapshotError::Truncated { .. } | SnapshotError::BadMagic { .. }
            ),
            "cut at {len}: {error}"
        );
    }
    for (at, flip) in (0..original.len()).flat_map(|at| [(at, 0x01u8), (at, 0xff)]) {
        let mut bytes = original.clone();
        bytes[at] ^= flip;
        std::fs::write(&damaged, &bytes).expect("write");
        match open_snapshot(&damaged, SnapshotOptions::default()) {
            Err(_) => {}
            Ok(opened) => assert_eq!(opened.history, history, "byte {at}: silently different"),
        }
        // Without digest verification: never a panic; any history it yields is well-formed.
        if let Ok(opened) = open_snapshot(
            &damaged,
            SnapshotOptions {
                verify_digest: false,
            },
        ) {
            opened.history.assert_invariants();
            let _ = opened.history.project(&ProjectionOptions::default());
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn version_and_format_errors_say_what_was_found() {
    let dir = temp_dir("version");
    let path = dir.join("history.snap");
    write_snapshot(
        &path,
        &small_history(),
        RolloutPosition::default(),
        &SnapshotExtras::default(),
    )
    .expect("written");
    let original = std::fs::read(&path).expect("file");
    let mut bytes = original.clone();
    bytes[8..12].copy_from_slice(&7u32.to_le_bytes());
    std::fs::write(&path, &bytes).expect("write");
    let error = open_snapshot(&path, SnapshotOptions::default()).expect_err("refused");
    assert!(
        matches!(
            error,
            SnapshotError::UnsupportedVersion {
                found: 7,
                supported: 1,
                ..
            }
        ),
        "{error}"
    );
    let mut bytes = original;
    bytes[12] = 2;
    std::fs::write(&path, &bytes).expect("write");
    let error = open_snapshot(&path, SnapshotOptions::default()).expect_err("refused");
    assert!(
        matches!(
            error,
            SnapshotError::UnsupportedFormat { endianness: 2, .. }
        ),
        "{error}"
    );
    let rollout = example("interrupted.jsonl");
    let error = open_snapshot(&rollout, SnapshotOptions::default()).expect_err("not a snapshot");
    assert!(matches!(error, SnapshotError::BadMagic { .. }), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The golden snapshot of format version 1: read by every build, and rewritten byte for byte from
/// the same history, so the format cannot change unnoticed. Regenerate (only with a new format
/// version) with `AGENT_HISTORY_WRITE_GOLDEN=1 cargo test --test snapshot golden`.
#[test]
fn golden_snapshot_v1_reads_and_rewrites_identically() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshot-v1.snap");
    let rollout_text = std::fs::read(example("session.jsonl")).expect("example");
    // The covered prefix: the complete lines (the example ends with a torn line).
    let end = rollout_text
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let prefix = &rollout_text[..end];
    let rollout = Rollout::read(prefix, "session.jsonl", Default::default()).expect("reads");
    let resumed = rollout.resume(DEFAULT_TRUNCATION);
    let position = RolloutPosition::of_prefix(prefix, resumed.report.lines);
    let extras = SnapshotExtras::of(&rollout, &resumed);
    if std::env::var_os("AGENT_HISTORY_WRITE_GOLDEN").is_some() {
        write_snapshot(&golden, &resumed.history, position, &extras).expect("golden written");
    }
    let opened = open_snapshot(&golden, SnapshotOptions::default()).expect("golden opens");
    assert_eq!(opened.header.rollout, position);
    assert_eq!(opened.extras, extras);
    assert_eq!(texts(&opened.history), texts(&resumed.history));
    assert_eq!(opened.history.entries(), resumed.history.entries());
    let dir = temp_dir("golden");
    let again = dir.join("again.snap");
    write_snapshot(&again, &resumed.history, position, &extras).expect("written");
    assert_eq!(
        std::fs::read(&again).expect("file"),
        std::fs::read(&golden).expect("golden"),
        "the writer no longer produces format version 1 byte for byte"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Resume = snapshot + later lines equals a full JSONL resume, for a snapshot taken after every
/// line of `text`. Returns how many cut points used the snapshot.
fn check_resume_equivalence(name: &str, text: &[u8]) -> usize {
    let dir = temp_dir(&format!("equiv-{name}"));
    let rollout_path = dir.join("rollout.jsonl");
    std::fs::write(&rollout_path, text).expect("write rollout");
    let full = agent_history::rollout::resume_file(&rollout_path, DEFAULT_TRUNCATION)
        .expect("full resume");
    let mut used = 0;
    let line_ends: Vec<usize> = text
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    for (k, &end) in line_ends.iter().enumerate() {
        let prefix = &text[..end];
        let Ok(rollout) = Rollout::read(prefix, "prefix", Default::default()) else {
            continue; // no session_meta yet: nothing to snapshot
        };
        let resumed = rollout.resume(DEFAULT_TRUNCATION);
        let snapshot_path = dir.join(format!("cut-{k}.snap"));
        write_snapshot(
            &snapshot_path,
            &resumed.history,
            RolloutPosition::of_prefix(prefix, (k + 1) as u64),
            &SnapshotExtras::of(&rollout, &resumed),
        )
        .expect("snapshot written");
        let from_snapshot =
            snapshot::resume_with_snapshot(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION)
                .expect("resumes");
        assert_eq!(
            from_snapshot.history,
            full.history,
            "{name}, snapshot after line {}: {:?}",
            k + 1,
            from_snapshot.fallback_reason
        );
        assert_eq!(
            from_snapshot.history.reference_context_item(),
            full.history.reference_context_item()
        );
        assert_eq!(
            from_snapshot.previous_turn_settings,
            full.previous_turn_settings
                .as_ref()
                .map(|raw| raw.get().to_owned())
        );
        assert_eq!(from_snapshot.thread_id, full.report.thread_id);
        if from_snapshot.used_snapshot() {
            used += 1;
            assert!(
                from_snapshot
                    .history
                    .iter()
                    .take(resumed.history.len())
                    .all(|e| e.is_mapped())
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    used
}

#[test]
fn snapshot_resume_equals_full_resume_on_every_example_and_fixture() {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rollouts"))
            .expect("examples")
            .map(|entry| entry.expect("entry").path())
            .collect();
    if let Ok(fixtures) =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rollouts"))
    {
        files.extend(fixtures.map(|entry| entry.expect("entry").path()));
    }
    assert!(files.len() >= 2);
    for file in files {
        let text = std::fs::read(&file).expect("read");
        let name = file
            .file_stem()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        check_resume_equivalence(&name, &text);
    }
}

#[test]
fn snapshot_resume_equals_full_resume_on_generated_sessions() {
    use agent_history::{Durability, RolloutWriter, Session, summary_text};
    for seed in 0..6u64 {
        let writer = RolloutWriter::with_sink(Vec::new(), "memory", Durability::Flush);
        let mut session =
            Session::from_parts(History::new(), writer, "t".into()).with_id_assignment(false);
        session
            .append_raw(
                "session_meta",
                r#"{"id":"t","timestamp":"2026-11-03T14:00:00.000Z"}"#,
            )
            .expect("meta");
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for step in 0..30 {
            match next() % 10 {
                0 if seed % 2 == 0 => {
                    session
                        .compact(&summary_text("summary"))
                        .expect("compacted");
                }
                1 if seed % 3 == 0 => session.rollback(1).expect("rolled back"),
                2..=4 => {
                    session
                        .record_json(&format!(
                            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"q{step}"}}]}}"#
                        ))
                        .expect("recorded");
                }
                5 | 6 => {
                    session
                        .record_json(&format!(
                            r#"{{"type":"function_call","id":"fc_{step}","name":"f","arguments":"{{}}","call_id":"c{step}"}}"#
                        ))
                        .expect("recorded");
                }
                7 => {
                    session
                        .record_json(&format!(
                            r#"{{"type":"function_call_output","call_id":"c{}","output":"ok"}}"#,
                            step - 1
                        ))
                        .expect("recorded");
                }
                _ => {
                    session
                        .record_json(r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}"#)
                        .expect("recorded");
                }
            }
        }
        let text = session.writer().sink().clone();
        let used = check_resume_equivalence(&format!("generated-{seed}"), &text);
        if seed % 2 == 1 && seed % 3 != 0 {
            // No compaction and no rollback: every cut point can use the snapshot.
            assert_eq!(
                used,
                text.iter().filter(|&&b| b == b'\n').count(),
                "seed {seed}"
            );
        }
    }
}

#[test]
fn a_rewritten_rollout_falls_back_to_a_full_resume() {
    let dir = temp_dir("fallback");
    let rollout_path = dir.join("rollout.jsonl");
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    std::fs::write(&rollout_path, &text).expect("write");
    let rollout = Rollout::read(text.as_slice(), "x", Default::default()).expect("reads");
    let resumed = rollout.resume(DEFAULT_TRUNCATION);
    let snapshot_path = dir.join("s.snap");
    write_snapshot(
        &snapshot_path,
        &resumed.history,
        RolloutPosition::of_prefix(&text, 2),
        &SnapshotExtras::of(&rollout, &resumed),
    )
    .expect("written");
    let used = snapshot::resume_with_snapshot(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION)
        .expect("resumes");
    assert!(used.used_snapshot());
    // The rollout is replaced by another session's.
    let other = String::from_utf8(text.clone())
        .expect("utf-8")
        .replace("/home/dev/project", "/home/dev/Project")
        .into_bytes();
    assert_ne!(other, text);
    std::fs::write(&rollout_path, &other).expect("write");
    let fallback =
        snapshot::resume_with_snapshot(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION)
            .expect("resumes");
    assert_eq!(
        fallback.fallback_reason.as_deref(),
        Some("the rollout no longer starts with the prefix the snapshot covers")
    );
    // Another truncation policy.
    std::fs::write(&rollout_path, &text).expect("write");
    let policy = agent_history::TruncationPolicy::Bytes(100);
    let fallback =
        snapshot::resume_with_snapshot(&rollout_path, &snapshot_path, policy).expect("resumes");
    assert!(
        fallback
            .fallback_reason
            .expect("falls back")
            .contains("truncation")
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_prefix_that_does_not_end_at_a_line_boundary_falls_back() {
    let dir = temp_dir("mid-line");
    let rollout_path = dir.join("rollout.jsonl");
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    std::fs::write(&rollout_path, &text).expect("write");
    let first_line = text.iter().position(|&b| b == b'\n').expect("a line") + 1;
    let prefix = &text[..first_line + 10];
    let rollout = Rollout::read(&text[..first_line], "x", Default::default()).expect("reads");
    let resumed = rollout.resume(DEFAULT_TRUNCATION);
    let snapshot_path = dir.join("s.snap");
    write_snapshot(
        &snapshot_path,
        &resumed.history,
        RolloutPosition::of_prefix(prefix, 1),
        &SnapshotExtras::of(&rollout, &resumed),
    )
    .expect("written");
    let result = snapshot::resume_with_snapshot(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION)
        .expect("resumes");
    assert_eq!(
        result.fallback_reason.as_deref(),
        Some("the prefix the snapshot covers does not end at a line boundary")
    );
    let full = agent_history::rollout::resume_file(&rollout_path, DEFAULT_TRUNCATION).expect("ok");
    assert_eq!(result.history, full.history);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_snapshot_that_covers_no_session_meta_falls_back() {
    let dir = temp_dir("empty-cover");
    let rollout_path = dir.join("rollout.jsonl");
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    std::fs::write(&rollout_path, &text).expect("write");
    let snapshot_path = dir.join("s.snap");
    write_snapshot(
        &snapshot_path,
        &History::new(),
        RolloutPosition::of_prefix(b"", 0),
        &SnapshotExtras::default(),
    )
    .expect("written");
    let result = snapshot::resume_with_snapshot(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION)
        .expect("resumes");
    assert_eq!(
        result.fallback_reason.as_deref(),
        Some("the snapshot covers no session_meta line of the rollout")
    );
    let full = agent_history::rollout::resume_file(&rollout_path, DEFAULT_TRUNCATION).expect("ok");
    assert_eq!(result.history, full.history);
    assert_eq!(result.thread_id, full.report.thread_id);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_stray_temporary_file_does_not_block_the_next_writer() {
    let dir = temp_dir("stray");
    let path = dir.join("history.snap");
    // What a crashed writer leaves (any name of that form).
    std::fs::write(dir.join(".history.snap.tmp-123"), b"partial").expect("write");
    write_snapshot(
        &path,
        &small_history(),
        RolloutPosition::default(),
        &SnapshotExtras::default(),
    )
    .expect("written");
    write_snapshot(
        &path,
        &small_history(),
        RolloutPosition::default(),
        &SnapshotExtras::default(),
    )
    .expect("written again");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "{names:?}: the target and the stray file, no new strays"
    );
    std::fs::remove_dir_all(&dir).ok();
}
