//! The rollout generator: Codex-shaped rollouts written line by line as `serde_json` values, with
//! no help from the library (neither its writer nor its testing kit, which compute the expected
//! history through the code under test).
//!
//! A rollout is a list of [`Step`]s, each written as the lines Codex (or an older Codex, or this
//! library's own `Session`) writes for it. Every line type the reader knows occurs: `session_meta`
//! (a second one, as a fork copies it), `response_item` of every family and of an unknown type,
//! `system` messages, `compaction_trigger` and legacy `ghost_snapshot` items, `turn_context` with
//! and without a `turn_id`, the turn events in both spellings (`task_*` and `turn_*`),
//! `turn_aborted`, turns left open, `user_message` events, `inter_agent_communication` (plain and
//! encrypted), structured inter-agent instructions, `thread_rolled_back` (also across
//! compactions), `compacted` with and without `replacement_history`, outputs long enough to be
//! truncated (strings and arrays with images), orphan outputs, line types resume ignores, a line
//! that is not JSON and a blank line.

use proptest::prelude::*;
use serde_json::{Value, json};

/// The envelope timestamp of every line (the reader does not interpret it).
const TIMESTAMP: &str = "2026-11-03T14:00:00.000Z";
/// The thread id of every generated rollout.
pub const THREAD_ID: &str = "0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90";
/// The summary paragraph that opens a local-compaction summary message (Codex's fixed text).
pub use agent_history::SUMMARY_PREFIX;

/// How a turn's start and end events are spelled.
#[derive(Debug, Clone, Copy)]
pub enum Spelling {
    /// `task_started` / `task_complete`, what Codex writes.
    Task,
    /// `turn_started` / `turn_complete`, the aliases the reader accepts.
    Turn,
}

/// How a turn ends.
#[derive(Debug, Clone, Copy)]
pub enum End {
    /// `task_complete` (or `turn_complete`).
    Complete,
    /// `turn_aborted`.
    Aborted,
    /// No end event: the session stopped inside the turn.
    Open,
}

/// A tool output body.
#[derive(Debug, Clone)]
pub enum Output {
    /// No output line (a call the projection repairs).
    Missing,
    /// A string body of this many repetitions of a short word, multi-byte characters included.
    Text(usize),
    /// An array body: text parts of these lengths (0 is an empty text), an image after the first.
    Parts(Vec<usize>, bool),
}

/// The `call_id` of a client tool search.
#[derive(Debug, Clone, Copy)]
pub enum SearchId {
    /// A call id.
    Present,
    /// `null`.
    Null,
    /// `""`.
    Empty,
    /// No key.
    Absent,
}

/// The arguments of a tool search.
#[derive(Debug, Clone, Copy)]
pub enum SearchArgs {
    /// `{"query": …}`, canonical.
    Canonical,
    /// `{"limit": 3, "extra": true, "query": …}`: reordered and with an unknown key.
    Reordered,
    /// `{"query": …, "limit": null}`.
    NullLimit,
    /// `{"limit": -1, "query": …}`: a limit that is not a whole number from 0.
    BadLimit,
    /// `"not an object"`.
    NotObject,
}

/// One item (or operation) inside a turn.
#[derive(Debug, Clone)]
pub enum Body {
    Assistant,
    Reasoning,
    Function(Output),
    Custom(Output),
    LocalShell(bool),
    ToolSearch {
        client: bool,
        id: SearchId,
        args: SearchArgs,
        output: bool,
    },
    WebSearch,
    ImageGeneration,
    /// An output whose call is nowhere: 0 function, 1 custom, 2 tool search, 3 named function
    /// output without a call id.
    Orphan(u8),
    Unknown,
    System,
    CompactionTrigger,
    Ghost,
    /// A second user message in the turn (the user steered it), with its `user_message` event.
    Steer(bool),
    /// An assistant message holding a structured inter-agent instruction.
    Instruction,
    InterAgent(InterAgent),
    Compact(Compact),
    Rollback(u8),
    Noise(u8),
}

/// An `inter_agent_communication` line.
#[derive(Debug, Clone, Copy)]
pub struct InterAgent {
    pub encrypted: bool,
    pub trigger: bool,
    pub with_id: bool,
}

/// A `compacted` line.
#[derive(Debug, Clone, Copy)]
pub struct Compact {
    /// Without `replacement_history` (an early Codex's compaction).
    pub legacy: bool,
    /// An empty summary `message`.
    pub empty_message: bool,
    /// How many of the latest user texts the replacement history copies.
    pub keep: u8,
    /// The replacement ends with an encrypted `compaction` item instead of a summary message.
    pub remote: bool,
    /// The replacement history holds a legacy `ghost_snapshot` (dropped by the reader).
    pub ghost: bool,
    /// The replacement history starts with a contextual developer message.
    pub context: bool,
}

