//! `agent-history append`: a recorded event stream's complete items appended to a rollout, and
//! nothing else changed.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::cli::{command, output_with_stdin, text};
use common::{item_line, meta_line, temp_dir, user};
use serde_json::Value;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/stream")
        .join(name)
        .display()
        .to_string()
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    output_with_stdin(command().args(args), stdin.unwrap_or_default())
}

/// A rollout with a session_meta and one user message.
fn rollout(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let path = dir.join("rollout.jsonl");
    let content = format!("{}\n{}\n", meta_line(), item_line(&user("hi")));
    std::fs::write(&path, &content).expect("written");
    (path, content.into_bytes())
}

/// The lines added after `before`, which must be a prefix of the file: their `type`s and
/// payloads.
fn added_lines(path: &Path, before: &[u8]) -> Vec<(String, Value)> {
    let after = std::fs::read(path).expect("rollout");
    assert!(after.starts_with(before), "the old bytes are a prefix");
    text(&after[before.len()..])
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).expect("line JSON");
            (
                line["type"].as_str().expect("type").to_owned(),
                line["payload"].clone(),
            )
        })
        .collect()
}

#[test]
fn append_adds_one_response_item_line_per_complete_item_and_nothing_else() {
    let dir = temp_dir();
    let (path, before) = rollout(dir.path());
    let rollout = path.to_str().expect("utf-8");
    let output = run(
        &[
            "append",
            rollout,
            "--stream",
            &fixture("parallel_calls.sse"),
        ],
        None,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let added = added_lines(&path, &before);
    assert_eq!(added.len(), 2);
    assert!(added.iter().all(|(kind, _)| kind == "response_item"));
    assert_eq!(added[0].1["call_id"], "call_a");
    assert_eq!(added[1].1["call_id"], "call_b");
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("appended 2 item(s)") && stdout.contains("the response completed"),
        "{stdout}"
    );
}

#[test]
fn a_cut_stream_from_stdin_appends_the_complete_items_and_reports_the_dropped_one() {
    let dir = temp_dir();
    let (path, before) = rollout(dir.path());
    let rollout = path.to_str().expect("utf-8");
    let events = std::fs::read_to_string(fixture("parallel_calls.sse")).expect("fixture");
    // Right after the second call's first delta event.
    let at = events
        .find(r#""item_id":"fc_2","output_index":1,"delta""#)
        .expect("second call's delta");
    let cut = at + events[at..].find("\n\n").expect("its end") + 2;
    let output = run(
        &["append", rollout, "--stream", "-", "--json"],
        Some(&events.as_bytes()[..cut]),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let added = added_lines(&path, &before);
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].1["call_id"], "call_a");
    let report: Value = serde_json::from_str(text(&output.stdout).trim()).expect("JSON report");
    assert_eq!(report["type"], "append");
    assert_eq!(report["end"], "end_of_input");
    assert_eq!(report["recorded"], 1);
    assert_eq!(report["dropped"][0]["item_id"], "fc_2");
    assert_eq!(report["dropped"][0]["delta_bytes"], 5);
    assert_eq!(report["stream"], "<stdin>");

    // --strict: the same kind of cut is a finding (and the second run appends nothing more,
    // since this cut holds no complete item).
    let before = std::fs::read(&path).expect("rollout");
    let second_cut = events.find("output_item.done").expect("a done");
    let output = run(
        &["append", rollout, "--stream", "-", "--strict", "-q"],
        Some(&events.as_bytes()[..second_cut]),
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(output.stdout.is_empty(), "-q prints no report");
    assert_eq!(
        std::fs::read(&path).expect("rollout"),
        before,
        "all dropped: the file is byte-identical"
    );
}

#[test]
fn an_empty_stream_leaves_the_rollout_byte_identical() {
    let dir = temp_dir();
    let (path, before) = rollout(dir.path());
    let output = run(
        &["append", path.to_str().expect("utf-8"), "--stream", "-"],
        Some(b""),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(std::fs::read(&path).expect("rollout"), before);
    assert!(text(&output.stdout).contains("appended 0 item(s)"));
}

#[test]
fn a_file_that_is_not_a_rollout_is_refused_and_left_alone() {
    let dir = temp_dir();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "shopping list\n- milk\n").expect("written");
    let output = run(
        &[
            "append",
            path.to_str().expect("utf-8"),
            "--stream",
            &fixture("text_message.sse"),
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("cannot append to"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("file"),
        "shopping list\n- milk\n"
    );
}

#[test]
fn bad_events_exit_3_naming_the_event_and_keep_the_items_before() {
    let dir = temp_dir();
    let (path, before) = rollout(dir.path());
    let mut events = std::fs::read_to_string(fixture("text_message.sse")).expect("fixture");
    // The item is done at the 10th event; the 11th is replaced by junk.
    let at = events.find("event: response.completed").expect("completed");
    events.truncate(at);
    events.push_str(
        "data: {\"type\":\"response.output_item.done\",\"output_index\":5,\"item\":{}}\n\n",
    );
    let output = run(
        &["append", path.to_str().expect("utf-8"), "--stream", "-"],
        Some(events.as_bytes()),
    );
    assert_eq!(output.status.code(), Some(3));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("event 11"), "{stderr}");
    let added = added_lines(&path, &before);
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].1["id"], "msg_1");
}

