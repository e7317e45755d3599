//! Resuming a long session: a memory-mapped snapshot against a full JSONL resume of the same
//! rollout, measured in the same run and reported as ratios. Run with
//! `cargo bench --bench snapshot` (`AGENT_HISTORY_BENCH_FIRST_BODY=1`: only the resume of a 100 MB
//! session to its first request input, through a snapshot and from JSONL, against the floor of
//! the snapshot path).

use std::hint::black_box;
use std::time::Instant;

mod common;
use common::{median, ratio};

use agent_history::{
    DEFAULT_TRUNCATION, Durability, History, ProjectionOptions, ResumeOptions, RolloutWriter,
    Session, SnapshotOptions, ThreadId, open_snapshot, resume_file,
};

fn main() {
    if std::env::var_os("AGENT_HISTORY_BENCH_FIRST_BODY").is_some() {
        // Only the resume to the first request input (about a minute).
        let dir = std::env::temp_dir().join(format!("agent-history-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        first_request_body(&dir);
        std::fs::remove_dir_all(&dir).ok();
        return;
    }
    // A 30,000-item session (~ 20 MB): turns of a user message, a call, a 500-byte output and
    // an answer.
    let writer = RolloutWriter::with_sink(Vec::new(), "memory", Durability::Buffered);
    let thread_id = ThreadId::random();
    let mut session =
        Session::from_parts(History::new(), writer, thread_id).with_id_assignment(false);
    session
        .append_raw(
            "session_meta",
            &format!(r#"{{"id":"{thread_id}","timestamp":"2026-11-03T14:00:00.000Z"}}"#),
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
    let resumed = resume_file(
        &rollout_path,
        &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
    )
    .expect("resumes");
    resumed.write_snapshot(&snapshot_path).expect("snapshot");
    println!(
        "session: {} items, rollout {} MB",
        resumed.history().len(),
        text.len() / 1_000_000
    );

    open_vs_blake3("small items (400 B on average)", &snapshot_path);
    large_outputs(&dir);
    // For a profiler (`perf record -g` on this binary): only opens of the snapshot with 3.7 KB
    // outputs, this many times.
    if let Some(opens) = std::env::var("AGENT_HISTORY_BENCH_PROFILE_OPENS")
        .ok()
        .and_then(|opens| opens.parse::<usize>().ok())
    {
        let large = dir.join("large.snap");
        for _ in 0..opens {
            black_box(open_snapshot(&large, SnapshotOptions::default()).expect("opens"));
        }
        std::fs::remove_dir_all(&dir).ok();
        return;
    }

    let full_options = ResumeOptions::new(DEFAULT_TRUNCATION);
    let full = median(5, || {
        black_box(resume_file(&rollout_path, &full_options).expect("resumes"));
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
                    ..SnapshotOptions::default()
                },
            )
            .expect("opens"),
        );
    });
    let untrusted = median(5, || {
        black_box(open_snapshot(&snapshot_path, SnapshotOptions::untrusted()).expect("opens"));
    });
    let with_snapshot = ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot_path);
    let with_tail = median(5, || {
        let resumed = resume_file(&rollout_path, &with_snapshot).expect("resumes");
        assert!(resumed.used_snapshot());
        black_box(resumed);
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
        "open snapshot untrusted (every entry parsed) vs JSONL resume",
        untrusted,
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
    let options = ProjectionOptions::default();
    let projection_mapped = mapped.history().project(&options).expect("lenient");
    let projection_owned = resumed.history().project(&options).expect("lenient");
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
    codex_session(&dir);
    first_request_body(&dir);
    std::fs::remove_dir_all(&dir).ok();
}

/// Opening a snapshot with its digest verified against a bare BLAKE3 of the same bytes (the file
/// read into memory once, outside the timing; the open maps the same file, warm in the page
/// cache): median and interquartile range of the ratio over 31 interleaved pairs, for the open
/// alone and for the open plus dropping what it built.
fn open_vs_blake3(session: &str, path: &std::path::Path) {
    let bytes = std::fs::read(path).expect("snapshot");
    let (mut opens, mut with_drops, mut hashes) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..31 {
        let open = || {
            let start = Instant::now();
            let snapshot = open_snapshot(path, SnapshotOptions::default()).expect("opens");
            let opened = start.elapsed();
            drop(black_box(snapshot));
            (opened, start.elapsed())
        };
        let hash = || {
            let start = Instant::now();
            black_box(blake3::hash(black_box(&bytes)));
            start.elapsed()
        };
        let ((open, with_drop), hash) = if pair % 2 == 0 {
            let open = open();
            (open, hash())
        } else {
            let hash = hash();
            (open(), hash)
        };
        opens.push(open.as_secs_f64());
        with_drops.push(with_drop.as_secs_f64());
        hashes.push(hash.as_secs_f64().max(1e-9));
    }
    let quartiles = |times: &[f64]| pair_quartiles(times, &hashes);
    let median = |times: &[f64]| median_ms(times);
    println!(
        "snapshot of {} MB, {session}; BLAKE3 {:.2} ms (31 pairs)",
        bytes.len() / 1_000_000,
        median(&hashes)
    );
    for (name, times) in [("open", &opens), ("open + drop", &with_drops)] {
        let (ratio, low, high) = quartiles(times);
        println!(
            "  {:<60} {ratio:>10.4}× blake3 [{low:.3}–{high:.3}] ({:.2} ms)",
            format!("{name} (digest verified) vs BLAKE3 of the file"),
            median(times)
        );
    }
}

/// The median and the quartiles of the ratios `numerator[i] / denominator[i]`, each taken within
/// its pair: `(median, first quartile, third quartile)`.
fn pair_quartiles(numerator: &[f64], denominator: &[f64]) -> (f64, f64, f64) {
    let mut ratios: Vec<f64> = numerator
        .iter()
        .zip(denominator)
        .map(|(n, d)| n / d)
        .collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

/// The median of `times` (seconds), in milliseconds.
fn median_ms(times: &[f64]) -> f64 {
    let mut times = times.to_vec();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2] * 1e3
}

/// The same shape of session with tool outputs of 3.7 KB, the average of `benches/compare.rs`'s
/// sessions: 30,000 items, about 30 MB. Only the open against BLAKE3 is measured.
fn large_outputs(dir: &std::path::Path) {
    let (_, snapshot_path) = write_session_with_outputs(dir, "large", 7_500);
    open_vs_blake3("outputs of 3.7 KB", &snapshot_path);
}

/// A rollout of `turns` turns (a user message, a call, its 3.7 KB output, an answer), written to
/// `{name}.jsonl` in `dir`, and a snapshot of all of it, `{name}.snap`.
fn write_session_with_outputs(
    dir: &std::path::Path,
    name: &str,
    turns: usize,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let writer = RolloutWriter::with_sink(Vec::new(), "memory", Durability::Buffered);
    let thread_id = ThreadId::random();
    let mut session =
        Session::from_parts(History::new(), writer, thread_id).with_id_assignment(false);
    session
        .append_raw(
            "session_meta",
            &format!(r#"{{"id":"{thread_id}","timestamp":"2026-11-03T14:00:00.000Z"}}"#),
        )
        .expect("meta");
    let output = "lorem ipsum dolor sit amet ".repeat(137);
    for turn in 0..turns {
        for json in [
            format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"question {turn}"}}]}}"#
            ),
            format!(
                r#"{{"type":"function_call","id":"fc_{turn}","name":"shell","arguments":"{{\"command\":[\"ls\"]}}","call_id":"c{turn}"}}"#
            ),
            format!(r#"{{"type":"function_call_output","call_id":"c{turn}","output":"{output}"}}"#),
            format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"answer {turn}"}}]}}"#
            ),
        ] {
            session.record_json(&json).expect("recorded");
        }
    }
    session.flush().expect("flushed");
    let rollout_path = dir.join(format!("{name}.jsonl"));
    let snapshot_path = dir.join(format!("{name}.snap"));
    std::fs::write(&rollout_path, session.writer().sink()).expect("write");
    resume_file(
        &rollout_path,
        &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
    )
    .expect("resumes")
    .write_snapshot(&snapshot_path)
    .expect("snapshot");
    (rollout_path, snapshot_path)
}

