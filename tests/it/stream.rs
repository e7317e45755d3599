//! The stream accumulators: only complete items are recorded, whatever the stream does.
//!
//! The transcripts under `tests/fixtures/stream/` are hand-written in the shapes the providers
//! document. Each is cut at every byte; an oracle written here (splitting the text on blank
//! lines, not with the library's decoder) says which events arrived whole before the cut, and
//! the history must hold exactly the items whose completion was among them.

use std::path::Path;

use agent_history::{
    AnthropicAccumulator, ChatAccumulator, History, ProjectionOptions, ResponsesAccumulator,
    StreamEnd, StreamError, Update,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/stream")
            .join(name),
    )
    .expect("fixture exists")
}

/// One event of a transcript as the oracle splits it: the byte offset right after its blank
/// line, and its data parsed.
struct OracleEvent {
    end: usize,
    data: Value,
}

/// Splits SSE text written with `\n` line ends into events (blank-line separated), reading
/// the `data: ` line of each.
fn oracle_events(text: &str) -> Vec<OracleEvent> {
    let mut events = Vec::new();
    let mut start = 0;
    while let Some(at) = text[start..].find("\n\n") {
        let block = &text[start..start + at];
        let end = start + at + 2;
        let data = block
            .lines()
            .find_map(|line| line.strip_prefix("data: "))
            .expect("every event has a data line");
        let data = if data == "[DONE]" {
            json!("[DONE]")
        } else {
            serde_json::from_str(data).expect("fixture JSON")
        };
        events.push(OracleEvent { end, data });
        start = end;
    }
    assert_eq!(start, text.len(), "the transcript ends with a blank line");
    events
}

/// The items of a history, parsed.
fn history_items(history: &History) -> Vec<Value> {
    history
        .iter()
        .map(|entry| serde_json::from_str(entry.json()).expect("stored JSON"))
        .collect()
}

/// Feeds `bytes` in chunks of `chunk` bytes.
fn feed_responses(bytes: &[u8], chunk: usize) -> (History, agent_history::StreamSummary, String) {
    let mut history = History::new();
    let mut accumulator = ResponsesAccumulator::new();
    let mut last_text = String::new();
    for piece in bytes.chunks(chunk.max(1)) {
        accumulator
            .feed(piece, &mut history, |update| {
                if let Update::Delta { text, .. } = update {
                    last_text = text.to_owned();
                }
            })
            .expect("valid transcript");
    }
    let summary = accumulator.finish(&mut history).expect("finish");
    (history, summary, last_text)
}

const RESPONSES_FIXTURES: &[&str] = &[
    "text_message.sse",
    "reasoning.sse",
    "parallel_calls.sse",
    "custom_tool_call.sse",
];

#[test]
fn responses_transcripts_cut_at_every_byte_record_exactly_the_items_done_before_the_cut() {
    for name in RESPONSES_FIXTURES {
        let text = fixture(name);
        let events = oracle_events(&text);
        let last_start = events[events.len() - 2].end;
        let mut cuts: Vec<usize> = events.iter().map(|event| event.end).collect();
        cuts.push(0);
        // Every byte of the last event, and (more cheaply, one chunking each) every other byte.
        cuts.extend(last_start..=text.len());
        cuts.extend((0..text.len()).step_by(3));
        for cut in cuts {
            let arrived: Vec<&OracleEvent> =
                events.iter().filter(|event| event.end <= cut).collect();
            let mut done: Vec<(u64, &Value)> = arrived
                .iter()
                .filter(|event| event.data["type"] == "response.output_item.done")
                .map(|event| {
                    (
                        event.data["output_index"].as_u64().expect("index"),
                        &event.data["item"],
                    )
                })
                .collect();
            done.sort_by_key(|(index, _)| *index);
            let mut open: Vec<(u64, u64)> = Vec::new(); // (index, delta bytes)
            for event in &arrived {
                let kind = event.data["type"].as_str().expect("type");
                let index = event.data["output_index"].as_u64();
                if kind == "response.output_item.added" {
                    open.push((index.expect("index"), 0));
                } else if kind == "response.output_item.done" {
                    open.retain(|(i, _)| Some(*i) != index);
                } else if kind.ends_with(".delta") {
                    let bytes = event.data["delta"].as_str().expect("delta").len() as u64;
                    let slot = open.iter_mut().find(|(i, _)| Some(*i) == index);
                    slot.expect("open").1 += bytes;
                }
            }
            let completed = arrived
                .iter()
                .any(|event| event.data["type"] == "response.completed");

            let chunk = cut % 17 + 1;
            let (history, summary, _) = feed_responses(&text.as_bytes()[..cut], chunk);
            let expected: Vec<Value> = done.iter().map(|(_, item)| (*item).clone()).collect();
            assert_eq!(history_items(&history), expected, "{name} cut at {cut}");
            // Recorded exactly as the `done` event carried it: its bytes, not a re-serialization.
            for (entry, (_, item)) in history.iter().zip(&done) {
                assert_eq!(entry.json(), item.to_string(), "{name} cut at {cut}");
            }
            assert_eq!(summary.recorded, expected.len());
            assert_eq!(
                summary.end,
                if completed {
                    StreamEnd::Completed
                } else {
                    StreamEnd::EndOfInput
                },
                "{name} cut at {cut}"
            );
            let dropped: Vec<(u64, u64)> = summary
                .dropped
                .iter()
                .map(|item| (item.output_index, item.delta_bytes))
                .collect();
            assert_eq!(dropped, open, "{name} cut at {cut}");
            assert_eq!(
                summary.torn_event,
                !events.iter().any(|event| event.end == cut) && cut != 0,
                "{name} cut at {cut}"
            );
            assert_eq!(summary.events, arrived.len() as u64);
        }
    }
}

