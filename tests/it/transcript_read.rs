//! The transcript reader against the independent model of `claude_model.rs`: on every fixture
//! and on generated transcripts, the library sends the records the model sends, and its
//! Anthropic projection is the model's messages, which the library's validator accepts.

use agent_history::{ReadMode, Target, TargetOptions, Transcript, validate};
use serde_json::Value;

use crate::claude_model::{conversation, fixtures, messages, records};

/// The records the library's conversation sends, by uuid.
fn library_sent(transcript: &Transcript) -> Vec<String> {
    transcript
        .conversation()
        .sent()
        .iter()
        .map(|record| record.uuid.clone())
        .collect()
}

/// The library's Anthropic messages for the conversation, checked by its validator.
fn library_messages(transcript: &Transcript) -> Vec<Value> {
    let history = transcript.conversation().history().expect("a history");
    let projection = history
        .project_for(&TargetOptions::new(Target::AnthropicMessages))
        .expect("a projection");
    let messages: Value = serde_json::from_str(&projection.to_json()).expect("JSON");
    let validation = validate(Target::AnthropicMessages, &messages);
    assert!(
        validation.is_valid(),
        "{:#?}\n{messages}",
        validation.findings
    );
    messages.as_array().expect("an array").clone()
}

fn read(text: &str) -> Transcript {
    Transcript::read(text.as_bytes(), "<test>", ReadMode::Lenient).expect("a transcript")
}

/// The library agrees with the model on `text`.
fn agrees(name: &str, text: &str) {
    let transcript = read(text);
    let model_records = records(text);
    let sent = conversation(&model_records);
    assert_eq!(library_sent(&transcript), sent, "{name}: records sent");
    assert_eq!(
        library_messages(&transcript),
        messages(&model_records, &sent),
        "{name}: messages"
    );
}

#[test]
fn every_fixture_sends_what_the_model_sends() {
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures()).expect("the fixtures") {
        let path = entry.expect("an entry").path();
        if path
            .extension()
            .is_some_and(|extension| extension == "jsonl")
        {
            let text = std::fs::read_to_string(&path).expect("read");
            agrees(&path.display().to_string(), &text);
            checked += 1;
        }
    }
    assert!(checked >= 7, "{checked} fixtures");
}