#[test]
fn chat_and_anthropic_streams_append_the_items_they_become() {
    for (format, name, expected) in [
        ("chat", "chat_tool_calls.sse", 3),
        ("anthropic", "anthropic_tool_use.sse", 2),
    ] {
        let dir = temp_dir();
        let (path, before) = rollout(dir.path());
        let output = run(
            &[
                "append",
                path.to_str().expect("utf-8"),
                "--stream",
                &fixture(name),
                "--format",
                format,
                "--json",
            ],
            None,
        );
        assert!(output.status.success(), "{}", text(&output.stderr));
        let added = added_lines(&path, &before);
        assert_eq!(added.len(), expected, "{format}");
        assert!(added.iter().all(|(kind, _)| kind == "response_item"));
        // The session gives items without an id one, as for any recorded item.
        assert!(
            added
                .iter()
                .all(|(_, item)| item["id"].as_str().is_some_and(|id| !id.is_empty())),
            "{added:?}"
        );
        let report: Value = serde_json::from_str(text(&output.stdout).trim()).expect("JSON");
        assert_eq!(report["end"], "completed");
        assert_eq!(report["format"], format);
    }
}

#[test]
fn the_text_report_names_each_dropped_item() {
    let dir = temp_dir();
    let (path, _) = rollout(dir.path());
    let events = std::fs::read_to_string(fixture("reasoning.sse")).expect("fixture");
    // Inside the message's text: the reasoning item is done, the message is not.
    let at = events
        .find("\"delta\":\"Done.\"")
        .expect("the message delta");
    let cut = at + events[at..].find("\n\n").expect("its end") + 2;
    let output = run(
        &["append", path.to_str().expect("utf-8"), "--stream", "-"],
        Some(&events.as_bytes()[..cut]),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("appended 1 item(s)"), "{stdout}");
    assert!(
        stdout.contains("the stream ended before the response completed"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "dropped output item 1 (message msg_2): incomplete, 1 delta(s), 5 byte(s) seen"
        ),
        "{stdout}"
    );
}

/// A stream with no line end (`/dev/zero`) is refused once an event passes the bound, in
/// bounded memory, and nothing is appended.
#[test]
fn a_stream_without_line_ends_is_refused_at_the_event_bound() {
    let dir = temp_dir();
    let (path, before) = rollout(dir.path());
    let output = run(
        &[
            "append",
            path.to_str().expect("utf-8"),
            "--stream",
            "/dev/zero",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("event 1: longer than 536870912 bytes without ending"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&path).expect("rollout"), before);
}

/// `append` to a FIFO (or anything but a regular file) is refused at once, before opening it
/// (opening a FIFO for writing would wait for a reader forever).
#[test]
fn append_refuses_what_is_not_a_regular_file() {
    let dir = temp_dir();
    let fifo = dir.path().join("fifo.jsonl");
    common::fifo(&fifo);
    for target in [fifo.as_path(), dir.path()] {
        let output = run(
            &[
                "append",
                target.to_str().expect("utf-8"),
                "--stream",
                &fixture("parallel_calls.sse"),
            ],
            None,
        );
        assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
        let stderr = text(&output.stderr);
        assert!(stderr.contains("it is not a regular file"), "{stderr}");
    }
}

/// When the file cannot grow (here a file-size limit, as a full disk), the error names the
/// line of the file that could not be written, not its number among this run's lines.
#[test]
fn a_failed_write_names_the_line_of_the_file() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut content = format!("{}\n", meta_line());
    for turn in 0..4 {
        content.push_str(&item_line(&user(&format!("turn {turn}"))));
        content.push('\n');
    }
    std::fs::write(&path, &content).expect("written");
    // The limit (in 512-byte blocks) leaves room for less than one more line; SIGXFSZ is
    // ignored, so the write fails with EFBIG instead of killing the process.
    let blocks = content.len().div_ceil(512);
    let script =
        format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" append \"$1\" --stream \"$2\"");
    let output = std::process::Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_agent-history")])
        .arg(&path)
        .arg(fixture("parallel_calls.sse"))
        .output()
        .expect("sh runs");
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("response_item line 6"), "{stderr}");
    assert!(
        std::fs::read(&path)
            .expect("rollout")
            .starts_with(content.as_bytes())
    );
}
