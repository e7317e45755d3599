//! The tool plan of a step: the tools a request offers and the lookup of the calls its answer
//! makes come from one snapshot, numbered by a generation that moves only when the tools change,
//! and serialized once per plan.

use std::sync::Arc;

use agent_history::testing::tool_plan_serializations;
use agent_history::{
    History, PromptCompiler, RequestSettings, ResponseItem, Runner, StepContext, ToolCallKey,
    ToolPlan, ToolPlanError, ToolPosition, ToolRegistry, TurnId,
};
use serde_json::{Value, json};

fn item(json: &str) -> ResponseItem {
    serde_json::from_str(json).expect("an item")
}

fn function_call(name: &str) -> ResponseItem {
    item(&format!(
        r#"{{"type":"function_call","name":"{name}","arguments":"{{}}","call_id":"c_{name}"}}"#
    ))
}

fn history() -> History {
    let mut history = History::new();
    history
        .record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the test"}]}"#)
        .expect("recorded");
    history
}

fn compiler() -> PromptCompiler {
    PromptCompiler::new(RequestSettings {
        model: "gpt-5".into(),
        ..RequestSettings::default()
    })
}

fn shell() -> Value {
    json!({"type":"function","name":"shell","parameters":{"type":"object"}})
}

fn apply_patch() -> Value {
    json!({"type":"custom","name":"apply_patch","format":{"type":"text"}})
}