/// A turn as Codex writes it.
#[derive(Debug, Clone)]
pub struct Turn {
    pub spelling: Spelling,
    /// The turn events carry a `turn_id`.
    pub event_ids: bool,
    /// A `turn_context` line: `None` none, `Some(true)` with a `turn_id`, `Some(false)` without.
    pub context: Option<bool>,
    /// A developer message before the user's: 0 none, 1 only contextual fragments, 2 a
    /// contextual fragment and other text.
    pub developer: u8,
    /// An `<environment_context>` user message before the user's.
    pub environment: bool,
    /// A `user_message` event beside the user's message.
    pub user_event: bool,
    /// An image part in the user's message.
    pub image: bool,
    pub body: Vec<Body>,
    pub end: End,
}

/// One step of a rollout.
#[derive(Debug, Clone)]
pub enum Step {
    Turn(Turn),
    /// A user message and an answer without turn events (an older Codex, or a `Session`).
    Bare(bool),
    InterAgent(InterAgent),
    Compact(Compact),
    Rollback(u8),
    Noise(u8),
}

fn output() -> impl Strategy<Value = Output> {
    prop_oneof![
        1 => Just(Output::Missing),
        3 => (0usize..40).prop_map(Output::Text),
        2 => (prop::collection::vec(0usize..20, 1..4), any::<bool>())
            .prop_map(|(parts, image)| Output::Parts(parts, image)),
    ]
}

fn search_id() -> impl Strategy<Value = SearchId> {
    prop_oneof![
        3 => Just(SearchId::Present),
        1 => Just(SearchId::Null),
        1 => Just(SearchId::Empty),
        1 => Just(SearchId::Absent),
    ]
}

fn search_args() -> impl Strategy<Value = SearchArgs> {
    prop_oneof![
        Just(SearchArgs::Canonical),
        Just(SearchArgs::Reordered),
        Just(SearchArgs::NullLimit),
        Just(SearchArgs::BadLimit),
        Just(SearchArgs::NotObject),
    ]
}

fn inter_agent() -> impl Strategy<Value = InterAgent> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(encrypted, trigger, with_id)| {
        InterAgent {
            encrypted,
            trigger,
            with_id,
        }
    })
}

fn compact() -> impl Strategy<Value = Compact> {
    (
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.2),
        0u8..3,
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(legacy, empty_message, keep, remote, ghost, context)| Compact {
                legacy,
                empty_message,
                keep,
                remote,
                ghost,
                context,
            },
        )
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        4 => Just(Body::Assistant),
        2 => Just(Body::Reasoning),
        4 => output().prop_map(Body::Function),
        2 => output().prop_map(Body::Custom),
        1 => any::<bool>().prop_map(Body::LocalShell),
        2 => (any::<bool>(), search_id(), search_args(), any::<bool>()).prop_map(
            |(client, id, args, output)| Body::ToolSearch { client, id, args, output }
        ),
        1 => Just(Body::WebSearch),
        1 => Just(Body::ImageGeneration),
        1 => (0u8..4).prop_map(Body::Orphan),
        1 => Just(Body::Unknown),
        1 => Just(Body::System),
        1 => Just(Body::CompactionTrigger),
        1 => Just(Body::Ghost),
        1 => any::<bool>().prop_map(Body::Steer),
        1 => Just(Body::Instruction),
        1 => inter_agent().prop_map(Body::InterAgent),
        1 => compact().prop_map(Body::Compact),
        1 => (1u8..3).prop_map(Body::Rollback),
        1 => (0u8..4).prop_map(Body::Noise),
    ]
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        prop_oneof![3 => Just(Spelling::Task), 1 => Just(Spelling::Turn)],
        any::<bool>(),
        prop_oneof![Just(None), Just(Some(true)), Just(Some(false))],
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::collection::vec(body(), 0..5),
        prop_oneof![4 => Just(End::Complete), 1 => Just(End::Aborted), 1 => Just(End::Open)],
    )
        .prop_map(
            |(
                spelling,
                event_ids,
                context,
                developer,
                environment,
                user_event,
                image,
                body,
                end,
            )| {
                Turn {
                    spelling,
                    event_ids,
                    context,
                    developer,
                    environment,
                    user_event,
                    image,
                    body,
                    end,
                }
            },
        )
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => turn().prop_map(Step::Turn),
        1 => any::<bool>().prop_map(Step::Bare),
        1 => inter_agent().prop_map(Step::InterAgent),
        1 => compact().prop_map(Step::Compact),
        2 => (1u8..5).prop_map(Step::Rollback),
        1 => (0u8..4).prop_map(Step::Noise),
    ]
}

