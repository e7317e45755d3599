//! Resume costs that must stay linear in the file, against a baseline from the same run:
//! legacy compactions (user messages alternating with `compacted` lines without replacement
//! history) at ten times the length, and a flood of blank lines against the same bytes of items.
//! A Claude Code transcript of tool calls with progress records in the chain (versions before
//! 2.1.85) read and its conversation recorded, at four times the turns, each against a `Value`
//! parse of its own lines, paired (the two ratios equal: linear). Last, JSONL resume throughput:
//! a rollout of generated Codex-style items against reading the same bytes and parsing each line
//! into a `serde_json::Value`, paired.
//! Run with `cargo bench --bench resume`; the ratios are the result
//! (`AGENT_HISTORY_BENCH_JSONL=1`: the throughput section alone).

use std::hint::black_box;
use std::time::Instant;

mod common;
mod items;
use common::{median, ratio};

use agent_history::{
    DEFAULT_TRUNCATION, READER_LABEL, ReadMode, ResumeOptions, Transcript, resume_reader,
};

const META: &str = r#"{"timestamp":"2026-11-03T14:00:00.000Z","type":"session_meta","payload":{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2026-11-03T14:00:00.000Z"}}"#;

fn user_line(n: usize) -> String {
    format!(
        r#"{{"timestamp":"2026-11-03T14:00:01.000Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"question {n}"}}]}}}}"#
    )
}

/// `pairs` user messages, each followed by a legacy `compacted` line.
fn legacy(pairs: usize) -> Vec<u8> {
    let mut text = format!("{META}\n");
    for n in 0..pairs {
        text.push_str(&user_line(n));
        text.push('\n');
        text.push_str(
            r#"{"timestamp":"2026-11-03T14:00:02.000Z","type":"compacted","payload":{"message":"summary"}}"#,
        );
        text.push('\n');
    }
    text.into_bytes()
}

/// `turns` turns of a user message and an answer, a compaction (with a replacement history of
/// the last three user messages and the summary) after every fourth: resume replays every
/// compaction and keeps the state before each for rollbacks.
fn compacting(turns: usize) -> Vec<u8> {
    let mut text = format!("{META}\n");
    let user_item = |n: usize| {
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"question {n}"}}]}}"#
        )
    };
    for n in 0..turns {
        text.push_str(&user_line(n));
        text.push('\n');
        text.push_str(r#"{"timestamp":"2026-11-03T14:00:01.500Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"an answer"}]}}"#);
        text.push('\n');
        if n % 4 == 3 {
            let kept: Vec<String> = (n - 2..=n).map(user_item).collect();
            text.push_str(&format!(
                r#"{{"timestamp":"2026-11-03T14:00:02.000Z","type":"compacted","payload":{{"message":"summary","replacement_history":[{},{}]}}}}"#,
                kept.join(","),
                r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"summary"}]}"#
            ));
            text.push('\n');
        }
    }
    text.into_bytes()
}

/// `turns` turns of a Claude Code transcript: a prompt, a tool call, three progress records
/// under it, its result; each record under the one before.
fn transcript(turns: usize) -> Vec<u8> {
    let mut text = String::new();
    let mut parent = "null".to_owned();
    for n in 0..turns {
        let mut push = |kind: &str, uuid: String, body: String| {
            text.push_str(&format!(
                r#"{{"type":"{kind}","uuid":"{uuid}","parentUuid":{parent},"isSidechain":false,"timestamp":"2026-11-20T{:02}:{:02}:{:02}.000Z","sessionId":"s",{body}}}"#,
                n / 3600,
                n / 60 % 60,
                n % 60
            ));
            text.push('\n');
            parent = format!("\"{uuid}\"");
        };
        push(
            "user",
            format!("u{n}"),
            format!(r#""message":{{"role":"user","content":"do {n}"}}"#),
        );
        push(
            "assistant",
            format!("a{n}"),
            format!(
                r#""message":{{"id":"m{n}","role":"assistant","model":"claude-x","content":[{{"type":"tool_use","id":"t{n}","name":"Bash","input":{{"n":{n}}}}}]}}"#
            ),
        );
        for p in 0..3 {
            push(
                "progress",
                format!("p{n}_{p}"),
                r#""data":{"type":"bash_progress"}"#.to_owned(),
            );
        }
        push(
            "user",
            format!("r{n}"),
            format!(
                r#""message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{n}","content":"ok"}}]}}"#
            ),
        );
    }
    text.into_bytes()
}

fn read_transcript(bytes: &[u8]) {
    let transcript = Transcript::read(bytes, "<bench>", ReadMode::Lenient).expect("reads");
    black_box(transcript.conversation().history().expect("a history"));
}

fn resume(bytes: &[u8]) {
    black_box(
        resume_reader(bytes, READER_LABEL, &ResumeOptions::new(DEFAULT_TRUNCATION))
            .expect("resumes"),
    );
}

/// The baseline: every line of `bytes` parsed into a `serde_json::Value`.
fn parse_values(bytes: &[u8]) -> usize {
    bytes
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let value: serde_json::Value = serde_json::from_slice(line).expect("JSON");
            black_box(value);
        })
        .count()
}

