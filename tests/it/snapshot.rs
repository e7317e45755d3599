//! Snapshots: written from a resume, opened with no copy, used by resume when they stand for the
//! rollout's prefix (and a full resume with a reason when they do not), and every damaged byte
//! detected.

use crate::common;

use std::path::{Path, PathBuf};

use agent_history::{
    DEFAULT_TRUNCATION, Durability, FallbackReason, History, ProjectionOptions, PromptCompiler,
    READER_LABEL, RequestSettings, ResumeOptions, ResumeSource, Resumed, RolloutWriter,
    SNAPSHOT_FORMAT_VERSION, Session, SessionMeta, SnapshotError, SnapshotOptions, StepContext,
    TruncationPolicy, is_snapshot, open_snapshot, resume_file, resume_reader, summary_text,
};
use common::{
    THREAD_ID, example, item_line, jsons, line, meta_line, meta_payload, temp_dir, thread, user,
};

/// A small rollout with every interesting shape: context, a call without output, an image in an
/// orphan output, an unknown item, a turn context (the reference context item), and a turn that
/// has started but not ended.
fn small_rollout() -> String {
    let lines = [
        meta_line(),
        item_line(
            r#"{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>x"}]}"#,
        ),
        item_line(
            r#"{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"héllo"}]}"#,
        ),
        line("turn_context", r#"{"model":"m","cwd":"/w"}"#),
        item_line(
            r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{}","call_id":"c1"}"#,
        ),
        item_line(
            r#"{"type":"function_call_output","call_id":"gone","output":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#,
        ),
        item_line(r#"{"type":"future_thing","x":1}"#),
        line("event_msg", r#"{"type":"task_started","turn_id":"t9"}"#),
    ];
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// Writes `text` as `rollout.jsonl` in `dir`, resumes it ready for a snapshot and writes the
/// snapshot `name`. Returns the two paths and the resume the snapshot stands for.
fn snapshot_of(dir: &Path, text: &[u8], name: &str) -> (PathBuf, PathBuf, Resumed) {
    let rollout = dir.join(format!("{name}.jsonl"));
    std::fs::write(&rollout, text).expect("rollout written");
    let resumed = resume_file(
        &rollout,
        &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
    )
    .expect("resumes");
    let snapshot = dir.join(format!("{name}.snap"));
    resumed.write_snapshot(&snapshot).expect("snapshot written");
    (rollout, snapshot, resumed)
}

/// Resumes `rollout` trying `snapshot` first.
fn resume_with(rollout: &Path, snapshot: &Path, truncation: TruncationPolicy) -> Resumed {
    resume_file(
        rollout,
        &ResumeOptions::new(truncation).with_snapshot(snapshot),
    )
    .expect("resumes")
}

/// Rewrites the covered rollout prefix in a snapshot's header (the offsets of
/// `docs/snapshot-format.md`) and the header digest: a crafted file, for the fallback rules.
fn set_covered_prefix(snapshot: &Path, lines: u64, prefix: &[u8]) {
    let mut bytes = std::fs::read(snapshot).expect("snapshot");
    bytes[72..80].copy_from_slice(&lines.to_le_bytes());
    bytes[80..88].copy_from_slice(&(prefix.len() as u64).to_le_bytes());
    bytes[88..120].copy_from_slice(blake3::hash(prefix).as_bytes());
    let digest = blake3::hash(&bytes[..224]);
    bytes[224..256].copy_from_slice(digest.as_bytes());
    std::fs::write(snapshot, bytes).expect("rewritten");
}

/// Replaces the first occurrence of `from` in a snapshot's payload with `to` (same length) and
/// recomputes the payload and header digests: a crafted file that opens, whose entries' text its
/// writer never parsed.
fn craft_payload(snapshot: &Path, from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let mut bytes = std::fs::read(snapshot).expect("snapshot");
    let at = bytes[4096..]
        .windows(from.len())
        .position(|window| window == from)
        .expect("the text is in the payload")
        + 4096;
    bytes[at..at + to.len()].copy_from_slice(to);
    let digest = blake3::hash(&bytes[4096..]);
    bytes[40..72].copy_from_slice(digest.as_bytes());
    let digest = blake3::hash(&bytes[..224]);
    bytes[224..256].copy_from_slice(digest.as_bytes());
    std::fs::write(snapshot, bytes).expect("rewritten");
}

#[test]
fn a_snapshot_opens_to_the_resumed_history_without_copying_item_text() {
    let dir = temp_dir();
    let (_, path, resumed) = snapshot_of(dir.path(), small_rollout().as_bytes(), "small");
    assert!(is_snapshot(&path));
    let opened = open_snapshot(&path, SnapshotOptions::default()).expect("opens");
    // What the writer said it wrote is what the file holds.
    let again = dir.path().join("again.snap");
    let written = resumed.write_snapshot(&again).expect("written");
    assert_eq!(&written, opened.header());
    assert_eq!(written.entry_count, resumed.history().len() as u64);
    assert_eq!(written.history_version, resumed.history().version());
    assert_eq!(
        written.payload_digest,
        blake3::hash(&std::fs::read(&path).expect("file")[4096..])
    );
    assert_eq!(Some(opened.header().rollout), resumed.covered());
    assert_eq!(opened.header().rollout.lines, 8);
    let state = &opened.state();
    assert_eq!(
        state.thread_id.map(|id| id.to_string()).as_deref(),
        Some(THREAD_ID)
    );
    assert_eq!(
        state.previous_turn_settings.as_ref().map(|raw| raw.get()),
        Some(r#"{"model":"m","cwd":"/w"}"#)
    );
    assert!(state.ends_inside_turn);
    assert!(!state.legacy);
    assert_eq!(
        opened.history(),
        resumed.history(),
        "entries, version, policy and reference equal"
    );
    assert_eq!(
        opened.history().reference_context_item(),
        Some(&serde_json::json!({"model":"m","cwd":"/w"}))
    );
    assert!(
        opened.history().iter().all(|e| e.is_mapped()),
        "no item text was copied"
    );
    opened.history().assert_invariants();
    // Same projection and request bytes as the original.
    let options = ProjectionOptions::default();
    assert_eq!(
        opened
            .history()
            .project(&options)
            .expect("lenient")
            .to_json_array(),
        resumed
            .history()
            .project(&options)
            .expect("lenient")
            .to_json_array()
    );
    let compiler = PromptCompiler::new(RequestSettings::default());
    assert_eq!(
        compiler
            .compile(opened.history(), StepContext::default())
            .expect("ok")
            .body()
            .expect("body"),
        compiler
            .compile(resumed.history(), StepContext::default())
            .expect("ok")
            .body()
            .expect("body"),
    );
}

#[test]
fn a_mapped_history_is_fully_usable_after_the_file_is_replaced() {
    let dir = temp_dir();
    let (_, path, resumed) = snapshot_of(dir.path(), small_rollout().as_bytes(), "small");
    let mut opened = open_snapshot(&path, SnapshotOptions::default())
        .expect("opens")
        .into_history();
    // Replacing the file (a snapshot of another rollout) does not disturb the mapped history.
    let other = format!("{}\n{}\n", meta_line(), item_line(&user("other")));
    let (_, other_path, _) = snapshot_of(dir.path(), other.as_bytes(), "other");
    open_snapshot(&other_path, SnapshotOptions::default())
        .expect("opens")
        .write(&path)
        .expect("replaced");
    let fork = opened.clone();
    opened
        .record_json(r#"{"type":"function_call_output","call_id":"c1","output":"ok"}"#)
        .expect("recorded");
    opened.record_json(user("again")).expect("recorded");
    opened.drop_last_n_user_turns(1).expect("rolled back");
    opened.assert_invariants();
    assert_eq!(opened.len(), resumed.history().len() + 1);
    assert_eq!(
        jsons(&fork),
        jsons(resumed.history()),
        "the fork is untouched"
    );
    let projection = opened
        .project(&ProjectionOptions::default())
        .expect("lenient");
    assert!(projection.to_json_array().contains("héllo"));
}

#[test]
fn every_truncation_and_every_changed_byte_is_an_error() {
    let dir = temp_dir();
    let (_, path, resumed) = snapshot_of(dir.path(), small_rollout().as_bytes(), "small");
    let original = std::fs::read(&path).expect("file");
    // Undamaged, it opens to the resumed history.
    let opened = open_snapshot(&path, SnapshotOptions::default()).expect("opens");
    assert_eq!(opened.history(), resumed.history());
    let damaged = dir.path().join("damaged.snap");
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
    // Which error a changed byte gives follows from where it is (docs/snapshot-format.md): the
    // magic, the version, the format bytes, the rest of the 256-byte header (covered by the
    // header digest, or the digest itself), the zero padding up to the payload, the payload
    // (covered by the payload digest).
    let expected = |at: usize, error: &SnapshotError| match at {
        0..8 => matches!(error, SnapshotError::BadMagic { .. }),
        // A flip of the version (5) gives an older one (4, 1 to 4 being older) or one no build
        // wrote.
        8..12 => matches!(
            error,
            SnapshotError::UnsupportedVersion { .. } | SnapshotError::OlderVersion { found: 4, .. }
        ),
        12..15 => matches!(error, SnapshotError::UnsupportedFormat { .. }),
        15..256 => {
            matches!(error, SnapshotError::BadHeader { detail, .. } if detail == "header digest mismatch")
        }
        256..4096 => {
            matches!(error, SnapshotError::BadHeader { detail, .. } if detail.starts_with("padding byte"))
        }
        _ => matches!(error, SnapshotError::PayloadDigestMismatch { .. }),
    };
    assert!(original.len() > 4096, "a payload");
    for (at, flip) in (0..original.len()).flat_map(|at| [(at, 0x01u8), (at, 0xff)]) {
        let mut bytes = original.clone();
        bytes[at] ^= flip;
        std::fs::write(&damaged, &bytes).expect("write");
        let error = open_snapshot(&damaged, SnapshotOptions::default())
            .err()
            .unwrap_or_else(|| panic!("byte {at} ^ {flip:#x}: opened"));
        assert!(expected(at, &error), "byte {at} ^ {flip:#x}: {error:?}");
        // Without digest verification: never a panic; any history it yields is well-formed.
        if let Ok(opened) = open_snapshot(
            &damaged,
            SnapshotOptions {
                verify_digest: false,
                ..SnapshotOptions::default()
            },
        ) {
            opened.history().assert_invariants();
            // A projection either succeeds or names the item it cannot read.
            let _ = opened.history().project(&ProjectionOptions::default());
        }
    }
}

#[test]
fn version_and_format_errors_say_what_was_found() {
    let dir = temp_dir();
    let (_, path, _) = snapshot_of(dir.path(), small_rollout().as_bytes(), "small");
    let original = std::fs::read(&path).expect("file");
    // The file with one header byte range changed (not re-digested: the version and the format
    // bytes are refused before the header digest is checked).
    let refused = |at: usize, with: &[u8]| {
        let mut bytes = original.clone();
        bytes[at..at + with.len()].copy_from_slice(with);
        std::fs::write(&path, &bytes).expect("write");
        open_snapshot(&path, SnapshotOptions::default()).expect_err("refused")
    };
    let error = refused(8, &7u32.to_le_bytes());
    assert!(
        matches!(
            error,
            SnapshotError::UnsupportedVersion {
                found: 7,
                supported: 6,
                ..
            }
        ),
        "{error}"
    );
    // An older version is refused as such, naming both versions.
    let error = refused(8, &2u32.to_le_bytes());
    assert!(
        matches!(
            error,
            SnapshotError::OlderVersion {
                found: 2,
                supported: 6,
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("has format version 2, older than version 6"),
        "{error}"
    );
    let error = refused(12, &[2]);
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
}

/// The golden snapshots of the older format versions (1 to 4, each written from
/// `snapshot-v<n>.jsonl` by the build of that version) are refused: opening one, as the
/// program's own or untrusted, is `OlderVersion` naming its version and the supported one; a
/// resume of its rollout through it falls back (`old_version`, both versions) to exactly what a
/// resume without it gives; a snapshot-ready resume through it too, and the snapshot written from
/// that resume replaces the old one (a snapshot of any version may be replaced) with the
/// supported version, which the next resume uses.
#[test]
fn older_golden_snapshots_are_refused_and_resume_reads_the_rollout_instead() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let dir = temp_dir();
    for version in 1..SNAPSHOT_FORMAT_VERSION {
        let golden = fixtures.join(format!("snapshot-v{version}.snap"));
        for options in [SnapshotOptions::default(), SnapshotOptions::untrusted()] {
            let error = open_snapshot(&golden, options).expect_err("an older version");
            assert!(
                matches!(
                    error,
                    SnapshotError::OlderVersion { found, supported, .. }
                        if found == version && supported == SNAPSHOT_FORMAT_VERSION
                ),
                "version {version}: {error:?}"
            );
            assert!(
                error.to_string().contains(&format!(
                    "has format version {version}, older than version {SNAPSHOT_FORMAT_VERSION}"
                )),
                "{error}"
            );
        }
        let rollout = dir.path().join(format!("v{version}.jsonl"));
        std::fs::copy(
            fixtures.join(format!("snapshot-v{version}.jsonl")),
            &rollout,
        )
        .expect("copied");
        let snapshot = dir.path().join(format!("v{version}.snap"));
        std::fs::copy(&golden, &snapshot).expect("copied");
        let without = common::resume_path(&rollout, DEFAULT_TRUNCATION);
        let through = resume_with(&rollout, &snapshot, DEFAULT_TRUNCATION);
        let reason = through.fallback_reason().expect("falls back");
        assert!(
            matches!(
                reason,
                FallbackReason::OldVersion { found, supported }
                    if *found == version && *supported == SNAPSHOT_FORMAT_VERSION
            ),
            "version {version}: {reason:?}"
        );
        assert_eq!(
            reason.to_string(),
            format!(
                "the snapshot has format version {version}, older than version {SNAPSHOT_FORMAT_VERSION}, the only one this build reads"
            )
        );
        assert_eq!(through.history(), without.history(), "version {version}");
        assert_eq!(
            through.previous_turn_settings().map(|raw| raw.get()),
            without.previous_turn_settings().map(|raw| raw.get())
        );
        assert_eq!(through.ends_inside_turn(), without.ends_inside_turn());
        assert_eq!(through.incomplete_turn(), without.incomplete_turn());
        assert_eq!(through.report(), without.report());
        let ready = resume_file(
            &rollout,
            &ResumeOptions::new(DEFAULT_TRUNCATION)
                .snapshot_ready()
                .with_snapshot(&snapshot),
        )
        .expect("resumes");
        assert!(
            matches!(
                ready.fallback_reason(),
                Some(FallbackReason::OldVersion { .. })
            ),
            "{:?}",
            ready.source()
        );
        let header = ready
            .write_snapshot(&snapshot)
            .expect("replaces the old one");
        assert_eq!(header.format_version, SNAPSHOT_FORMAT_VERSION);
        let again = resume_with(&rollout, &snapshot, DEFAULT_TRUNCATION);
        assert!(again.used_snapshot(), "{:?}", again.source());
        assert_eq!(again.history(), without.history());
    }
}

/// The golden snapshot of format version 6, written from `snapshot-v6.jsonl` (`snapshot-v3.jsonl`
/// followed by a turn that never completed: `task_started`, a user message, a function call
/// without output; the same lines as `snapshot-v4.jsonl`): read by every build, and
/// rewritten byte for byte from the same rollout and from the opened file. Regenerate (only with
/// a new format version) with `AGENT_HISTORY_WRITE_GOLDEN=1 cargo test --test snapshot golden`.
#[test]
fn golden_snapshot_v6_reads_and_rewrites_identically() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let golden = fixtures.join("snapshot-v6.snap");
    let rollout = fixtures.join("snapshot-v6.jsonl");
    let resumed = resume_file(
        &rollout,
        &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
    )
    .expect("resumes");
    if std::env::var_os("AGENT_HISTORY_WRITE_GOLDEN").is_some() {
        resumed.write_snapshot(&golden).expect("golden written");
    }
    let opened = open_snapshot(&golden, SnapshotOptions::untrusted()).expect("golden opens");
    assert_eq!(opened.header().format_version, 6);
    let open_turn = opened
        .state()
        .open_turn
        .clone()
        .expect("the prefix ends inside a turn");
    let incomplete = resumed.incomplete_turn().expect("incomplete");
    assert_eq!(
        open_turn.turn_id.as_ref().map(|id| id.as_str()),
        Some("turn-open")
    );
    assert_eq!(open_turn.start, incomplete.start as u64);
    assert_eq!(open_turn.started_line, incomplete.started_line);
    assert_eq!(Some(opened.header().rollout), resumed.covered());
    assert_eq!(opened.history().entries(), resumed.history().entries());
    assert_eq!(opened.history().compactions_reachable(), 1);
    assert_eq!(
        opened.history().reachable_user_turns(),
        resumed.history().reachable_user_turns()
    );
    let baseline = opened
        .history()
        .world_state_baseline()
        .expect("the rollout ends with world-state lines");
    assert_eq!(Some(baseline), resumed.history().world_state_baseline());
    assert_eq!(
        serde_json::to_string(baseline).expect("json"),
        r#"{"environment":{"cwd":"/repo","shell":"zsh"},"model":{"slug":"gpt-5"}}"#
    );
    let dir = temp_dir();
    let golden_bytes = std::fs::read(&golden).expect("golden");
    let again = dir.path().join("again.snap");
    resumed.write_snapshot(&again).expect("written");
    assert_eq!(
        std::fs::read(&again).expect("file"),
        golden_bytes,
        "the writer no longer produces format version 6 byte for byte"
    );
    let copy = dir.path().join("copy.snap");
    opened.write(&copy).expect("written");
    assert_eq!(
        std::fs::read(&copy).expect("file"),
        golden_bytes,
        "an opened snapshot writes itself back unchanged"
    );
}

/// Resume = snapshot + later lines equals a full JSONL resume, for a snapshot taken after every
/// line of `text`; and a snapshot-ready resume through a snapshot covers what a full one covers.
/// Returns how many cut points used the snapshot.
fn check_resume_equivalence(name: &str, text: &[u8]) -> usize {
    let dir = temp_dir();
    let rollout_path = dir.path().join("rollout.jsonl");
    std::fs::write(&rollout_path, text).expect("write rollout");
    let full = common::resume_path(&rollout_path, DEFAULT_TRUNCATION);
    let ready = ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready();
    let full_ready = resume_file(&rollout_path, &ready).expect("resumes");
    let mut used = 0;
    let line_ends: Vec<usize> = text
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    for (k, &end) in line_ends.iter().enumerate() {
        let prefix_path = dir.path().join("prefix.jsonl");
        std::fs::write(&prefix_path, &text[..end]).expect("prefix");
        let Ok(prefix) = resume_file(&prefix_path, &ready) else {
            continue; // no session_meta yet: nothing to snapshot
        };
        let snapshot_path = dir.path().join(format!("cut-{k}.snap"));
        prefix
            .write_snapshot(&snapshot_path)
            .expect("snapshot written");
        let from_snapshot = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
        let context = format!(
            "{name}, snapshot after line {}: {:?}",
            k + 1,
            from_snapshot.fallback_reason().map(ToString::to_string)
        );
        assert_eq!(from_snapshot.history(), full.history(), "{context}");
        assert_eq!(
            from_snapshot.history().reference_context_item(),
            full.history().reference_context_item(),
            "{context}"
        );
        assert_eq!(
            from_snapshot
                .previous_turn_settings()
                .as_ref()
                .map(|raw| raw.get()),
            full.previous_turn_settings().as_ref().map(|raw| raw.get()),
            "{context}"
        );
        assert_eq!(from_snapshot.thread_id(), full.thread_id(), "{context}");
        assert_eq!(
            from_snapshot.ends_inside_turn(),
            full.ends_inside_turn(),
            "{context}"
        );
        assert_eq!(
            from_snapshot.incomplete_turn(),
            full.incomplete_turn(),
            "{context}"
        );
        if from_snapshot.used_snapshot() {
            used += 1;
            // Unless a later compaction or rollback replaced them (the version moved), the
            // entries the snapshot supplied are read from the map, not copied.
            if from_snapshot.history().version() == prefix.history().version() {
                assert!(
                    from_snapshot
                        .history()
                        .iter()
                        .take(prefix.history().len())
                        .all(|e| e.is_mapped()),
                    "{context}"
                );
            }
        }
        let ready_from_snapshot =
            resume_file(&rollout_path, &ready.clone().with_snapshot(&snapshot_path))
                .expect("resumes");
        assert_eq!(
            ready_from_snapshot.covered(),
            full_ready.covered(),
            "{context}"
        );
        assert_eq!(
            ready_from_snapshot.history(),
            full_ready.history(),
            "{context}"
        );
    }
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
    for seed in 0..6u64 {
        let writer = RolloutWriter::with_sink(Vec::new(), "memory", Durability::Flush);
        let mut session =
            Session::from_parts(History::new(), writer, thread("t")).with_id_assignment(false);
        session
            .append_raw("session_meta", &meta_payload())
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
                        .record_json(&user(&format!("q{step}")))
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
                        .record_json(&common::assistant("a"))
                        .expect("recorded");
                }
            }
        }
        let text = session.writer().sink().clone();
        let used = check_resume_equivalence(&format!("generated-{seed}"), &text);
        // A snapshot holds the scan facts and earlier states of its prefix: every cut point uses
        // it, compactions and rollbacks after it included.
        assert_eq!(
            used,
            text.iter().filter(|&&b| b == b'\n').count(),
            "seed {seed}"
        );
    }
}

#[test]
fn a_rewritten_rollout_or_another_policy_falls_back_to_a_full_resume() {
    let dir = temp_dir();
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    let (rollout_path, snapshot_path, _) = snapshot_of(dir.path(), &text, "interrupted");
    let used = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
    assert!(used.used_snapshot());
    assert!(matches!(
        used.source(),
        ResumeSource::Snapshot { covered } if covered.lines == 2
    ));
    // The rollout is replaced by another session's.
    let other = String::from_utf8(text.clone())
        .expect("utf-8")
        .replace("/home/dev/project", "/home/dev/Project")
        .into_bytes();
    assert_ne!(other, text);
    std::fs::write(&rollout_path, &other).expect("write");
    let fallback = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
    assert!(
        matches!(
            fallback.fallback_reason(),
            Some(FallbackReason::PrefixChanged)
        ),
        "{:?}",
        fallback.source()
    );
    assert_eq!(
        fallback.fallback_reason().expect("falls back").to_string(),
        "the rollout no longer starts with the prefix the snapshot covers"
    );
    // A shorter rollout: its first line only.
    let first_line = text.iter().position(|&b| b == b'\n').expect("a line") + 1;
    std::fs::write(&rollout_path, &text[..first_line]).expect("write");
    let fallback = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
    assert!(
        matches!(
            fallback.fallback_reason(),
            Some(FallbackReason::RolloutShorter { rollout_bytes, covered_bytes })
                if *rollout_bytes == first_line as u64 && *covered_bytes == text.len() as u64
        ),
        "{:?}",
        fallback.source()
    );
    assert!(fallback.history().is_empty());
    // Another truncation policy.
    std::fs::write(&rollout_path, &text).expect("write");
    let policy = TruncationPolicy::Bytes(100);
    let fallback = resume_with(&rollout_path, &snapshot_path, policy);
    assert!(
        matches!(
            fallback.fallback_reason(),
            Some(FallbackReason::TruncationMismatch { requested, .. }) if *requested == policy
        ),
        "{:?}",
        fallback.source()
    );
    assert_eq!(fallback.history().truncation(), policy);
}

/// Later lines that could change what the covered prefix means, each after a user item: a
/// rollback, a turn event, a `turn_context`, a compaction, an inter-agent line.
fn later_lines() -> [(String, &'static str); 5] {
    [
        (
            line(
                "event_msg",
                r#"{"type":"thread_rolled_back","num_turns":1}"#,
            ),
            "rollback",
        ),
        (
            line("event_msg", r#"{"type":"task_started","turn_id":"t"}"#),
            "turn event",
        ),
        (line("turn_context", r#"{"model":"m"}"#), "turn_context"),
        (
            line("compacted", r#"{"message":"s","replacement_history":[]}"#),
            "compaction",
        ),
        (
            line(
                "inter_agent_communication",
                r#"{"author":"/root","recipient":"/root/w","content":"go","trigger_turn":true}"#,
            ),
            "inter-agent line",
        ),
    ]
}

/// A snapshot holds the scan facts and the earlier states of its prefix: later lines that could
/// change what the prefix means are resumed through it, and the result is a full resume's.
#[test]
fn a_snapshot_is_used_whatever_lines_follow() {
    let dir = temp_dir();
    let prefix = format!("{}\n{}\n", meta_line(), item_line(&user("one")));
    let (rollout_path, snapshot_path, _) = snapshot_of(dir.path(), prefix.as_bytes(), "r");
    for (later, what) in later_lines() {
        let text = format!("{prefix}{}\n{later}\n", item_line(&user("two")));
        std::fs::write(&rollout_path, &text).expect("write");
        let resumed = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
        assert!(resumed.used_snapshot(), "{what:?}: {:?}", resumed.source());
        let full = common::resume_path(&rollout_path, DEFAULT_TRUNCATION);
        assert_eq!(resumed.history(), full.history(), "{what:?}");
        assert_eq!(
            resumed.history().reference_context_item(),
            full.history().reference_context_item(),
            "{what:?}"
        );
        assert_eq!(
            resumed.previous_turn_settings().map(|raw| raw.get()),
            full.previous_turn_settings().map(|raw| raw.get()),
            "{what:?}"
        );
        assert_eq!(
            resumed.ends_inside_turn(),
            full.ends_inside_turn(),
            "{what:?}"
        );
        assert_eq!(
            resumed.incomplete_turn(),
            full.incomplete_turn(),
            "{what:?}"
        );
    }
}

/// A stream (standard input) is checked against a snapshot as a file is: its covered prefix
/// is read and kept, so that the snapshot is used when it stands for it, and otherwise the full
/// resume replays the kept bytes and the rest, with the reason.
#[test]
fn a_stream_resumes_through_a_snapshot_or_falls_back_with_its_bytes() {
    let dir = temp_dir();
    let text = std::fs::read(example("session.jsonl")).expect("example");
    let half = text.len() / 2;
    let cut = half
        + text[half..]
            .iter()
            .position(|&b| b == b'\n')
            .expect("a line")
        + 1;
    let (_, snapshot_path, _) = snapshot_of(dir.path(), &text[..cut], "half");
    let options = ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot_path);
    let full =
        resume_reader(text.as_slice(), READER_LABEL, &ResumeOptions::default()).expect("resumes");
    let through = resume_reader(text.as_slice(), READER_LABEL, &options).expect("resumes");
    assert!(through.used_snapshot(), "{:?}", through.source());
    assert_eq!(through.history(), full.history());
    // Another stream: the snapshot does not stand for its start, and nothing of it is lost.
    let mut other = text.clone();
    let at = other
        .iter()
        .position(|&b| b == b'u')
        .expect("a byte to change");
    other[at] = b'U';
    let changed = resume_reader(other.as_slice(), READER_LABEL, &options).expect("resumes");
    let plain =
        resume_reader(other.as_slice(), READER_LABEL, &ResumeOptions::default()).expect("resumes");
    assert!(matches!(
        changed.fallback_reason(),
        Some(FallbackReason::PrefixChanged)
    ));
    assert_eq!(changed.history(), plain.history());
    assert_eq!(changed.report(), plain.report());
    // A stream shorter than the prefix: every byte of it is still read.
    let short = resume_reader(&text[..cut / 2], READER_LABEL, &options).expect("resumes");
    let plain =
        resume_reader(&text[..cut / 2], READER_LABEL, &ResumeOptions::default()).expect("resumes");
    assert!(matches!(
        short.fallback_reason(),
        Some(FallbackReason::RolloutShorter { .. })
    ));
    assert_eq!(short.history(), plain.history());
}

#[test]
fn strict_reading_does_not_use_a_snapshot_and_says_why() {
    let dir = temp_dir();
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    let (rollout_path, snapshot_path, _) = snapshot_of(dir.path(), &text, "interrupted");
    let strict = ResumeOptions::new(DEFAULT_TRUNCATION)
        .strict()
        .with_snapshot(&snapshot_path);
    let resumed = resume_file(&rollout_path, &strict).expect("resumes");
    assert!(matches!(
        resumed.fallback_reason(),
        Some(FallbackReason::StrictMode)
    ));
    // A snapshot that is not there: the full resume, with the open error as the reason.
    let missing = ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(dir.path().join("none"));
    let resumed = resume_file(&rollout_path, &missing).expect("resumes");
    let reason = resumed.fallback_reason().expect("falls back");
    assert!(
        matches!(reason, FallbackReason::Unreadable(SnapshotError::Io { .. })),
        "{reason:?}"
    );
    assert!(
        reason
            .to_string()
            .starts_with("the snapshot cannot be used: snapshot "),
        "{reason}"
    );
}

#[test]
fn a_prefix_that_does_not_end_at_a_line_boundary_falls_back() {
    let dir = temp_dir();
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    let first_line = text.iter().position(|&b| b == b'\n').expect("a line") + 1;
    let (rollout_path, snapshot_path, _) = snapshot_of(dir.path(), &text[..first_line], "r");
    std::fs::write(&rollout_path, &text).expect("the whole rollout");
    set_covered_prefix(&snapshot_path, 1, &text[..first_line + 10]);
    let result = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
    assert!(
        matches!(
            result.fallback_reason(),
            Some(FallbackReason::NotAtLineBoundary)
        ),
        "{:?}",
        result.source()
    );
    let full = common::resume_path(&rollout_path, DEFAULT_TRUNCATION);
    assert_eq!(result.history(), full.history());
}

/// A snapshot of a legacy-format rollout (bare meta and items, no envelope) is not used: resume
/// falls back (`legacy_format`) to the full resume, and the history is that resume's.
#[test]
fn a_snapshot_of_a_legacy_rollout_falls_back() {
    let dir = temp_dir();
    let text = format!(
        "{}\n{}\n",
        r#"{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2025-05-07T17:24:21.123Z"}"#,
        user("hello")
    );
    let (rollout_path, snapshot_path, resumed) = snapshot_of(dir.path(), text.as_bytes(), "old");
    assert!(resumed.report().legacy);
    let later = format!("{text}{}\n", user("again"));
    std::fs::write(&rollout_path, &later).expect("write");
    let result = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
    assert!(
        matches!(result.fallback_reason(), Some(FallbackReason::LegacyFormat)),
        "{:?}",
        result.source()
    );
    let full = common::resume_path(&rollout_path, DEFAULT_TRUNCATION);
    assert_eq!(result.history(), full.history());
    assert_eq!(result.history().len(), 2);
}

/// The lines after the covered prefix are read in the prefix's format (envelope), not detected
/// again from the first of them: a bare line shaped like a legacy file's session meta there is
/// what a full resume makes of it (a skipped line), not the start of a legacy file.
#[test]
fn the_lines_after_the_prefix_keep_the_envelope_format() {
    let dir = temp_dir();
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    let (rollout_path, snapshot_path, _) = snapshot_of(dir.path(), &text, "r");
    let mut later = text.clone();
    later.extend_from_slice(
        format!("{}\n{}\n", r#"{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2025-05-07T17:24:21.123Z"}"#, item_line(&user("enveloped"))).as_bytes(),
    );
    std::fs::write(&rollout_path, &later).expect("write");
    let result = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
    assert!(result.used_snapshot(), "{:?}", result.source());
    let full = common::resume_path(&rollout_path, DEFAULT_TRUNCATION);
    assert_eq!(result.history(), full.history());
}

/// A header that says it covers lines but no bytes (only a crafted file can) does not end at a
/// line boundary: resume falls back instead of replaying the whole rollout onto the snapshot's
/// history.
#[test]
fn a_snapshot_that_covers_lines_but_no_bytes_falls_back() {
    let dir = temp_dir();
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    let (rollout_path, snapshot_path, _) = snapshot_of(dir.path(), &text, "r");
    set_covered_prefix(&snapshot_path, 1, b"");
    let result = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
    let full = common::resume_path(&rollout_path, DEFAULT_TRUNCATION);
    assert_eq!(result.history(), full.history());
    assert!(
        matches!(
            result.fallback_reason(),
            Some(FallbackReason::NotAtLineBoundary)
        ),
        "{:?}",
        result.source()
    );
}

/// A header whose count of covered lines disagrees with the prefix it covers (digest intact,
/// header digest recomputed: only a crafted file) is not used, and `verify --rollout` says why
/// instead of claiming a match of its `u64::MAX` lines; the lines after it keep their numbers.
#[test]
fn a_header_that_miscounts_its_lines_falls_back() {
    let dir = temp_dir();
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    let (rollout_path, snapshot_path, _) = snapshot_of(dir.path(), &text, "r");
    let mut later = text.clone();
    later.extend_from_slice(b"{not json\n");
    std::fs::write(&rollout_path, &later).expect("a bad line after the prefix");
    let lines = text.iter().filter(|&&byte| byte == b'\n').count() as u64;
    for wrong in [u64::MAX, lines + 1, lines - 1] {
        set_covered_prefix(&snapshot_path, wrong, &text);
        let result = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
        let full = common::resume_path(&rollout_path, DEFAULT_TRUNCATION);
        assert_eq!(result.history(), full.history());
        assert_eq!(
            result.report(),
            full.report(),
            "the bad line keeps its number"
        );
        match result.fallback_reason() {
            Some(FallbackReason::LineCountMismatch {
                covered_lines,
                prefix_lines,
            }) => assert_eq!((*covered_lines, *prefix_lines), (wrong, lines)),
            other => panic!("{other:?}"),
        }
        let output = common::cli::run(&[
            "verify",
            snapshot_path.to_str().expect("utf-8"),
            "--rollout",
            rollout_path.to_str().expect("utf-8"),
            "--json",
        ]);
        let report: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("a JSON report");
        assert_eq!(report["rollout"]["matches"], false, "{report}");
        assert_eq!(
            report["rollout"]["source"]["fallback"]["reason"],
            "line_count_mismatch"
        );
    }
}

#[test]
fn a_snapshot_that_covers_no_session_meta_falls_back() {
    let dir = temp_dir();
    let text = std::fs::read(example("interrupted.jsonl")).expect("example");
    let (rollout_path, snapshot_path, _) = snapshot_of(dir.path(), &text, "r");
    set_covered_prefix(&snapshot_path, 0, b"");
    let result = resume_with(&rollout_path, &snapshot_path, DEFAULT_TRUNCATION);
    assert!(
        matches!(
            result.fallback_reason(),
            Some(FallbackReason::NoSessionMeta)
        ),
        "{:?}",
        result.source()
    );
    let full = common::resume_path(&rollout_path, DEFAULT_TRUNCATION);
    assert_eq!(result.history(), full.history());
    assert_eq!(result.thread_id(), full.thread_id());
}

#[test]
fn a_snapshot_needs_a_resume_that_recorded_its_prefix() {
    let dir = temp_dir();
    let resumed = common::resume_path(&example("interrupted.jsonl"), DEFAULT_TRUNCATION);
    assert_eq!(resumed.covered(), None);
    let error = resumed
        .write_snapshot(dir.path().join("s.snap"))
        .expect_err("no covered prefix");
    assert!(matches!(error, SnapshotError::NotCovered { .. }), "{error}");
    assert!(!dir.path().join("s.snap").exists());
}

#[test]
fn a_snapshot_ready_resume_leaves_a_line_still_being_written_for_later() {
    let dir = temp_dir();
    let complete = format!("{}\n{}\n", meta_line(), item_line(&user("one")));
    // A last line that is valid JSON but has no newline yet: a full resume uses it, a snapshot
    // must not cover it.
    let text = format!("{complete}{}", item_line(&user("two")));
    let path = dir.path().join("r.jsonl");
    std::fs::write(&path, &text).expect("write");
    let ready = resume_file(&path, &ResumeOptions::default().snapshot_ready()).expect("resumes");
    let covered = ready.covered().expect("covered");
    assert_eq!((covered.lines, covered.bytes), (2, complete.len() as u64));
    assert_eq!(covered.digest, blake3::hash(complete.as_bytes()));
    assert_eq!(ready.history().len(), 1);
    assert_eq!(
        common::resume_path(&path, DEFAULT_TRUNCATION)
            .history()
            .len(),
        2
    );
    // A file whose only line is unfinished has nothing to cover, and says so.
    let unfinished = dir.path().join("unfinished.jsonl");
    std::fs::write(&unfinished, meta_line()).expect("write");
    let error = resume_file(&unfinished, &ResumeOptions::default().snapshot_ready())
        .expect_err("nothing complete");
    assert!(
        matches!(error, agent_history::RolloutError::NoCompleteLine { bytes, .. } if bytes == meta_line().len() as u64),
        "{error:?}"
    );
    assert_eq!(
        common::resume_path(&unfinished, DEFAULT_TRUNCATION)
            .history()
            .len(),
        0
    );
    // The snapshot stands for the complete lines; the rest is replayed.
    let snapshot = dir.path().join("r.snap");
    ready.write_snapshot(&snapshot).expect("written");
    std::fs::write(&path, format!("{text}\n")).expect("the line is finished");
    let resumed = resume_with(&path, &snapshot, DEFAULT_TRUNCATION);
    assert!(resumed.used_snapshot(), "{:?}", resumed.source());
    assert_eq!(resumed.history().len(), 2);
    assert_eq!(resumed.entry_line(0), None, "from the snapshot");
    assert_eq!(resumed.entry_line(1), Some(3));
}

#[test]
fn a_session_writes_its_snapshot_and_resumes_through_it() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let snapshot = dir.path().join("rollout.snap");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("s")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    session.record_json(&user("one")).expect("recorded");
    session
        .record_json(r#"{"type":"function_call","name":"ls","arguments":"{}","call_id":"c1"}"#)
        .expect("recorded");
    let header = session.write_snapshot(&snapshot).expect("written");
    assert_eq!(header.rollout.lines, 3);
    session.record_json(&user("two")).expect("recorded");
    // The snapshot is refreshed from itself plus the lines appended since.
    let header = session.write_snapshot(&snapshot).expect("refreshed");
    assert_eq!(header.rollout.lines, 4);
    session.record_json(&user("three")).expect("recorded");
    drop(session);

    let options = ResumeOptions::default().with_snapshot(&snapshot);
    let resumed = Session::resume(&path, &options, Durability::Flush).expect("resumes");
    assert!(
        matches!(resumed.source(), ResumeSource::Snapshot { covered } if covered.lines == 4),
        "{:?}",
        resumed.source()
    );
    let full = common::resume_path(&path, DEFAULT_TRUNCATION);
    assert_eq!(resumed.session().history(), full.history());
    assert_eq!(resumed.session().thread_id(), thread("s"));
    let mut session = resumed.into_session();
    session.record_json(&user("four")).expect("appends");
    assert_eq!(
        common::resume_path(&path, DEFAULT_TRUNCATION)
            .history()
            .len(),
        session.history().len()
    );
}

/// The digests detect damage, not forgery: a crafted snapshot can hold an entry whose text is not
/// an item. A projection that must strip its image says so, instead of sending it unstripped.
#[test]
fn a_crafted_entry_that_does_not_parse_is_an_error_not_an_unstripped_image() {
    let dir = temp_dir();
    let image = r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:,"}]}"#;
    let text = format!("{}\n{}\n", meta_line(), item_line(image));
    let (_, snapshot, _) = snapshot_of(dir.path(), text.as_bytes(), "r");
    craft_payload(&snapshot, br#"{"type":"message""#, br#"["type","message""#);
    let opened = open_snapshot(&snapshot, SnapshotOptions::default()).expect("opens");
    let error = opened
        .history()
        .project(&ProjectionOptions::for_modalities(
            agent_history::Modalities::TEXT,
        ))
        .expect_err("the image cannot be stripped");
    assert!(
        matches!(
            error,
            agent_history::ProjectionError::UnreadableItem { position: 0, .. }
        ),
        "{error:?}"
    );
    // A model that takes images gets the item as it is: nothing needs reading.
    assert!(
        opened
            .history()
            .project(&ProjectionOptions::default())
            .is_ok()
    );
}

/// A crafted orphan output that does not parse is not sent, so a projection that drops it reads
/// nothing and succeeds. A call recorded later makes it sent while the index's media sets stay the
/// same: that projection must still read it, and say it cannot, rather than take the first
/// projection's media work as complete and send the image or audio unstripped. One medium at a
/// time, since each of the two stripping passes must report its own incomplete work.
#[test]
fn a_crafted_orphan_that_does_not_parse_is_an_error_once_its_call_makes_it_sent() {
    let parts = [
        r#"{"type":"input_image","image_url":"data:,"}"#,
        r#"{"type":"input_audio","audio_url":"data:,"}"#,
    ];
    let text_only = ProjectionOptions::for_modalities(agent_history::Modalities::TEXT);
    for part in parts {
        let dir = temp_dir();
        let orphan =
            format!(r#"{{"type":"function_call_output","call_id":"c1","output":[{part}]}}"#);
        let text = format!("{}\n{}\n", meta_line(), item_line(&orphan));
        let (_, snapshot, _) = snapshot_of(dir.path(), text.as_bytes(), "r");
        craft_payload(
            &snapshot,
            br#"{"type":"function_call_output""#,
            br#"["type","function_call_output""#,
        );
        let opened = open_snapshot(&snapshot, SnapshotOptions::default()).expect("opens");
        let mut history = opened.history().clone();
        let dropped = history.project(&text_only).expect("the orphan is not sent");
        assert_eq!(dropped.len(), 0, "{part}");
        history
            .record_json(r#"{"type":"function_call","name":"ls","arguments":"{}","call_id":"c1"}"#)
            .expect("recorded");
        let error = history
            .project(&text_only)
            .expect_err("the sent orphan cannot be stripped");
        assert!(
            matches!(
                error,
                agent_history::ProjectionError::UnreadableItem { position: 0, .. }
            ),
            "{part}: {error:?}"
        );
    }
}

#[test]
fn a_stray_temporary_file_does_not_block_the_next_writer() {
    let dir = temp_dir();
    let (_, path, _) = snapshot_of(dir.path(), small_rollout().as_bytes(), "small");
    let opened = open_snapshot(&path, SnapshotOptions::default()).expect("opens");
    let target = dir.path().join("history.snap");
    // What a crashed writer leaves (any name of that form).
    std::fs::write(dir.path().join(".history.snap.tmp-123"), b"partial").expect("write");
    opened.write(&target).expect("written");
    opened.write(&target).expect("written again");
    let strays: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp-"))
        .collect();
    assert_eq!(
        strays,
        [".history.snap.tmp-123"],
        "the old stray file, no new ones"
    );
}

/// Invalid UTF-8 inside an archived string is named as such, in every build profile (rkyv's
/// default error type drops the cause without debug assertions: CI runs this test in release).
#[test]
fn invalid_utf8_in_the_archive_is_named() {
    let dir = temp_dir();
    let (_, snapshot, _) = snapshot_of(dir.path(), small_rollout().as_bytes(), "small");
    craft_payload(&snapshot, "héllo".as_bytes(), b"h\xff\xfello");
    let error = open_snapshot(&snapshot, SnapshotOptions::default()).expect_err("invalid");
    assert!(
        matches!(error, SnapshotError::InvalidArchive { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("UTF-8"), "{message}");
    assert!(!message.contains("without error information"), "{message}");
}

/// Opened untrusted, a snapshot whose digests were recomputed after editing an entry's text is
/// refused when the text is not one JSON item or disagrees with any stored header field; the
/// error names the entry and the field. Opened as the program's own, it opens (the digests detect
/// damage, not forgery).
#[test]
fn an_untrusted_snapshot_has_every_entry_checked_against_its_json() {
    let items = [
        r#"{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>x"}]}"#,
        r#"{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"aaaaaaaaaaaaaaaa"}]}"#,
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}"#,
        r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"<skill>x</skill>"}]}"#,
    ];
    let text: String = std::iter::once(meta_line())
        .chain(items.iter().map(|item| item_line(item)))
        .map(|line| format!("{line}\n"))
        .collect();
    let cases: [(&str, &str, usize, &str); 8] = [
        (
            r#"{"type":"message","role":"developer""#,
            r#"["type","message","role","developer""#,
            0,
            "json",
        ),
        (r#"x"}]}"#, r#"x"}]]"#, 0, "json"),
        (
            r#""type":"message","id""#,
            r#""type":"messagf","id""#,
            1,
            "kind",
        ),
        (r#""role":"assistant""#, r#""role":"developer""#, 2, "role"),
        (r#""call_id":"c1""#, r#""call_id":"c2""#, 3, "call_id"),
        (r#""id":"msg_1""#, r#""id":"msg_2""#, 1, "item_id"),
        (r#""<skill>x</skill>""#, r#""aaaaaaaaaaaaaaaa""#, 4, "flags"),
        (
            r#""text":"aaaaaaaaaaaaaaaa""#,
            r#""text":"a","zzzzzzzzzz":1"#,
            1,
            "tokens",
        ),
    ];
    let dir = temp_dir();
    for (n, (from, to, entry, field)) in cases.into_iter().enumerate() {
        let (_, snapshot, _) = snapshot_of(dir.path(), text.as_bytes(), &format!("case{n}"));
        assert!(open_snapshot(&snapshot, SnapshotOptions::untrusted()).is_ok());
        craft_payload(&snapshot, from.as_bytes(), to.as_bytes());
        let error =
            open_snapshot(&snapshot, SnapshotOptions::untrusted()).expect_err("a crafted entry");
        match &error {
            SnapshotError::InvalidEntry {
                entry: found_entry,
                field: found_field,
                ..
            } => assert_eq!((*found_entry, *found_field), (entry, field), "{error}"),
            other => panic!("{other:?}"),
        }
        assert!(
            error
                .to_string()
                .contains(&format!("entry {entry}: invalid {field}")),
            "{error}"
        );
        let own = open_snapshot(&snapshot, SnapshotOptions::default()).expect("opens as own");
        assert_eq!(own.trust(), agent_history::SnapshotTrust::Own);
    }
}

/// A snapshot replaces a snapshot or an empty file, and nothing else unless told: not the rollout
/// it is made from (through a session too), not another file, not a dangling link; a directory
/// never.
#[test]
fn writing_a_snapshot_replaces_only_snapshots_unless_told() {
    use agent_history::{ExistingFile, Replace};
    use std::os::unix::fs::FileTypeExt as _;
    let dir = temp_dir();
    let (rollout, snapshot, resumed) = snapshot_of(dir.path(), small_rollout().as_bytes(), "r");
    let original = std::fs::read(&rollout).expect("rollout");
    let refused = |path: &Path, replace: Replace| match resumed.write_snapshot_with(path, replace) {
        Err(SnapshotError::WouldReplace { found, .. }) => found,
        other => panic!("{}: {other:?}", path.display()),
    };
    for replace in [Replace::SnapshotsOnly, Replace::Anything] {
        assert_eq!(refused(&rollout, replace), ExistingFile::SourceRollout);
    }
    let notes = dir.path().join("notes");
    std::fs::write(&notes, b"\x00\x01").expect("written");
    assert_eq!(
        refused(&notes, Replace::SnapshotsOnly),
        ExistingFile::Other { bytes: 2 }
    );
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).expect("symlink");
    assert_eq!(
        refused(&dangling, Replace::SnapshotsOnly),
        ExistingFile::DanglingLink
    );
    assert_eq!(
        refused(dir.path(), Replace::Anything),
        ExistingFile::Directory
    );
    // Nor does anything replace a FIFO (or a device): only regular files are replaced.
    let fifo = dir.path().join("fifo");
    common::fifo(&fifo);
    assert_eq!(refused(&fifo, Replace::Anything), ExistingFile::Special);
    assert!(
        std::fs::symlink_metadata(&fifo)
            .expect("still there")
            .file_type()
            .is_fifo()
    );
    assert_eq!(std::fs::read(&rollout).expect("rollout"), original);
    assert_eq!(std::fs::read(&notes).expect("notes"), b"\x00\x01");

    resumed
        .write_snapshot(&snapshot)
        .expect("a snapshot is replaced");
    // Through a link, the file it points to is replaced and the link stays a link.
    let link = dir.path().join("link.snap");
    std::os::unix::fs::symlink(&snapshot, &link).expect("symlink");
    std::fs::write(&snapshot, b"").expect("emptied");
    resumed
        .write_snapshot(&link)
        .expect("written through the link");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("the link")
            .file_type()
            .is_symlink()
    );
    assert!(is_snapshot(&snapshot));
    resumed
        .write_snapshot_with(&notes, Replace::Anything)
        .expect("anything is replaced when told");
    assert!(is_snapshot(&notes));
    // A copy of an opened snapshot obeys the same rule.
    let opened = open_snapshot(&snapshot, SnapshotOptions::default()).expect("opens");
    assert!(matches!(
        opened.write(&rollout),
        Err(SnapshotError::WouldReplace { .. })
    ));

    // A session never writes its snapshot over its own rollout.
    let path = dir.path().join("session.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("own")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    session.record_json(&user("hello")).expect("recorded");
    let before = std::fs::read(&path).expect("rollout");
    assert!(matches!(
        session.write_snapshot(&path),
        Err(agent_history::Error::Snapshot(
            SnapshotError::WouldReplace {
                found: ExistingFile::SourceRollout,
                ..
            }
        ))
    ));
    assert_eq!(std::fs::read(&path).expect("rollout"), before);
}

/// Each kind of snapshot damage has its own error, naming what was found.
#[test]
fn every_kind_of_snapshot_damage_has_its_own_error() {
    let dir = temp_dir();
    let (_, path, _) = snapshot_of(dir.path(), small_rollout().as_bytes(), "small");
    let original = std::fs::read(&path).expect("file");
    let open = |bytes: &[u8]| {
        let damaged = dir.path().join("damaged.snap");
        std::fs::write(&damaged, bytes).expect("write");
        open_snapshot(&damaged, SnapshotOptions::default()).expect_err("damaged")
    };
    let with_header_digest = |mut bytes: Vec<u8>| {
        let digest = blake3::hash(&bytes[..224]);
        bytes[224..256].copy_from_slice(digest.as_bytes());
        bytes
    };

    // Bytes after the payload the header declares.
    let error = open(&[original.as_slice(), b"extra"].concat());
    assert!(
        matches!(error, SnapshotError::TrailingBytes { expected, found, .. } if found == expected + 5),
        "{error:?}"
    );
    // A header byte changed, its digest not recomputed.
    let mut bytes = original.clone();
    bytes[16] ^= 1;
    let error = open(&bytes);
    assert!(
        matches!(&error, SnapshotError::BadHeader { detail, .. } if detail.contains("header digest")),
        "{error:?}"
    );
    // Padding that is not zero (it lies outside the header digest).
    let mut bytes = original.clone();
    bytes[300] = 1;
    let error = open(&bytes);
    assert!(
        matches!(&error, SnapshotError::BadHeader { detail, .. } if detail.contains("padding byte 300")),
        "{error:?}"
    );
    // Another payload offset, digest recomputed.
    let mut bytes = original.clone();
    bytes[24..32].copy_from_slice(&8192u64.to_le_bytes());
    let error = open(&with_header_digest(bytes));
    assert!(
        matches!(&error, SnapshotError::BadHeader { detail, .. } if detail.contains("payload offset 8192")),
        "{error:?}"
    );
    // A payload byte changed, digests not recomputed.
    let mut bytes = original.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    let error = open(&bytes);
    assert!(
        matches!(error, SnapshotError::PayloadDigestMismatch { .. }),
        "{error:?}"
    );
    // A payload that is not a valid archive, digests recomputed: the archive's root pointer
    // (the last bytes) points outside the payload.
    let mut bytes = original.clone();
    let len = bytes.len();
    bytes[len - 4..].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let digest = blake3::hash(&bytes[4096..]);
    bytes[40..72].copy_from_slice(digest.as_bytes());
    let error = open(&with_header_digest(bytes));
    assert!(
        matches!(&error, SnapshotError::InvalidArchive { detail, .. } if !detail.is_empty()),
        "{error:?}"
    );
    // An entry count that disagrees with the archive, digest recomputed.
    let mut bytes = original;
    bytes[16..24].copy_from_slice(&99u64.to_le_bytes());
    let error = open(&with_header_digest(bytes));
    assert!(
        matches!(&error, SnapshotError::InvalidArchive { detail, .. } if detail.contains("99 in the header")),
        "{error:?}"
    );
}

/// A crafted snapshot can claim any token count for an entry: the running total saturates at
/// `u64::MAX`, and a rollback that removes such an entry leaves the total of what remains (found
/// by the `snapshot_file` fuzz target: the total fell to 0, and the invariant check failed).
#[test]
fn a_crafted_token_count_that_saturates_the_total_survives_a_rollback() {
    let dir = temp_dir();
    // 0x3A5C tokens: a count whose bytes stand out in the payload.
    let big = user(&"a".repeat(4 * 0x3A5C));
    let text = format!(
        "{}\n{}\n{}\n",
        meta_line(),
        item_line(&user("first")),
        item_line(&big)
    );
    let (_, snapshot, _) = snapshot_of(dir.path(), text.as_bytes(), "r");
    craft_payload(&snapshot, &0x3A5Cu64.to_le_bytes(), &u64::MAX.to_le_bytes());
    let mut history = open_snapshot(&snapshot, SnapshotOptions::default())
        .expect("opens")
        .into_history();
    assert_eq!(history.estimated_tokens(), u64::MAX);
    history.drop_last_n_user_turns(1).expect("rolls back");
    assert_eq!(history.len(), 1);
    let kept = history.get(0).expect("kept").tokens();
    assert_eq!(kept, 2);
    assert_eq!(history.estimated_tokens(), kept);
    history.assert_invariants();
}

/// The load report through a snapshot is the one without: the covered prefix's byte-order mark,
/// blank and malformed lines, left-out line types and world-state issues are kept in the
/// snapshot, and the lines after it continue them (lists up to their limits, in file order).
#[test]
fn the_load_report_through_a_snapshot_is_the_one_without() {
    let dir = temp_dir();
    let prefix = [
        meta_line(),
        String::new(),
        "{not json".to_owned(),
        item_line(&user("one")),
        line("token_usage_record", r#"{"total":3}"#),
        line("world_state", r#"{"full":false,"state":{"x":1}}"#),
    ];
    let later = [
        "{also not json".to_owned(),
        String::new(),
        item_line(&user("two")),
        line("token_usage_record", r#"{"total":4}"#),
    ];
    let text = |lines: &[String]| format!("\u{feff}{}", common::rollout_text(lines));
    let (rollout, snapshot, covered) = snapshot_of(dir.path(), text(&prefix).as_bytes(), "r");
    assert_eq!(covered.report().skip_counts.total(), 2);
    assert_eq!(covered.report().repaired.len(), 1, "the byte-order mark");
    assert_eq!(covered.report().world_state.ignored_patches, 1);
    let whole: Vec<String> = prefix.iter().chain(&later).cloned().collect();
    std::fs::write(&rollout, text(&whole)).expect("the later lines");
    let through = resume_with(&rollout, &snapshot, DEFAULT_TRUNCATION);
    assert!(through.used_snapshot(), "{:?}", through.source());
    let full = common::resume_path(&rollout, DEFAULT_TRUNCATION);
    assert_eq!(through.report(), full.report());
    assert_eq!(full.report().skip_counts.total(), 4);
    assert_eq!(full.report().left_out.line_type("token_usage_record"), 2);
    // The CLI says so too: `project --snapshot` reports the prefix's skipped lines.
    let output = common::cli::run(&[
        "project",
        rollout.to_str().expect("utf-8"),
        "--snapshot",
        snapshot.to_str().expect("utf-8"),
    ]);
    let stderr = common::cli::text(&output.stderr);
    assert!(
        stderr.contains("4 skipped (2 blank, 2 malformed)") && stderr.contains("line 3"),
        "{stderr}"
    );
}