/// A generated rollout's steps.
pub fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(step(), 1..10)
}

/// Writes the lines of a rollout.
struct Writer {
    lines: Vec<String>,
    calls: usize,
    turns: usize,
    /// The user texts written so far (what a compaction's replacement history copies).
    user_texts: Vec<String>,
}

fn envelope(kind: &str, payload: Value) -> String {
    json!({"timestamp": TIMESTAMP, "type": kind, "payload": payload}).to_string()
}

fn user_message(text: &str, image: bool) -> Value {
    let mut content = vec![json!({"type": "input_text", "text": text})];
    if image {
        content.push(json!({
            "type": "input_image",
            "image_url": "data:image/png;base64,iVBORw0KGgo=",
            "detail": "high"
        }));
    }
    json!({"type": "message", "role": "user", "content": content})
}

fn message(role: &str, part: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": [{"type": part, "text": text}]})
}

/// Text of `units` repetitions of a word with one- to four-byte characters.
fn long_text(units: usize, salt: usize) -> String {
    let mut text = format!("out{salt}:");
    for unit in 0..units {
        text.push_str(["ab", "é", "😀", "€x", " "][(unit + salt) % 5]);
    }
    text
}

fn output_body(output: &Output, salt: usize) -> Option<Value> {
    match output {
        Output::Missing => None,
        Output::Text(units) => Some(Value::String(long_text(*units, salt))),
        Output::Parts(parts, image) => {
            let mut items = Vec::new();
            for (at, units) in parts.iter().enumerate() {
                let text = if *units == 0 {
                    String::new()
                } else {
                    long_text(*units, salt + at)
                };
                items.push(json!({"type": "input_text", "text": text}));
                if at == 0 && *image {
                    items.push(json!({
                        "type": "input_image",
                        "image_url": "data:image/png;base64,AAAA"
                    }));
                }
            }
            Some(Value::Array(items))
        }
    }
}

impl Writer {
    fn new() -> Self {
        let mut writer = Writer {
            lines: Vec::new(),
            calls: 0,
            turns: 0,
            user_texts: Vec::new(),
        };
        writer.line(
            "session_meta",
            json!({
                "id": THREAD_ID,
                "timestamp": TIMESTAMP,
                "cwd": "/home/dev/shop",
                "originator": "codex_cli_rs",
                "cli_version": "0.144.6",
                "source": "cli",
                "model_provider": "openai",
                "base_instructions": {"text": "You are Codex."}
            }),
        );
        writer
    }

    fn line(&mut self, kind: &str, payload: Value) {
        self.lines.push(envelope(kind, payload));
    }

    fn item(&mut self, item: Value) {
        self.line("response_item", item);
    }

    fn event(&mut self, event: Value) {
        self.line("event_msg", event);
    }

    fn call_id(&mut self) -> String {
        self.calls += 1;
        format!("call_{}", self.calls)
    }

    fn user(&mut self, image: bool, event: bool) {
        let text = format!("question {} of turn {}", self.user_texts.len(), self.turns);
        if event {
            self.event(json!({"type": "user_message", "message": text}));
        }
        self.item(user_message(&text, image));
        self.user_texts.push(text);
    }

    fn step(&mut self, step: &Step) {
        match step {
            Step::Turn(turn) => self.turn(turn),
            Step::Bare(image) => {
                self.user(*image, false);
                self.item(message("assistant", "output_text", "answer"));
            }
            Step::InterAgent(communication) => self.inter_agent(*communication),
            Step::Compact(compact) => self.compact(*compact),
            Step::Rollback(turns) => self.rollback(*turns),
            Step::Noise(kind) => self.noise(*kind),
        }
    }