/// Resuming a 100 MB session up to its first request input: a full JSONL resume, a resume
/// through a snapshot that covers the whole rollout (the rollout's bytes hashed and compared, the
/// snapshot mapped with its digest verified), and the floor of the snapshot path — a BLAKE3 of
/// each file and a copy of the input's bytes into a fresh buffer — in interleaved triples; each
/// path ends with the projection's JSON array written into a fresh `Vec` of its size. Median and
/// interquartile range of each ratio within its triple.
fn first_request_body(dir: &std::path::Path) {
    let (rollout_path, snapshot_path) = write_session_with_outputs(dir, "first-body", 25_000);
    let rollout = std::fs::read(&rollout_path).expect("rollout");
    let snapshot = std::fs::read(&snapshot_path).expect("snapshot");
    let options = ProjectionOptions::default();
    let input = |history: &History| {
        let projection = history.project(&options).expect("lenient");
        let mut body = Vec::with_capacity(projection.json_array_len());
        projection.write_json_array(&mut body).expect("vec");
        body
    };
    let full_options = ResumeOptions::new(DEFAULT_TRUNCATION);
    let snapshot_options = ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot_path);
    let expected = input(
        resume_file(&rollout_path, &full_options)
            .expect("resumes")
            .history(),
    );
    let through_snapshot = resume_file(&rollout_path, &snapshot_options).expect("resumes");
    assert!(
        through_snapshot.used_snapshot(),
        "the snapshot path is taken"
    );
    assert!(
        input(through_snapshot.history()) == expected,
        "both paths send the same input"
    );
    drop(through_snapshot);
    let mut times: [Vec<f64>; 3] = Default::default();
    for triple in 0..15 {
        for which in (0..3).map(|step| (triple + step) % 3) {
            let start = Instant::now();
            match which {
                0 => {
                    let resumed = resume_file(&rollout_path, &full_options).expect("resumes");
                    black_box(input(resumed.history()));
                }
                1 => {
                    let resumed = resume_file(&rollout_path, &snapshot_options).expect("resumes");
                    black_box(input(resumed.history()));
                }
                _ => {
                    black_box(blake3::hash(black_box(&rollout)));
                    black_box(blake3::hash(black_box(&snapshot)));
                    black_box(black_box(&expected).to_vec());
                }
            }
            times[which].push(start.elapsed().as_secs_f64());
        }
    }
    let quartiles = pair_quartiles;
    let median = median_ms;
    println!(
        "first request input of a {} MB rollout ({} MB snapshot, {} MB input): JSONL {:.1} ms, snapshot {:.1} ms, floor {:.1} ms (15 triples)",
        rollout.len() / 1_000_000,
        snapshot.len() / 1_000_000,
        expected.len() / 1_000_000,
        median(&times[0]),
        median(&times[1]),
        median(&times[2]),
    );
    for (name, numerator, denominator) in [
        ("through the snapshot vs JSONL resume", &times[1], &times[0]),
        (
            "floor (BLAKE3 of both files + copy) vs JSONL resume",
            &times[2],
            &times[0],
        ),
        ("through the snapshot vs its floor", &times[1], &times[2]),
    ] {
        let (ratio, low, high) = quartiles(numerator, denominator);
        println!("  {name:<58} {ratio:>8.3}× [{low:.3}–{high:.3}]");
    }
}

