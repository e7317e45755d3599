//! Resuming a long session: a memory-mapped snapshot against a full JSONL resume of the same
//! rollout, measured in the same run and reported as ratios. Run with
//! `cargo bench --bench snapshot`.

use std::hint::black_box;

mod common;
use common::{median, ratio};

use agent_history::rollout::{self, Rollout};
use agent_history::snapshot::{
    RolloutPosition, SnapshotExtras, SnapshotOptions, open_snapshot, write_snapshot,
};
use agent_history::{DEFAULT_TRUNCATION, Durability, History, RolloutWriter, Session};

fn main() {
    // A 30,000-item session (~ 20 MB): turns of a user message, a call, a 500-byte output and
    // an answer.
    let writer = RolloutWriter::with_sink(Vec::new(), "memory", Durability::Buffered);
    let mut session =
        Session::from_parts(History::new(), writer, "bench".into()).with_id_assignment(false);
    session
        .append_raw(
            "session_meta",
            r#"{"id":"bench","timestamp":"2026-11-03T14:00:00.000Z"}"#,
        )
        .expect("meta");
    let body = "lorem ipsum dolor sit amet ".repeat(20);
    for turn in 0..7_500 {
        for json in [
            format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"question {turn} {body}"}}]}}"#
            ),
            format!(
                r#"{{"type":"function_call","id":"fc_{turn}","name":"shell","arguments":"{{\"command\":[\"ls\"]}}","call_id":"c{turn}"}}"#
            ),
            format!(r#"{{"type":"function_call_output","call_id":"c{turn}","output":"{body}"}}"#),
            format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"answer {turn}"}}]}}"#
            ),
        ] {
            session.record_json(&json).expect("recorded");
        }
    }
    session.flush().expect("flushed");
    let text = session.writer().sink().clone();
    let dir = std::env::temp_dir().join(format!("agent-history-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let rollout_path = dir.join("rollout.jsonl");
    let snapshot_path = dir.join("rollout.snap");
    std::fs::write(&rollout_path, &text).expect("write");
    let read = Rollout::read(text.as_slice(), "bench", Default::default()).expect("reads");
    let resumed = read.resume(DEFAULT_TRUNCATION);
    let lines = text.iter().filter(|&&b| b == b'\n').count() as u64;
    write_snapshot(
        &snapshot_path,
        &resumed.history,
        RolloutPosition::of_prefix(&text, lines),
        &SnapshotExtras::of(&read, &resumed),
    )
    .expect("snapshot");
    println!(
        "session: {} items, rollout {} MB",
        resumed.history.len(),
        text.len() / 1_000_000
    );

    let full = median(5, || {
        black_box(rollout::resume_file(&rollout_path, DEFAULT_TRUNCATION).expect("resumes"));
    });
    let verified = median(9, || {
        black_box(open_snapshot(&snapshot_path, SnapshotOptions::default()).expect("opens"));
    });
    let unverified = median(9, || {
        black_box(
            open_snapshot(
                &snapshot_path,
                SnapshotOptions {
                    verify_digest: false,
                },
            )
            .expect("opens"),
        );
    });
    let with_tail = median(5, || {
        black_box(
            agent_history::snapshot::resume_with_snapshot(
                &rollout_path,
                &snapshot_path,
                DEFAULT_TRUNCATION,
            )
            .expect("resumes"),
        );
    });
    ratio(
        "open snapshot (digest verified) vs JSONL resume",
        verified,
        "jsonl",
        full,
    );
    ratio(
        "open snapshot (no digest) vs JSONL resume",
        unverified,
        "jsonl",
        full,
    );
    ratio(
        "snapshot + rollout prefix check vs JSONL resume",
        with_tail,
        "jsonl",
        full,
    );

    let mapped = open_snapshot(&snapshot_path, SnapshotOptions::default()).expect("opens");
    let options = agent_history::ProjectionOptions::default();
    let projection_mapped = mapped.history.project(&options).expect("lenient");
    let projection_owned = resumed.history.project(&options).expect("lenient");
    let mut buffer = Vec::with_capacity(text.len());
    let from_map = median(9, || {
        buffer.clear();
        projection_mapped
            .write_json_array(&mut buffer)
            .expect("vec");
    });
    let from_heap = median(9, || {
        buffer.clear();
        projection_owned.write_json_array(&mut buffer).expect("vec");
    });
    ratio(
        "write request input from the map vs from the heap",
        from_map,
        "heap",
        from_heap,
    );
    std::fs::remove_dir_all(&dir).ok();
}
