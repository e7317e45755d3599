//! Typed items of every variant, generated field by field, through JSON and back.
//!
//! A `ResponseItem` is built from arbitrary choices (texts made of fragments that matter:
//! escapes, separators, non-BMP characters, contextual markers, the summary prefix; JSON values
//! with edge-case numbers; every optional field present or absent), serialized, and:
//!
//! * `Entry::from_json` of the text equals `Entry::from_item` of the item (same text, same
//!   header), and is refused for exactly the items that cannot be stored;
//! * `to_item` gives back the item, and serializing that gives the same text (the model
//!   round-trips; the generator avoids the documented one-way forms, see `avoid`);
//! * the entry's header agrees with the item: kind, role, call id, item id, image / audio /
//!   server-execution flags;
//! * recording the item stores that text (or filters it, or truncates a tool output it says it
//!   truncated, or gives a client tool search canonical arguments), and the history keeps its
//!   invariants.
#![no_main]

use agent_history::{
    AdditionalTools, AgentContentItem, AgentMessage, CallId, Compaction, ContentItem,
    ContextCompaction, CustomToolCall, CustomToolCallOutput, Entry, Execution, FunctionCall,
    FunctionCallOutput, History, ImageDetail, ImageGenerationCall, ImagePart, ItemError, ItemId,
    LocalShellAction, LocalShellCall, LocalShellStatus, Message, MessagePhase, OutputContentItem,
    OutputPayload, Reasoning, ReasoningContent, ReasoningSummary, Recorded, ResponseItem, Role,
    SUMMARY_PREFIX, ToolSearchCall, ToolSearchOutput, TruncationPolicy, WebSearchAction,
    WebSearchCall,
};
use agent_history_fuzz::{check_canonicalized, client_tool_search_without_call_id};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Number, Value};

const FRAGMENTS: [&str; 20] = [
    "",
    "a",
    "hi",
    "ü",
    "\u{1F600}",
    "\"",
    "\\",
    "\n",
    "\u{0}",
    "\u{7f}",
    "\u{2028}",
    "<skill>",
    "</skill>",
    "<environment_context>",
    "</environment_context>",
    SUMMARY_PREFIX,
    r#"{"author":"/root","recipient":"/root/w"}"#,
    "<permissions instructions>",
    " ",
    "data:image/png;base64,AAAA",
];

/// A text of up to four fragments (fixed-size, so that the fuzzer reaches long texts fast).
#[derive(Arbitrary, Debug)]
struct Text {
    len: u8,
    parts: [u8; 4],
}

impl Text {
    fn build(&self) -> String {
        let mut text = String::new();
        for part in self.parts.iter().take(usize::from(self.len % 5)) {
            text.push_str(FRAGMENTS[usize::from(*part) % FRAGMENTS.len()]);
        }
        text
    }
}

/// Numbers at the edges: integers at both ends, floats that are hard to print and read back.
#[derive(Arbitrary, Debug)]
enum Num {
    Int(i64),
    Uint(u64),
    Bits(u64),
    Table(u8),
}

const FLOATS: [f64; 10] = [
    0.0,
    -0.0,
    0.1,
    1.5,
    1e300,
    -2.5e-8,
    123_456_789.123_456_79,
    f64::MAX,
    f64::MIN_POSITIVE,
    5e-324,
];

