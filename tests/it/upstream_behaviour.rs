//! Upstream behaviour tests: one test per Codex `context_manager/history_tests.rs` behaviour that
//! this library implements (Codex's `history_tests.rs`), plus Codex's truncation test vectors driven end to end
//! through `History::record*`.
//!
//! Every test is written from a description of Codex's tests; nothing is copied from upstream.
//! Upstream's repair tests come in two flavours ("release" asserts the repair, "debug" asserts a
//! panic). This library never panics: lenient projection repairs and reports, strict projection
//! returns `ProjectionError::Violations`. So for each such behaviour there is a lenient test named
//! after the upstream one and a `_strict` test standing in for its `_panics_in_debug` twin. All
//! tests run the same in every build profile.

use crate::common;

use agent_history::{
    CallId, CustomToolCallOutput, Entry, FilterReason, FunctionCall, History, ItemError, ItemId,
    ItemKind, Location, Message, Modalities, OutputPayload, Projection, ProjectionError,
    ProjectionOptions, Reasoning, ReasoningSummary, Recorded, Repair, RepairKind, ResponseItem,
    Role, TruncationPolicy, UnknownItems, Violation, ViolationKind,
};
use common::{assistant, developer, developer_parts, jsons, message, user};
use serde_json::{Value, json};
use uuid::Uuid;

// ---------------------------------------------------------------------------------------------
// Helpers: item JSON builders, recording and projecting.
// ---------------------------------------------------------------------------------------------

fn function_call(id: Option<&str>, call_id: &str) -> String {
    let mut item = json!({"type": "function_call"});
    if let Some(id) = id {
        item["id"] = json!(id);
    }
    item["name"] = json!("shell");
    item["arguments"] = json!("{\"command\":[\"ls\"]}");
    item["call_id"] = json!(call_id);
    item.to_string()
}

fn function_output(call_id: &str, output: &str) -> String {
    json!({"type": "function_call_output", "call_id": call_id, "output": output}).to_string()
}

fn local_shell_call(id: Option<&str>, call_id: Option<&str>) -> String {
    let mut item = json!({"type": "local_shell_call"});
    if let Some(id) = id {
        item["id"] = json!(id);
    }
    item["call_id"] = json!(call_id);
    item["status"] = json!("completed");
    item["action"] = json!({
        "type": "exec",
        "command": ["echo", "hi"],
        "timeout_ms": null,
        "working_directory": null,
        "env": null,
        "user": null
    });
    item.to_string()
}

fn custom_call(id: Option<&str>, call_id: &str) -> String {
    let mut item = json!({"type": "custom_tool_call"});
    if let Some(id) = id {
        item["id"] = json!(id);
    }
    item["call_id"] = json!(call_id);
    item["name"] = json!("apply_patch");
    item["input"] = json!("*** Begin Patch\n*** End Patch");
    item.to_string()
}

fn custom_output(call_id: &str, output: &str) -> String {
    json!({"type": "custom_tool_call_output", "call_id": call_id, "output": output}).to_string()
}

fn tool_search_call(id: Option<&str>, call_id: Option<&str>, execution: &str) -> String {
    let mut item = json!({"type": "tool_search_call"});
    if let Some(id) = id {
        item["id"] = json!(id);
    }
    item["call_id"] = json!(call_id);
    item["status"] = json!("completed");
    item["execution"] = json!(execution);
    item["arguments"] = json!({"query": "calendar"});
    item.to_string()
}

fn tool_search_output(call_id: Option<&str>, execution: &str) -> String {
    json!({
        "type": "tool_search_output",
        "call_id": call_id,
        "status": "completed",
        "execution": execution,
        "tools": [{"type": "function", "name": "calendar_lookup"}]
    })
    .to_string()
}

/// The synthetic function output of the missing-output rule, on the wire, for a call whose synthetic id is `id`.
fn synthetic_function_output(id: &str, call_id: &str) -> String {
    format!(
        r#"{{"type":"function_call_output","id":"{id}","call_id":"{call_id}","output":"aborted"}}"#
    )
}

/// `"<prefix>_" + UUIDv5(namespace, "<prefix>:<source>")`, computed here from the synthetic id rule
/// with the `uuid` crate (not through the library).
fn expected_synthetic_id(prefix: &str, source: &str) -> String {
    let namespace = Uuid::parse_str("90d38d3e-6a5b-4d52-bfe2-2f1e634bfac4").expect("namespace");
    let uuid = Uuid::new_v5(&namespace, format!("{prefix}:{source}").as_bytes());
    format!("{prefix}_{}", uuid.hyphenated())
}

/// A history (default truncation) with every item recorded, each one stored in order.
fn history_of(items: &[String]) -> History {
    let mut history = History::new();
    for (position, item) in items.iter().enumerate() {
        let recorded = history.record_json(item.as_str()).expect("valid item");
        assert_eq!(
            recorded,
            Recorded::Stored {
                position,
                truncated: false
            },
            "{item}"
        );
    }
    history.assert_invariants();
    history
}

fn stored(history: &History) -> Vec<String> {
    jsons(history)
}

fn sent(projection: &Projection) -> Vec<String> {
    projection.iter().map(str::to_owned).collect()
}

fn project(history: &History, options: ProjectionOptions) -> Projection {
    let projection = history
        .project(&options)
        .expect("lenient projection succeeds");
    assert_eq!(projection.len(), projection.iter().count());
    projection
}

fn lenient(history: &History) -> Projection {
    project(history, ProjectionOptions::default())
}

fn strict_violations(history: &History) -> Vec<Violation> {
    match history.project(&ProjectionOptions::default().strict()) {
        Err(ProjectionError::Violations(violations)) => violations,
        Ok(projection) => panic!("strict projection succeeded: {:?}", sent(&projection)),
        Err(other) => panic!("unexpected error: {other}"),
    }
}

fn strict_ok(history: &History) -> Projection {
    match history.project(&ProjectionOptions::default().strict()) {
        Ok(projection) => projection,
        Err(error) => panic!("strict projection failed: {error}"),
    }
}

fn synthesized(
    position: usize,
    item_kind: ItemKind,
    call_id: &str,
    output_kind: ItemKind,
    output_id: Option<&str>,
) -> Repair {
    Repair {
        kind: RepairKind::SynthesizedOutput {
            output_kind,
            output_id: output_id.map(ItemId::new),
        },
        at: Location {
            position,
            item_kind,
            call_id: Some(CallId::new(call_id)),
        },
    }
}

fn dropped_orphan(position: usize, item_kind: ItemKind, call_id: &str) -> Repair {
    Repair {
        kind: RepairKind::DroppedOrphanOutput,
        at: Location {
            position,
            item_kind,
            call_id: Some(CallId::new(call_id)),
        },
    }
}

fn violation(
    kind: ViolationKind,
    position: usize,
    item_kind: ItemKind,
    call_id: &str,
) -> Violation {
    Violation {
        kind,
        at: Location {
            position,
            item_kind,
            call_id: Some(CallId::new(call_id)),
        },
    }
}

fn parse(json: &str) -> Value {
    serde_json::from_str(json).expect("valid JSON")
}

// Contextual messages: how a harness injects session context as user / developer text.
const ENVIRONMENT_CONTEXT: &str =
    "<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n</environment_context>";
const AGENTS_MD: &str = "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nRun the tests before committing.\n</INSTRUCTIONS>";
const SKILL: &str = "<skill>\n<name>pdf</name>\n<path>/skills/pdf/SKILL.md</path>\n</skill>";
const USER_SHELL_COMMAND: &str = "<user_shell_command>\n<command>ls</command>\n<result>README.md</result>\n</user_shell_command>";
const SUBAGENT_NOTIFICATION: &str = "<subagent_notification>\n{\"agent\":\"/root/worker\",\"status\":\"completed\"}\n</subagent_notification>";
const PERMISSIONS: &str =
    "<permissions instructions>\nsandbox_mode: workspace-write\n</permissions instructions>";
const COLLABORATION_MODE: &str = "<collaboration_mode>\npair\n</collaboration_mode>";

// ---------------------------------------------------------------------------------------------
// The record filter
// ---------------------------------------------------------------------------------------------

