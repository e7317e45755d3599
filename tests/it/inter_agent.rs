//! Inter-agent communications on resume, as Codex replays them: an `inter_agent_communication`
//! line becomes the `agent_message` item Codex converts it into (its id, author, recipient and
//! host metadata; its content as one `input_text` part, or a header and the ciphertext when it is
//! encrypted), which is a user turn for rollbacks; a line whose payload is not a communication is
//! skipped and reported, as Codex cannot read it either. A structured inter-agent instruction (an
//! assistant message whose only part is a communication's JSON) starts a user turn.

use crate::common;

use agent_history::{
    DEFAULT_TRUNCATION, History, ProjectionOptions, READER_LABEL, ReadMode, Rollout, RolloutError,
    SkipReason,
};
use common::{
    assistant, event_line, item_line, jsons, line, meta_line, resume_bytes, rollout_text, user,
};

fn inter_agent(payload: &str) -> String {
    line("inter_agent_communication", payload)
}

fn resume(lines: &[String]) -> agent_history::Resumed {
    resume_bytes(rollout_text(lines).as_bytes(), DEFAULT_TRUNCATION)
}

/// The item JSON Codex's conversion gives, written out from its rule: `type`, then `id` when the
/// communication has one, `author`, `recipient`, `content`, then the host metadata when present.
const PLAIN: &str = r#"{"author":"/root","recipient":"/root/worker","other_recipients":["/root/other"],"content":"check the tests","trigger_turn":true}"#;
const PLAIN_ITEM: &str = r#"{"type":"agent_message","author":"/root","recipient":"/root/worker","content":[{"type":"input_text","text":"check the tests"}]}"#;

const WITH_ID: &str = r#"{"id":"msg_7","author":"/root/worker","recipient":"/root","content":"done","internal_chat_message_metadata_passthrough":{"turn_id":"t2"},"trigger_turn":false,"future_key":1}"#;
const WITH_ID_ITEM: &str = r#"{"type":"agent_message","id":"msg_7","author":"/root/worker","recipient":"/root","content":[{"type":"input_text","text":"done"}],"internal_chat_message_metadata_passthrough":{"turn_id":"t2"}}"#;

const ENCRYPTED: &str = r#"{"author":"/root","recipient":"/root/worker","content":"","encrypted_content":"gAAAAB","trigger_turn":true}"#;
const ENCRYPTED_ITEM: &str = r#"{"type":"agent_message","author":"/root","recipient":"/root/worker","content":[{"type":"input_text","text":"Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\n"},{"type":"encrypted_content","encrypted_content":"gAAAAB"}]}"#;

#[test]
fn resume_records_each_communication_as_the_agent_message_codex_sends() {
    let lines = [
        meta_line(),
        item_line(&user("start")),
        inter_agent(PLAIN),
        item_line(&assistant("working")),
        inter_agent(WITH_ID),
        inter_agent(ENCRYPTED),
    ];
    let resumed = resume(&lines);
    assert_eq!(
        jsons(resumed.history()),
        [
            user("start"),
            PLAIN_ITEM.to_owned(),
            assistant("working"),
            WITH_ID_ITEM.to_owned(),
            ENCRYPTED_ITEM.to_owned(),
        ]
    );
    // Each entry knows its line.
    let entry_lines: Vec<Option<u64>> = (0..5).map(|i| resumed.entry_line(i)).collect();
    assert_eq!(entry_lines, [2, 3, 4, 5, 6].map(Some));
    // Nothing is left out or skipped: the lines became items.
    assert!(resumed.report().skipped.is_empty());
    assert_eq!(resumed.report().left_out.total(), 0);
    // And the request sends them as they are.
    let projected = resumed
        .history()
        .project(&ProjectionOptions::default())
        .expect("projects");
    let input: Vec<&str> = projected.iter().collect();
    assert_eq!(input[1], PLAIN_ITEM);
}

#[test]
fn a_line_keeps_its_payload_and_shows_its_item() {
    let rollout = Rollout::read(
        rollout_text(&[meta_line(), inter_agent(WITH_ID)]).as_bytes(),
        READER_LABEL,
        ReadMode::Strict,
    )
    .expect("reads");
    let line = &rollout.lines[1];
    assert_eq!(line.payload_json(), WITH_ID);
    assert_eq!(line.item().map(|entry| entry.json()), Some(WITH_ID_ITEM));
}

