//! Incomplete turns on resume (issue 15): a rollout whose last turn was started (`task_started`)
//! and neither completed nor aborted is reported as incomplete — its id, the items it recorded,
//! its calls still without output — by a full resume and through a snapshot alike, and the next
//! projection repairs those calls without writing anything to the rollout.

use crate::common;

use agent_history::{
    DEFAULT_TRUNCATION, Durability, Family, IncompleteTurn, ItemKind, ProjectionOptions, Replace,
    ResponsesAccumulator, ResumeOptions, Resumed, Session, SessionMeta, StreamEnd, TurnId,
    resume_file,
};
use common::{
    assistant, call, event_line, item_line, line, meta_line, output, rollout_text, temp_dir,
    thread, user,
};
use proptest::prelude::*;
use serde_json::Value;

/// The call as the stream's `response.output_item.done` carries it.
const CALL: &str = r#"{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":"{\"cmd\":\"ls\"}","status":"completed"}"#;

/// A Responses stream, as server-sent events: a function call added, its arguments in two
/// deltas, the call done; then a message added and half its text, and no more (cancelled).
fn cancelled_stream() -> String {
    let events = [
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}"#.to_owned(),
        r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":"","status":"in_progress"}}"#.to_owned(),
        r#"{"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc_1","output_index":0,"delta":"{\"cmd\":"}"#.to_owned(),
        r#"{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":0,"delta":"\"ls\"}"}"#.to_owned(),
        format!(r#"{{"type":"response.output_item.done","sequence_number":4,"output_index":0,"item":{CALL}}}"#),
        r#"{"type":"response.output_item.added","sequence_number":5,"output_index":1,"item":{"type":"message","id":"msg_1","role":"assistant","status":"in_progress","content":[]}}"#.to_owned(),
        r#"{"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Running l"}"#.to_owned(),
    ];
    events
        .iter()
        .map(|data| {
            let name = serde_json::from_str::<Value>(data).expect("json")["type"]
                .as_str()
                .expect("type")
                .to_owned();
            format!("event: {name}\ndata: {data}\n\n")
        })
        .collect()
}

/// The projection of a history as its JSON array text.
fn projection_bytes(resumed: &Resumed) -> String {
    resumed
        .history()
        .project(&ProjectionOptions::default())
        .expect("projects")
        .to_json_array()
}

/// The history's items as their JSON texts.
fn history_jsons(resumed: &Resumed) -> Vec<String> {
    common::jsons(resumed.history())
}