#[test]
fn deltas_are_shown_with_the_text_so_far_and_never_recorded() {
    let text = fixture("text_message.sse");
    let mut history = History::new();
    let mut accumulator = ResponsesAccumulator::new();
    let mut shown = Vec::new();
    accumulator
        .feed(text.as_bytes(), &mut history, |update| {
            if let Update::Delta {
                output_index,
                delta,
                text,
                ..
            } = update
            {
                shown.push((output_index, delta.to_owned(), text.to_owned()));
            }
        })
        .expect("valid");
    assert_eq!(
        shown,
        vec![
            (0, "Hello".to_owned(), "Hello".to_owned()),
            (0, ", world".to_owned(), "Hello, world".to_owned()),
            (0, ".".to_owned(), "Hello, world.".to_owned()),
        ]
    );
    assert_eq!(history.len(), 1);
    assert!(accumulator.is_ended());
}

#[test]
fn a_cancel_after_a_complete_call_leaves_the_call_and_the_projection_repairs_it() {
    let text = fixture("parallel_calls.sse");
    let events = oracle_events(&text);
    // Up to and including the first call's `done`, and the second call's first delta.
    let first_done = events
        .iter()
        .position(|event| event.data["type"] == "response.output_item.done")
        .expect("a done");
    let cut = events[first_done + 2].end;
    let mut history = History::new();
    let mut accumulator = ResponsesAccumulator::new();
    accumulator
        .feed(&text.as_bytes()[..cut], &mut history, |_| {})
        .expect("valid");
    let summary = accumulator.abort(&mut history).expect("abort");
    assert_eq!(summary.end, StreamEnd::Aborted);
    assert_eq!(history.len(), 1);
    assert_eq!(summary.dropped.len(), 1);
    assert_eq!(summary.dropped[0].item_id.as_deref(), Some("fc_2"));
    assert_eq!(
        summary.dropped[0].item_type.as_deref(),
        Some("function_call")
    );
    assert_eq!(summary.dropped[0].deltas, 1);
    let projection = history
        .project(&ProjectionOptions::default())
        .expect("projects");
    let items: Vec<Value> = projection
        .iter()
        .map(|json| serde_json::from_str(json).expect("JSON"))
        .collect();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["call_id"], "call_a");
    assert_eq!(items[1]["type"], "function_call_output");
    assert_eq!(items[1]["call_id"], "call_a");
    assert_eq!(items[1]["output"], "aborted");
    // A second abort changes nothing and returns the same summary.
    assert_eq!(accumulator.abort(&mut history).expect("again"), summary);
    assert_eq!(history.len(), 1);
}

/// Events of one item at output index `index`: added, one delta, done.
fn call_events(index: u64) -> [String; 3] {
    let id = format!("fc_{index}");
    let call = format!("call_{index}");
    [
        json!({"type":"response.output_item.added","output_index":index,"item":{"type":"function_call","id":id,"call_id":call,"name":"f","arguments":""}}).to_string(),
        json!({"type":"response.function_call_arguments.delta","output_index":index,"item_id":id,"delta":"{}"}).to_string(),
        json!({"type":"response.output_item.done","output_index":index,"item":{"type":"function_call","id":id,"call_id":call,"name":"f","arguments":"{}"}}).to_string(),
    ]
}