/// A communication is a user turn: a rollback of one turn removes the last communication and
/// what followed it; the user message before it stays.
#[test]
fn a_rollback_counts_a_communication_as_a_user_turn() {
    let lines = [
        meta_line(),
        item_line(&user("start")),
        item_line(&assistant("delegating")),
        inter_agent(PLAIN),
        item_line(&assistant("on it")),
        event_line(r#"{"type":"thread_rolled_back","num_turns":1}"#),
    ];
    let resumed = resume(&lines);
    assert_eq!(
        jsons(resumed.history()),
        [user("start"), assistant("delegating")]
    );
    assert_eq!(resumed.history().user_turn_count(), 1);

    // The same in Codex's turn-event shape: the communication's turn is discarded whole.
    let turn = |id: &str, body: Vec<String>| {
        let mut lines = vec![event_line(&format!(
            r#"{{"type":"task_started","turn_id":"{id}"}}"#
        ))];
        lines.extend(body);
        lines.push(event_line(&format!(
            r#"{{"type":"task_complete","turn_id":"{id}"}}"#
        )));
        lines
    };
    let mut lines = vec![meta_line()];
    lines.extend(turn(
        "t1",
        vec![
            event_line(r#"{"type":"user_message","message":"start"}"#),
            item_line(&user("start")),
            item_line(&assistant("delegating")),
        ],
    ));
    lines.extend(turn(
        "t2",
        vec![inter_agent(PLAIN), item_line(&assistant("on it"))],
    ));
    lines.push(event_line(r#"{"type":"thread_rolled_back","num_turns":1}"#));
    let resumed = resume(&lines);
    assert_eq!(
        jsons(resumed.history()),
        [user("start"), assistant("delegating")]
    );
}

/// A payload that is not a communication is skipped and reported (Codex cannot read the line
/// and skips it); it is no item and no turn, so a rollback goes past it. Strict reading refuses
/// the file at that line.
#[test]
fn a_malformed_communication_is_skipped_and_reported() {
    let malformed = [
        r#"{"author":"/root","recipient":"/root/w","content":"go"}"#, // no trigger_turn
        r#"{"author":"/root","recipient":"/root/w","trigger_turn":true}"#, // no content
        r#"{"author":"root","recipient":"/root/w","content":"go","trigger_turn":true}"#,
        r#"{"author":"/root","recipient":"/root/W","content":"go","trigger_turn":true}"#,
        r#"["/root","/root/w"]"#,
        r#""text""#,
    ];
    for payload in malformed {
        let lines = [
            meta_line(),
            item_line(&user("one")),
            item_line(&assistant("a")),
            item_line(&user("two")),
            inter_agent(payload),
            item_line(&assistant("b")),
            event_line(r#"{"type":"thread_rolled_back","num_turns":1}"#),
        ];
        let resumed = resume(&lines);
        let skipped = &resumed.report().skipped;
        assert_eq!(skipped.len(), 1, "{payload}");
        assert_eq!(skipped[0].line, 5);
        assert!(
            matches!(&skipped[0].reason, SkipReason::InvalidPayload(why) if why.starts_with("inter_agent_communication")),
            "{payload}: {:?}",
            skipped[0].reason
        );
        // The rollback removed the turn of "two", the last real one.
        assert_eq!(
            jsons(resumed.history()),
            [user("one"), assistant("a")],
            "{payload}"
        );

        let error = Rollout::read(
            rollout_text(&lines).as_bytes(),
            READER_LABEL,
            ReadMode::Strict,
        )
        .expect_err("strict");
        assert!(
            matches!(
                error,
                RolloutError::BadLine {
                    line: 5,
                    reason: SkipReason::InvalidPayload(_),
                    ..
                }
            ),
            "{payload}: {error:?}"
        );
    }
}

/// An assistant message whose only part is a communication's JSON starts a user turn; one whose
/// text lacks a field Codex requires, or that has a second part, does not.
#[test]
fn a_structured_instruction_is_a_boundary_only_with_the_full_shape() {
    let turns = |text: &str, parts: usize| {
        let part = serde_json::json!({"type": "output_text", "text": text});
        let item = serde_json::json!({
            "type": "message", "role": "assistant", "content": vec![part; parts]
        });
        let mut history = History::new();
        history.record_json(user("hi")).expect("records");
        history.record_json(item.to_string()).expect("records");
        history.user_turn_count()
    };
    let full = r#"{"author":"/root","recipient":"/root/w","content":"go","trigger_turn":false}"#;
    assert_eq!(turns(full, 1), 2);
    assert_eq!(turns(full, 2), 1);
    assert_eq!(
        turns(
            r#"{"author":"/root","recipient":"/root/w","content":"go"}"#,
            1
        ),
        1
    );
    assert_eq!(turns("author: /root\nrecipient: /root/w\n\ngo", 1), 1);
}