/// JSONL resume throughput against a `Value` parse of every line, median and interquartile range
/// of the ratio over interleaved pairs.
fn jsonl_throughput() {
    let items = items::generate(6_000, 11);
    let bytes = items::rollout(&items);
    let resumed = resume_reader(
        &bytes[..],
        READER_LABEL,
        &ResumeOptions::new(DEFAULT_TRUNCATION),
    )
    .expect("resumes");
    assert_eq!(resumed.history().len(), items.len());
    let pairs = 21;
    let mut ratios = Vec::with_capacity(pairs);
    let mut resume_times = Vec::with_capacity(pairs);
    let mut value_times = Vec::with_capacity(pairs);
    for pair in 0..pairs {
        let timed = |which: bool| {
            let start = Instant::now();
            if which {
                resume(&bytes);
            } else {
                black_box(parse_values(&bytes));
            }
            start.elapsed().as_secs_f64()
        };
        let (library, baseline) = if pair % 2 == 0 {
            let baseline = timed(false);
            (timed(true), baseline)
        } else {
            let library = timed(true);
            (library, timed(false))
        };
        ratios.push(library / baseline);
        resume_times.push(library);
        value_times.push(baseline);
    }
    for values in [&mut ratios, &mut resume_times, &mut value_times] {
        values.sort_by(f64::total_cmp);
    }
    let megabytes = bytes.len() as f64 / 1e6;
    println!(
        "JSONL resume, {} items, {megabytes:.1} MB: {:.0} MB/s; Value parse of each line {:.0} MB/s",
        items.len(),
        megabytes / resume_times[pairs / 2],
        megabytes / value_times[pairs / 2],
    );
    println!(
        "{:<62} {:>10.4}× Value parse (IQR {:.4}–{:.4}, {pairs} pairs)",
        "JSONL resume vs a Value parse of each line",
        ratios[pairs / 2],
        ratios[pairs / 4],
        ratios[pairs * 3 / 4],
    );
}

fn main() {
    if std::env::var_os("AGENT_HISTORY_BENCH_PROFILE").is_some() {
        // The JSONL resume alone, in a loop, for `perf record`.
        let bytes = items::rollout(&items::generate(6_000, 11));
        for _ in 0..30 {
            resume(&bytes);
        }
        return;
    }
    if std::env::var_os("AGENT_HISTORY_BENCH_JSONL").is_some() {
        jsonl_throughput();
        return;
    }
    for turns in [2_000, 8_000] {
        let bytes = transcript(turns);
        let read = Transcript::read(&bytes[..], "<bench>", ReadMode::Lenient).expect("reads");
        assert_eq!(
            read.conversation().history().expect("a history").len(),
            3 * turns
        );
        let [low, mid, high] = common::paired(
            7,
            || {
                black_box(parse_values(&bytes));
            },
            || read_transcript(&bytes),
        );
        println!(
            "{:<62} {mid:>10.4}× Value parse (IQR {low:.4}–{high:.4})",
            format!("Claude Code transcript, {turns} turns with progress records")
        );
    }

    let small = legacy(1_000);
    let large = legacy(10_000);
    let small_time = median(5, || resume(&small));
    let large_time = median(3, || resume(&large));
    ratio(
        "legacy compactions: 10,000 pairs vs 1,000 pairs (10 = linear)",
        large_time,
        "1,000",
        small_time,
    );

    let small = compacting(4_000);
    let large = compacting(40_000);
    let small_time = median(5, || resume(&small));
    let large_time = median(3, || resume(&large));
    ratio(
        "compactions with replacement histories: 40,000 turns vs 4,000 (10 = linear)",
        large_time,
        "4,000",
        small_time,
    );

    // The same number of bytes as items and as blank lines after the meta line.
    let mut items = format!("{META}\n");
    let mut n = 0;
    while items.len() < 20_000_000 {
        items.push_str(&user_line(n));
        items.push('\n');
        n += 1;
    }
    let mut blank = format!("{META}\n").into_bytes();
    blank.resize(items.len(), b'\n');
    let items_time = median(3, || resume(items.as_bytes()));
    let blank_time = median(3, || resume(&blank));
    ratio(
        "20 MB of blank lines vs 20 MB of items",
        blank_time,
        "items",
        items_time,
    );

    jsonl_throughput();
}