/// A Codex-shaped session that continues after its snapshot: 3,000 turns with turn events, a
/// `turn_context`, a `user_message` event, a call with its exec event and output, and a compaction
/// (with replacement history) every 200 turns; the snapshot covers the first 2,900 turns.
fn codex_session(dir: &std::path::Path) {
    let body = "lorem ipsum dolor sit amet ".repeat(20);
    let line = |kind: &str, payload: &str| {
        format!(r#"{{"timestamp":"2026-11-03T14:00:01.137Z","type":"{kind}","payload":{payload}}}"#)
    };
    let user = |text: &str| {
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        )
    };
    let mut lines = vec![line(
        "session_meta",
        &format!(
            r#"{{"id":"{}","timestamp":"2026-11-03T14:00:00.000Z"}}"#,
            ThreadId::random()
        ),
    )];
    let mut covered = 0;
    for turn in 0..3_000 {
        if turn == 2_900 {
            covered = lines.len();
        }
        let id = format!("turn-{turn}");
        lines.push(line(
            "event_msg",
            &format!(r#"{{"type":"task_started","turn_id":"{id}"}}"#),
        ));
        lines.push(line(
            "turn_context",
            &format!(
                r#"{{"turn_id":"{id}","cwd":"/w","approval_policy":"on-request","sandbox_policy":{{"type":"workspace-write"}},"model":"gpt-5.1-codex"}}"#
            ),
        ));
        lines.push(line(
            "event_msg",
            &format!(r#"{{"type":"user_message","message":"question {turn}","images":[]}}"#),
        ));
        lines.push(line(
            "response_item",
            &user(&format!("question {turn} {body}")),
        ));
        lines.push(line(
            "response_item",
            &format!(
                r#"{{"type":"function_call","id":"fc_{turn}","name":"shell","arguments":"{{}}","call_id":"c{turn}"}}"#
            ),
        ));
        lines.push(line(
            "event_msg",
            &format!(r#"{{"type":"exec_command_end","call_id":"c{turn}","exit_code":0}}"#),
        ));
        lines.push(line(
            "response_item",
            &format!(r#"{{"type":"function_call_output","call_id":"c{turn}","output":"{body}"}}"#),
        ));
        if turn % 200 == 199 {
            lines.push(line(
                "compacted",
                &format!(
                    r#"{{"message":"summary {turn}","replacement_history":[{},{}]}}"#,
                    user(&format!("question {turn} {body}")),
                    user(&format!("summary of the turns up to {turn}"))
                ),
            ));
        }
        lines.push(line(
            "response_item",
            &format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"answer {turn}"}}]}}"#
            ),
        ));
        lines.push(line(
            "event_msg",
            &format!(r#"{{"type":"task_complete","turn_id":"{id}"}}"#),
        ));
    }
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let prefix: String = lines[..covered]
        .iter()
        .map(|line| format!("{line}\n"))
        .collect();
    let rollout_path = dir.join("codex.jsonl");
    let snapshot_path = dir.join("codex.snap");
    std::fs::write(&rollout_path, &prefix).expect("write");
    let prefix_resumed = resume_file(
        &rollout_path,
        &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
    )
    .expect("resumes");
    prefix_resumed
        .write_snapshot(&snapshot_path)
        .expect("snapshot");
    std::fs::write(&rollout_path, &text).expect("write");
    let snapshot_bytes = std::fs::metadata(&snapshot_path).expect("snapshot").len();
    println!(
        "codex session: {} lines, rollout {} MB, snapshot of the first {covered} lines {} MB ({} earlier states)",
        lines.len(),
        text.len() / 1_000_000,
        snapshot_bytes / 1_000_000,
        prefix_resumed.history().compactions_reachable()
    );
    let full_options = ResumeOptions::new(DEFAULT_TRUNCATION);
    let full = median(5, || {
        black_box(resume_file(&rollout_path, &full_options).expect("resumes"));
    });
    let with_snapshot = ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot_path);
    let through = median(5, || {
        let resumed = resume_file(&rollout_path, &with_snapshot).expect("resumes");
        assert!(resumed.used_snapshot(), "{:?}", resumed.source());
        black_box(resumed);
    });
    ratio(
        "codex session: snapshot + 100 later turns vs JSONL resume",
        through,
        "jsonl",
        full,
    );
}