/// Codex's history test: `system` messages and `other` items are not recorded; reasoning, user and
/// assistant messages are.
///
/// Library decision: a `system` message is filtered at record time
/// (`Filtered(SystemMessage)`); an item of unknown type (Codex's `other`) is kept in the history
/// (so it round-trips) but held back from the default projection, so it is never sent. A typed
/// `ResponseItem::Other` has no content to keep and is refused.
#[test]
fn filters_non_api_messages() {
    let mut history = History::new();

    let system_typed = ResponseItem::Message(Message::text(Role::System, "You are Codex."));
    assert_eq!(
        history.record(&system_typed).expect("recordable"),
        Recorded::Filtered(FilterReason::SystemMessage)
    );
    assert_eq!(
        history
            .record_json(message("system", "You are Codex."))
            .expect("valid"),
        Recorded::Filtered(FilterReason::SystemMessage)
    );
    assert!(history.is_empty());

    let reasoning = ResponseItem::Reasoning(Reasoning {
        id: Some(ItemId::new("rs_1")),
        summary: vec![ReasoningSummary::SummaryText {
            text: "thinking".into(),
        }],
        content: None,
        encrypted_content: None,
        meta: None,
    });
    assert_eq!(
        history.record(&reasoning).expect("recordable"),
        Recorded::Stored {
            position: 0,
            truncated: false
        }
    );
    let user_item = ResponseItem::Message(Message::text(Role::User, "hi"));
    assert_eq!(
        history.record(&user_item).expect("recordable"),
        Recorded::Stored {
            position: 1,
            truncated: false
        }
    );
    assert_eq!(
        history.record_json(assistant("hello")).expect("valid"),
        Recorded::Stored {
            position: 2,
            truncated: false
        }
    );
    let unknown = r#"{"type":"some_future_item","payload":{"x":1}}"#;
    assert_eq!(
        history.record_json(unknown).expect("valid"),
        Recorded::Stored {
            position: 3,
            truncated: false
        }
    );
    assert!(matches!(
        history.record(&ResponseItem::Other),
        Err(ItemError::NotStorable { .. })
    ));
    assert_eq!(history.len(), 4);
    history.assert_invariants();

    // What was stored: the typed items serialized per Codex's serialization (reasoning writes `content` and
    // `encrypted_content` as null when absent), the JSON items verbatim.
    let expected_reasoning = r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thinking"}],"content":null,"encrypted_content":null}"#;
    let expected_user =
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#;
    assert_eq!(
        stored(&history),
        vec![
            expected_reasoning.to_owned(),
            expected_user.to_owned(),
            assistant("hello"),
            unknown.to_owned(),
        ]
    );
    assert_eq!(
        history.get(3).map(|entry| entry.kind()),
        Some(ItemKind::Unknown)
    );

    // The default projection sends reasoning, user and assistant, never the unknown item.
    let projection = lenient(&history);
    assert_eq!(
        sent(&projection),
        vec![
            expected_reasoning.to_owned(),
            expected_user.to_owned(),
            assistant("hello"),
        ]
    );
    assert_eq!(
        projection.report().repairs(),
        [Repair {
            kind: RepairKind::HeldBackUnknownItem,
            at: Location {
                position: 3,
                item_kind: ItemKind::Unknown,
                call_id: None
            },
        }]
    );
    // Only an explicit opt-in sends it.
    let opt_in = project(
        &history,
        ProjectionOptions {
            unknown_items: UnknownItems::Send,
            ..ProjectionOptions::default()
        },
    );
    assert_eq!(sent(&opt_in), stored(&history));
}

// ---------------------------------------------------------------------------------------------
// Copy-on-write
// ---------------------------------------------------------------------------------------------

/// Codex's history test: a cloned history shares its items until one side is mutated; later records do
/// not leak into the clone.
#[test]
fn cloned_history_shares_items_until_mutated() {
    let items: Vec<String> = (0..100).map(|i| user(&format!("message {i}"))).collect();
    let mut history = history_of(&items);
    let snapshot = history.clone();

    // The persistent vector itself is shared (not inline, same chunks), and so is every payload.
    assert!(!history.entries().is_inline());
    assert!(history.entries().ptr_eq(snapshot.entries()));
    for (mine, theirs) in history.iter().zip(snapshot.iter()) {
        assert!(mine.shares_payload_with(theirs));
    }
    // Sharing is not an accident of equal content: an identical history built separately
    // shares nothing.
    let rebuilt = history_of(&items);
    assert_eq!(rebuilt.entries(), history.entries());
    assert!(!rebuilt.entries().ptr_eq(history.entries()));
    assert!(
        !rebuilt
            .get(0)
            .expect("entry")
            .shares_payload_with(history.get(0).expect("entry"))
    );

    // Mutate the original: the clone does not see it, and the untouched items stay shared.
    history.record_json(user("later")).expect("valid");
    assert_eq!(history.len(), 101);
    assert_eq!(snapshot.len(), 100);
    assert!(!history.entries().ptr_eq(snapshot.entries()));
    assert_eq!(stored(&snapshot), items);
    assert!(!sent(&lenient(&snapshot)).contains(&user("later")));
    for (mine, theirs) in history.iter().zip(snapshot.iter()) {
        assert!(mine.shares_payload_with(theirs));
    }

    // A rewrite of one side bumps only its version.
    let mut fork = snapshot.clone();
    fork.replace(snapshot.iter().take(10).cloned());
    assert_eq!(fork.version(), 1);
    assert_eq!(snapshot.version(), 0);
    assert_eq!(history.version(), 0);
    assert_eq!(fork.len(), 10);
    assert_eq!(snapshot.len(), 100);
    assert!(
        fork.get(0)
            .expect("entry")
            .shares_payload_with(snapshot.get(0).expect("entry"))
    );

    // Removing from the clone leaves the original alone.
    let mut other = snapshot.clone();
    let removed = other.remove_first_item();
    assert_eq!(removed.len(), 1);
    assert_eq!(other.len(), 99);
    assert_eq!(stored(&snapshot), items);
    history.assert_invariants();
    snapshot.assert_invariants();
    fork.assert_invariants();
    other.assert_invariants();
}

// ---------------------------------------------------------------------------------------------
// Media stripping
// ---------------------------------------------------------------------------------------------

const IMAGE_PLACEHOLDER_TEXT: &str = "image content omitted because you do not support image input";
const AUDIO_PLACEHOLDER_TEXT: &str = "audio content omitted because you do not support audio input";

fn media_history() -> (History, Vec<String>) {
    let items = vec![
        json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "high"},
            {"type": "input_audio", "audio_url": "data:audio/wav;base64,UklGRg=="}
        ]})
        .to_string(),
        function_call(Some("fc_1"), "call_1"),
        json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "Screenshot captured"},
            {"type": "input_image", "image_url": "data:image/png;base64,BBBB", "detail": "high"},
            {"type": "input_audio", "audio_url": "data:audio/wav;base64,AAAA"}
        ]})
        .to_string(),
        custom_call(Some("ctc_1"), "call_2"),
        json!({"type": "custom_tool_call_output", "call_id": "call_2", "output": [
            {"type": "input_image", "file_id": "file_123", "detail": "original"},
            {"type": "input_audio", "audio_url": "data:audio/mp3;base64,CCCC"}
        ]})
        .to_string(),
        function_call(Some("fc_3"), "call_3"),
        // A text body that merely mentions an image is not touched.
        function_output("call_3", "wrote input_image to disk"),
        assistant("done"),
    ];
    (history_of(&items), items)
}

fn stripped(position: usize, item_kind: ItemKind, kind: RepairKind) -> Repair {
    let call_id = match position {
        2 => Some(CallId::new("call_1")),
        4 => Some(CallId::new("call_2")),
        _ => None,
    };
    Repair {
        kind,
        at: Location {
            position,
            item_kind,
            call_id,
        },
    }
}