/// A request keeps its plan: the calls of its answer are looked up in the tools the model was
/// shown, at the request's generation, even after the registry changed (here: `shell` removed,
/// `read_file` added) and even from another thread.
#[test]
fn a_request_and_the_lookup_of_its_calls_use_one_generation() {
    let mut registry = ToolRegistry::default();
    let mut compiler = compiler();
    compiler.set_tools(registry.add(shell()).expect("a plan"));
    let step = |step_id| StepContext {
        turn_id: Some(TurnId::new("turn-1")),
        step_id,
    };
    let first = compiler.compile(&history(), step(1)).expect("lenient");
    let shown = first.step_identity();
    assert_eq!(shown.tool_generation, 1);
    assert_eq!(shown.step_id, 1);

    // The registry changes while the model answers.
    let now = registry
        .update(|specs| {
            specs.clear();
            specs.push(json!({"type":"function","name":"read_file","parameters":{}}));
        })
        .expect("a plan");
    assert_eq!(now.generation(), 2);

    // The executor looks the answer's call up in the request's plan, on another thread.
    let plan = Arc::clone(&first.prompt.tools);
    let found = std::thread::spawn(move || {
        plan.lookup_item(&function_call("shell"))
            .map(|found| (found.generation, found.position, found.spec.clone()))
    })
    .join()
    .expect("the executor thread");
    assert_eq!(
        found,
        Some((
            shown.tool_generation,
            ToolPosition {
                index: 0,
                member: None
            },
            shell()
        ))
    );
    // The registry's plan would have missed it, and offers a tool the model was not shown.
    assert!(now.lookup_item(&function_call("shell")).is_none());
    assert!(
        first
            .prompt
            .tools
            .lookup_item(&function_call("read_file"))
            .is_none()
    );

    // The next step gets the new plan; the first request still holds its own.
    compiler.set_tools(registry.plan());
    let second = compiler.compile(&history(), step(2)).expect("lenient");
    assert_eq!(second.step_identity().tool_generation, 2);
    let found = second
        .prompt
        .tools
        .lookup_item(&function_call("read_file"))
        .expect("offered in step 2");
    assert_eq!(found.generation, second.step_identity().tool_generation);
    assert_eq!(first.prompt.tools.generation(), 1);
    let first_body = String::from_utf8(first.body().expect("body")).expect("UTF-8");
    assert!(first_body.contains(r#""tools":[{"type":"function","name":"shell""#));
}

/// Plans can cross threads and are shared, not copied.
#[test]
fn plans_are_send_sync_and_shared() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ToolPlan>();
    send_sync::<Arc<ToolPlan>>();
    send_sync::<ToolRegistry>();
    let registry = ToolRegistry::new(vec![shell()]).expect("a plan");
    assert!(Arc::ptr_eq(&registry.plan(), &registry.plan()));
}

/// The generation moves when what the model is shown changes (a tool added, removed, edited,
/// reordered, even a key order), never when an edit leaves the specs as they were or fails.
#[test]
fn the_generation_moves_only_on_a_real_change() {
    let mut registry = ToolRegistry::new(vec![shell()]).expect("a plan");
    let start = registry.plan();
    assert_eq!(start.generation(), 0);

    // No change: the same plan, not only the same number.
    let same = registry.set(vec![shell()]).expect("a plan");
    assert!(Arc::ptr_eq(&start, &same));
    let same = registry.update(|_| {}).expect("a plan");
    assert!(Arc::ptr_eq(&start, &same));
    let same = registry
        .update(|specs| {
            specs.push(apply_patch());
            specs.pop();
        })
        .expect("a plan");
    assert!(Arc::ptr_eq(&start, &same));

    // A refused edit keeps the current plan.
    let error = registry.add(shell()).expect_err("a second `shell`");
    assert!(matches!(error, ToolPlanError::DuplicateName { .. }));
    assert!(Arc::ptr_eq(&start, &registry.plan()));

    let added = registry.add(apply_patch()).expect("a plan");
    assert_eq!(added.generation(), 1);
    // Several edits at once: one generation.
    let batch = registry
        .update(|specs| {
            specs.push(json!({"type":"local_shell"}));
            specs.push(json!({"type":"web_search"}));
        })
        .expect("a plan");
    assert_eq!(batch.generation(), 2);
    assert_eq!(batch.len(), 4);
    // Reordered: the body differs, so the generation moves.
    let reordered = registry.update(|specs| specs.swap(0, 1)).expect("a plan");
    assert_eq!(reordered.generation(), 3);
    // The same keys in another order are other bytes: a change too.
    let keys_reordered = registry
        .update(|specs| {
            specs[1] = json!({"parameters":{"type":"object"},"type":"function","name":"shell"});
        })
        .expect("a plan");
    assert_eq!(keys_reordered.generation(), 4);
    // Back to an earlier list: still a change from the current one.
    let back = registry.set(vec![shell()]).expect("a plan");
    assert_eq!(back.generation(), 5);
    assert_eq!(registry.generation(), 5);
    // Plans handed out never change.
    assert_eq!((start.generation(), start.len()), (0, 1));
    assert_eq!((batch.generation(), batch.len()), (2, 4));
}

/// The specs are serialized when a plan is built and copied into every body after that: the
/// per-thread count of plan serializations does not move while requests are compiled and written,
/// every request holds the same plan (one `Arc`), and the bytes are the ones serde gives the
/// list of specs, so bodies are what they were with a `Vec<Value>`.
#[test]
fn tool_specs_are_serialized_once_per_plan_not_per_request() {
    let specs = vec![
        shell(),
        apply_patch(),
        json!({"type":"function","name":"f","strict":true,"description":"Ünïcode \"quoted\"\n","parameters":{"z":1.5e300,"a":[]}}),
    ];
    let before = tool_plan_serializations();
    let mut registry = ToolRegistry::default();
    let plan = registry.set(specs.clone()).expect("a plan");
    assert_eq!(tool_plan_serializations() - before, 1, "one per plan built");

    let compiler = compiler().with_tools(Arc::clone(&plan), true);
    let history = history();
    let before = tool_plan_serializations();
    let mut requests = Vec::new();
    let mut buffer = Vec::new();
    for step_id in 0..5 {
        let request = compiler
            .compile(
                &history,
                StepContext {
                    turn_id: None,
                    step_id,
                },
            )
            .expect("lenient");
        let body = request.body().expect("body");
        request.write_body_into(&mut buffer).expect("body");
        assert_eq!(buffer, body);
        assert_eq!(serde_json::to_vec(&request).expect("serializes"), body);
        requests.push((request, body));
    }
    assert_eq!(
        tool_plan_serializations(),
        before,
        "no request serialized a spec"
    );
    let expected = format!(
        r#""tools":{},"tool_choice""#,
        serde_json::to_string(&specs).expect("serializes")
    );
    for (request, body) in &requests {
        assert!(Arc::ptr_eq(&request.prompt.tools, &plan));
        let body = std::str::from_utf8(body).expect("UTF-8");
        assert!(body.contains(&expected), "{body}");
    }
    // An unchanged set builds (serializes) once to compare, and keeps the plan.
    let before = tool_plan_serializations();
    assert!(Arc::ptr_eq(&registry.set(specs).expect("a plan"), &plan));
    assert_eq!(tool_plan_serializations() - before, 1);
    // No tools: nothing to serialize, and the body has `[]`.
    let before = tool_plan_serializations();
    let empty = ToolPlan::new(Vec::new()).expect("a plan");
    assert_eq!(tool_plan_serializations(), before);
    assert_eq!(empty.json(), "[]");
    assert_eq!(serde_json::to_string(&empty).expect("serializes"), "[]");
}

fn duplicate(specs: Vec<Value>) -> (Option<String>, String, ToolPosition, ToolPosition) {
    match ToolPlan::new(specs) {
        Err(ToolPlanError::DuplicateName {
            namespace,
            name,
            first,
            second,
        }) => (namespace, name, first, second),
        other => panic!("not a duplicate name: {other:?}"),
    }
}

fn top(index: usize) -> ToolPosition {
    ToolPosition {
        index,
        member: None,
    }
}

/// Two tools a call could not tell apart are a typed error naming both.
#[test]
fn duplicate_names_are_refused() {
    let custom_shell = json!({"type":"custom","name":"shell"});
    let namespace = |name: &str, members: Vec<Value>| json!({"type":"namespace","name":name,"description":"","tools":members});
    assert_eq!(
        duplicate(vec![shell(), apply_patch(), shell()]),
        (None, "shell".into(), top(0), top(2))
    );
    // Function, custom and namespace tools share one set of names.
    assert_eq!(
        duplicate(vec![shell(), custom_shell.clone()]),
        (None, "shell".into(), top(0), top(1))
    );
    assert_eq!(
        duplicate(vec![shell(), namespace("shell", vec![])]),
        (None, "shell".into(), top(0), top(1))
    );
    // Within a namespace.
    let (namespace_name, name, first, second) = duplicate(vec![namespace(
        "mcp__fs",
        vec![
            json!({"type":"function","name":"read"}),
            json!({"type":"custom","name":"read"}),
        ],
    )]);
    assert_eq!(
        (namespace_name.as_deref(), name.as_str()),
        (Some("mcp__fs"), "read")
    );
    assert_eq!(
        (first, second),
        (
            ToolPosition {
                index: 0,
                member: Some(0)
            },
            ToolPosition {
                index: 0,
                member: Some(1)
            }
        )
    );
    // Tools the plan holds once.
    assert_eq!(
        duplicate(vec![
            json!({"type":"local_shell"}),
            shell(),
            json!({"type":"local_shell"})
        ]),
        (None, "local_shell".into(), top(0), top(2))
    );
    assert_eq!(
        duplicate(vec![
            json!({"type":"web_search"}),
            json!({"type":"web_search_preview"})
        ]),
        (None, "web_search".into(), top(0), top(1))
    );
    // The message names both.
    let message = ToolPlan::new(vec![shell(), custom_shell])
        .expect_err("duplicate")
        .to_string();
    assert_eq!(message, "tool 1 repeats the name `shell` of tool 0");

    // The same name in different namespaces, or at the top and in a namespace, is no clash.
    ToolPlan::new(vec![
        json!({"type":"function","name":"read"}),
        namespace("a", vec![json!({"type":"function","name":"read"})]),
        namespace("b", vec![json!({"type":"function","name":"read"})]),
    ])
    .expect("distinct tools");
}

/// A spec that lacks what its calls are found by is refused, naming it.
#[test]
fn malformed_specs_are_refused() {
    let refused = |specs: Vec<Value>| ToolPlan::new(specs).expect_err("refused").to_string();
    assert_eq!(
        refused(vec![shell(), json!("shell")]),
        "tool 1 is a string, not a tool spec object"
    );
    assert!(refused(vec![json!({"name":"shell"})]).contains("no string `type`"));
    assert!(refused(vec![json!({"type":"function","name":7})]).starts_with("tool 0 is not"));
    assert!(
        refused(vec![json!({"type":"namespace","name":"n"})]).contains("without a `tools` array")
    );
    assert_eq!(
        refused(vec![
            json!({"type":"namespace","name":"n","tools":[{"type":"function","name":"a"}, null]})
        ]),
        "member 1 of tool 0 is null, not a tool spec object"
    );
    assert!(
        refused(vec![
            json!({"type":"namespace","name":"n","tools":[{"type":"web_search"}]})
        ])
        .starts_with("member 0 of tool 0 is not a usable tool spec")
    );
    // Types this crate models no call for are sent as given.
    let plan = ToolPlan::new(vec![
        json!({"type":"file_search","vector_store_ids":["vs_1"]}),
        json!({"type":"file_search","vector_store_ids":["vs_2"]}),
    ])
    .expect("sent as given");
    assert_eq!(plan.len(), 2);
}

/// Each call family finds its tool, and only its own: a function call does not reach a custom
/// tool of that name, a namespaced call does not reach a top-level tool, and so on.
#[test]
fn every_call_family_finds_its_tool() {
    let specs = vec![
        shell(),
        apply_patch(),
        json!({"type":"namespace","name":"mcp__fs","description":"Files","tools":[
            {"type":"function","name":"read","parameters":{}},
            {"type":"custom","name":"write"},
        ]}),
        json!({"type":"local_shell"}),
        json!({"type":"tool_search","execution":"client"}),
        json!({"type":"web_search_preview"}),
        json!({"type":"image_generation"}),
        json!({"type":"file_search","vector_store_ids":["vs_1"]}),
    ];
    let mut registry = ToolRegistry::default();
    registry.set(vec![shell()]).expect("a plan");
    let plan = registry.set(specs.clone()).expect("a plan");
    assert_eq!(plan.generation(), 2);

    let cases: Vec<(&str, ToolPosition, &Value, Runner)> = vec![
        (
            r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
            top(0),
            &specs[0],
            Runner::Client,
        ),
        (
            r#"{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"}"#,
            top(1),
            &specs[1],
            Runner::Client,
        ),
        (
            r#"{"type":"function_call","name":"read","namespace":"mcp__fs","arguments":"{}","call_id":"c3"}"#,
            ToolPosition {
                index: 2,
                member: Some(0),
            },
            &specs[2]["tools"][0],
            Runner::Client,
        ),
        (
            r#"{"type":"custom_tool_call","call_id":"c4","name":"write","namespace":"mcp__fs","input":"x"}"#,
            ToolPosition {
                index: 2,
                member: Some(1),
            },
            &specs[2]["tools"][1],
            Runner::Client,
        ),
        (
            r#"{"type":"local_shell_call","call_id":"c5","status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}"#,
            top(3),
            &specs[3],
            Runner::Client,
        ),
        (
            r#"{"type":"tool_search_call","call_id":"c6","status":"completed","execution":"client","arguments":{"query":"calendar"}}"#,
            top(4),
            &specs[4],
            Runner::Client,
        ),
        (
            r#"{"type":"tool_search_call","call_id":null,"status":"completed","execution":"server","arguments":{}}"#,
            top(4),
            &specs[4],
            Runner::Provider,
        ),
        (
            r#"{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"weather"}}"#,
            top(5),
            &specs[5],
            Runner::Provider,
        ),
        (
            r#"{"type":"image_generation_call","id":"ig_1","status":"completed","result":"Zm9v"}"#,
            top(6),
            &specs[6],
            Runner::Provider,
        ),
    ];
    for (json, position, spec, runner) in cases {
        let call = item(json);
        let found = plan.lookup_item(&call).unwrap_or_else(|| panic!("{json}"));
        assert_eq!(found.generation, 2, "{json}");
        assert_eq!(found.position, position, "{json}");
        assert_eq!(found.spec, spec, "{json}");
        assert_eq!(found.runner, runner, "{json}");
        let key = ToolCallKey::of(&call).expect("a call");
        assert_eq!(plan.lookup(key), Some(found));
    }

    // Calls of tools this plan does not offer, or offers to another family.
    for json in [
        r#"{"type":"function_call","name":"apply_patch","arguments":"{}","call_id":"c1"}"#,
        r#"{"type":"custom_tool_call","call_id":"c2","name":"shell","input":""}"#,
        r#"{"type":"function_call","name":"read","arguments":"{}","call_id":"c3"}"#,
        r#"{"type":"function_call","name":"write","namespace":"mcp__fs","arguments":"{}","call_id":"c3"}"#,
        r#"{"type":"function_call","name":"read","namespace":"mcp__git","arguments":"{}","call_id":"c3"}"#,
        r#"{"type":"function_call","name":"shell","namespace":"shell","arguments":"{}","call_id":"c3"}"#,
        r#"{"type":"function_call","name":"file_search","arguments":"{}","call_id":"c3"}"#,
    ] {
        assert!(plan.lookup_item(&item(json)).is_none(), "{json}");
    }
    let only_functions = ToolPlan::new(vec![shell()]).expect("a plan");
    for key in [
        ToolCallKey::LocalShell,
        ToolCallKey::WebSearch,
        ToolCallKey::ImageGeneration,
    ] {
        assert!(only_functions.lookup(key).is_none(), "{key:?}");
        assert!(plan.lookup(key).is_some(), "{key:?}");
    }

    // Items that call no tool have no key.
    for json in [
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#,
        r#"{"type":"function_call_output","call_id":"c1","output":"ok"}"#,
        r#"{"type":"tool_search_output","call_id":"c6","status":"completed","execution":"client","tools":[]}"#,
        r#"{"type":"reasoning","summary":[],"encrypted_content":null}"#,
    ] {
        let other = item(json);
        assert_eq!(ToolCallKey::of(&other), None, "{json}");
        assert!(plan.lookup_item(&other).is_none(), "{json}");
    }
}
