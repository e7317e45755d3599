//! The Responses API request body and the prompt compiler.

use agent_history::{
    History, Modalities, ProjectionOptions, PromptCompiler, ReasoningConfig, RequestSettings,
    StepContext, TurnId, Verbosity,
};
use serde_json::{Value, json};

fn history() -> History {
    let mut history = History::new();
    // Unusual spacing and key order: the body must carry these exact bytes.
    history
        .record_json(r#"{ "role" : "user", "type":"message","content":[{"text":"hi","type":"input_text"}] }"#)
        .expect("recorded");
    history
        .record_json(r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{}","call_id":"c1"}"#)
        .expect("recorded");
    history
}

fn keys(body: &Value) -> Vec<&str> {
    body.as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn minimal_body_has_codex_keys_in_order_and_copies_item_bytes() {
    let history = history();
    let request = PromptCompiler::new(RequestSettings {
        model: "gpt-5.1-codex".into(),
        ..RequestSettings::default()
    })
    .with_base_instructions("Be brief.")
    .compile(&history, StepContext::default())
    .expect("lenient");
    let bytes = request.body().expect("body");
    let text = String::from_utf8(bytes.clone()).expect("UTF-8");
    assert!(
        text.contains(r#""input":[{ "role" : "user", "type":"message","content":[{"text":"hi","type":"input_text"}] },{"type":"function_call","#),
        "{text}"
    );
    let body: Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(
        keys(&body),
        [
            "model",
            "instructions",
            "input",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "reasoning",
            "store",
            "stream",
            "include"
        ]
    );
    assert_eq!(body["model"], "gpt-5.1-codex");
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(body["tools"], json!([]));
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["reasoning"], Value::Null);
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["include"], json!([]));
    assert_eq!(
        body["input"].as_array().map(Vec::len),
        Some(3),
        "synthetic output added"
    );
    assert_eq!(body["input"][2]["output"], "aborted");
}

#[test]
fn full_body_has_reasoning_cache_key_text_format_and_tier() {
    let history = history();
    let schema =
        json!({"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]});
    let tools = vec![json!({"type":"function","name":"shell","parameters":{"type":"object"}})];
    let request = PromptCompiler::new(RequestSettings {
        model: "m".into(),
        reasoning: Some(ReasoningConfig {
            effort: Some("medium".into()),
            summary: Some("auto".into()),
        }),
        verbosity: Some(Verbosity::Low),
        prompt_cache_key: Some("thread-1".into()),
        service_tier: Some("priority".into()),
    })
    .with_tools(tools.clone(), true)
    .with_output_schema(schema.clone(), true)
    .with_projection(ProjectionOptions::for_modalities(Modalities::TEXT))
    .compile(
        &history,
        StepContext {
            turn_id: Some(TurnId::new("turn-7")),
            step_id: 3,
            tool_plan_generation: 2,
        },
    )
    .expect("lenient");
    assert_eq!(request.step.turn_id, Some(TurnId::new("turn-7")));
    assert_eq!(request.step.step_id, 3);
    assert_eq!(request.step.tool_plan_generation, 2);
    let body: Value = serde_json::from_slice(&request.body().expect("body")).expect("JSON");
    assert_eq!(
        keys(&body),
        [
            "model",
            "instructions",
            "input",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "reasoning",
            "store",
            "stream",
            "include",
            "prompt_cache_key",
            "text",
            "service_tier"
        ]
    );
    assert_eq!(body["tools"], json!(tools));
    assert_eq!(body["parallel_tool_calls"], true);
    assert_eq!(
        body["reasoning"],
        json!({"effort":"medium","summary":"auto"})
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["prompt_cache_key"], "thread-1");
    assert_eq!(
        body["text"],
        json!({"verbosity":"low","format":{"type":"json_schema","strict":true,"schema":schema,"name":"codex_output_schema"}})
    );
    assert_eq!(body["service_tier"], "priority");
}

#[test]
fn compiling_never_changes_the_history_and_is_deterministic() {
    let history = history();
    let before = history.clone();
    let compiler = PromptCompiler::new(RequestSettings::default());
    let first = compiler
        .compile(&history, StepContext::default())
        .expect("lenient")
        .body()
        .expect("body");
    let second = compiler
        .compile(&history, StepContext::default())
        .expect("lenient")
        .body()
        .expect("body");
    assert_eq!(first, second);
    assert_eq!(history, before);
}

#[test]
fn strict_compile_fails_on_violations() {
    let mut history = History::new();
    history
        .record_json(r#"{"type":"custom_tool_call","call_id":"c","name":"t","input":"x"}"#)
        .expect("recorded");
    let compiler = PromptCompiler::new(RequestSettings::default())
        .with_projection(ProjectionOptions::default().strict());
    let error = compiler
        .compile(&history, StepContext::default())
        .expect_err("violation");
    assert_eq!(
        error.to_string(),
        r#"1 protocol violation(s) in history: item 0 (custom_tool_call, call_id "c") has no output"#
    );
}

#[test]
fn a_failing_writer_gives_an_io_error() {
    struct Broken;
    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let request = PromptCompiler::new(RequestSettings::default())
        .compile(&history(), StepContext::default())
        .expect("lenient");
    let error = request.write_body(&mut Broken).expect_err("fails");
    assert!(
        matches!(error, agent_history::RequestError::Io(_)),
        "{error:?}"
    );
}