/// Pushes one event as its JSON text and returns the updates it gave (their debug text).
fn push_responses(
    acc: &mut ResponsesAccumulator,
    event: &str,
    history: &mut History,
) -> Vec<String> {
    let mut updates = Vec::new();
    acc.push_json(event, history, |update| updates.push(format!("{update:?}")))
        .expect("valid");
    updates
}

#[test]
fn a_done_before_an_earlier_items_done_is_held_until_that_one_is_recorded() {
    let [a0, d0, x0] = call_events(0);
    let [a1, d1, x1] = call_events(1);
    let mut history = History::new();
    let mut acc = ResponsesAccumulator::new();
    for event in [&a0, &a1, &d1, &d0] {
        push_responses(&mut acc, event, &mut history);
    }
    let updates = push_responses(&mut acc, &x1, &mut history);
    let done = Update::Done {
        output_index: 1,
        recorded: 0,
    };
    assert_eq!(updates, [format!("{done:?}")]);
    assert!(history.is_empty(), "held until item 0 is done");
    let updates = push_responses(&mut acc, &x0, &mut history);
    let done = Update::Done {
        output_index: 0,
        recorded: 2,
    };
    assert_eq!(updates, [format!("{done:?}")]);
    let ids: Vec<Value> = history_items(&history)
        .into_iter()
        .map(|item| item["call_id"].clone())
        .collect();
    assert_eq!(ids, vec![json!("call_0"), json!("call_1")]);

    // When item 0 never completes, item 1 is recorded when the stream ends.
    let mut history = History::new();
    let mut acc = ResponsesAccumulator::new();
    for event in [&a0, &a1, &d0, &x1] {
        push_responses(&mut acc, event, &mut history);
    }
    assert!(history.is_empty());
    let summary = acc.abort(&mut history).expect("abort");
    assert_eq!(history_items(&history)[0]["call_id"], "call_1");
    assert_eq!(summary.dropped.len(), 1);
    assert_eq!(summary.dropped[0].output_index, 0);
    assert_eq!(summary.dropped[0].delta_bytes, 2);
}

#[test]
fn bad_input_is_a_typed_error_naming_the_event_and_keeps_what_was_recorded() {
    let [a0, _, x0] = call_events(0);
    let [a1, d1, x1] = call_events(1);
    type Check = fn(&StreamError) -> bool;
    let cases: Vec<(Vec<&str>, u64, Check)> = vec![
        (vec![&a0, &x0, &x1], 3, |e| {
            matches!(
                e,
                StreamError::NotOpen {
                    output_index: 1,
                    ..
                }
            )
        }),
        (vec![&a0, &x0, &d1], 3, |e| {
            matches!(e, StreamError::UnknownItem { .. })
        }),
        (vec![&a0, &x0, "{not json"], 3, |e| {
            matches!(e, StreamError::Malformed { .. })
        }),
        (vec![&a0, &x0, &a0], 3, |e| {
            matches!(
                e,
                StreamError::AddedTwice {
                    output_index: 0,
                    ..
                }
            )
        }),
        (vec![&a0, &x0, &a1, &a1], 4, |e| {
            matches!(
                e,
                StreamError::AddedTwice {
                    output_index: 1,
                    ..
                }
            )
        }),
        (vec![&a0, &x0, r#"{"output_index":1}"#], 3, |e| {
            matches!(e, StreamError::MissingType { .. })
        }),
        (
            vec![
                &a0,
                &x0,
                r#"{"type":"response.output_item.added","output_index":1}"#,
            ],
            3,
            |e| matches!(e, StreamError::MissingField { field: "item", .. }),
        ),
        (
            vec![
                &a0,
                &x0,
                &a1,
                r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"message","role":"assistant","content":7}}"#,
            ],
            4,
            |e| {
                matches!(
                    e,
                    StreamError::Item {
                        output_index: 1,
                        ..
                    }
                )
            },
        ),
        (
            vec![&a0, &x0, r#"{"type":"response.completed"}"#, &a1],
            4,
            |e| matches!(e, StreamError::AfterEnd { .. }),
        ),
    ];
    for (events, at, check) in cases {
        let mut history = History::new();
        let mut acc = ResponsesAccumulator::new();
        let mut error = None;
        for event in &events {
            if let Err(e) = acc.push_json(event, &mut history, |_| {}) {
                error = Some(e);
                break;
            }
        }
        let error = error.expect("an error");
        assert!(check(&error), "{events:?}: {error:?}");
        assert!(
            error.to_string().starts_with(&format!("event {at}:")),
            "{error}"
        );
        assert_eq!(
            history.len(),
            1,
            "the call completed before stays: {events:?}"
        );
        let summary = acc.finish(&mut history).expect("summary");
        if matches!(error, StreamError::AfterEnd { .. }) {
            // The stream had ended: its end stays the first terminal event.
            assert_eq!(summary.end, StreamEnd::Completed, "{events:?}");
        } else {
            assert_eq!(summary.end, StreamEnd::InvalidInput { event: at });
        }
    }
}

