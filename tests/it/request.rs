//! The Responses API request body and the prompt compiler.

use agent_history::{
    History, MAX_TOOLS_FILE_BYTES, Modalities, ProjectionOptions, PromptCompiler,
    REASONING_ENCRYPTED_CONTENT, ReasoningConfig, RequestSettings, ResponseOptions, StepContext,
    StepIdentity, ToolChoice, ToolPlan, ToolPlanError, ToolPosition, ToolRegistry, ToolsError,
    TurnId, Verbosity, read_tools,
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
    // Generation 2: a registry that held other tools before.
    let mut registry = ToolRegistry::default();
    registry
        .set(vec![json!({"type":"local_shell"})])
        .expect("a plan");
    let plan = registry.set(tools.clone()).expect("a plan");
    let request = PromptCompiler::new(RequestSettings {
        model: "m".into(),
        reasoning: Some(ReasoningConfig {
            effort: Some("medium".into()),
            summary: Some("auto".into()),
        }),
        verbosity: Some(Verbosity::Low),
        prompt_cache_key: Some("thread-1".into()),
        service_tier: Some("priority".into()),
        max_output_tokens: Some(2048),
    })
    .with_tools(plan, true)
    .with_output_schema(schema.clone(), true)
    .with_projection(ProjectionOptions::for_modalities(Modalities::TEXT))
    .compile(
        &history,
        StepContext {
            turn_id: Some(TurnId::new("turn-7")),
            step_id: 3,
        },
    )
    .expect("lenient");
    assert_eq!(
        request.step_identity(),
        StepIdentity {
            turn_id: Some(TurnId::new("turn-7")),
            step_id: 3,
            tool_generation: 2,
        }
    );
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
            "service_tier",
            "max_output_tokens"
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
    assert_eq!(body["max_output_tokens"], 2048);
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

/// The body a compiler with nothing but a model and instructions writes: Codex's settings, byte
/// for byte as before they became settings.
#[test]
fn default_response_options_keep_codex_body_byte_for_byte() {
    let mut history = History::new();
    history
        .record_json(
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
        )
        .expect("recorded");
    let request = PromptCompiler::new(RequestSettings {
        model: "m".into(),
        ..RequestSettings::default()
    })
    .with_base_instructions("I")
    .compile(&history, StepContext::default())
    .expect("lenient");
    assert_eq!(request.response, ResponseOptions::default());
    assert_eq!(
        String::from_utf8(request.body().expect("body")).expect("UTF-8"),
        concat!(
            r#"{"model":"m","instructions":"I","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],"#,
            r#""tools":[],"tool_choice":"auto","parallel_tool_calls":false,"reasoning":null,"store":false,"stream":true,"include":[]}"#
        )
    );
    let with_reasoning = PromptCompiler::new(RequestSettings {
        model: "m".into(),
        reasoning: Some(ReasoningConfig::default()),
        ..RequestSettings::default()
    })
    .compile(&history, StepContext::default())
    .expect("lenient");
    let body: Value = serde_json::from_slice(&with_reasoning.body().expect("body")).expect("JSON");
    assert_eq!(body["reasoning"], json!({}));
    assert_eq!(body["include"], json!([REASONING_ENCRYPTED_CONTENT]));
}

#[test]
fn response_options_set_tool_choice_store_stream_and_include() {
    let cases = [
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
        (
            ToolChoice::Other(json!({"type":"function","name":"shell"})),
            json!({"type":"function","name":"shell"}),
        ),
    ];
    for (choice, expected) in cases {
        let request = PromptCompiler::new(RequestSettings {
            reasoning: Some(ReasoningConfig {
                effort: Some("high".into()),
                summary: None,
            }),
            ..RequestSettings::default()
        })
        .with_response_options(ResponseOptions {
            tool_choice: choice,
            store: true,
            stream: false,
            include: Some(vec!["message.output_text.logprobs".into()]),
        })
        .compile(&history(), StepContext::default())
        .expect("lenient");
        let body: Value = serde_json::from_slice(&request.body().expect("body")).expect("JSON");
        assert_eq!(body["tool_choice"], expected);
        assert_eq!(body["store"], true);
        assert_eq!(body["stream"], false);
        // A set list replaces Codex's rule, with reasoning set or not.
        assert_eq!(body["include"], json!(["message.output_text.logprobs"]));
        assert_eq!(body["reasoning"], json!({"effort":"high"}));
        assert_eq!(keys(&body)[4], "tool_choice");
    }
    // An empty list sends none, even with reasoning.
    let request = PromptCompiler::new(RequestSettings {
        reasoning: Some(ReasoningConfig::default()),
        ..RequestSettings::default()
    })
    .with_response_options(ResponseOptions {
        include: Some(Vec::new()),
        ..ResponseOptions::default()
    })
    .compile(&history(), StepContext::default())
    .expect("lenient");
    let body: Value = serde_json::from_slice(&request.body().expect("body")).expect("JSON");
    assert_eq!(body["include"], json!([]));
}

/// `serde_json` writes a request through its `Serialize` impl in exactly the bytes of
/// `write_body`, for the smallest and the fullest request.
#[test]
fn serialize_gives_the_bytes_of_write_body() {
    let minimal = PromptCompiler::new(RequestSettings::default())
        .compile(&history(), StepContext::default())
        .expect("lenient");
    let full = PromptCompiler::new(RequestSettings {
        model: "gpt-5.1-codex".into(),
        reasoning: Some(ReasoningConfig {
            effort: Some("medium".into()),
            summary: Some("auto".into()),
        }),
        verbosity: Some(Verbosity::High),
        prompt_cache_key: Some("thread-1".into()),
        service_tier: Some("flex".into()),
        max_output_tokens: Some(100),
    })
    .with_base_instructions("Line one.\n\"Two\" \u{1F600}")
    .with_tools(
        ToolPlan::new(vec![
            json!({"type":"function","name":"shell","parameters":{"type":"object","properties":{}}}),
        ])
        .expect("a plan"),
        true,
    )
    .with_output_schema(json!({"type":"object"}), false)
    .with_response_options(ResponseOptions {
        tool_choice: ToolChoice::Required,
        store: true,
        stream: false,
        include: Some(vec!["a".into(), "b".into()]),
    })
    .compile(&history(), StepContext::default())
    .expect("lenient");
    for request in [minimal, full] {
        let body = request.body().expect("body");
        assert_eq!(
            String::from_utf8(serde_json::to_vec(&request).expect("serializes")).expect("UTF-8"),
            String::from_utf8(body.clone()).expect("UTF-8")
        );
        // The item bytes go through untouched (spacing and key order as recorded).
        assert!(
            String::from_utf8(body)
                .expect("UTF-8")
                .contains(r#"{ "role" : "user", "type":"message","#)
        );
        // And into a `Value` too, the same JSON.
        assert_eq!(
            serde_json::to_value(&request).expect("to a value"),
            serde_json::from_slice::<Value>(&request.body().expect("body")).expect("JSON")
        );
    }
}

/// White space around an item's text is not part of its JSON: the body leaves it out, which is
/// what `Serialize` can give.
#[test]
fn white_space_around_an_item_is_left_out_of_the_body() {
    let mut history = History::new();
    history
        .record_json(" \n{\"type\":\"message\",\"role\":\"user\",\"content\":[]}\r\n\t ")
        .expect("recorded");
    let request = PromptCompiler::new(RequestSettings::default())
        .compile(&history, StepContext::default())
        .expect("lenient");
    let body = String::from_utf8(request.body().expect("body")).expect("UTF-8");
    assert!(
        body.contains(r#""input":[{"type":"message","role":"user","content":[]}],"#),
        "{body}"
    );
    assert_eq!(
        serde_json::to_string(&request).expect("serializes"),
        body,
        "the same bytes"
    );
}

mod serialize_matches_write_body {
    use super::*;
    use proptest::prelude::*;

    /// Item texts: plain, with odd spacing and key order, with white space around, a call
    /// without output (repaired), an output without call (dropped), unicode and escapes.
    const ITEMS: &[&str] = &[
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
        r#"{ "content" : [ {"text":"é \" \\ \u00e9 \ud83d\ude00","type":"input_text"} ] , "role":"user","type":"message" }"#,
        "\t{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"1.0e2\"}]}\n",
        r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
        r#"{"type":"function_call_output","call_id":"orphan","output":"x"}"#,
        r#"{"type":"reasoning","summary":[],"encrypted_content":"abc"}"#,
    ];

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[a-z]{1,8}",
            any::<String>(),
            Just("quote \" backslash \\ newline \n nul \u{0} emoji \u{1F600}".to_owned()),
        ]
    }

    fn choice() -> impl Strategy<Value = ToolChoice> {
        prop_oneof![
            Just(ToolChoice::Auto),
            Just(ToolChoice::None),
            Just(ToolChoice::Required),
            text().prop_map(|name| ToolChoice::Other(json!({"type":"function","name":name}))),
        ]
    }

    fn verbosity() -> impl Strategy<Value = Option<Verbosity>> {
        prop_oneof![
            Just(None),
            Just(Some(Verbosity::Low)),
            Just(Some(Verbosity::Medium)),
            Just(Some(Verbosity::High)),
        ]
    }

    prop_compose! {
        fn settings()(
            model in text(),
            reasoning in proptest::option::of(
                (proptest::option::of(text()), proptest::option::of(text()))
                    .prop_map(|(effort, summary)| ReasoningConfig { effort, summary })
            ),
            verbosity in verbosity(),
            prompt_cache_key in proptest::option::of(text()),
            service_tier in proptest::option::of(text()),
            max_output_tokens in proptest::option::of(any::<u32>()),
        ) -> RequestSettings {
            RequestSettings {
                model, reasoning, verbosity, prompt_cache_key, service_tier, max_output_tokens,
            }
        }
    }

    prop_compose! {
        fn response()(
            tool_choice in choice(),
            store in any::<bool>(),
            stream in any::<bool>(),
            include in proptest::option::of(proptest::collection::vec(text(), 0..3)),
        ) -> ResponseOptions {
            ResponseOptions { tool_choice, store, stream, include }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Over varied settings, options, tools, schemas and histories, `serde_json::to_vec`
        /// of the request is `write_body`'s bytes, and those are one JSON object.
        #[test]
        fn for_any_settings(
            settings in settings(),
            response in response(),
            instructions in text(),
            tool_names in proptest::collection::vec(text(), 0..3),
            parallel in any::<bool>(),
            schema in proptest::option::of((text(), any::<bool>())),
            items in proptest::collection::vec(0..ITEMS.len(), 0..8),
            text_only in any::<bool>(),
        ) {
            let mut history = History::new();
            for index in items {
                history.record_json(ITEMS[index]).expect("recorded");
            }
            // One tool per name: a plan refuses two tools with one name.
            let mut seen = std::collections::HashSet::new();
            let tools = tool_names
                .into_iter()
                .filter(|name| seen.insert(name.clone()))
                .map(|name| json!({"type":"function","name":name,"parameters":{"type":"object"}}))
                .collect();
            let modalities = if text_only { Modalities::TEXT } else { Modalities::default() };
            let mut compiler = PromptCompiler::new(settings)
                .with_base_instructions(instructions)
                .with_tools(ToolPlan::new(tools).expect("distinct names"), parallel)
                .with_response_options(response)
                .with_projection(ProjectionOptions::for_modalities(modalities));
            if let Some((title, strict)) = schema {
                compiler = compiler.with_output_schema(json!({"type":"object","title":title}), strict);
            }
            let request = compiler.compile(&history, StepContext::default()).expect("lenient");
            let body = request.body().expect("body");
            prop_assert_eq!(serde_json::to_vec(&request).expect("serializes"), body.clone());
            prop_assert!(serde_json::from_slice::<Value>(&body).expect("JSON").is_object());
        }
    }
}

/// Tool specs from a file: an array of objects is taken as given; anything else is a typed error
/// that names the file and says what is wrong.
#[test]
fn tools_files_are_read_and_checked() {
    let dir = crate::common::temp_dir();
    let path = dir.path().join("tools.json");
    let shown = path.display().to_string();
    std::fs::write(
        &path,
        r#"[{"type":"function","name":"shell","parameters":{"type":"object"},"strict":false},{"type":"web_search"}]"#,
    )
    .expect("written");
    let tools = read_tools(&path).expect("valid");
    assert_eq!(tools.len(), 2);
    assert_eq!(tools.generation(), 0);
    assert_eq!(
        serde_json::to_string(&tools.specs()[0]).expect("serializes"),
        r#"{"type":"function","name":"shell","parameters":{"type":"object"},"strict":false}"#,
        "keys in the file's order"
    );
    std::fs::write(&path, "[]").expect("written");
    assert!(read_tools(&path).expect("valid").is_empty());

    let cases: [(&str, &str); 5] = [
        (
            "{\"type\":\"function\"}",
            "holds an object, not a JSON array of tool specs",
        ),
        (
            "\"shell\"",
            "holds a string, not a JSON array of tool specs",
        ),
        (
            "[{\"type\":\"function\"}, null]",
            "element 1 of the array is null, not a tool spec object",
        ),
        (
            "[[]]",
            "element 0 of the array is an array, not a tool spec object",
        ),
        ("[{\"type\":", "is not JSON"),
    ];
    for (text, problem) in cases {
        std::fs::write(&path, text).expect("written");
        let error = read_tools(&path).expect_err(text);
        let message = error.to_string();
        assert!(message.contains(&shown), "{message}");
        assert!(message.contains(problem), "{text}: {message}");
    }
    std::fs::write(&path, "[1]").expect("written");
    assert!(matches!(
        read_tools(&path),
        Err(ToolsError::NotAnObject {
            index: 0,
            found: "a number",
            ..
        })
    ));
    std::fs::write(&path, "[] x").expect("written");
    assert!(matches!(read_tools(&path), Err(ToolsError::Json { .. })));
    // Specs a plan refuses: the file is named, the spec is in the source.
    std::fs::write(
        &path,
        r#"[{"type":"function","name":"shell"},{"type":"custom","name":"shell"}]"#,
    )
    .expect("written");
    let error = read_tools(&path).expect_err("two tools named shell");
    assert!(error.to_string().contains(&shown), "{error}");
    assert!(
        matches!(
            &error,
            ToolsError::Plan {
                source: ToolPlanError::DuplicateName { name, first: ToolPosition { index: 0, member: None }, second: ToolPosition { index: 1, member: None }, .. },
                ..
            } if name == "shell"
        ),
        "{error:?}"
    );
    std::fs::write(&path, r#"[{"type":"function","parameters":{}}]"#).expect("written");
    assert!(matches!(
        read_tools(&path),
        Err(ToolsError::Plan {
            source: ToolPlanError::InvalidSpec { .. },
            ..
        })
    ));

    let missing = dir.path().join("missing.json");
    let error = read_tools(&missing).expect_err("missing");
    assert!(matches!(error, ToolsError::Io { .. }));
    assert!(error.to_string().contains("missing.json"), "{error}");
    assert!(
        matches!(read_tools(dir.path()), Err(ToolsError::Io { .. })),
        "a directory"
    );

    // Past the limit: refused without being parsed (a sparse file, so nothing is written).
    let large = dir.path().join("large.json");
    std::fs::File::create(&large)
        .and_then(|file| file.set_len(MAX_TOOLS_FILE_BYTES + 1))
        .expect("sized");
    assert!(matches!(
        read_tools(&large),
        Err(ToolsError::TooLarge {
            limit: MAX_TOOLS_FILE_BYTES,
            ..
        })
    ));
}