    fn turn(&mut self, turn: &Turn) {
        self.turns += 1;
        let id = format!("turn-{}", self.turns);
        let (start, complete) = match turn.spelling {
            Spelling::Task => ("task_started", "task_complete"),
            Spelling::Turn => ("turn_started", "turn_complete"),
        };
        let event = |kind: &str| {
            if turn.event_ids {
                json!({"type": kind, "turn_id": id})
            } else {
                json!({"type": kind})
            }
        };
        self.event(event(start));
        if let Some(with_id) = turn.context {
            let mut context = json!({
                "cwd": "/home/dev/shop",
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write"},
                "model": format!("gpt-5-{}", self.turns),
            });
            if with_id {
                context["turn_id"] = json!(id);
            }
            self.line("turn_context", context);
        }
        match turn.developer {
            1 => self.item(message(
                "developer",
                "input_text",
                "<permissions instructions>\nworkspace-write\n</permissions instructions>",
            )),
            2 => self.item(json!({"type": "message", "role": "developer", "content": [
                {"type": "input_text", "text": "<collaboration_mode>pair</collaboration_mode>"},
                {"type": "input_text", "text": "Be brief."}
            ]})),
            _ => {}
        }
        if turn.environment {
            self.item(message(
                "user",
                "input_text",
                "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n</environment_context>",
            ));
        }
        self.user(turn.image, turn.user_event);
        for body in &turn.body {
            self.body(body);
        }
        match turn.end {
            End::Complete => self.event(event(complete)),
            End::Aborted => {
                let mut aborted = event("turn_aborted");
                aborted["reason"] = json!("interrupted");
                self.event(aborted);
            }
            End::Open => {}
        }
    }

    fn body(&mut self, body: &Body) {
        let salt = self.lines.len();
        match body {
            Body::Assistant => self.item(message("assistant", "output_text", "Looking.")),
            Body::Reasoning => self.item(json!({
                "type": "reasoning",
                "id": format!("rs_{salt}"),
                "summary": [{"type": "summary_text", "text": "thinking"}],
                "content": null,
                "encrypted_content": "gAAAAB"
            })),
            Body::Function(output) => {
                let call = self.call_id();
                self.item(json!({
                    "type": "function_call",
                    "name": "shell",
                    "arguments": "{\"command\":[\"ls\"]}",
                    "call_id": call
                }));
                if let Some(body) = output_body(output, salt) {
                    self.item(
                        json!({"type": "function_call_output", "call_id": call, "output": body}),
                    );
                }
            }
            Body::Custom(output) => {
                let call = self.call_id();
                self.item(json!({
                    "type": "custom_tool_call",
                    "call_id": call,
                    "name": "apply_patch",
                    "input": "*** Begin Patch"
                }));
                if let Some(body) = output_body(output, salt) {
                    self.item(
                        json!({"type": "custom_tool_call_output", "call_id": call, "output": body}),
                    );
                }
            }
            Body::LocalShell(output) => {
                let call = self.call_id();
                self.item(json!({
                    "type": "local_shell_call",
                    "call_id": call,
                    "status": "completed",
                    "action": {"type": "exec", "command": ["echo", "hi"], "timeout_ms": null,
                               "working_directory": null, "env": null, "user": null}
                }));
                if *output {
                    self.item(
                        json!({"type": "function_call_output", "call_id": call, "output": "hi"}),
                    );
                }
            }
            Body::ToolSearch {
                client,
                id,
                args,
                output,
            } => {
                let call = self.call_id();
                let arguments = match args {
                    SearchArgs::Canonical => json!({"query": "calendar"}),
                    SearchArgs::Reordered => json!({"limit": 3, "extra": true, "query": "mail"}),
                    SearchArgs::NullLimit => json!({"query": "files", "limit": null}),
                    SearchArgs::BadLimit => json!({"limit": -1, "query": "x"}),
                    SearchArgs::NotObject => json!("not an object"),
                };
                let execution = if *client { "client" } else { "server" };
                let mut item = json!({
                    "type": "tool_search_call",
                    "call_id": call,
                    "status": "completed",
                    "execution": execution,
                    "arguments": arguments
                });
                match id {
                    SearchId::Present => {}
                    SearchId::Null => item["call_id"] = Value::Null,
                    SearchId::Empty => item["call_id"] = json!(""),
                    SearchId::Absent => {
                        item.as_object_mut()
                            .expect("object")
                            .shift_remove("call_id");
                    }
                }
                self.item(item);
                if *output {
                    self.item(json!({
                        "type": "tool_search_output",
                        "call_id": call,
                        "status": "completed",
                        "execution": execution,
                        "tools": []
                    }));
                }
            }
            Body::WebSearch => self.item(json!({
                "type": "web_search_call",
                "id": format!("ws_{salt}"),
                "status": "completed",
                "action": {"type": "search", "query": "weather"}
            })),
            Body::ImageGeneration => self.item(json!({
                "type": "image_generation_call",
                "id": format!("ig_{salt}"),
                "status": "completed",
                "revised_prompt": "A small blue square",
                "result": "Zm9v"
            })),
            Body::Orphan(kind) => {
                let item = match kind {
                    0 => {
                        json!({"type": "function_call_output", "call_id": "call_gone", "output": "late"})
                    }
                    1 => {
                        json!({"type": "custom_tool_call_output", "call_id": "call_gone", "output": "late"})
                    }
                    2 => json!({"type": "tool_search_output", "call_id": "call_gone",
                                "status": "completed", "execution": "client", "tools": []}),
                    _ => {
                        json!({"type": "function_call_output", "name": "external_event", "output": "tick"})
                    }
                };
                self.item(item);
            }
            Body::Unknown => self.item(json!({
                "type": "future_item",
                "id": format!("fi_{salt}"),
                "payload": {"nested": [1, 2.5, "x"]}
            })),
            Body::System => self.item(message("system", "input_text", "system prompt")),
            Body::CompactionTrigger => self.item(json!({"type": "compaction_trigger"})),
            Body::Ghost => {
                self.item(json!({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}))
            }
            Body::Steer(event) => self.user(false, *event),
            Body::Instruction => {
                let instruction = json!({
                    "author": "/root",
                    "recipient": "/root/worker",
                    "content": format!("do step {salt}"),
                    "trigger_turn": true
                });
                self.item(message(
                    "assistant",
                    "output_text",
                    &instruction.to_string(),
                ));
            }
            Body::InterAgent(communication) => self.inter_agent(*communication),
            Body::Compact(compact) => self.compact(*compact),
            Body::Rollback(turns) => self.rollback(*turns),
            Body::Noise(kind) => self.noise(*kind),
        }
    }