/// The whole path: a turn that recorded a complete `function_call` and was cancelled before the
/// tool ran. The history holds the call, the report names the turn and the call, the projection
/// sends the call followed by the synthetic `aborted` output, the rollout gains no output line,
/// and a second resume gives the same history and projection bytes.
#[test]
fn a_turn_cancelled_after_a_complete_call_is_reported_and_repaired() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("cancelled")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    session
        .record_json(&user("first question"))
        .expect("recorded");
    session
        .record_json(&assistant("first answer"))
        .expect("recorded");
    // The library's own turn lines: `task_started`, then the turn's `turn_context`.
    session
        .begin_turn_with_id(TurnId::new("turn-2"), r#"{"cwd":"/w","model":"m"}"#)
        .expect("begun");
    drop(session);
    let mut resumed =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush).expect("resumes");
    // The turn that is open is reported already (nothing recorded in it yet).
    let open = resumed.incomplete_turn().expect("inside turn-2");
    assert_eq!((open.start, open.items), (2, 0));
    let active = resumed
        .session()
        .active_turn()
        .expect("the session is inside it");
    assert_eq!(active.id().map(TurnId::as_str), Some("turn-2"));
    resumed
        .session_mut()
        .record_json(&user("run ls"))
        .expect("recorded");
    // The model's answer streams in: the call completes, a message starts, and the user cancels
    // the turn before the tool runs.
    let mut accumulator = ResponsesAccumulator::new();
    accumulator
        .feed(cancelled_stream().as_bytes(), resumed.session_mut(), |_| {})
        .expect("valid events");
    let summary = accumulator.abort(resumed.session_mut()).expect("aborted");
    assert_eq!(summary.end, StreamEnd::Aborted);
    assert_eq!(summary.recorded, 1, "the call");
    assert_eq!(summary.dropped.len(), 1, "the half message");
    drop(resumed);
    let file_before = std::fs::read_to_string(&path).expect("rollout");
    assert!(
        !file_before.contains("Running l"),
        "no delta enters the rollout"
    );
    assert_eq!(file_before.matches(r#""call_id":"call_1""#).count(), 1);

    let first = resume_file(&path, &ResumeOptions::default()).expect("resumes");
    let jsons = history_jsons(&first);
    assert_eq!(jsons.len(), 4);
    assert_eq!(
        serde_json::from_str::<Value>(&jsons[3]).expect("json"),
        serde_json::from_str::<Value>(CALL).expect("json"),
        "the history holds the call exactly as the `done` event carried it"
    );
    assert!(first.ends_inside_turn());
    let turn = first.incomplete_turn().expect("reported");
    assert_eq!(turn.turn_id.as_ref().map(|id| id.as_str()), Some("turn-2"));
    assert_eq!(turn.started_line, 4, "meta, two items, then task_started");
    assert_eq!((turn.start, turn.items), (2, 2));
    assert_eq!(turn.calls_without_output.len(), 1);
    let call = &turn.calls_without_output[0];
    assert_eq!(call.position, 3);
    assert_eq!(call.call_id.as_ref().map(|id| id.as_str()), Some("call_1"));
    assert_eq!(call.kind, ItemKind::FunctionCall);
    assert_eq!(call.family, Family::Function);
    assert_eq!(
        first.report().incomplete_turn.as_ref(),
        Some(turn),
        "the report and the accessor agree"
    );

    let projected = projection_bytes(&first);
    let items: Vec<Value> = serde_json::from_str(&projected).expect("array");
    assert_eq!(items.len(), 5, "{projected}");
    assert_eq!(items[3]["type"], "function_call");
    assert_eq!(items[3]["call_id"], "call_1");
    assert_eq!(items[4]["type"], "function_call_output");
    assert_eq!(items[4]["call_id"], "call_1");
    assert_eq!(items[4]["output"], "aborted");

    let file_after = std::fs::read_to_string(&path).expect("rollout");
    assert_eq!(
        file_after, file_before,
        "resume and projection write nothing"
    );
    assert!(!file_after.contains("function_call_output"));

    let second = resume_file(&path, &ResumeOptions::default()).expect("resumes");
    assert_eq!(history_jsons(&second), jsons, "same history bytes");
    assert_eq!(
        projection_bytes(&second),
        projected,
        "same projection bytes"
    );
    assert_eq!(second.incomplete_turn(), Some(turn));
}

/// Resumes `lines` (each followed by a newline) from every line.
fn resume_lines(lines: &[String]) -> Resumed {
    let text = rollout_text(lines);
    common::resume_bytes(text.as_bytes(), DEFAULT_TRUNCATION)
}

fn started(id: &str) -> String {
    event_line(&format!(r#"{{"type":"task_started","turn_id":"{id}"}}"#))
}

/// A turn that completed is not reported; one that was aborted is not incomplete either (Codex
/// closes a turn at `turn_aborted` as at `task_complete`: the abort is the turn's recorded end),
/// though its call without output is still repaired by the projection.
#[test]
fn completed_and_aborted_turns_are_not_incomplete() {
    let turn = |end: &str| {
        vec![
            meta_line(),
            started("t1"),
            item_line(&user("q")),
            item_line(&call("c1")),
            event_line(end),
        ]
    };
    for end in [
        r#"{"type":"task_complete","turn_id":"t1"}"#,
        r#"{"type":"turn_complete","turn_id":"t1"}"#,
        r#"{"type":"turn_aborted","turn_id":"t1","reason":"interrupted"}"#,
    ] {
        let resumed = resume_lines(&turn(end));
        assert!(!resumed.ends_inside_turn(), "{end}");
        assert_eq!(resumed.incomplete_turn(), None, "{end}");
        let projected = projection_bytes(&resumed);
        assert!(
            projected.contains(r#""output":"aborted""#),
            "{end}: {projected}"
        );
    }
    // Without its end event, the same turn is incomplete (the alias `turn_started` too).
    let mut open = turn("");
    open.pop();
    assert_eq!(
        resume_lines(&open).incomplete_turn().map(|t| t.items),
        Some(2)
    );
    open[1] = event_line(r#"{"type":"turn_started","turn_id":"t1"}"#);
    assert_eq!(
        resume_lines(&open).incomplete_turn().map(|t| t.items),
        Some(2)
    );
}

/// Legacy-style rollouts without turn events (hand-written, older Codex, this library's own
/// sessions) have no turns to be incomplete, whatever their calls.
#[test]
fn rollouts_without_turn_events_report_no_incomplete_turn() {
    let lines = vec![
        meta_line(),
        item_line(&user("q")),
        item_line(&call("c1")),
        event_line(r#"{"type":"user_message","message":"q2","images":[]}"#),
        item_line(&user("q2")),
        item_line(&call("c2")),
    ];
    let resumed = resume_lines(&lines);
    assert!(!resumed.ends_inside_turn());
    assert_eq!(resumed.incomplete_turn(), None);
    assert_eq!(resumed.history().stats().calls_without_output, 2);
}

/// A turn started while another never ended (the session crashed, was resumed, and stopped again
/// in the next turn): the last one is reported, with only its own items and calls.
#[test]
fn the_last_started_turn_is_the_incomplete_one() {
    let lines = vec![
        meta_line(),
        started("crashed"),
        item_line(&user("q1")),
        item_line(&call("c1")),
        started("again"),
        item_line(&user("q2")),
        item_line(&call("c2")),
        item_line(&output("c2", "ok")),
        item_line(&call("c3")),
    ];
    let turn = resume_lines(&lines)
        .incomplete_turn()
        .cloned()
        .expect("open");
    assert_eq!(turn.turn_id.as_ref().map(|id| id.as_str()), Some("again"));
    assert_eq!(turn.started_line, 5);
    assert_eq!((turn.start, turn.items), (2, 4));
    let ids: Vec<&str> = turn
        .calls_without_output
        .iter()
        .filter_map(|call| call.call_id.as_ref().map(|id| id.as_str()))
        .collect();
    assert_eq!(ids, ["c3"], "c1 is before the turn, c2 has its output");
}

/// A compaction inside the open turn replaces what the turn had recorded: the turn's items are
/// those recorded after it (with a replacement history, and a legacy compaction rebuilt
/// locally); a call from before the compaction is gone with it.
#[test]
fn a_compaction_inside_the_open_turn_moves_its_start() {
    for compacted in [
        line(
            "compacted",
            &format!(
                r#"{{"message":"s","replacement_history":[{},{}]}}"#,
                user("q1"),
                user("summary")
            ),
        ),
        line("compacted", r#"{"message":"legacy summary"}"#),
    ] {
        let lines = vec![
            meta_line(),
            item_line(&user("q0")),
            started("t1"),
            item_line(&user("q1")),
            item_line(&call("c1")),
            compacted.clone(),
            item_line(&call("c2")),
            item_line(&assistant("working")),
        ];
        let resumed = resume_lines(&lines);
        let len = resumed.history().len();
        let turn = resumed.incomplete_turn().cloned().expect("open");
        assert_eq!(turn.items, 2, "{compacted}");
        assert_eq!(turn.start, len - 2, "{compacted}");
        assert_eq!(turn.calls_without_output.len(), 1, "{compacted}");
        assert_eq!(turn.calls_without_output[0].position, len - 2);
        assert_eq!(
            turn.calls_without_output[0]
                .call_id
                .as_ref()
                .map(|id| id.as_str()),
            Some("c2")
        );
        // A turn started after the compaction starts after it too.
        let mut later = lines.clone();
        later.insert(6, started("t2"));
        let turn = resume_lines(&later)
            .incomplete_turn()
            .cloned()
            .expect("open");
        assert_eq!(turn.turn_id.as_ref().map(|id| id.as_str()), Some("t2"));
        assert_eq!((turn.start, turn.items), (len - 2, 2), "{compacted}");
    }
}

/// A rollback inside the open turn cuts its items with the history: the turn's start stays at
/// most at the history's new length, and a call the rollback removed is no longer listed.
#[test]
fn a_rollback_inside_the_open_turn_cuts_its_items() {
    let lines = vec![
        meta_line(),
        item_line(&user("q0")),
        started("t1"),
        item_line(&user("q1")),
        item_line(&call("c1")),
        event_line(r#"{"type":"thread_rolled_back","num_turns":1}"#),
    ];
    let resumed = resume_lines(&lines);
    assert_eq!(resumed.history().len(), 1);
    let turn = resumed.incomplete_turn().cloned().expect("open");
    assert_eq!((turn.start, turn.items), (1, 0));
    assert!(turn.calls_without_output.is_empty());
    // Items recorded after the rollback are the turn's.
    let mut more = lines.clone();
    more.push(item_line(&user("q1 again")));
    more.push(item_line(&call("c2")));
    let turn = resume_lines(&more)
        .incomplete_turn()
        .cloned()
        .expect("open");
    assert_eq!((turn.start, turn.items), (1, 2));
    assert_eq!(turn.calls_without_output[0].position, 2);
}

/// Codex-shaped turns, deterministically from a seed: turn events (some turns without, some
/// left open, some aborted), user messages, calls with and without outputs, custom tool calls,
/// and — when `rich` — compactions mid-turn (with and without replacement history) and rollbacks.
struct Turns {
    state: u64,
    lines: Vec<String>,
    rich: bool,
    n: u32,
}

impl Turns {
    fn new(seed: u64, rich: bool) -> Self {
        Turns {
            state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            lines: vec![meta_line()],
            rich,
            n: 0,
        }
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % 100 < percent
    }

    fn turn(&mut self) {
        self.n += 1;
        let n = self.n;
        let events = !self.chance(15);
        if events {
            let without_id = self.chance(20);
            self.lines.push(if without_id {
                event_line(r#"{"type":"task_started"}"#)
            } else {
                started(&format!("t{n}"))
            });
        }
        self.lines.push(event_line(&format!(
            r#"{{"type":"user_message","message":"q{n}","images":[]}}"#
        )));
        self.lines.push(item_line(&user(&format!("q{n}"))));
        self.lines.push(item_line(&call(&format!("c{}", 2 * n))));
        if self.chance(70) {
            self.lines
                .push(item_line(&output(&format!("c{}", 2 * n), "ok")));
        }
        if self.rich && self.chance(20) {
            let with_replacement = self.chance(50);
            self.lines.push(if with_replacement {
                line(
                    "compacted",
                    &format!(
                        r#"{{"message":"s{n}","replacement_history":[{}]}}"#,
                        user(&format!("summary {n}"))
                    ),
                )
            } else {
                line("compacted", &format!(r#"{{"message":"legacy {n}"}}"#))
            });
        }
        if self.chance(30) {
            self.lines.push(item_line(&format!(
                r#"{{"type":"custom_tool_call","name":"apply_patch","input":"p","call_id":"c{}"}}"#,
                2 * n + 1
            )));
        }
        self.lines.push(item_line(&assistant(&format!("a{n}"))));
        if events {
            if self.chance(20) {
                // Left open: the session stopped inside it.
            } else if self.chance(15) {
                self.lines.push(event_line(
                    r#"{"type":"turn_aborted","reason":"interrupted"}"#,
                ));
            } else {
                self.lines.push(event_line(r#"{"type":"task_complete"}"#));
            }
        }
        if self.rich && self.chance(10) {
            self.lines
                .push(event_line(r#"{"type":"thread_rolled_back","num_turns":1}"#));
        }
    }
}

/// An incomplete turn as plain values: turn id, started line, start, items, call ids.
type Summary = (Option<String>, u64, usize, usize, Vec<String>);

/// What a full resume must report for `lines` without compactions or rollbacks, computed from
/// the lines alone: the last `task_started` with no end after it; the items are the response
/// items after it (every generated item is recorded); its calls without output are those after
/// it whose call id no output line answers.
fn oracle(lines: &[String]) -> Option<Summary> {
    let parsed: Vec<Value> = lines
        .iter()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect();
    let event = |value: &Value| -> Option<String> {
        (value["type"] == "event_msg")
            .then(|| value["payload"]["type"].as_str().unwrap_or("").to_owned())
    };
    let mut open = None;
    for (index, value) in parsed.iter().enumerate() {
        match event(value).as_deref() {
            Some("task_started") => open = Some(index),
            Some("task_complete" | "turn_aborted") => open = None,
            _ => {}
        }
    }
    let open = open?;
    let is_item = |value: &&Value| value["type"] == "response_item";
    let start = parsed[..open].iter().filter(is_item).count();
    let items = parsed[open..].iter().filter(is_item).count();
    let answered: Vec<&str> = parsed
        .iter()
        .filter(is_item)
        .filter(|value| {
            value["payload"]["type"]
                .as_str()
                .is_some_and(|kind| kind.ends_with("_output"))
        })
        .filter_map(|value| value["payload"]["call_id"].as_str())
        .collect();
    let calls = parsed[open..]
        .iter()
        .filter(is_item)
        .filter(|value| {
            value["payload"]["type"]
                .as_str()
                .is_some_and(|kind| kind.ends_with("_call"))
        })
        .filter_map(|value| value["payload"]["call_id"].as_str())
        .filter(|id| !answered.contains(id))
        .map(str::to_owned)
        .collect();
    let turn_id = parsed[open]["payload"]["turn_id"]
        .as_str()
        .map(str::to_owned);
    Some((turn_id, open as u64 + 1, start, items, calls))
}

fn summary(turn: Option<&IncompleteTurn>) -> Option<Summary> {
    turn.map(|turn| {
        (
            turn.turn_id.as_ref().map(|id| id.as_str().to_owned()),
            turn.started_line,
            turn.start,
            turn.items,
            turn.calls_without_output
                .iter()
                .filter_map(|call| call.call_id.as_ref().map(|id| id.as_str().to_owned()))
                .collect(),
        )
    })
}

/// Every prefix of `lines` that ends at a line boundary is resumed in full and through a
/// snapshot of every shorter prefix: the snapshot is used, and reports the same incomplete turn
/// as the full resume (and the same history). Without compactions and rollbacks, the full resume
/// also matches the oracle. Returns how many prefixes ended inside a turn.
fn check_every_cut(lines: &[String], rich: bool) -> usize {
    let dir = temp_dir();
    let text = |end: usize| rollout_text(&lines[..end]);
    let mut snapshots = Vec::new();
    for end in 1..=lines.len() {
        let prefix = dir.path().join(format!("prefix-{end}.jsonl"));
        std::fs::write(&prefix, text(end)).expect("written");
        let ready = resume_file(
            &prefix,
            &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
        )
        .expect("resumes");
        let snapshot = dir.path().join(format!("prefix-{end}.snap"));
        ready
            .write_snapshot_with(&snapshot, Replace::Anything)
            .expect("snapshot written");
        snapshots.push(snapshot);
    }
    let mut inside = 0;
    for end in 1..=lines.len() {
        let prefix = dir.path().join(format!("prefix-{end}.jsonl"));
        let full = common::resume_path(&prefix, DEFAULT_TRUNCATION);
        assert_eq!(full.incomplete_turn().is_some(), full.ends_inside_turn());
        inside += usize::from(full.ends_inside_turn());
        if !rich {
            assert_eq!(
                summary(full.incomplete_turn()),
                oracle(&lines[..end]),
                "prefix of {end} lines"
            );
        }
        for snapshot in &snapshots[..end] {
            let through = resume_file(
                &prefix,
                &ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(snapshot),
            )
            .expect("resumes");
            let context = format!("prefix of {end} lines, {}", snapshot.display());
            assert!(through.used_snapshot(), "{context}: {:?}", through.source());
            assert_eq!(through.history(), full.history(), "{context}");
            assert_eq!(
                through.incomplete_turn(),
                full.incomplete_turn(),
                "{context}"
            );
        }
    }
    inside
}

proptest! {
    // Each case resumes every prefix through every shorter prefix's snapshot (a few hundred
    // small resumes): 12 cases keep the test within seconds.
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Full resume = oracle, and snapshot resume = full resume, at every line boundary of
    /// generated rollouts; with compactions and rollbacks in half the cases.
    #[test]
    fn the_incomplete_turn_is_the_same_at_every_cut(seed in any::<u64>(), turns in 1usize..4, rich in any::<bool>()) {
        let mut generated = Turns::new(seed, rich);
        for _ in 0..turns {
            generated.turn();
        }
        let inside = check_every_cut(&generated.lines, rich);
        // Every turn with events is open at some cut, so the cuts exercise open turns.
        prop_assert!(inside > 0 || !generated.lines.iter().any(|line| line.contains("task_started")));
    }
}

/// The command line says when the last turn is incomplete: `check`, `stats` and `project` in
/// their text output, and `--json` through the load report's `incomplete_turn`.
#[cfg(feature = "cli")]
#[test]
fn the_command_line_mentions_an_incomplete_last_turn() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let lines = [
        meta_line(),
        started("turn-9"),
        item_line(&user("q")),
        item_line(&call("c1")),
    ];
    std::fs::write(&path, rollout_text(&lines)).expect("written");
    let run = |args: &[&str]| {
        let output = common::cli::command()
            .args(args)
            .arg(&path)
            .output()
            .expect("runs");
        (
            String::from_utf8(output.stdout).expect("utf-8"),
            String::from_utf8(output.stderr).expect("utf-8"),
        )
    };
    let expected = "turn turn-9 started at line 2 did not complete: 2 items recorded, calls without output: c1 (function_call)";
    let (check, _) = run(&["check"]);
    assert!(
        check.contains(&format!("last turn incomplete: {expected}")),
        "{check}"
    );
    let (stats, _) = run(&["stats"]);
    assert!(
        stats.contains(&format!("last turn      incomplete: {expected}")),
        "{stats}"
    );
    let (_, project) = run(&["project"]);
    assert!(
        project.contains(&format!("last turn incomplete: {expected}")),
        "{project}"
    );

    let turn_of = |json: &str| -> Value {
        let value: Value =
            serde_json::from_str(json.lines().next().expect("a line")).expect("json");
        value["load"]["incomplete_turn"].clone()
    };
    let expected = serde_json::json!({"turn_id": "turn-9", "started_line": 2, "start": 0,
        "items": 2, "calls_without_output": [
            {"position": 1, "call_id": "c1", "kind": "function_call", "family": "function"}]});
    assert_eq!(turn_of(&run(&["check", "--json"]).0), expected);
    assert_eq!(turn_of(&run(&["stats", "--json"]).0), expected);
    assert_eq!(turn_of(&run(&["project", "--json"]).1), expected);
    // A completed turn is not mentioned.
    let done = [
        &lines[..],
        &[event_line(r#"{"type":"task_complete","turn_id":"turn-9"}"#)],
    ]
    .concat();
    std::fs::write(&path, rollout_text(&done)).expect("written");
    assert!(!run(&["check"]).0.contains("last turn"));
    assert_eq!(turn_of(&run(&["check", "--json"]).0), Value::Null);
}