#[test]
fn unknown_events_are_counted_and_terminal_events_say_why_the_response_ended() {
    let [a0, d0, _] = call_events(0);
    let ends = [
        (
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#,
            StreamEnd::Incomplete {
                reason: Some("max_output_tokens".into()),
            },
        ),
        (
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#,
            StreamEnd::Failed {
                code: Some("server_error".into()),
                message: Some("boom".into()),
            },
        ),
        (
            r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#,
            StreamEnd::Failed {
                code: Some("rate_limit_exceeded".into()),
                message: Some("slow down".into()),
            },
        ),
        ("[DONE]", StreamEnd::EndOfInput),
    ];
    for (end_event, end) in ends {
        let mut history = History::new();
        let mut acc = ResponsesAccumulator::new();
        for event in [
            a0.as_str(),
            r#"{"type":"response.something_new","output_index":0}"#,
            &d0,
            end_event,
        ] {
            push_responses(&mut acc, event, &mut history);
        }
        let summary = acc.finish(&mut history).expect("summary");
        assert_eq!(summary.end, end);
        assert_eq!(summary.unknown_events, 1);
        assert!(history.is_empty());
        assert_eq!(summary.dropped.len(), 1);
        assert_eq!(summary.dropped[0].delta_bytes, 2);
    }
}

#[test]
fn parsed_values_pushed_as_json_and_sse_give_the_same_history() {
    let text = fixture("reasoning.sse");
    let (from_sse, _, _) = feed_responses(text.as_bytes(), 4096);
    let mut history = History::new();
    let mut acc = ResponsesAccumulator::new();
    let events = oracle_events(&text);
    for event in &events {
        let updates = push_responses(&mut acc, &event.data.to_string(), &mut history);
        assert_eq!(
            updates.len(),
            1,
            "one update per Responses event: {updates:?}"
        );
    }
    assert_eq!(history_items(&history), history_items(&from_sse));
    assert_eq!(history.len(), 2);
    // The text recorded for an item is the value serialized, keys in their order.
    let done = events
        .iter()
        .filter(|event| event.data["type"] == "response.output_item.done");
    for (entry, event) in history.iter().zip(done) {
        assert_eq!(entry.json(), event.data["item"].to_string());
    }
}

/// The chat transcript's items, in the order they are recorded.
fn chat_expected() -> Vec<Value> {
    vec![
        json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]}),
        json!({"type":"function_call","name":"ls","arguments":"{\"dir\":\".\"}","call_id":"call_1"}),
        json!({"type":"function_call","name":"pwd","arguments":"{}","call_id":"call_2"}),
    ]
}

#[test]
fn chat_transcript_cut_at_every_byte_records_everything_or_nothing() {
    let text = fixture("chat_tool_calls.sse");
    let events = oracle_events(&text);
    let finish_end = events
        .iter()
        .find(|event| !event.data["choices"][0]["finish_reason"].is_null())
        .expect("a finish chunk")
        .end;
    for cut in 0..=text.len() {
        let mut history = History::new();
        let mut acc = ChatAccumulator::new();
        for piece in text.as_bytes()[..cut].chunks(cut % 11 + 1) {
            acc.feed(piece, &mut history, |_| {}).expect("valid");
        }
        let summary = acc.finish(&mut history).expect("finish");
        if cut >= finish_end {
            assert_eq!(history_items(&history), chat_expected(), "cut at {cut}");
            assert_eq!(summary.end, StreamEnd::Completed);
            assert!(summary.dropped.is_empty());
        } else {
            assert!(history.is_empty(), "cut at {cut}");
            assert_eq!(summary.end, StreamEnd::EndOfInput);
        }
    }
}