    fn inter_agent(&mut self, communication: InterAgent) {
        let salt = self.lines.len();
        let mut payload = json!({
            "author": "/root/worker",
            "recipient": "/root",
            "other_recipients": ["/root/other"],
            "content": format!("report {salt}"),
            "trigger_turn": communication.trigger
        });
        if communication.with_id {
            payload["id"] = json!(format!("amsg_{salt}"));
        }
        if communication.encrypted {
            payload["content"] = json!("");
            payload["encrypted_content"] = json!("gAAAAsecret");
        }
        self.line("inter_agent_communication", payload);
    }

    fn compact(&mut self, compact: Compact) {
        // The summary text, as Codex writes it in the line's `message`: the fixed paragraph, a
        // newline, the model's summary.
        let summary = if compact.empty_message {
            String::new()
        } else {
            format!("{SUMMARY_PREFIX}\nsummary after {} lines", self.lines.len())
        };
        let mut payload = json!({"message": summary});
        if !compact.legacy {
            let mut replacement = Vec::new();
            if compact.context {
                replacement.push(message(
                    "developer",
                    "input_text",
                    "<permissions instructions>\nread-only\n</permissions instructions>",
                ));
            }
            let keep = usize::from(compact.keep).min(self.user_texts.len());
            for text in &self.user_texts[self.user_texts.len() - keep..] {
                replacement.push(message("user", "input_text", text));
            }
            if compact.ghost {
                replacement.push(json!({"type": "ghost_snapshot", "ghost_commit": {"id": "old"}}));
            }
            if compact.remote {
                replacement
                    .push(json!({"type": "compaction", "encrypted_content": "ENCRYPTED_SUMMARY"}));
            } else {
                replacement.push(message("user", "input_text", &summary));
            }
            payload["replacement_history"] = Value::Array(replacement);
        }
        self.line("compacted", payload);
        self.event(json!({"type": "context_compacted"}));
    }

    fn rollback(&mut self, turns: u8) {
        self.event(json!({"type": "thread_rolled_back", "num_turns": turns}));
    }

    fn noise(&mut self, kind: u8) {
        match kind {
            0 => self.line(
                "token_usage_record",
                json!({"total_token_usage": {"input_tokens": 10}}),
            ),
            1 => self.event(json!({"type": "agent_message", "message": "Looking."})),
            2 => self.lines.push("{not json".to_owned()),
            _ => {
                // A fork's copy of its parent's `session_meta`, and a blank line.
                self.line(
                    "session_meta",
                    json!({"id": "7d1b2c3e-0000-4000-8000-000000000001", "timestamp": TIMESTAMP,
                           "cwd": "/", "originator": "x", "cli_version": "0", "source": "cli"}),
                );
                self.lines.push(String::new());
            }
        }
    }
}

/// The lines of the rollout the steps describe (without their `\n`).
pub fn lines(steps: &[Step]) -> Vec<String> {
    let mut writer = Writer::new();
    for step in steps {
        writer.step(step);
    }
    writer.lines
}

/// The rollout's bytes: every line followed by `\n`.
pub fn text(lines: &[String]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}