/// Codex's history test: a text-only model gets placeholders for images and audio in messages, function
/// outputs and custom outputs; full modalities leave items unchanged; an image-capable model keeps
/// images; an audio-capable model keeps audio.
///
/// Upstream also rewrites the aligned `content_item_kinds` entries of the metadata envelope to
/// `images.unsupported` / `audio.unsupported`. This library keeps that envelope verbatim and never
/// interprets it (out of scope), so that part is not asserted and the items here carry no
/// envelope.
#[test]
fn for_prompt_strips_media_when_model_does_not_support_it() {
    let (history, items) = media_history();
    let image_text = json!({"type": "input_text", "text": IMAGE_PLACEHOLDER_TEXT});
    let audio_text = json!({"type": "input_text", "text": AUDIO_PLACEHOLDER_TEXT});

    // Builds the expected projection with images and/or audio replaced.
    let expected = |strip_images: bool, strip_audio: bool| -> Vec<Value> {
        let image = |part: Value| {
            if strip_images {
                image_text.clone()
            } else {
                part
            }
        };
        let audio = |part: Value| {
            if strip_audio {
                audio_text.clone()
            } else {
                part
            }
        };
        vec![
            json!({"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "look"},
                image(json!({"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "high"})),
                audio(json!({"type": "input_audio", "audio_url": "data:audio/wav;base64,UklGRg=="}))
            ]}),
            parse(&items[1]),
            json!({"type": "function_call_output", "call_id": "call_1", "output": [
                {"type": "input_text", "text": "Screenshot captured"},
                image(json!({"type": "input_image", "image_url": "data:image/png;base64,BBBB", "detail": "high"})),
                audio(json!({"type": "input_audio", "audio_url": "data:audio/wav;base64,AAAA"}))
            ]}),
            parse(&items[3]),
            json!({"type": "custom_tool_call_output", "call_id": "call_2", "output": [
                image(json!({"type": "input_image", "file_id": "file_123", "detail": "original"})),
                audio(json!({"type": "input_audio", "audio_url": "data:audio/mp3;base64,CCCC"}))
            ]}),
            parse(&items[5]),
            parse(&items[6]),
            parse(&items[7]),
        ]
    };
    let as_values =
        |projection: &Projection| -> Vec<Value> { projection.iter().map(parse).collect() };
    let images = |position, item_kind| {
        stripped(position, item_kind, RepairKind::StrippedImages { parts: 1 })
    };
    let audio =
        |position, item_kind| stripped(position, item_kind, RepairKind::StrippedAudio { parts: 1 });

    // Text only: both media replaced everywhere; reported in position order, an item's images
    // before its audio (the order of the passes).
    let text_only = project(
        &history,
        ProjectionOptions::for_modalities(Modalities::TEXT),
    );
    assert_eq!(as_values(&text_only), expected(true, true));
    assert_eq!(
        text_only.report().repairs(),
        [
            images(0, ItemKind::Message),
            audio(0, ItemKind::Message),
            images(2, ItemKind::FunctionCallOutput),
            audio(2, ItemKind::FunctionCallOutput),
            images(4, ItemKind::CustomToolCallOutput),
            audio(4, ItemKind::CustomToolCallOutput),
        ]
    );
    // The key order of a rewritten item is kept: the exact bytes of the first item.
    assert_eq!(
        text_only.iter().next(),
        Some(
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_text","text":"image content omitted because you do not support image input"},{"type":"input_text","text":"audio content omitted because you do not support audio input"}]}"#
        )
    );

    // Full modalities: the projection is the history, byte for byte.
    let full = project(&history, ProjectionOptions::for_modalities(Modalities::ALL));
    assert_eq!(sent(&full), items);
    assert!(full.report().is_empty());

    // Image-capable (the default): images kept, audio replaced.
    let image_capable = project(
        &history,
        ProjectionOptions::for_modalities(Modalities::TEXT_IMAGE),
    );
    assert_eq!(as_values(&image_capable), expected(false, true));
    assert_eq!(
        image_capable.report().repairs(),
        [
            audio(0, ItemKind::Message),
            audio(2, ItemKind::FunctionCallOutput),
            audio(4, ItemKind::CustomToolCallOutput),
        ]
    );

    // Audio-capable without images: audio kept, images replaced.
    let audio_capable = project(
        &history,
        ProjectionOptions::for_modalities(Modalities {
            image: false,
            audio: true,
        }),
    );
    assert_eq!(as_values(&audio_capable), expected(true, false));
    assert_eq!(
        audio_capable.report().repairs(),
        [
            images(0, ItemKind::Message),
            images(2, ItemKind::FunctionCallOutput),
            images(4, ItemKind::CustomToolCallOutput),
        ]
    );

    // The history itself never changes.
    assert_eq!(stored(&history), items);
    history.assert_invariants();
}

const IMAGE_GENERATION: &str = r#"{"type":"image_generation_call","id":"ig_123","status":"completed","revised_prompt":"A small blue square","result":"Zm9v"}"#;

/// Codex's history test: an `image_generation_call` is sent unchanged to a model that takes images.
#[test]
fn for_prompt_preserves_image_generation_calls_when_images_are_supported() {
    let items = vec![
        user("draw a small blue square"),
        IMAGE_GENERATION.to_owned(),
        assistant("here it is"),
    ];
    let history = history_of(&items);
    for modalities in [Modalities::TEXT_IMAGE, Modalities::ALL] {
        let projection = project(&history, ProjectionOptions::for_modalities(modalities));
        assert_eq!(sent(&projection), items, "{modalities}");
        assert!(projection.report().is_empty(), "{modalities}");
    }
}

/// Codex's history test: without image support the `result` of an `image_generation_call` becomes `""`;
/// status, revised prompt and id are kept.
#[test]
fn for_prompt_clears_image_generation_result_when_images_are_unsupported() {
    let items = vec![
        user("draw a small blue square"),
        IMAGE_GENERATION.to_owned(),
        assistant("here it is"),
    ];
    let history = history_of(&items);
    let cleared = r#"{"type":"image_generation_call","id":"ig_123","status":"completed","revised_prompt":"A small blue square","result":""}"#;
    let no_images = [
        Modalities::TEXT,
        Modalities {
            image: false,
            audio: true,
        },
    ];
    for modalities in no_images {
        let projection = project(&history, ProjectionOptions::for_modalities(modalities));
        assert_eq!(
            sent(&projection),
            vec![items[0].clone(), cleared.to_owned(), items[2].clone()],
            "{modalities}"
        );
        assert_eq!(
            projection.report().repairs(),
            [Repair {
                kind: RepairKind::ClearedImageGenerationResult,
                at: Location {
                    position: 1,
                    item_kind: ItemKind::ImageGenerationCall,
                    call_id: None
                },
            }],
            "{modalities}"
        );
    }
    // The stored item keeps its image.
    assert_eq!(stored(&history), items);
}

// ---------------------------------------------------------------------------------------------
// remove_first_item
// ---------------------------------------------------------------------------------------------

fn removed_json(removed: &[agent_history::Entry]) -> Vec<String> {
    removed
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect()
}

/// Codex's history test: removing a `function_call` at the front also removes its output (the first one
/// with the same call id), and nothing else; the version is not bumped.
#[test]
fn remove_first_item_removes_matching_output_for_function_call() {
    let items = vec![
        function_call(Some("fc_1"), "call_1"),
        user("between"),
        function_output("call_1", "first output"),
        function_call(Some("fc_2"), "call_2"),
        function_output("call_2", "other output"),
        function_output("call_1", "second output"),
    ];
    let mut history = history_of(&items);
    let removed = history.remove_first_item();
    assert_eq!(
        removed_json(&removed),
        vec![items[0].clone(), items[2].clone()]
    );
    assert_eq!(
        stored(&history),
        vec![
            items[1].clone(),
            items[3].clone(),
            items[4].clone(),
            items[5].clone()
        ]
    );
    assert_eq!(history.version(), 0);
    history.assert_invariants();

    // No-op on an empty history.
    let mut empty = History::new();
    assert!(empty.remove_first_item().is_empty());
    assert!(empty.is_empty());
    assert_eq!(empty.version(), 0);
}

/// Codex's history test: removing a `function_call_output` at the front also removes its call; a function
/// output looks for a `function_call` first, then for a `local_shell_call`.
#[test]
fn remove_first_item_removes_matching_call_for_output() {
    let items = vec![
        function_output("call_1", "ok"),
        user("between"),
        function_call(Some("fc_1"), "call_1"),
        assistant("done"),
    ];
    let mut history = history_of(&items);
    let removed = history.remove_first_item();
    assert_eq!(
        removed_json(&removed),
        vec![items[0].clone(), items[2].clone()]
    );
    assert_eq!(stored(&history), vec![items[1].clone(), items[3].clone()]);
    assert_eq!(history.version(), 0);
    history.assert_invariants();

    // A function_call is preferred even when a local_shell_call with the same id comes first.
    let items = vec![
        function_output("call_1", "ok"),
        local_shell_call(Some("lsh_1"), Some("call_1")),
        function_call(Some("fc_1"), "call_1"),
    ];
    let mut history = history_of(&items);
    let removed = history.remove_first_item();
    assert_eq!(
        removed_json(&removed),
        vec![items[0].clone(), items[2].clone()]
    );
    assert_eq!(stored(&history), vec![items[1].clone()]);
    history.assert_invariants();
}

/// Codex's history test: a `local_shell_call` and its `function_call_output` are removed together, in
/// either order.
#[test]
fn remove_first_item_handles_local_shell_pair() {
    let items = vec![
        local_shell_call(Some("lsh_1"), Some("call_3")),
        function_output("call_3", "hi\n"),
        user("next"),
    ];
    let mut history = history_of(&items);
    let removed = history.remove_first_item();
    assert_eq!(
        removed_json(&removed),
        vec![items[0].clone(), items[1].clone()]
    );
    assert_eq!(stored(&history), vec![items[2].clone()]);
    assert_eq!(history.version(), 0);
    history.assert_invariants();

    // Output first: with no function_call it falls back to the local shell call.
    let items = vec![
        function_output("call_3", "hi\n"),
        user("next"),
        local_shell_call(Some("lsh_1"), Some("call_3")),
    ];
    let mut history = history_of(&items);
    let removed = history.remove_first_item();
    assert_eq!(
        removed_json(&removed),
        vec![items[0].clone(), items[2].clone()]
    );
    assert_eq!(stored(&history), vec![items[1].clone()]);
    history.assert_invariants();
}

/// Codex's history test: a `custom_tool_call` and its `custom_tool_call_output` are removed together, in
/// either order; an output of another family with the same call id is not a counterpart.
#[test]
fn remove_first_item_handles_custom_tool_pair() {
    let items = vec![
        custom_call(Some("ctc_1"), "call_c"),
        function_output("call_c", "not the custom output"),
        custom_output("call_c", "patched"),
        user("next"),
    ];
    let mut history = history_of(&items);
    let removed = history.remove_first_item();
    assert_eq!(
        removed_json(&removed),
        vec![items[0].clone(), items[2].clone()]
    );
    assert_eq!(stored(&history), vec![items[1].clone(), items[3].clone()]);
    assert_eq!(history.version(), 0);
    history.assert_invariants();

    let items = vec![
        custom_output("call_c", "patched"),
        function_call(Some("fc_c"), "call_c"),
        custom_call(Some("ctc_1"), "call_c"),
    ];
    let mut history = history_of(&items);
    let removed = history.remove_first_item();
    assert_eq!(
        removed_json(&removed),
        vec![items[0].clone(), items[2].clone()]
    );
    assert_eq!(stored(&history), vec![items[1].clone()]);
    history.assert_invariants();
}

// ---------------------------------------------------------------------------------------------
// Rollback
// ---------------------------------------------------------------------------------------------

/// Codex's history test: dropping 1 or 99 user turns keeps everything before the first user turn (the
/// session prefix). The retained-facts parts of the upstream test are (G) and out of scope.
#[test]
fn drop_last_n_user_turns_preserves_prefix() {
    let items = vec![
        developer("You are a careful coding agent."),
        user("first question"),
        assistant("first answer"),
        user("second question"),
        assistant("second answer"),
    ];
    let history = history_of(&items);

    let mut one = history.clone();
    one.drop_last_n_user_turns(1).expect("rolled back");
    assert_eq!(stored(&one), items[..3].to_vec());
    assert_eq!(one.version(), 1);
    one.assert_invariants();

    let mut all = history.clone();
    all.drop_last_n_user_turns(99).expect("rolled back");
    assert_eq!(stored(&all), items[..1].to_vec());
    assert_eq!(all.version(), 1);
    all.assert_invariants();

    let mut none = history.clone();
    none.drop_last_n_user_turns(0).expect("rolled back");
    assert_eq!(stored(&none), items);
    assert_eq!(none.version(), 0);

    assert_eq!(stored(&history), items);
}

/// Codex's history test: environment context, AGENTS.md instructions, skill, user shell command and
/// subagent notification messages are not user turns; dropping 1, 2 or 3 turns counts only the
/// real ones and never removes that session prefix.
#[test]
fn drop_last_n_user_turns_ignores_session_prefix_user_messages() {
    let prefix = [
        user(ENVIRONMENT_CONTEXT),
        user(AGENTS_MD),
        user(SKILL),
        user(USER_SHELL_COMMAND),
        user(SUBAGENT_NOTIFICATION),
    ];
    let turns = [
        user("turn one"),
        assistant("answer one"),
        user("turn two"),
        assistant("answer two"),
        user("turn three"),
        assistant("answer three"),
    ];
    let items: Vec<String> = prefix.iter().chain(&turns).cloned().collect();
    let history = history_of(&items);

    let after = |n: usize| {
        let mut rolled_back = history.clone();
        rolled_back.drop_last_n_user_turns(n).expect("rolled back");
        rolled_back.assert_invariants();
        assert_eq!(rolled_back.version(), 1);
        stored(&rolled_back)
    };
    let keep = |turn_items: usize| -> Vec<String> {
        prefix.iter().chain(&turns[..turn_items]).cloned().collect()
    };
    assert_eq!(after(1), keep(4));
    assert_eq!(after(2), keep(2));
    assert_eq!(after(3), keep(0));
    assert_eq!(after(4), keep(0));
}

/// Codex's history test (and the mixed-bundle case): developer and user context updates
/// directly above the rolled-back turn are removed with it. A developer message made only of
/// contextual fragments keeps the reference context item; a mixed bundle (contextual fragment +
/// ordinary text) clears it. Anything that is not a context update stops the trimming.
#[test]
fn drop_last_n_user_turns_trims_context_updates_above_rolled_back_turn() {
    let reference =
        json!({"cwd": "/repo", "model": "gpt-5-codex", "approval_policy": "on-request"});
    let base = vec![
        developer("You are a careful coding agent."),
        user("turn one"),
        assistant("answer one"),
    ];
    let rolled_back_turn = vec![user("turn two"), assistant("answer two")];
    let build = |updates: Vec<String>| {
        let items: Vec<String> = base
            .iter()
            .chain(&updates)
            .chain(&rolled_back_turn)
            .cloned()
            .collect();
        let mut history = history_of(&items);
        history.set_reference_context_item(Some(reference.clone()));
        history.drop_last_n_user_turns(1).expect("rolled back");
        history.assert_invariants();
        assert_eq!(history.version(), 1);
        history
    };

    // Pure contextual developer bundle + contextual user message: both trimmed, reference kept.
    let pure = build(vec![
        developer_parts(&[PERMISSIONS, COLLABORATION_MODE]),
        user(ENVIRONMENT_CONTEXT),
    ]);
    assert_eq!(stored(&pure), base);
    assert_eq!(pure.reference_context_item(), Some(&reference));

    // Mixed developer bundle: trimmed, and the reference context item is cleared.
    let mixed = build(vec![
        developer_parts(&[PERMISSIONS, "Answer in French from now on."]),
        user(ENVIRONMENT_CONTEXT),
    ]);
    assert_eq!(stored(&mixed), base);
    assert_eq!(mixed.reference_context_item(), None);

    // An ordinary item between the updates stops the walk: only the update below it goes.
    let stopped = build(vec![
        developer(PERMISSIONS),
        assistant("a note between updates"),
        user(ENVIRONMENT_CONTEXT),
    ]);
    let mut expected = base.clone();
    expected.push(developer(PERMISSIONS));
    expected.push(assistant("a note between updates"));
    assert_eq!(stored(&stopped), expected);
    assert_eq!(stopped.reference_context_item(), Some(&reference));

    // An ordinary developer message directly above the turn is not a context update.
    let ordinary = build(vec![developer("Answer in French from now on.")]);
    let mut expected = base.clone();
    expected.push(developer("Answer in French from now on."));
    assert_eq!(stored(&ordinary), expected);
    assert_eq!(ordinary.reference_context_item(), Some(&reference));
}

// ---------------------------------------------------------------------------------------------
// Record-time truncation
// ---------------------------------------------------------------------------------------------

/// 2,500 numbered lines of exactly 62 bytes each (155,000 bytes, ASCII).
fn long_lines() -> String {
    let text: String = (0..2_500)
        .map(|i| format!("{i:05} {}\n", "x".repeat(55)))
        .collect();
    assert_eq!(text.len(), 155_000);
    text
}

/// Records `item` into `history`, expects it stored at `position` and truncated, and returns the
/// stored JSON.
fn record_truncated(history: &mut History, item: &str, position: usize) -> Value {
    assert_eq!(
        history.record_json(item).expect("valid"),
        Recorded::Stored {
            position,
            truncated: true
        }
    );
    history.assert_invariants();
    parse(history.get(position).expect("stored").json())
}

/// Records a `function_call_output` with the given body under `policy` and returns what was
/// stored as its `output`, plus whether the library reported truncation.
fn record_output_with(policy: TruncationPolicy, output: &str) -> (String, bool) {
    let mut history = History::with_truncation(policy);
    let json = function_output("call_1", output);
    let truncated = match history.record_json(json.as_str()).expect("valid") {
        Recorded::Stored {
            position: 0,
            truncated,
        } => truncated,
        other => panic!("unexpected {other:?}"),
    };
    let stored = parse(history.get(0).expect("stored").json());
    assert_eq!(stored["type"], "function_call_output");
    assert_eq!(stored["call_id"], "call_1");
    if !truncated {
        // Untouched items stay byte for byte as given.
        assert_eq!(history.get(0).expect("stored").json(), json);
    }
    history.assert_invariants();
    let output = stored["output"].as_str().expect("string body").to_owned();
    (output, truncated)
}

/// Codex's history test: under Tokens(1,000) a function output of 2,500 long lines is middle-truncated at
/// record time; the marker says "tokens truncated"; the `turn_id` metadata survives.
///
/// Effective policy: Tokens(1,000) × 1.2 = Tokens(1,200) = 4,800 bytes, so 2,400 bytes of head,
/// 2,400 bytes of tail, and ceil((155,000 − 4,800) / 4) = 37,550 tokens reported.
#[test]
fn record_items_truncates_function_call_output_content() {
    let text = long_lines();
    let mut history = History::with_truncation(TruncationPolicy::Tokens(1_000));
    history
        .record_json(function_call(Some("fc_1"), "call_1"))
        .expect("valid");
    let item = json!({
        "type": "function_call_output",
        "call_id": "call_1",
        "output": text,
        "internal_chat_message_metadata_passthrough": {"turn_id": "turn-1"}
    })
    .to_string();
    let stored = record_truncated(&mut history, &item, 1);

    let output = stored["output"].as_str().expect("string body");
    assert!(output.contains("tokens truncated"));
    let expected_output = format!(
        "{}\u{2026}37550 tokens truncated\u{2026}{}",
        &text[..2_400],
        &text[text.len() - 2_400..]
    );
    assert_eq!(output, expected_output);
    assert!(output.starts_with("00000 "));
    assert!(output.ends_with(&format!("02499 {}\n", "x".repeat(55))));
    // Everything else, including the metadata envelope and the key order, is as recorded.
    let expected = json!({
        "type": "function_call_output",
        "call_id": "call_1",
        "output": expected_output,
        "internal_chat_message_metadata_passthrough": {"turn_id": "turn-1"}
    })
    .to_string();
    assert_eq!(history.get(1).expect("stored").json(), expected);
}

/// Codex's history test: the same record-time truncation applies to `custom_tool_call_output` (recorded
/// here through the typed API), metadata kept.
#[test]
fn record_items_truncates_custom_tool_call_output_content() {
    let text = long_lines();
    let mut history = History::with_truncation(TruncationPolicy::Tokens(1_000));
    let item = ResponseItem::CustomToolCallOutput(CustomToolCallOutput {
        id: None,
        call_id: CallId::new("call_c"),
        name: None,
        output: OutputPayload::text(text.clone()),
        meta: Some(json!({"turn_id": "turn-2"})),
    });
    assert_eq!(
        history.record(&item).expect("recordable"),
        Recorded::Stored {
            position: 0,
            truncated: true
        }
    );
    history.assert_invariants();
    let expected_output = format!(
        "{}\u{2026}37550 tokens truncated\u{2026}{}",
        &text[..2_400],
        &text[text.len() - 2_400..]
    );
    let expected = json!({
        "type": "custom_tool_call_output",
        "call_id": "call_c",
        "output": expected_output,
        "internal_chat_message_metadata_passthrough": {"turn_id": "turn-2"}
    })
    .to_string();
    assert_eq!(history.get(0).expect("stored").json(), expected);
}

/// Codex's history test: a custom token limit, Tokens(10), is respected (with the ×1.2 allowance:
/// Tokens(12) = 48 bytes).
#[test]
fn record_items_respects_custom_token_limit() {
    let policy = TruncationPolicy::Tokens(10);
    let text = "0123456789".repeat(100);
    let (output, truncated) = record_output_with(policy, &text);
    assert!(truncated);
    // 24 bytes of head, 24 of tail, ceil((1,000 − 48) / 4) = 238 tokens.
    assert_eq!(
        output,
        "012345678901234567890123\u{2026}238 tokens truncated\u{2026}678901234567890123456789"
    );

    // 48 bytes fit (they would not without the allowance: 10 tokens are 40 bytes) ...
    let fits = "abcdefgh".repeat(6);
    assert_eq!(record_output_with(policy, &fits), (fits.clone(), false));
    // ... 49 bytes do not.
    let (output, truncated) = record_output_with(policy, &format!("{fits}!"));
    assert!(truncated);
    assert_eq!(
        output,
        "abcdefghabcdefghabcdefgh\u{2026}1 tokens truncated\u{2026}bcdefghabcdefghabcdefgh!"
    );

    // Other items are never truncated at record time.
    let mut history = History::with_truncation(policy);
    let long_message = user(&text);
    assert_eq!(
        history.record_json(long_message.as_str()).expect("valid"),
        Recorded::Stored {
            position: 0,
            truncated: false
        }
    );
    assert_eq!(history.get(0).expect("stored").json(), long_message);
}

/// Codex's history test, first case only: under the model policy Tokens(4) the effective limit is
/// Tokens(5) (×1.2, rounded up), i.e. 20 bytes; the metadata envelope is preserved.
///
/// The other three cases use a `fallback_token_limit_override` read from the metadata envelope,
/// which this library keeps verbatim and never interprets (out of scope), so they are not tested.
#[test]
fn record_annotated_items_preserves_metadata_while_processing_item() {
    let mut history = History::with_truncation(TruncationPolicy::Tokens(4));
    let item = json!({
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "abcdefghijklmnopqrstuvwxyz0123",
        "internal_chat_message_metadata_passthrough": {"turn_id": "turn-7", "create_time": 1.5}
    })
    .to_string();
    record_truncated(&mut history, &item, 0);
    // 30 bytes against 20: 10 + 10 kept, ceil(10 / 4) = 3 tokens reported. (Without the
    // allowance it would be 8 + 8 kept and 4 tokens reported.)
    let expected = json!({
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "abcdefghij\u{2026}3 tokens truncated\u{2026}uvwxyz0123",
        "internal_chat_message_metadata_passthrough": {"turn_id": "turn-7", "create_time": 1.5}
    })
    .to_string();
    assert_eq!(history.get(0).expect("stored").json(), expected);
}

/// Record-time truncation's history figure (also that of Codex's exec-output test): 2,500 lines of 62 bytes at an effective 2,500
/// tokens report 36,250 tokens removed. Tokens(2,083) × 1.2 = 2,499.6, rounded up to 2,500.
#[test]
fn record_items_reports_36250_tokens_removed_from_2500_long_lines() {
    let text = long_lines();
    let (output, truncated) = record_output_with(TruncationPolicy::Tokens(2_083), &text);
    assert!(truncated);
    assert_eq!(
        output,
        format!(
            "{}\u{2026}36250 tokens truncated\u{2026}{}",
            &text[..5_000],
            &text[text.len() - 5_000..]
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Codex's truncation test vectors, end to end through History::record_json
// ---------------------------------------------------------------------------------------------

const EMOJI_TEXT: &str = "😀😀😀😀😀😀😀😀😀😀\nsecond line with text\n";

/// Codex's truncation test `truncate_with_token_budget_returns_original_when_under_limit`: an output within the
/// budget is stored verbatim (here with its original spacing) and not reported as truncated.
#[test]
fn truncate_with_token_budget_returns_original_when_under_limit() {
    let mut history = History::new();
    let item =
        r#"{ "type": "function_call_output", "call_id": "call_1", "output": "short output" }"#;
    assert_eq!(
        history.record_json(item).expect("valid"),
        Recorded::Stored {
            position: 0,
            truncated: false
        }
    );
    assert_eq!(history.get(0).expect("stored").json(), item);
    assert_eq!(
        record_output_with(TruncationPolicy::Tokens(3), "fits in 12 b"),
        ("fits in 12 b".to_owned(), false)
    );
}

/// Codex's truncation test `truncate_with_token_budget_reports_truncation_at_zero_limit`: "abcdef" at 0 tokens
/// (0 × 1.2 = 0) becomes only the marker `…2 tokens truncated…`.
#[test]
fn truncate_with_token_budget_reports_truncation_at_zero_limit() {
    assert_eq!(
        record_output_with(TruncationPolicy::Tokens(0), "abcdef"),
        ("\u{2026}2 tokens truncated\u{2026}".to_owned(), true)
    );
}

/// Codex's truncation test `truncate_middle_tokens_handles_utf8_content`: ten 😀 + "\nsecond line with text\n" at
/// 8 tokens (model policy Tokens(6): 6 × 1.2 = 7.2 → 8).
#[test]
fn truncate_middle_tokens_handles_utf8_content() {
    assert_eq!(
        record_output_with(TruncationPolicy::Tokens(6), EMOJI_TEXT),
        (
            "😀😀😀😀\u{2026}8 tokens truncated\u{2026} line with text\n".to_owned(),
            true
        )
    );
}

/// Codex's truncation test `truncate_middle_bytes_handles_utf8_content`: the same text at 20 bytes (model policy
/// Bytes(16): 16 × 1.2 = 19.2 → 20).
#[test]
fn truncate_middle_bytes_handles_utf8_content() {
    assert_eq!(
        record_output_with(TruncationPolicy::Bytes(16), EMOJI_TEXT),
        (
            "😀😀\u{2026}21 chars truncated\u{2026}with text\n".to_owned(),
            true
        )
    );
}

/// Codex's truncation test `split_string_respects_utf8_boundaries`: "😀abc😀" split 5/5 keeps "😀a" and "c😀" and
/// removes one character. A byte budget of 10 (model policy Bytes(8): 9.6 → 10) splits 5/5.
#[test]
fn split_string_respects_utf8_boundaries() {
    assert_eq!(
        record_output_with(TruncationPolicy::Bytes(8), "😀abc😀"),
        ("😀a\u{2026}1 chars truncated\u{2026}c😀".to_owned(), true)
    );
}

/// Codex's truncation test `split_string_works`: a plain split, "hello world" at 5/5 (effective Bytes(10)).
#[test]
fn split_string_works() {
    assert_eq!(
        record_output_with(TruncationPolicy::Bytes(8), "hello world"),
        (
            "hello\u{2026}1 chars truncated\u{2026}world".to_owned(),
            true
        )
    );
}

/// Codex's truncation test `split_string_handles_empty_string`: an empty output stays empty, even at a zero budget.
#[test]
fn split_string_handles_empty_string() {
    assert_eq!(
        record_output_with(TruncationPolicy::Tokens(0), ""),
        (String::new(), false)
    );
    assert_eq!(
        record_output_with(TruncationPolicy::Bytes(0), ""),
        (String::new(), false)
    );
}

/// Codex's truncation test `split_string_only_keeps_prefix_when_tail_budget_is_zero`, end to end: a record-time
/// split always gives the tail at least as much as the head, so a tail that keeps nothing is
/// reached through character boundaries instead: "abc😀" at 6 bytes (Bytes(5) → 6) splits 3/3,
/// the head keeps "abc" and the emoji does not start within the last 3 bytes.
#[test]
fn split_string_only_keeps_prefix_when_tail_budget_is_zero() {
    assert_eq!(
        record_output_with(TruncationPolicy::Bytes(5), "abc😀"),
        ("abc\u{2026}1 chars truncated\u{2026}".to_owned(), true)
    );
}

/// Codex's truncation test `split_string_only_keeps_suffix_when_prefix_budget_is_zero`, end to end: "😀abc" at
/// 6 bytes splits 3/3; the emoji does not end within the first 3 bytes, the tail keeps "abc".
#[test]
fn split_string_only_keeps_suffix_when_prefix_budget_is_zero() {
    assert_eq!(
        record_output_with(TruncationPolicy::Bytes(5), "😀abc"),
        ("\u{2026}1 chars truncated\u{2026}abc".to_owned(), true)
    );
}

// ---------------------------------------------------------------------------------------------
// Normalization in the projection
// ---------------------------------------------------------------------------------------------

/// Codex's history test: a local shell call with its function output is left unchanged by the prompt
/// projection.
#[test]
fn normalization_retains_local_shell_outputs() {
    let items = vec![
        user("say hi"),
        local_shell_call(Some("lsh_1"), Some("call_3")),
        function_output("call_3", "hi\n"),
        assistant("done"),
    ];
    let history = history_of(&items);
    let projection = lenient(&history);
    assert_eq!(sent(&projection), items);
    assert!(projection.report().is_empty());
    assert_eq!(sent(&strict_ok(&history)), items);
}

const CTCO_CTC_1: &str = "ctco_ffd2c872-81a7-5a00-b6f6-884096d1f522";
const FCO_FC_EXISTING: &str = "fco_742749b0-3645-5d32-a172-676827826a07";
const TSO_TSC_ABC: &str = "tso_b63461f2-d7a3-5651-b7ba-74201b82b23b";

fn custom_missing_history() -> (History, Vec<String>) {
    let items = vec![
        user("patch it"),
        custom_call(Some("ctc_1"), "call_c"),
        assistant("interrupted"),
    ];
    (history_of(&items), items)
}

/// Codex's history test (lenient / release): a `custom_tool_call` without output gets an `"aborted"`
/// `custom_tool_call_output` right after it, with the synthetic id `ctco_<uuidv5>`.
///
/// Upstream's "inherited call" case depends on a marker this reference does not describe, so it
/// is not tested.
#[test]
fn normalize_adds_missing_output_for_custom_tool_call() {
    let (history, items) = custom_missing_history();
    let projection = lenient(&history);
    let synthetic = format!(
        r#"{{"type":"custom_tool_call_output","id":"{CTCO_CTC_1}","call_id":"call_c","output":"aborted"}}"#
    );
    assert_eq!(
        sent(&projection),
        vec![
            items[0].clone(),
            items[1].clone(),
            synthetic,
            items[2].clone()
        ]
    );
    assert_eq!(
        projection.report().repairs(),
        [synthesized(
            1,
            ItemKind::CustomToolCall,
            "call_c",
            ItemKind::CustomToolCallOutput,
            Some(CTCO_CTC_1),
        )]
    );
    assert_eq!(stored(&history), items);
}

/// Codex's history test in strict mode (standing in for its `…_panics_in_debug` twin): a custom tool call
/// without output is a violation.
#[test]
fn normalize_adds_missing_output_for_custom_tool_call_strict() {
    let (history, _) = custom_missing_history();
    assert_eq!(
        strict_violations(&history),
        [violation(
            ViolationKind::MissingOutput,
            1,
            ItemKind::CustomToolCall,
            "call_c"
        )]
    );
}

fn local_shell_missing_history() -> (History, Vec<String>) {
    let items = vec![
        local_shell_call(Some("lsh_1"), Some("call_3")),
        // No call id: nothing to pair with, so no output is wanted.
        local_shell_call(Some("lsh_2"), None),
        user("next"),
    ];
    (history_of(&items), items)
}

/// Codex's history test (lenient / release): a `local_shell_call` with a call id and no output gets an
/// `"aborted"` `function_call_output` with id `fco_<uuidv5("fco:<call id>")>`; one without a call
/// id gets nothing.
#[test]
fn normalize_adds_missing_output_for_local_shell_call_with_id() {
    let (history, items) = local_shell_missing_history();
    let id = expected_synthetic_id("fco", "lsh_1");
    let projection = lenient(&history);
    assert_eq!(
        sent(&projection),
        vec![
            items[0].clone(),
            synthetic_function_output(&id, "call_3"),
            items[1].clone(),
            items[2].clone(),
        ]
    );
    assert_eq!(
        projection.report().repairs(),
        [synthesized(
            0,
            ItemKind::LocalShellCall,
            "call_3",
            ItemKind::FunctionCallOutput,
            Some(&id),
        )]
    );
}

/// Codex's history test in strict mode (standing in for its `_panics_in_debug` twin): only the local shell call that has a call
/// id is a violation.
#[test]
fn normalize_adds_missing_output_for_local_shell_call_with_id_strict() {
    let (history, _) = local_shell_missing_history();
    assert_eq!(
        strict_violations(&history),
        [violation(
            ViolationKind::MissingOutput,
            0,
            ItemKind::LocalShellCall,
            "call_3"
        )]
    );
}

fn orphan_function_output_history() -> (History, Vec<String>) {
    let items = vec![
        user("hello"),
        function_output("call_gone", "stale output"),
        function_call(Some("fc_ok"), "call_ok"),
        function_output("call_ok", "fresh output"),
    ];
    (history_of(&items), items)
}

/// Codex's history test (lenient / release): a `function_call_output` whose call is nowhere in the
/// history is removed; the other items keep their order.
#[test]
fn normalize_removes_orphan_function_call_output() {
    let (history, items) = orphan_function_output_history();
    let projection = lenient(&history);
    assert_eq!(
        sent(&projection),
        vec![items[0].clone(), items[2].clone(), items[3].clone()]
    );
    assert_eq!(
        projection.report().repairs(),
        [dropped_orphan(1, ItemKind::FunctionCallOutput, "call_gone")]
    );
    assert_eq!(stored(&history), items);
}

/// Codex's history test in strict mode (standing in for its `_panics_in_debug` twin): the orphan is a violation.
#[test]
fn normalize_removes_orphan_function_call_output_strict() {
    let (history, _) = orphan_function_output_history();
    assert_eq!(
        strict_violations(&history),
        [violation(
            ViolationKind::OrphanOutput,
            1,
            ItemKind::FunctionCallOutput,
            "call_gone"
        )]
    );
}

fn orphan_custom_output_history() -> (History, Vec<String>) {
    let items = vec![
        user("hello"),
        custom_output("call_gone", "stale patch result"),
        // Pairing is per family: a function call does not answer for a custom output.
        function_call(Some("fc_x"), "call_x"),
        function_output("call_x", "ok"),
        custom_output("call_x", "wrong family"),
    ];
    (history_of(&items), items)
}

/// Codex's history test (lenient / release): a `custom_tool_call_output` without a `custom_tool_call` of
/// the same call id is removed, even when a function call has that id.
#[test]
fn normalize_removes_orphan_custom_tool_call_output() {
    let (history, items) = orphan_custom_output_history();
    let projection = lenient(&history);
    assert_eq!(
        sent(&projection),
        vec![items[0].clone(), items[2].clone(), items[3].clone()]
    );
    assert_eq!(
        projection.report().repairs(),
        [
            dropped_orphan(1, ItemKind::CustomToolCallOutput, "call_gone"),
            dropped_orphan(4, ItemKind::CustomToolCallOutput, "call_x"),
        ]
    );
}

/// Codex's history test in strict mode (standing in for its `_panics_in_debug` twin).
#[test]
fn normalize_removes_orphan_custom_tool_call_output_strict() {
    let (history, _) = orphan_custom_output_history();
    assert_eq!(
        strict_violations(&history),
        [
            violation(
                ViolationKind::OrphanOutput,
                1,
                ItemKind::CustomToolCallOutput,
                "call_gone"
            ),
            violation(
                ViolationKind::OrphanOutput,
                4,
                ItemKind::CustomToolCallOutput,
                "call_x"
            ),
        ]
    );
}

fn mixed_history() -> (History, Vec<String>) {
    let items = vec![
        user("go"),
        function_call(Some("fc_1"), "call_1"),
        custom_call(Some("ctc_1"), "call_2"),
        function_output("call_orphan", "stale"),
        local_shell_call(Some("lsh_1"), Some("call_3")),
        custom_output("call_orphan_c", "stale patch"),
        assistant("done"),
    ];
    (history_of(&items), items)
}

/// Codex's history test (lenient / release): outputs are inserted right after each call that lacks one,
/// orphans are removed, and nothing else moves.
#[test]
fn normalize_mixed_inserts_and_removals() {
    let (history, items) = mixed_history();
    let fco_fc_1 = expected_synthetic_id("fco", "fc_1");
    let fco_lsh_1 = expected_synthetic_id("fco", "lsh_1");
    let projection = lenient(&history);
    assert_eq!(
        sent(&projection),
        vec![
            items[0].clone(),
            items[1].clone(),
            synthetic_function_output(&fco_fc_1, "call_1"),
            items[2].clone(),
            format!(
                r#"{{"type":"custom_tool_call_output","id":"{CTCO_CTC_1}","call_id":"call_2","output":"aborted"}}"#
            ),
            items[4].clone(),
            synthetic_function_output(&fco_lsh_1, "call_3"),
            items[6].clone(),
        ]
    );
    assert_eq!(
        projection.report().repairs(),
        [
            synthesized(
                1,
                ItemKind::FunctionCall,
                "call_1",
                ItemKind::FunctionCallOutput,
                Some(&fco_fc_1)
            ),
            synthesized(
                2,
                ItemKind::CustomToolCall,
                "call_2",
                ItemKind::CustomToolCallOutput,
                Some(CTCO_CTC_1)
            ),
            dropped_orphan(3, ItemKind::FunctionCallOutput, "call_orphan"),
            synthesized(
                4,
                ItemKind::LocalShellCall,
                "call_3",
                ItemKind::FunctionCallOutput,
                Some(&fco_lsh_1)
            ),
            dropped_orphan(5, ItemKind::CustomToolCallOutput, "call_orphan_c"),
        ],
        "the report is in position order"
    );
    assert_eq!(stored(&history), items);
}

/// Codex's history test in strict mode (standing in for its `_panics_in_debug` twin): every violation, in history order; the
/// function call without output is not one (Codex only logs it).
#[test]
fn normalize_mixed_inserts_and_removals_strict() {
    let (history, _) = mixed_history();
    assert_eq!(
        strict_violations(&history),
        [
            violation(
                ViolationKind::MissingOutput,
                2,
                ItemKind::CustomToolCall,
                "call_2"
            ),
            violation(
                ViolationKind::OrphanOutput,
                3,
                ItemKind::FunctionCallOutput,
                "call_orphan"
            ),
            violation(
                ViolationKind::MissingOutput,
                4,
                ItemKind::LocalShellCall,
                "call_3"
            ),
            violation(
                ViolationKind::OrphanOutput,
                5,
                ItemKind::CustomToolCallOutput,
                "call_orphan_c"
            ),
        ]
    );
}

/// Codex's history test (all builds): a `function_call` without output gets the synthetic output right
/// after it, in lenient and strict mode alike. A call without an id gets an output without an id;
/// an output anywhere in the history (even before the call) counts as present.
#[test]
fn normalize_adds_missing_output_for_function_call_inserts_output() {
    let items = vec![
        user("list files"),
        function_call(Some("fc_existing"), "missing-output-call"),
        user("are you there?"),
        function_call(None, "call_no_id"),
        function_output("call_early", "output recorded before its call"),
        function_call(Some("fc_late"), "call_early"),
    ];
    let history = history_of(&items);
    // The same call recorded through the typed API is stored as the same bytes (Codex's serialization order).
    let mut typed = History::new();
    typed
        .record(&ResponseItem::FunctionCall(FunctionCall {
            id: Some(ItemId::new("fc_existing")),
            name: "shell".into(),
            namespace: None,
            arguments: "{\"command\":[\"ls\"]}".into(),
            call_id: CallId::new("missing-output-call"),
            status: None,
            encrypted_content: None,
            encrypted_function_args: None,
            meta: None,
        }))
        .expect("recordable");
    assert_eq!(stored(&typed), vec![items[1].clone()]);
    let expected = vec![
        items[0].clone(),
        items[1].clone(),
        synthetic_function_output(FCO_FC_EXISTING, "missing-output-call"),
        items[2].clone(),
        items[3].clone(),
        r#"{"type":"function_call_output","call_id":"call_no_id","output":"aborted"}"#.to_owned(),
        items[4].clone(),
        items[5].clone(),
    ];
    let expected_repairs = [
        synthesized(
            1,
            ItemKind::FunctionCall,
            "missing-output-call",
            ItemKind::FunctionCallOutput,
            Some(FCO_FC_EXISTING),
        ),
        synthesized(
            3,
            ItemKind::FunctionCall,
            "call_no_id",
            ItemKind::FunctionCallOutput,
            None,
        ),
    ];
    let projection = lenient(&history);
    assert_eq!(sent(&projection), expected);
    assert_eq!(projection.report().repairs(), expected_repairs);
    let strict = strict_ok(&history);
    assert_eq!(sent(&strict), expected);
    assert_eq!(strict.report().repairs(), expected_repairs);
}

/// Codex's history test: a `function_call_output` without `call_id` but with a `name` (an external tool
/// event) is kept.
#[test]
fn normalize_preserves_named_function_call_output_without_call_id() {
    let items = vec![
        user("what happened?"),
        r#"{"type":"function_call_output","name":"ci_status","output":"build passed"}"#.to_owned(),
        assistant("the build passed"),
    ];
    let history = history_of(&items);
    let projection = lenient(&history);
    assert_eq!(sent(&projection), items);
    assert!(projection.report().is_empty());
    assert_eq!(sent(&strict_ok(&history)), items);
}

/// Codex's history test: the synthetic output gets a stable id (`fco_` + a version-5 UUID, the same on
/// every projection and for a copy of the history) and sits between its call and the following
/// message; history order is otherwise unchanged and the history itself is untouched.
#[test]
fn for_prompt_assigns_stable_id_to_synthetic_output_without_reordering_history() {
    let items = vec![
        user("run it"),
        function_call(Some("fc_existing"), "missing-output-call"),
        assistant("I was interrupted"),
        user("try again"),
    ];
    let history = history_of(&items);
    let first = lenient(&history);
    let synthetic = synthetic_function_output(FCO_FC_EXISTING, "missing-output-call");
    assert_eq!(
        sent(&first),
        vec![
            items[0].clone(),
            items[1].clone(),
            synthetic.clone(),
            items[2].clone(),
            items[3].clone(),
        ]
    );

    let output = parse(&sent(&first)[2]);
    let id = output["id"].as_str().expect("synthetic output has an id");
    assert_eq!(id, FCO_FC_EXISTING);
    assert_eq!(id, expected_synthetic_id("fco", "fc_existing"));
    let uuid = Uuid::parse_str(id.strip_prefix("fco_").expect("fco_ prefix")).expect("a UUID");
    assert_eq!(uuid.get_version_num(), 5);
    assert_eq!(uuid.get_version(), Some(uuid::Version::Sha1));

    // Repeated projections, and projections of an independent copy, give the same bytes.
    let second = lenient(&history);
    assert_eq!(second.to_json_array(), first.to_json_array());
    let copy = history_of(&items);
    assert_eq!(lenient(&copy).to_json_array(), first.to_json_array());
    assert_eq!(
        first.to_json_array(),
        format!(
            "[{},{},{},{},{}]",
            items[0], items[1], synthetic, items[2], items[3]
        )
    );

    // The repair lives only in the projection.
    assert_eq!(stored(&history), items);
    assert_eq!(history.version(), 0);
    history.assert_invariants();
}

/// Codex's history test: a `tool_search_call` with a call id and no output gets a `tool_search_output`
/// with status "completed", execution "client" and no tools, id `tso_<uuidv5>`. The call's own
/// execution is not checked; a call without a call id gets nothing.
///
/// Codex's test fills its history below the session, where the client call without a call id is
/// kept; recording here drops that call (durable-history canonicalization, tested below), so the
/// history is built as a compaction's replacement history is, without the record rules.
#[test]
fn normalize_adds_missing_output_for_tool_search_call() {
    let items = [
        tool_search_call(Some("tsc_abc"), Some("ts_1"), "client"),
        tool_search_call(Some("tsc_srv"), Some("ts_2"), "server"),
        tool_search_call(Some("tsc_none"), None, "client"),
        user("next"),
    ];
    let mut history = History::new();
    history.replace(
        items
            .iter()
            .map(|json| Entry::from_json(json.as_str()).expect("an item")),
    );
    history.assert_invariants();
    let tso_srv = expected_synthetic_id("tso", "tsc_srv");
    let expected = vec![
        items[0].clone(),
        format!(
            r#"{{"type":"tool_search_output","id":"{TSO_TSC_ABC}","call_id":"ts_1","status":"completed","execution":"client","tools":[]}}"#
        ),
        items[1].clone(),
        format!(
            r#"{{"type":"tool_search_output","id":"{tso_srv}","call_id":"ts_2","status":"completed","execution":"client","tools":[]}}"#
        ),
        items[2].clone(),
        items[3].clone(),
    ];
    let expected_repairs = [
        synthesized(
            0,
            ItemKind::ToolSearchCall,
            "ts_1",
            ItemKind::ToolSearchOutput,
            Some(TSO_TSC_ABC),
        ),
        synthesized(
            1,
            ItemKind::ToolSearchCall,
            "ts_2",
            ItemKind::ToolSearchOutput,
            Some(&tso_srv),
        ),
    ];
    let projection = lenient(&history);
    assert_eq!(sent(&projection), expected);
    assert_eq!(projection.report().repairs(), expected_repairs);
    // Codex only logs this one: strict mode repairs it too.
    assert_eq!(sent(&strict_ok(&history)), expected);
}

fn orphan_tool_search_history() -> (History, Vec<String>) {
    let items = vec![
        user("find a tool"),
        tool_search_output(Some("ts_orphan"), "client"),
        assistant("none found"),
    ];
    (history_of(&items), items)
}

/// Codex's history test (lenient / release): a client `tool_search_output` without its call is removed.
#[test]
fn normalize_removes_orphan_client_tool_search_output() {
    let (history, items) = orphan_tool_search_history();
    let projection = lenient(&history);
    assert_eq!(sent(&projection), vec![items[0].clone(), items[2].clone()]);
    assert_eq!(
        projection.report().repairs(),
        [dropped_orphan(1, ItemKind::ToolSearchOutput, "ts_orphan")]
    );
}

/// Codex's history test in strict mode (standing in for its `_panics_in_debug` twin).
#[test]
fn normalize_removes_orphan_client_tool_search_output_strict() {
    let (history, _) = orphan_tool_search_history();
    assert_eq!(
        strict_violations(&history),
        [violation(
            ViolationKind::OrphanOutput,
            1,
            ItemKind::ToolSearchOutput,
            "ts_orphan"
        )]
    );
}

/// Codex's history test: a server-executed `tool_search_output` is kept without a matching call, and so
/// is one without a call id.
#[test]
fn normalize_keeps_server_tool_search_output_without_matching_call() {
    let items = vec![
        user("find a tool"),
        tool_search_output(Some("ts_server"), "server"),
        tool_search_output(None, "client"),
        assistant("found one"),
    ];
    let history = history_of(&items);
    let projection = lenient(&history);
    assert_eq!(sent(&projection), items);
    assert!(projection.report().is_empty());
    assert_eq!(sent(&strict_ok(&history)), items);
}

// ---------------------------------------------------------------------------------------------
// Durable-history canonicalization of client tool searches
// ---------------------------------------------------------------------------------------------

const INVALID_TOOL_SEARCH: &str = r#"{"query":"[invalid tool_search arguments omitted]"}"#;

/// A client `tool_search_call` with call id `c1` and `arguments` given as JSON text.
fn client_search(arguments: &str) -> String {
    format!(
        r#"{{"type":"tool_search_call","id":"tsc_1","call_id":"c1","status":"completed","execution":"client","arguments":{arguments}}}"#
    )
}

/// Records `json` into a new history and returns the stored text.
fn stored_text(json: &str) -> String {
    let mut history = History::new();
    let recorded = history.record_json(json).expect("an item");
    assert_eq!(
        recorded,
        Recorded::Stored {
            position: 0,
            truncated: false
        }
    );
    history.assert_invariants();
    history.get(0).expect("stored").json().to_owned()
}

/// Codex's rule: a client `tool_search_call` without a call id — the key missing, `null` or an
/// empty string — is not recorded into the durable history, whichever way it is recorded.
#[test]
fn a_client_tool_search_call_without_call_id_is_not_recorded() {
    let missing = r#"{"type":"tool_search_call","execution":"client","arguments":{"query":"q"}}"#;
    let null = r#"{"type":"tool_search_call","call_id":null,"execution":"client","arguments":{"query":"q"}}"#;
    let empty = r#"{"type":"tool_search_call","call_id":"","execution":"client","arguments":{"query":"q"}}"#;
    for json in [missing, null, empty] {
        let filtered = Recorded::Filtered(FilterReason::ClientToolSearchWithoutCallId);
        let mut history = History::new();
        assert_eq!(
            history.record_json(json).expect("an item"),
            filtered,
            "{json}"
        );
        let item: ResponseItem = serde_json::from_str(json).expect("an item");
        assert_eq!(history.record(&item).expect("typed"), filtered, "{json}");
        let entry = Entry::from_json(json).expect("an entry");
        assert_eq!(
            history.record_entry(entry).expect("entry"),
            filtered,
            "{json}"
        );
        assert!(history.is_empty());
    }
}

/// Codex's rule: the arguments are read through `{query: string, limit?: integer}` and written
/// back — unknown keys dropped, `query` before `limit`, a `null` limit left out. Only `arguments`
/// changes in the stored text; the other keys keep their order and text.
#[test]
fn client_tool_search_arguments_are_rewritten_to_the_schema() {
    assert_eq!(
        stored_text(&client_search(
            r#"{"limit":5,"filters":{"a":1},"query":"calendar"}"#
        )),
        client_search(r#"{"query":"calendar","limit":5}"#)
    );
    assert_eq!(
        stored_text(&client_search(r#"{"query":"calendar","limit":null}"#)),
        client_search(r#"{"query":"calendar"}"#)
    );
    // Canonical arguments leave the text byte for byte as it was given.
    let canonical = client_search(r#"{"query":"calendar","limit":2}"#);
    assert_eq!(stored_text(&canonical), canonical);
    // The token estimate is that of the stored arguments.
    let mut history = History::new();
    history
        .record_json(client_search(
            r#"{"query":"q","padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#,
        ))
        .expect("recorded");
    let expected = Entry::from_json(client_search(r#"{"query":"q"}"#)).expect("an entry");
    assert_eq!(history.get(0).expect("stored"), &expected);
}

/// Codex's rule: arguments that do not fit the schema become
/// `{"query":"[invalid tool_search arguments omitted]"}` — a limit that is not a whole number, a
/// query that is not a string or is missing, arguments that are not a JSON object (a string of
/// text that is not JSON, say).
#[test]
fn client_tool_search_arguments_that_do_not_fit_become_the_invalid_marker() {
    for arguments in [
        r#"{"query":"q","limit":"5"}"#,
        r#"{"query":"q","limit":2.5}"#,
        r#"{"query":"q","limit":-1}"#,
        r#"{"query":7}"#,
        r#"{"limit":3}"#,
        r#""query: calendar, not JSON""#,
        r#""{\"query\":\"calendar\"}""#,
        "null",
    ] {
        assert_eq!(
            stored_text(&client_search(arguments)),
            client_search(INVALID_TOOL_SEARCH),
            "{arguments}"
        );
    }
}

/// The typed record and the entry record canonicalize as the JSON record does.
#[test]
fn every_record_entry_point_canonicalizes() {
    let given = client_search(r#"{"query":"q","extra":1}"#);
    let expected = client_search(r#"{"query":"q"}"#);
    let mut history = History::new();
    let item: ResponseItem = serde_json::from_str(&given).expect("an item");
    history.record(&item).expect("typed");
    history
        .record_entry(Entry::from_json(given.as_str()).expect("an entry"))
        .expect("entry");
    history.record_json(given.as_str()).expect("json");
    let texts = stored(&history);
    assert_eq!(texts[1], expected);
    assert_eq!(texts[2], expected);
    // The typed record serializes the item: same value, keys in the model's order.
    assert_eq!(parse(&texts[0]), parse(&expected));
    history.assert_invariants();
}

/// Server-executed tool searches (and any other `execution`), function-call arguments and custom
/// tool input are never rewritten, whatever they hold.
#[test]
fn only_client_tool_searches_are_canonicalized() {
    for json in [
        r#"{"type":"tool_search_call","call_id":"c","execution":"server","arguments":{"limit":"x","extra":1}}"#,
        r#"{"type":"tool_search_call","call_id":null,"execution":"server","arguments":"not json"}"#,
        r#"{"type":"tool_search_call","call_id":"","execution":"elsewhere","arguments":{"extra":1}}"#,
        r#"{"type":"function_call","name":"f","arguments":"{\"limit\":\"x\",\"extra\":1}","call_id":"c"}"#,
        r#"{"type":"function_call","name":"f","arguments":"not json","call_id":"c"}"#,
        r#"{"type":"custom_tool_call","call_id":"c","name":"t","input":"{\"query\":7}"}"#,
        r#"{"type":"tool_search_output","call_id":"","status":"completed","execution":"client","tools":[]}"#,
    ] {
        assert_eq!(stored_text(json), json);
    }
}

/// Codex's behaviour: once the call without a call id is dropped, an output that answers it has
/// no call in the history, and projection drops it as an orphan (strict mode: a violation). The
/// pairing index agrees with a recomputation throughout.
#[test]
fn the_output_of_a_dropped_tool_search_call_is_an_orphan() {
    let call = r#"{"type":"tool_search_call","call_id":"","execution":"client","arguments":{"query":"q"}}"#;
    let output = r#"{"type":"tool_search_output","call_id":"","status":"completed","execution":"client","tools":[]}"#;
    let items = [
        user("find"),
        call.to_owned(),
        output.to_owned(),
        assistant("ok"),
    ];
    let mut history = History::new();
    for item in &items {
        history.record_json(item.as_str()).expect("an item");
        history.assert_invariants();
    }
    assert_eq!(
        stored(&history),
        [items[0].clone(), items[2].clone(), items[3].clone()]
    );
    let projection = lenient(&history);
    assert_eq!(sent(&projection), [items[0].clone(), items[3].clone()]);
    assert_eq!(
        projection.report().repairs(),
        [dropped_orphan(1, ItemKind::ToolSearchOutput, "")]
    );
    assert_eq!(
        strict_violations(&history),
        [violation(
            ViolationKind::OrphanOutput,
            1,
            ItemKind::ToolSearchOutput,
            ""
        )]
    );
}