#[test]
fn chat_finish_at_length_keeps_the_message_marked_incomplete_and_drops_the_calls() {
    let chunk = |delta: Value, finish: Value| {
        json!({"object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":finish}]}).to_string()
    };
    let mut history = History::new();
    let mut acc = ChatAccumulator::new();
    let mut updates = Vec::new();
    for event in [
        chunk(json!({"content":"Partial"}), Value::Null),
        chunk(
            json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"di"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("length")),
    ] {
        acc.push_json(&event, &mut history, |update| {
            updates.push(format!("{update:?}"))
        })
        .expect("valid");
    }
    let summary = acc.finish(&mut history).expect("finish");
    assert_eq!(
        history_items(&history),
        vec![
            json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Partial"}],"status":"incomplete"})
        ]
    );
    assert_eq!(
        summary.end,
        StreamEnd::Incomplete {
            reason: Some("length".into())
        }
    );
    assert_eq!(summary.dropped.len(), 1);
    assert_eq!(summary.dropped[0].item_id.as_deref(), Some("call_1"));
    assert_eq!(summary.dropped[0].delta_bytes, 4, "the bytes of `{{\"di`");
    assert_eq!(
        updates
            .iter()
            .filter(|update| update.starts_with("Done"))
            .collect::<Vec<_>>(),
        vec!["Done { output_index: 0, recorded: 1 }"],
        "one Done, for the message; the cut call is dropped: {updates:?}"
    );
}