impl Num {
    fn build(&self) -> Value {
        match self {
            Num::Int(n) => Value::from(*n),
            Num::Uint(n) => Value::from(*n),
            Num::Bits(bits) => {
                Number::from_f64(f64::from_bits(*bits)).map_or(Value::Null, Value::Number)
            }
            Num::Table(i) => Number::from_f64(FLOATS[usize::from(*i) % FLOATS.len()])
                .map_or(Value::Null, Value::Number),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Scalar {
    Null,
    Bool(bool),
    Num(Num),
    Text(Text),
}

impl Scalar {
    fn build(&self) -> Value {
        match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => Value::Bool(*b),
            Scalar::Num(n) => n.build(),
            Scalar::Text(t) => Value::String(t.build()),
        }
    }
}

/// A JSON value two levels deep.
#[derive(Arbitrary, Debug)]
enum GenValue {
    Scalar(Scalar),
    Array(u8, [Scalar; 3]),
    Object(u8, [(Text, Scalar); 3]),
}

impl GenValue {
    fn build(&self) -> Value {
        match self {
            GenValue::Scalar(s) => s.build(),
            GenValue::Array(n, items) => Value::Array(
                items
                    .iter()
                    .take(usize::from(n % 4))
                    .map(Scalar::build)
                    .collect(),
            ),
            GenValue::Object(n, fields) => {
                let mut map = Map::new();
                for (key, value) in fields.iter().take(usize::from(n % 4)) {
                    map.insert(key.build(), value.build());
                }
                Value::Object(map)
            }
        }
    }
}

/// Metadata passed through verbatim: absent, or a value that is not `null` (a `null` reads back
/// as absent, one of the model's documented one-way forms).
fn meta(value: &Option<GenValue>) -> Option<Value> {
    value
        .as_ref()
        .map(GenValue::build)
        .filter(|value| !value.is_null())
}

fn opt_text(text: &Option<Text>) -> Option<String> {
    text.as_ref().map(Text::build)
}

#[derive(Arbitrary, Debug)]
struct GenImage {
    url: Option<Text>,
    file_id: Option<Text>,
    detail: Option<u8>,
}

impl GenImage {
    fn build(&self) -> ImagePart {
        ImagePart {
            image_url: opt_text(&self.url),
            file_id: opt_text(&self.file_id),
            detail: self.detail.map(|d| match d % 4 {
                0 => ImageDetail::Auto,
                1 => ImageDetail::Low,
                2 => ImageDetail::High,
                _ => ImageDetail::Original,
            }),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum GenContent {
    InputText(Text),
    InputImage(GenImage),
    InputAudio(Text),
    OutputText(Text, Option<(u8, [Scalar; 2])>, Option<(u8, [Scalar; 2])>),
    Other,
}

fn values(list: &Option<(u8, [Scalar; 2])>) -> Option<Vec<Value>> {
    list.as_ref().map(|(n, items)| {
        items
            .iter()
            .take(usize::from(n % 3))
            .map(Scalar::build)
            .collect()
    })
}

impl GenContent {
    fn build(&self) -> ContentItem {
        match self {
            GenContent::InputText(t) => ContentItem::InputText { text: t.build() },
            GenContent::InputImage(i) => ContentItem::InputImage(i.build()),
            GenContent::InputAudio(t) => ContentItem::InputAudio {
                audio_url: t.build(),
            },
            GenContent::OutputText(t, annotations, logprobs) => ContentItem::OutputText {
                text: t.build(),
                annotations: values(annotations),
                logprobs: values(logprobs),
            },
            GenContent::Other => ContentItem::Other,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum GenOutputPart {
    InputText(Text),
    InputImage(GenImage),
    InputAudio(Text),
    Encrypted(Text),
    Other,
}

#[derive(Arbitrary, Debug)]
enum GenOutput {
    Text(Text),
    Long(u8),
    Parts(u8, [GenOutputPart; 3]),
}

impl GenOutput {
    fn build(&self) -> OutputPayload {
        match self {
            GenOutput::Text(t) => OutputPayload::Text(t.build()),
            GenOutput::Long(n) => OutputPayload::Text("o".repeat(usize::from(*n) * 4)),
            GenOutput::Parts(n, parts) => OutputPayload::ContentItems(
                parts
                    .iter()
                    .take(usize::from(n % 4))
                    .map(|part| match part {
                        GenOutputPart::InputText(t) => {
                            OutputContentItem::InputText { text: t.build() }
                        }
                        GenOutputPart::InputImage(i) => OutputContentItem::InputImage(i.build()),
                        GenOutputPart::InputAudio(t) => OutputContentItem::InputAudio {
                            audio_url: t.build(),
                        },
                        GenOutputPart::Encrypted(t) => OutputContentItem::EncryptedContent {
                            encrypted_content: t.build(),
                        },
                        GenOutputPart::Other => OutputContentItem::Other,
                    })
                    .collect(),
            ),
        }
    }
}

fn role(choice: u8) -> Role {
    match choice % 4 {
        0 => Role::User,
        1 => Role::Assistant,
        2 => Role::Developer,
        _ => Role::System,
    }
}

/// An execution: `client`, `server`, or another text (never one of those two, which would read
/// back as `Client` / `Server`).
fn execution(choice: u8, other: &Text) -> Execution {
    match choice % 3 {
        0 => Execution::Client,
        1 => Execution::Server,
        _ => match other.build() {
            text if text == "client" || text == "server" => Execution::Client,
            text => Execution::Other(text),
        },
    }
}

/// A web search action: its kind, a query or URL, queries, a pattern.
#[derive(Arbitrary, Debug)]
struct GenWebAction(u8, Option<Text>, Option<(u8, [Text; 2])>, Option<Text>);

#[derive(Arbitrary, Debug)]
enum GenItem {
    Message {
        id: Option<Text>,
        role: u8,
        n: u8,
        content: [GenContent; 3],
        phase: Option<u8>,
        status: Option<Text>,
        encrypted: Option<Text>,
        meta: Option<GenValue>,
    },
    AgentMessage {
        id: Option<Text>,
        author: Text,
        recipient: Text,
        n: u8,
        content: [(u8, Text); 2],
        meta: Option<GenValue>,
    },
    Reasoning {
        id: Option<Text>,
        n: u8,
        summary: [Option<Text>; 2],
        content: Option<(u8, [(u8, Text); 2])>,
        encrypted: Option<Text>,
        meta: Option<GenValue>,
    },
    LocalShellCall {
        id: Option<Text>,
        call_id: Option<Text>,
        status: u8,
        command: (u8, [Text; 2]),
        timeout_ms: Option<u64>,
        working_directory: Option<Text>,
        env: Option<(u8, [(Text, Text); 2])>,
        user: Option<Text>,
        encrypted: Option<Text>,
        meta: Option<GenValue>,
    },
    FunctionCall {
        id: Option<Text>,
        name: Text,
        namespace: Option<Text>,
        arguments: Text,
        call_id: Text,
        status: Option<Text>,
        encrypted: Option<Text>,
        encrypted_args: Option<(u8, [Text; 2])>,
        meta: Option<GenValue>,
    },
    FunctionCallOutput {
        id: Option<Text>,
        call_id: Option<Text>,
        name: Option<Text>,
        namespace: Option<Text>,
        output: GenOutput,
        meta: Option<GenValue>,
    },
    CustomToolCall {
        id: Option<Text>,
        status: Option<Text>,
        call_id: Text,
        name: Text,
        namespace: Option<Text>,
        input: Text,
        encrypted: Option<Text>,
        meta: Option<GenValue>,
    },
    CustomToolCallOutput {
        id: Option<Text>,
        call_id: Text,
        name: Option<Text>,
        output: GenOutput,
        meta: Option<GenValue>,
    },
    ToolSearchCall {
        id: Option<Text>,
        call_id: Option<Text>,
        status: Option<Text>,
        execution: (u8, Text),
        arguments: GenValue,
        encrypted: Option<Text>,
        meta: Option<GenValue>,
    },
    ToolSearchOutput {
        id: Option<Text>,
        call_id: Option<Text>,
        status: Text,
        execution: (u8, Text),
        n: u8,
        tools: [GenValue; 2],
        meta: Option<GenValue>,
    },
    WebSearchCall {
        id: Option<Text>,
        status: Option<Text>,
        action: Option<GenWebAction>,
        encrypted: Option<Text>,
        meta: Option<GenValue>,
    },
    ImageGenerationCall {
        id: Option<Text>,
        status: Text,
        revised_prompt: Option<Text>,
        result: Text,
        encrypted: Option<Text>,
        meta: Option<GenValue>,
    },
    Compaction {
        id: Option<Text>,
        encrypted: Text,
        meta: Option<GenValue>,
    },
    ContextCompaction {
        id: Option<Text>,
        encrypted: Option<Text>,
        meta: Option<GenValue>,
    },
    AdditionalTools {
        id: Option<Text>,
        role: u8,
        n: u8,
        tools: [GenValue; 2],
    },
    CompactionTrigger,
    Other,
}

fn id(text: &Option<Text>) -> Option<ItemId> {
    text.as_ref().map(|t| ItemId::new(t.build()))
}

fn call(text: &Option<Text>) -> Option<CallId> {
    text.as_ref().map(|t| CallId::new(t.build()))
}

impl GenItem {
    fn build(&self) -> ResponseItem {
        match self {
            GenItem::Message {
                id: item_id,
                role: r,
                n,
                content,
                phase,
                status,
                encrypted,
                meta: m,
            } => ResponseItem::Message(Message {
                id: id(item_id),
                role: role(*r),
                content: content
                    .iter()
                    .take(usize::from(n % 4))
                    .map(GenContent::build)
                    .collect(),
                phase: phase.map(|p| match p % 3 {
                    0 => MessagePhase::Commentary,
                    1 => MessagePhase::PartialAnswer,
                    _ => MessagePhase::FinalAnswer,
                }),
                status: opt_text(status),
                encrypted_content: opt_text(encrypted),
                meta: meta(m),
            }),
            GenItem::AgentMessage {
                id: item_id,
                author,
                recipient,
                n,
                content,
                meta: m,
            } => ResponseItem::AgentMessage(AgentMessage {
                id: id(item_id),
                author: author.build(),
                recipient: recipient.build(),
                content: content
                    .iter()
                    .take(usize::from(n % 3))
                    .map(|(kind, t)| match kind % 3 {
                        0 => AgentContentItem::InputText { text: t.build() },
                        1 => AgentContentItem::EncryptedContent {
                            encrypted_content: t.build(),
                        },
                        _ => AgentContentItem::Other,
                    })
                    .collect(),
                meta: meta(m),
            }),
            GenItem::Reasoning {
                id: item_id,
                n,
                summary,
                content,
                encrypted,
                meta: m,
            } => ResponseItem::Reasoning(Reasoning {
                id: id(item_id),
                summary: summary
                    .iter()
                    .take(usize::from(n % 3))
                    .map(|t| match t {
                        Some(t) => ReasoningSummary::SummaryText { text: t.build() },
                        None => ReasoningSummary::Other,
                    })
                    .collect(),
                // Content without a `reasoning_text` part is not written (a documented one-way
                // form): generate it only with one.
                content: content.as_ref().map(|(n, parts)| {
                    let mut parts: Vec<ReasoningContent> = parts
                        .iter()
                        .take(usize::from(n % 3))
                        .map(|(kind, t)| match kind % 3 {
                            0 => ReasoningContent::ReasoningText { text: t.build() },
                            1 => ReasoningContent::Text { text: t.build() },
                            _ => ReasoningContent::Other,
                        })
                        .collect();
                    if !parts
                        .iter()
                        .any(|part| matches!(part, ReasoningContent::ReasoningText { .. }))
                    {
                        parts.push(ReasoningContent::ReasoningText {
                            text: String::new(),
                        });
                    }
                    parts
                }),
                encrypted_content: opt_text(encrypted),
                meta: meta(m),
            }),
            GenItem::LocalShellCall {
                id: item_id,
                call_id,
                status,
                command: (n, command),
                timeout_ms,
                working_directory,
                env,
                user,
                encrypted,
                meta: m,
            } => ResponseItem::LocalShellCall(LocalShellCall {
                id: id(item_id),
                call_id: call(call_id),
                status: match status % 3 {
                    0 => LocalShellStatus::Completed,
                    1 => LocalShellStatus::InProgress,
                    _ => LocalShellStatus::Incomplete,
                },
                action: LocalShellAction::Exec {
                    command: command
                        .iter()
                        .take(usize::from(n % 3))
                        .map(Text::build)
                        .collect(),
                    timeout_ms: *timeout_ms,
                    working_directory: opt_text(working_directory),
                    env: env.as_ref().map(|(n, pairs)| {
                        pairs
                            .iter()
                            .take(usize::from(n % 3))
                            .map(|(k, v)| (k.build(), v.build()))
                            .collect()
                    }),
                    user: opt_text(user),
                },
                encrypted_content: opt_text(encrypted),
                meta: meta(m),
            }),
            GenItem::FunctionCall {
                id: item_id,
                name,
                namespace,
                arguments,
                call_id,
                status,
                encrypted,
                encrypted_args,
                meta: m,
            } => ResponseItem::FunctionCall(FunctionCall {
                id: id(item_id),
                name: name.build(),
                namespace: opt_text(namespace),
                arguments: arguments.build(),
                call_id: CallId::new(call_id.build()),
                status: opt_text(status),
                encrypted_content: opt_text(encrypted),
                encrypted_function_args: encrypted_args.as_ref().map(|(n, args)| {
                    args.iter()
                        .take(usize::from(n % 3))
                        .map(Text::build)
                        .collect()
                }),
                meta: meta(m),
            }),
            GenItem::FunctionCallOutput {
                id: item_id,
                call_id,
                name,
                namespace,
                output,
                meta: m,
            } => ResponseItem::FunctionCallOutput(FunctionCallOutput {
                id: id(item_id),
                call_id: call(call_id),
                name: opt_text(name),
                namespace: opt_text(namespace),
                output: output.build(),
                meta: meta(m),
            }),
            GenItem::CustomToolCall {
                id: item_id,
                status,
                call_id,
                name,
                namespace,
                input,
                encrypted,
                meta: m,
            } => ResponseItem::CustomToolCall(CustomToolCall {
                id: id(item_id),
                status: opt_text(status),
                call_id: CallId::new(call_id.build()),
                name: name.build(),
                namespace: opt_text(namespace),
                input: input.build(),
                encrypted_content: opt_text(encrypted),
                meta: meta(m),
            }),
            GenItem::CustomToolCallOutput {
                id: item_id,
                call_id,
                name,
                output,
                meta: m,
            } => ResponseItem::CustomToolCallOutput(CustomToolCallOutput {
                id: id(item_id),
                call_id: CallId::new(call_id.build()),
                name: opt_text(name),
                output: output.build(),
                meta: meta(m),
            }),
            GenItem::ToolSearchCall {
                id: item_id,
                call_id,
                status,
                execution: (e, other),
                arguments,
                encrypted,
                meta: m,
            } => ResponseItem::ToolSearchCall(ToolSearchCall {
                id: id(item_id),
                call_id: call(call_id),
                status: opt_text(status),
                execution: execution(*e, other),
                arguments: arguments.build(),
                encrypted_content: opt_text(encrypted),
                meta: meta(m),
            }),
            GenItem::ToolSearchOutput {
                id: item_id,
                call_id,
                status,
                execution: (e, other),
                n,
                tools,
                meta: m,
            } => ResponseItem::ToolSearchOutput(ToolSearchOutput {
                id: id(item_id),
                call_id: call(call_id),
                status: status.build(),
                execution: execution(*e, other),
                tools: tools
                    .iter()
                    .take(usize::from(n % 3))
                    .map(GenValue::build)
                    .collect(),
                meta: meta(m),
            }),
            GenItem::WebSearchCall {
                id: item_id,
                status,
                action,
                encrypted,
                meta: m,
            } => ResponseItem::WebSearchCall(WebSearchCall {
                id: id(item_id),
                status: opt_text(status),
                action: action
                    .as_ref()
                    .map(|GenWebAction(kind, a, queries, b)| match kind % 4 {
                        0 => WebSearchAction::Search {
                            query: opt_text(a),
                            queries: queries.as_ref().map(|(n, qs)| {
                                qs.iter()
                                    .take(usize::from(n % 3))
                                    .map(Text::build)
                                    .collect()
                            }),
                        },
                        1 => WebSearchAction::OpenPage { url: opt_text(a) },
                        2 => WebSearchAction::FindInPage {
                            url: opt_text(a),
                            pattern: opt_text(b),
                        },
                        _ => WebSearchAction::Other,
                    }),
                encrypted_content: opt_text(encrypted),
                meta: meta(m),
            }),
            GenItem::ImageGenerationCall {
                id: item_id,
                status,
                revised_prompt,
                result,
                encrypted,
                meta: m,
            } => ResponseItem::ImageGenerationCall(ImageGenerationCall {
                id: id(item_id),
                status: status.build(),
                revised_prompt: opt_text(revised_prompt),
                result: result.build(),
                encrypted_content: opt_text(encrypted),
                meta: meta(m),
            }),
            GenItem::Compaction {
                id: item_id,
                encrypted,
                meta: m,
            } => ResponseItem::Compaction(Compaction {
                id: id(item_id),
                encrypted_content: encrypted.build(),
                meta: meta(m),
            }),
            GenItem::ContextCompaction {
                id: item_id,
                encrypted,
                meta: m,
            } => ResponseItem::ContextCompaction(ContextCompaction {
                id: id(item_id),
                encrypted_content: opt_text(encrypted),
                meta: meta(m),
            }),
            GenItem::AdditionalTools {
                id: item_id,
                role: r,
                n,
                tools,
            } => ResponseItem::AdditionalTools(AdditionalTools {
                id: id(item_id),
                role: role(*r),
                tools: tools
                    .iter()
                    .take(usize::from(n % 3))
                    .map(GenValue::build)
                    .collect(),
            }),
            GenItem::CompactionTrigger => ResponseItem::CompactionTrigger,
            GenItem::Other => ResponseItem::Other,
        }
    }
}

/// The header facts an item implies, worked out from the typed item.
fn expected_header(item: &ResponseItem) -> (Option<Role>, Option<&CallId>, bool, bool, bool) {
    let image_part = |part: &ContentItem| matches!(part, ContentItem::InputImage(_));
    let audio_part = |part: &ContentItem| matches!(part, ContentItem::InputAudio { .. });
    let output_media = |output: &OutputPayload| match output {
        OutputPayload::Text(_) => (false, false),
        OutputPayload::ContentItems(parts) => (
            parts
                .iter()
                .any(|part| matches!(part, OutputContentItem::InputImage(_))),
            parts
                .iter()
                .any(|part| matches!(part, OutputContentItem::InputAudio { .. })),
        ),
    };
    match item {
        ResponseItem::Message(m) => (
            Some(m.role),
            None,
            m.content.iter().any(image_part),
            m.content.iter().any(audio_part),
            false,
        ),
        ResponseItem::AdditionalTools(t) => (Some(t.role), None, false, false, false),
        ResponseItem::LocalShellCall(c) => (None, c.call_id.as_ref(), false, false, false),
        ResponseItem::FunctionCall(c) => (None, Some(&c.call_id), false, false, false),
        ResponseItem::CustomToolCall(c) => (None, Some(&c.call_id), false, false, false),
        ResponseItem::FunctionCallOutput(o) => {
            let (image, audio) = output_media(&o.output);
            (None, o.call_id.as_ref(), image, audio, false)
        }
        ResponseItem::CustomToolCallOutput(o) => {
            let (image, audio) = output_media(&o.output);
            (None, Some(&o.call_id), image, audio, false)
        }
        ResponseItem::ToolSearchCall(c) => (
            None,
            c.call_id.as_ref(),
            false,
            false,
            c.execution == Execution::Server,
        ),
        ResponseItem::ToolSearchOutput(o) => (
            None,
            o.call_id.as_ref(),
            false,
            false,
            o.execution == Execution::Server,
        ),
        ResponseItem::ImageGenerationCall(c) => (None, None, !c.result.is_empty(), false, false),
        _ => (None, None, false, false, false),
    }
}

fuzz_target!(|generated: GenItem| {
    let item = generated.build();
    let json = serde_json::to_string(&item).expect("a typed item serializes");
    let from_item = Entry::from_item(&item);
    let from_json = Entry::from_json(json.as_str());
    let entry = match (&item, from_item, from_json) {
        (ResponseItem::CompactionTrigger, Err(a), Err(b)) => {
            assert!(matches!(a, ItemError::NotStorable { .. }));
            assert!(matches!(b, ItemError::NotStorable { .. }));
            return;
        }
        (ResponseItem::Other, Err(ItemError::NotStorable { .. }), Ok(entry)) => {
            // Its JSON is `{"type":"other"}`: an unknown item, kept as text.
            assert_eq!(entry.kind(), agent_history::ItemKind::Unknown);
            assert_eq!(entry.json(), json);
            return;
        }
        (_, Ok(a), Ok(b)) => {
            assert_eq!(a, b, "from_item and from_json differ for {json}");
            b
        }
        (_, a, b) => panic!("{json}: from_item {a:?}, from_json {b:?}"),
    };
    assert_eq!(entry.json(), json);
    assert_eq!(entry.byte_len(), json.len());

    // The model round-trips.
    let back = entry.to_item().expect("a built entry parses");
    assert_eq!(back, item, "the item changed through {json}");
    let again = serde_json::to_string(&back).expect("serializes");
    assert_eq!(again, json);

    // The header agrees with the item.
    let value: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(Some(entry.kind().as_str()), value["type"].as_str());
    assert_eq!(entry.item_id(), item.id());
    let (role, call_id, image, audio, server) = expected_header(&item);
    assert_eq!(entry.role(), role);
    assert_eq!(entry.call_id(), call_id);
    assert_eq!(entry.flags().has_image(), image);
    assert_eq!(entry.flags().has_audio(), audio);
    assert_eq!(entry.flags().is_server_executed(), server);

    // Recording: filtered, stored as it is, or truncated as it says.
    for policy in [
        TruncationPolicy::Tokens(10_000),
        TruncationPolicy::Bytes(16),
    ] {
        let mut history = History::with_truncation(policy);
        match history.record(&item).expect("records") {
            Recorded::Filtered(_) => {
                assert!(
                    matches!(&item, ResponseItem::Message(m) if m.role == Role::System)
                        || client_tool_search_without_call_id(&item)
                );
                assert!(history.is_empty());
            }
            Recorded::Stored {
                position,
                truncated,
            } => {
                let stored = history.get(position).expect("stored");
                assert_eq!(stored.kind(), entry.kind());
                assert_eq!(stored.call_id(), entry.call_id());
                if truncated {
                    assert_ne!(stored.json(), json);
                } else if stored.json() != json {
                    check_canonicalized(&item, stored);
                } else {
                    assert_eq!(stored, &entry);
                }
            }
            other => panic!("{other:?}"),
        }
        history.assert_invariants();
    }
});
