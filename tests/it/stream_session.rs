//! A stream recorded through a `Session`: one `response_item` line per complete item, nothing
//! for what was dropped, and a resume that gives the same history.

use crate::common;

use std::path::Path;

use agent_history::{
    Durability, RecordFailure, ResponsesAccumulator, ResumeOptions, Session, SessionMeta,
    StreamEnd, StreamTarget, TruncationPolicy,
};
use common::{temp_dir, thread, user};
use serde_json::Value;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/stream")
            .join(name),
    )
    .expect("fixture exists")
}

/// The payloads of a rollout's lines of type `kind`.
fn payloads(path: &Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("rollout")
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("line JSON"))
        .filter(|line| line["type"] == kind)
        .map(|line| line["payload"].clone())
        .collect()
}

#[test]
fn a_cancelled_stream_writes_one_line_per_complete_item_and_resumes_to_the_same_history() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let meta = SessionMeta::new(thread("stream-session"));
    let mut session = Session::create(
        &path,
        meta,
        TruncationPolicy::Tokens(10_000),
        Durability::Flush,
    )
    .expect("created");
    session.record_json(&user("read two files")).expect("user");
    let text = fixture("parallel_calls.sse");
    // Cut inside the second call's arguments.
    let cut = text
        .find(r#""item_id":"fc_2","output_index":1,"delta""#)
        .expect("second call's first delta")
        + 5;
    let mut accumulator = ResponsesAccumulator::new();
    accumulator
        .feed(&text.as_bytes()[..cut], &mut session, |_| {})
        .expect("valid");
    let lines_before_abort = payloads(&path, "response_item").len();
    let summary = accumulator.abort(&mut session).expect("abort");
    assert_eq!(summary.end, StreamEnd::Aborted);
    assert_eq!(summary.recorded, 1);
    assert_eq!(summary.dropped.len(), 1);
    assert_eq!(summary.dropped[0].item_id.as_deref(), Some("fc_2"));

    let items = payloads(&path, "response_item");
    assert_eq!(items.len(), 2, "the user message and the complete call");
    assert_eq!(
        lines_before_abort, 2,
        "the call was written when its `done` came"
    );
    assert_eq!(items[1]["call_id"], "call_a");
    assert_eq!(items[1]["arguments"], r#"{"path":"src/lib.rs"}"#);
    // The line holds the item exactly as the `done` event carried it.
    let done_line = text
        .lines()
        .find(|line| line.starts_with("data: ") && line.contains("output_item.done"))
        .expect("a done");
    let done: Value = serde_json::from_str(done_line.trim_start_matches("data: ")).expect("json");
    assert_eq!(items[1], done["item"]);

    let live = session.history().clone();
    drop(session);
    let resumed =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush).expect("resumes");
    assert_eq!(resumed.session().history().entries(), live.entries());
}

#[test]
fn a_session_refuses_an_item_that_is_not_one_and_the_accumulator_names_its_event() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("stream-refused")),
        TruncationPolicy::Tokens(10_000),
        Durability::Flush,
    )
    .expect("created");
    let refused = session.record_item(r#"{"type":"message","role":"assistant","content":7}"#);
    assert!(matches!(refused, Err(RecordFailure::Refused(_))));
    let mut accumulator = ResponsesAccumulator::new();
    accumulator
        .push_json(
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message"}}"#,
            &mut session,
            |_| {},
        )
        .expect("added");
    let error = accumulator
        .push_json(
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"message","role":"assistant","content":7}}"#,
            &mut session,
            |_| {},
        )
        .expect_err("not an item");
    assert!(
        matches!(
            error,
            agent_history::Error::Stream(agent_history::StreamError::Item { event: 2, .. })
        ),
        "{error:?}"
    );
    assert!(session.history().is_empty());
    assert!(payloads(&path, "response_item").is_empty());
}

/// A sink whose writes fail while `failing` is set; what it took is shared with the test.
struct SwitchSink {
    data: std::rc::Rc<std::cell::RefCell<Vec<u8>>>,
    failing: std::rc::Rc<std::cell::Cell<bool>>,
}

impl agent_history::RolloutSink for SwitchSink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.failing.get() {
            return Err(std::io::Error::other("injected failure"));
        }
        self.data.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn sync_data(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_write_keeps_the_item_and_the_stream_goes_on_in_order() {
    let failing = std::rc::Rc::new(std::cell::Cell::new(false));
    let data = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let sink = SwitchSink {
        data: data.clone(),
        failing: failing.clone(),
    };
    let writer = agent_history::RolloutWriter::with_sink(sink, "switch", Durability::Flush);
    let mut session = Session::from_parts(agent_history::History::new(), writer, thread("switch"));
    let text = fixture("parallel_calls.sse");
    let first_done = text
        .find("event: response.output_item.done")
        .expect("a done");
    let mut accumulator = ResponsesAccumulator::new();
    accumulator
        .feed(&text.as_bytes()[..first_done], &mut session, |_| {})
        .expect("valid");
    failing.set(true);
    let error = accumulator
        .feed(&text.as_bytes()[first_done..], &mut session, |_| {})
        .expect_err("the first call's line cannot be written");
    assert!(
        matches!(error, agent_history::Error::RolloutWrite(_)),
        "{error:?}"
    );
    assert_eq!(session.history().len(), 1, "the history has the call");
    assert!(!accumulator.is_ended(), "a write failure is not bad input");
    failing.set(false);
    // The events after the failed one were decoded and wait in the accumulator: an empty
    // feed handles them.
    accumulator.feed(&[], &mut session, |_| {}).expect("valid");
    assert_eq!(
        session.history().len(),
        2,
        "the order moved on past the call whose write failed: the second is recorded at its done"
    );
    let summary = accumulator.finish(&mut session).expect("finish");
    assert_eq!(summary.end, StreamEnd::Completed);
    assert_eq!(summary.recorded, 2);
    session.flush().expect("flushed");
    let written = String::from_utf8(data.borrow().clone()).expect("utf-8");
    let calls: Vec<Value> = written
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).expect("line")["payload"]["call_id"].clone()
        })
        .collect();
    assert_eq!(calls, vec![Value::from("call_a"), Value::from("call_b")]);
}