#[test]
fn chat_tool_call_index_without_a_successor_is_refused_not_wrapped_onto_the_message() {
    let chunk = |delta: Value| {
        json!({"object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":null}]}).to_string()
    };
    let mut history = History::new();
    let mut acc = ChatAccumulator::new();
    acc.push_json(&chunk(json!({"content":"Hi"})), &mut history, |_| {})
        .expect("valid");
    let error = acc
        .push_json(
            &chunk(
                json!({"tool_calls":[{"index":u64::MAX,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}),
            ),
            &mut history,
            |_| {},
        )
        .expect_err("an index of u64::MAX has no output index after it");
    assert!(
        matches!(
            error,
            StreamError::MissingField {
                event: 2,
                field: "tool_calls[].index",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(history.is_empty(), "nothing was complete");
}

#[test]
fn anthropic_transcript_cut_at_every_byte_records_the_blocks_stopped_before_the_cut() {
    let text = fixture("anthropic_tool_use.sse");
    let events = oracle_events(&text);
    let stop_of = |index: u64| {
        events
            .iter()
            .find(|event| {
                event.data["type"] == "content_block_stop" && event.data["index"] == index
            })
            .expect("a stop")
            .end
    };
    let message = json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking now."}]});
    let call = json!({"type":"function_call","name":"get_weather","arguments":"{\"location\": \"Paris\"}","call_id":"toolu_01"});
    let stop_end = events.last().expect("events").end;
    for cut in 0..=text.len() {
        let mut history = History::new();
        let mut acc = AnthropicAccumulator::new();
        for piece in text.as_bytes()[..cut].chunks(cut % 7 + 1) {
            acc.feed(piece, &mut history, |_| {}).expect("valid");
        }
        let summary = acc.finish(&mut history).expect("finish");
        let mut expected = Vec::new();
        if cut >= stop_of(1) {
            expected.push(message.clone());
        }
        if cut >= stop_of(2) {
            expected.push(call.clone());
        }
        assert_eq!(history_items(&history), expected, "cut at {cut}");
        assert_eq!(
            summary.not_representable.len(),
            usize::from(cut >= stop_of(0)),
            "the thinking block is reported, never recorded"
        );
        assert_eq!(
            summary.end == StreamEnd::Completed,
            cut >= stop_end,
            "cut at {cut}"
        );
    }
}

#[test]
fn anthropic_error_event_drops_the_open_block() {
    let mut history = History::new();
    let mut acc = AnthropicAccumulator::new();
    for event in [
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ] {
        acc.push_json(event, &mut history, |_| {}).expect("valid");
    }
    let summary = acc.finish(&mut history).expect("finish");
    assert!(history.is_empty());
    assert_eq!(
        summary.end,
        StreamEnd::Failed {
            code: Some("overloaded_error".into()),
            message: Some("Overloaded".into())
        }
    );
    assert_eq!(summary.dropped[0].delta_bytes, 2);
    let error = acc
        .push_json(
            r#"{"type":"content_block_stop","index":0}"#,
            &mut history,
            |_| {},
        )
        .expect_err("after the end");
    assert!(matches!(error, StreamError::AfterEnd { event: 4, .. }));
}

// ---------------------------------------------------------------------------------------------
// The property: any interleaving of several items' events, any cut.

/// One generated output item: its kind and its deltas.
#[derive(Debug, Clone)]
struct Spec {
    kind: u8,
    deltas: Vec<String>,
}

impl Spec {
    /// Its `added`, deltas and `done` events at output index `index`.
    fn events(&self, index: u64) -> Vec<String> {
        let text: String = self.deltas.concat();
        let call = format!("call_{index}");
        let (delta_type, open, done) = match self.kind % 4 {
            0 => (
                "response.output_text.delta",
                json!({"type":"message","id":format!("msg_{index}"),"role":"assistant","content":[]}),
                json!({"type":"message","id":format!("msg_{index}"),"role":"assistant","content":[{"type":"output_text","text":text}]}),
            ),
            1 => (
                "response.function_call_arguments.delta",
                json!({"type":"function_call","id":format!("fc_{index}"),"call_id":call,"name":"f","arguments":""}),
                json!({"type":"function_call","id":format!("fc_{index}"),"call_id":call,"name":"f","arguments":text}),
            ),
            2 => (
                "response.custom_tool_call_input.delta",
                json!({"type":"custom_tool_call","id":format!("ctc_{index}"),"call_id":call,"name":"g","input":""}),
                json!({"type":"custom_tool_call","id":format!("ctc_{index}"),"call_id":call,"name":"g","input":text}),
            ),
            _ => (
                "response.reasoning_summary_text.delta",
                json!({"type":"reasoning","id":format!("rs_{index}"),"summary":[]}),
                json!({"type":"reasoning","id":format!("rs_{index}"),"summary":[{"type":"summary_text","text":text}]}),
            ),
        };
        let mut events =
            vec![json!({"type":"response.output_item.added","output_index":index,"item":open})];
        for delta in &self.deltas {
            events.push(
                json!({"type":delta_type,"output_index":index,"item_id":open["id"],"delta":delta}),
            );
        }
        events.push(json!({"type":"response.output_item.done","output_index":index,"item":done}));
        events.into_iter().map(|event| event.to_string()).collect()
    }
}

fn spec() -> impl Strategy<Value = Spec> {
    (0u8..4, proptest::collection::vec("[a-z\"{}: ]{0,6}", 0..3))
        .prop_map(|(kind, deltas)| Spec { kind, deltas })
}

/// The pairing rules, checked independently of the library: every call is followed by exactly
/// one output with its call id, and every output follows its call.
fn check_pairing(items: &[Value]) -> Result<(), String> {
    let family = |kind: &str| match kind {
        "function_call" | "function_call_output" => Some("function"),
        "custom_tool_call" | "custom_tool_call_output" => Some("custom"),
        _ => None,
    };
    for (at, item) in items.iter().enumerate() {
        let kind = item["type"].as_str().unwrap_or("");
        let Some(fam) = family(kind) else { continue };
        let call_id = &item["call_id"];
        let is_output = kind.ends_with("_output");
        let same = |other: &Value, output: bool| {
            let kind = other["type"].as_str().unwrap_or("");
            family(kind) == Some(fam)
                && kind.ends_with("_output") == output
                && &other["call_id"] == call_id
        };
        if is_output {
            if !items[..at].iter().any(|other| same(other, false)) {
                return Err(format!("output {at} without its call"));
            }
        } else if items[at + 1..]
            .iter()
            .filter(|other| same(other, true))
            .count()
            != 1
        {
            return Err(format!("call {at} without exactly one output after it"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn any_interleaving_and_any_cut_records_only_complete_items_in_output_order(
        specs in proptest::collection::vec(spec(), 1..5),
        picks in proptest::collection::vec(any::<u8>(), 0..40),
        cut_fraction in 0.0f64..=1.0,
        completed in any::<bool>(),
        as_sse in any::<bool>(),
    ) {
        let per_item: Vec<Vec<String>> = specs
            .iter()
            .enumerate()
            .map(|(index, spec)| spec.events(index as u64))
            .collect();
        // Interleave, keeping each item's own order.
        let mut next = vec![0usize; per_item.len()];
        let mut events: Vec<(usize, String)> = Vec::new();
        let mut pick = picks.iter().copied().cycle().chain(std::iter::repeat(0));
        loop {
            let live: Vec<usize> = (0..per_item.len()).filter(|&i| next[i] < per_item[i].len()).collect();
            if live.is_empty() { break; }
            let item = live[usize::from(pick.next().unwrap_or(0)) % live.len()];
            events.push((item, per_item[item][next[item]].clone()));
            next[item] += 1;
        }
        if completed {
            events.push((usize::MAX, r#"{"type":"response.completed","response":{}}"#.to_owned()));
        }
        let cut = ((events.len() as f64) * cut_fraction) as usize;
        let arrived = &events[..cut];

        let mut history = History::new();
        let mut acc = ResponsesAccumulator::new();
        if as_sse {
            let text: String = arrived.iter().map(|(_, event)| format!("data: {event}\n\n")).collect();
            for piece in text.as_bytes().chunks(23) {
                acc.feed(piece, &mut history, |_| {}).expect("valid");
            }
        } else {
            for (_, event) in arrived {
                acc.push_json(event, &mut history, |_| {}).expect("valid");
            }
        }
        let summary = acc.abort(&mut history).expect("abort");

        // The oracle: the items whose `done` arrived, by output index.
        let mut expected: Vec<usize> = arrived
            .iter()
            .filter(|(_, event)| event.contains("response.output_item.done"))
            .map(|(item, _)| *item)
            .collect();
        expected.sort_unstable();
        let expected_items: Vec<Value> = expected
            .iter()
            .map(|&item| serde_json::from_str::<Value>(per_item[item].last().expect("done")).expect("json")["item"].clone())
            .collect();
        let recorded = history_items(&history);
        prop_assert_eq!(&recorded, &expected_items);
        let opened = arrived.iter().filter(|(_, event)| event.contains("output_item.added")).count();
        prop_assert_eq!(summary.dropped.len(), opened - expected.len());
        prop_assert_eq!(summary.recorded, expected.len());

        let projection = history.project(&ProjectionOptions::default()).expect("projects");
        let projected: Vec<Value> = projection.iter().map(|json| serde_json::from_str(json).expect("json")).collect();
        prop_assert!(check_pairing(&projected).is_ok(), "{:?}", check_pairing(&projected));
        // The projection holds the recorded items in their order, plus only synthetic outputs.
        let originals: Vec<&Value> = projected
            .iter()
            .filter(|item| !item["type"].as_str().unwrap_or("").ends_with("_output"))
            .collect();
        prop_assert_eq!(originals, recorded.iter().collect::<Vec<_>>());
    }
}

/// A message streamed in `deltas` deltas, as SSE.
fn long_message(deltas: usize) -> String {
    let mut events = vec![
        json!({"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}),
    ];
    for _ in 0..deltas {
        events.push(json!({"type":"response.output_text.delta","output_index":0,"item_id":"msg_1","content_index":0,"delta":"word "}));
    }
    let text = "word ".repeat(deltas);
    events.push(json!({"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":text}]}}));
    events.push(json!({"type":"response.completed","response":{}}));
    events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect()
}

#[test]
fn each_event_is_parsed_once_and_the_item_converted_once_whatever_the_number_of_deltas() {
    use agent_history::testing::{item_conversions, stream_bytes_parsed};
    let mut conversions = Vec::new();
    for deltas in [10, 100, 1000] {
        let sse = long_message(deltas);
        let mut history = History::new();
        let mut acc = ResponsesAccumulator::new();
        let parsed = stream_bytes_parsed();
        let converted = item_conversions();
        for piece in sse.as_bytes().chunks(64) {
            acc.feed(piece, &mut history, |_| {}).expect("valid");
        }
        let parsed = stream_bytes_parsed() - parsed;
        conversions.push(item_conversions() - converted);
        assert_eq!(history.len(), 1);
        // Every event's data once (the SSE text less its `data: ` prefixes and blank lines),
        // plus the added item's text read for its type and id: no earlier event read again.
        let events = sse.matches("data: ").count();
        let added_item = r#"{"type":"message","id":"msg_1","role":"assistant","content":[]}"#;
        assert_eq!(
            parsed,
            (sse.len() - events * "data: \n\n".len() + added_item.len()) as u64,
            "{deltas} deltas"
        );
    }
    // Recording converts the one complete item, the same number of times for any delta count.
    assert!(
        conversions.iter().all(|&count| count == conversions[0]),
        "{conversions:?}"
    );
    assert!(conversions[0] >= 1);
}

#[test]
fn crlf_line_ends_and_one_byte_reads_give_the_same_history() {
    for name in RESPONSES_FIXTURES {
        let text = fixture(name);
        let (lf, lf_summary, _) = feed_responses(text.as_bytes(), 4096);
        let crlf = text.replace('\n', "\r\n");
        let (history, summary, _) = feed_responses(crlf.as_bytes(), 1);
        assert_eq!(history_items(&history), history_items(&lf), "{name}");
        assert_eq!(summary, lf_summary, "{name}");
        assert_eq!(summary.end, StreamEnd::Completed);
    }
}

#[test]
fn chat_legacy_function_call_and_reasoning_are_reported_not_recorded() {
    let chunk = |delta: Value, finish: Value| {
        json!({"object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":finish}]}).to_string()
    };
    let mut history = History::new();
    let mut acc = ChatAccumulator::new();
    for event in [
        chunk(json!({"reasoning_content":"think"}), Value::Null),
        chunk(
            json!({"function_call":{"name":"ls","arguments":"{}"}}),
            Value::Null,
        ),
        json!({"object":"chat.completion.chunk","choices":[{"index":1,"delta":{"content":"other"},"finish_reason":null}]}).to_string(),
        chunk(json!({}), json!("function_call")),
    ] {
        acc.push_json(&event, &mut history, |_| {}).expect("valid");
    }
    let summary = acc.finish(&mut history).expect("finish");
    assert!(history.is_empty());
    assert_eq!(summary.end, StreamEnd::Completed);
    let left_out: Vec<&str> = summary
        .not_representable
        .iter()
        .map(|(_, what)| what.as_str())
        .collect();
    assert_eq!(left_out.len(), 3, "{left_out:?}");
    assert!(left_out[0].contains("function_call") && left_out[0].contains("2 byte"));
    assert_eq!(left_out[1], "choices other than index 0");
    assert!(left_out[2].contains("5 byte(s) of reasoning_content"));
}

#[test]
fn a_summary_before_the_end_says_not_ended_and_lists_the_open_items_as_open() {
    /// Feeds the first `events` events of `fixture`, takes the summary, then finishes.
    macro_rules! check {
        ($accumulator:expr, $fixture:expr, $events:expr, $open:expr) => {{
            let text = fixture($fixture);
            let cut = oracle_events(&text)[$events - 1].end;
            let mut accumulator = $accumulator;
            let mut history = History::new();
            accumulator
                .feed(&text.as_bytes()[..cut], &mut history, |_| {})
                .expect("valid");
            let before = accumulator.summary();
            assert!(!accumulator.is_ended(), "{}", $fixture);
            assert_eq!(before.end, StreamEnd::NotEnded, "{}", $fixture);
            assert_eq!(before.events, $events);
            assert!(before.dropped.is_empty(), "open, not dropped: {before:?}");
            let open: Vec<(u64, Option<&str>, Option<&str>, u64)> = before
                .open
                .iter()
                .map(|item| {
                    let item_type = item.item_type.as_deref();
                    (
                        item.output_index,
                        item_type,
                        item.item_id.as_deref(),
                        item.delta_bytes,
                    )
                })
                .collect();
            let expected: Vec<(u64, Option<&str>, Option<&str>, u64)> = $open;
            assert_eq!(open, expected, "{}", $fixture);
            let json = serde_json::to_value(&before).expect("JSON");
            assert_eq!(json["end"], "not_ended");
            assert_eq!(json["open"][0]["output_index"], expected[0].0);
            assert_eq!(json["dropped"], json!([]));

            // Then `finish`, as without the summary: the open items are dropped.
            let after = accumulator.finish(&mut history).expect("finish");
            assert_eq!(after.end, StreamEnd::EndOfInput, "{}", $fixture);
            assert_eq!(after.dropped, before.open, "{}", $fixture);
            assert!(after.open.is_empty());
            assert_eq!(after.recorded, before.recorded);
            assert_eq!(accumulator.summary(), after);
            assert!(history.is_empty(), "nothing was complete");
        }};
    }
    // Responses: inside the message, after its first two deltas ("Hello", ", world").
    check!(
        ResponsesAccumulator::new(),
        "text_message.sse",
        6,
        vec![(0, Some("message"), Some("msg_1"), 12)]
    );
    // Chat Completions: the message's text and the first tool call's `{"dir":`.
    check!(
        ChatAccumulator::new(),
        "chat_tool_calls.sse",
        4,
        vec![
            (0, Some("message"), None, 12),
            (1, Some("function_call"), Some("call_1"), 7)
        ]
    );
    // Anthropic: inside the text block ("Checking"), the thinking block stopped before it.
    check!(
        AnthropicAccumulator::new(),
        "anthropic_tool_use.sse",
        8,
        vec![(1, Some("message"), None, 8)]
    );
}

#[test]
fn an_event_that_is_not_utf8_ends_each_stream_as_bad_input_naming_it() {
    // One valid comment-free event, then an event whose data is not UTF-8.
    let bytes: &[u8] = b"data: {\"type\":\"response.created\"}\n\ndata: \xff\xfe\n\n";
    macro_rules! check {
        ($accumulator:expr) => {{
            let mut accumulator = $accumulator;
            let mut history = History::new();
            let error = accumulator
                .feed(bytes, &mut history, |_| {})
                .expect_err("the second event is not UTF-8");
            assert!(
                matches!(error, StreamError::NotUtf8 { event: 2 }),
                "{error:?}"
            );
            let summary = accumulator.finish(&mut history).expect("summary");
            assert_eq!(summary.end, StreamEnd::InvalidInput { event: 2 });
            assert!(history.is_empty());
        }};
    }
    check!(ResponsesAccumulator::new());
    check!(ChatAccumulator::new());
    check!(AnthropicAccumulator::new());
}
