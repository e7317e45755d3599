//! The description of a generated history that the proptest strategies and the `Arbitrary`
//! front end share: [`Step`]s, turned into item JSON and history operations ([`HistoryOp`]:
//! records, compactions, rollbacks) by one deterministic builder, so that both front ends
//! produce the same item families and the same broken pairings.

use arbitrary::Arbitrary;
use serde_json::{Value, json};

use super::ops::HistoryOp;
#[cfg(doc)]
use crate::history::History;

/// The call families a generated tool round can use: every kind of call the crate pairs with
/// an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Arbitrary)]
pub enum CallFamily {
    /// `function_call`, answered by `function_call_output`.
    Function,
    /// `local_shell_call`, answered by `function_call_output`.
    LocalShell,
    /// `custom_tool_call`, answered by `custom_tool_call_output`.
    Custom,
    /// A client-executed `tool_search_call`, answered by `tool_search_output`.
    ToolSearchClient,
    /// A server-executed `tool_search_call`, answered by a server `tool_search_output`.
    ToolSearchServer,
}

impl CallFamily {
    /// Every call family, in a stable order.
    pub const ALL: [CallFamily; 5] = [
        CallFamily::Function,
        CallFamily::LocalShell,
        CallFamily::Custom,
        CallFamily::ToolSearchClient,
        CallFamily::ToolSearchServer,
    ];

    /// The `type` of the output that answers this family's calls.
    pub fn output_type(self) -> &'static str {
        match self {
            CallFamily::Function | CallFamily::LocalShell => "function_call_output",
            CallFamily::Custom => "custom_tool_call_output",
            CallFamily::ToolSearchClient | CallFamily::ToolSearchServer => "tool_search_output",
        }
    }

    /// The `type` of this family's calls.
    pub fn call_type(self) -> &'static str {
        match self {
            CallFamily::Function => "function_call",
            CallFamily::LocalShell => "local_shell_call",
            CallFamily::Custom => "custom_tool_call",
            CallFamily::ToolSearchClient | CallFamily::ToolSearchServer => "tool_search_call",
        }
    }

    /// A family whose outputs are of another type than this one's (for wrong-family outputs and
    /// ids colliding across families).
    pub fn other(self) -> CallFamily {
        match self {
            CallFamily::Function | CallFamily::LocalShell => CallFamily::Custom,
            CallFamily::Custom => CallFamily::ToolSearchClient,
            CallFamily::ToolSearchClient | CallFamily::ToolSearchServer => CallFamily::Function,
        }
    }
}

/// How a generated tool round breaks the call/output pairing (or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Arbitrary)]
pub enum Fault {
    /// A call with a fresh id, followed by its output.
    None,
    /// A call whose output never comes.
    MissingOutput,
    /// An output whose call id no call has.
    OrphanOutput,
    /// A call (and its output) reusing the id of an earlier call of the same family.
    DuplicateCallId,
    /// A call with the empty call id `""`, and its output (a client tool search without a call
    /// id is not recorded, so its output becomes an orphan).
    EmptyCallId,
    /// A call (and its output) reusing the id of an earlier call of another family.
    CollidingCallId,
    /// The output first, then its call.
    OutputBeforeCall,
    /// A call answered by an output of another family with the same call id.
    WrongFamilyOutput,
}

impl Fault {
    /// Every broken pairing (all but [`Fault::None`]).
    pub const BROKEN: [Fault; 7] = [
        Fault::MissingOutput,
        Fault::OrphanOutput,
        Fault::DuplicateCallId,
        Fault::EmptyCallId,
        Fault::CollidingCallId,
        Fault::OutputBeforeCall,
        Fault::WrongFamilyOutput,
    ];
}

/// A text from a small pool (the value is taken modulo the pool's size): a plain line, the
/// empty text, a contextual fragment Codex injects, a multi-line text and non-ASCII text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Arbitrary)]
pub struct Text(pub u8);

const TEXTS: &[&str] = &[
    "hello",
    "",
    "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>",
    "first line\nsecond line\n\n  indented \"quoted\" \\ backslash",
    "ünïcødé ✓ 日本語 🦀",
];

impl Text {
    /// The text this value stands for.
    pub fn as_str(self) -> &'static str {
        TEXTS[usize::from(self.0) % TEXTS.len()]
    }
}

/// One step of a generated history: an item (or a tool round of up to two items) to record, or
/// an operation on the history.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Arbitrary)]
pub enum Step {
    /// A user message (a user turn), with an image part when `image`.
    User {
        /// Its text.
        text: Text,
        /// Whether it carries an `input_image` part.
        image: bool,
    },
    /// An assistant message.
    Assistant {
        /// Its text.
        text: Text,
    },
    /// A developer message.
    Developer {
        /// Its text.
        text: Text,
    },
    /// A `system` message (which recording filters out).
    System,
    /// A reasoning item, with encrypted content when `encrypted`.
    Reasoning {
        /// Whether it carries `encrypted_content`.
        encrypted: bool,
    },
    /// An `agent_message` between two agents.
    AgentMessage,
    /// A call of `family` and its output, broken as `fault` says; the output's body has an
    /// image part when `output_image`.
    Tool {
        /// The call family.
        family: CallFamily,
        /// Whether the output carries an `input_image` part.
        output_image: bool,
        /// How the pairing is broken.
        fault: Fault,
    },
    /// A `web_search_call` (server-executed, no output).
    WebSearch,
    /// An `image_generation_call` with its result.
    ImageGeneration,
    /// A compaction item: `compaction` with encrypted content, or `context_compaction`.
    CompactionItem {
        /// `context_compaction` rather than `compaction`.
        context: bool,
    },
    /// An item of a type this crate does not know, with a `call_id` when `call_id`.
    Unknown {
        /// Whether it carries a `call_id` (which must never pair).
        call_id: bool,
    },
    /// A local compaction ([`History::compact`]) with this summary.
    Compact {
        /// The summary.
        summary: Text,
    },
    /// A rollback of this many user turns ([`History::drop_last_n_user_turns`]; taken modulo 4).
    Rollback {
        /// How many user turns.
        turns: u8,
    },
}

/// Turns steps into operations: deterministic, the same steps give the same operations. Call
/// ids are fresh (`call_1`, `call_2`, …) unless a [`Fault`] reuses or empties them.
pub fn build_ops(steps: &[Step]) -> Vec<HistoryOp> {
    let mut builder = Builder::default();
    for step in steps {
        builder.step(step);
    }
    builder.ops
}

#[derive(Default)]
struct Builder {
    ops: Vec<HistoryOp>,
    /// The calls made so far: family and call id.
    calls: Vec<(CallFamily, String)>,
    next: u32,
}

impl Builder {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}_{}", self.next)
    }

    fn record(&mut self, item: Value) {
        self.ops.push(HistoryOp::Record(item.to_string()));
    }

    fn step(&mut self, step: &Step) {
        match *step {
            Step::User { text, image } => {
                let mut content = vec![json!({"type": "input_text", "text": text.as_str()})];
                if image {
                    content.push(image_part());
                }
                self.record(json!({"type": "message", "role": "user", "content": content}));
            }
            Step::Assistant { text } => {
                let id = self.fresh("msg");
                self.record(json!({"type": "message", "id": id, "role": "assistant",
                    "content": [{"type": "output_text", "text": text.as_str()}]}));
            }
            Step::Developer { text } => self.record(json!({"type": "message", "role": "developer",
                "content": [{"type": "input_text", "text": text.as_str()}]})),
            Step::System => self.record(json!({"type": "message", "role": "system",
                "content": [{"type": "input_text", "text": "system prompt"}]})),
            Step::Reasoning { encrypted } => {
                let id = self.fresh("rs");
                let encrypted = if encrypted {
                    json!("gAAAAB")
                } else {
                    Value::Null
                };
                self.record(json!({"type": "reasoning", "id": id,
                    "summary": [{"type": "summary_text", "text": "thinking"}],
                    "content": null, "encrypted_content": encrypted}));
            }
            Step::AgentMessage => self.record(json!({"type": "agent_message", "author": "/root",
                "recipient": "/root/worker", "content": [{"type": "input_text", "text": "go"}]})),
            Step::Tool {
                family,
                output_image,
                fault,
            } => self.tool(family, output_image, fault),
            Step::WebSearch => {
                let id = self.fresh("ws");
                self.record(
                    json!({"type": "web_search_call", "id": id, "status": "completed",
                    "action": {"type": "search", "query": "weather"}}),
                );
            }
            Step::ImageGeneration => {
                let id = self.fresh("ig");
                self.record(json!({"type": "image_generation_call", "id": id,
                    "status": "completed", "revised_prompt": "a blue square", "result": "Zm9v"}));
            }
            Step::CompactionItem { context } => {
                if context {
                    self.record(json!({"type": "context_compaction"}));
                } else {
                    self.record(json!({"type": "compaction", "encrypted_content": "gAAAAC"}));
                }
            }
            Step::Unknown { call_id } => {
                let mut item = json!({"type": "future_item", "payload": {"x": 1}});
                if call_id {
                    // The id of the latest call, if any: an unknown item never pairs.
                    let id = self
                        .calls
                        .last()
                        .map_or_else(|| "call_0".to_owned(), |(_, id)| id.clone());
                    item["call_id"] = id.into();
                }
                self.record(item);
            }
            Step::Compact { summary } => {
                self.ops
                    .push(HistoryOp::Compact(summary.as_str().to_owned()));
            }
            Step::Rollback { turns } => self.ops.push(HistoryOp::Rollback(usize::from(turns % 4))),
        }
    }

    fn tool(&mut self, family: CallFamily, output_image: bool, fault: Fault) {
        let earlier = |same: bool| {
            self.calls
                .iter()
                .rev()
                .find(|(other, _)| (other.output_type() == family.output_type()) == same)
                .map(|(_, id)| id.clone())
        };
        let id = match fault {
            Fault::DuplicateCallId => earlier(true),
            Fault::CollidingCallId => earlier(false),
            Fault::EmptyCallId => Some(String::new()),
            _ => None,
        };
        let id = id.unwrap_or_else(|| self.fresh("call"));
        let call = call_item(family, &id);
        let output = |family| output_item(family, &id, output_image);
        match fault {
            Fault::MissingOutput => self.record(call),
            Fault::OrphanOutput => {
                let orphan = self.fresh("orphan");
                self.record(output_item(family, &orphan, output_image));
                // No call is made, so the id is not remembered.
                return;
            }
            Fault::OutputBeforeCall => {
                self.record(output(family));
                self.record(call);
            }
            Fault::WrongFamilyOutput => {
                self.record(call);
                self.record(output(family.other()));
            }
            Fault::None | Fault::DuplicateCallId | Fault::EmptyCallId | Fault::CollidingCallId => {
                self.record(call);
                self.record(output(family));
            }
        }
        self.calls.push((family, id));
    }
}

fn image_part() -> Value {
    json!({"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"})
}

fn call_item(family: CallFamily, id: &str) -> Value {
    match family {
        CallFamily::Function => json!({"type": "function_call", "name": "shell",
            "arguments": "{\"command\":[\"ls\"]}", "call_id": id}),
        CallFamily::LocalShell => json!({"type": "local_shell_call", "call_id": id,
            "status": "completed", "action": {"type": "exec", "command": ["echo", "hi"],
            "timeout_ms": null, "working_directory": null, "env": null, "user": null}}),
        CallFamily::Custom => json!({"type": "custom_tool_call", "call_id": id,
            "name": "apply_patch", "input": "*** Begin Patch"}),
        CallFamily::ToolSearchClient => json!({"type": "tool_search_call", "call_id": id,
            "status": "completed", "execution": "client", "arguments": {"query": "calendar"}}),
        CallFamily::ToolSearchServer => json!({"type": "tool_search_call", "call_id": id,
            "status": "completed", "execution": "server", "arguments": {"query": "calendar"}}),
    }
}

fn output_item(family: CallFamily, id: &str, image: bool) -> Value {
    let body = if image {
        json!([{"type": "input_text", "text": "see the screenshot"}, image_part()])
    } else {
        json!("ok")
    };
    match family {
        CallFamily::Function | CallFamily::LocalShell => {
            json!({"type": "function_call_output", "call_id": id, "output": body})
        }
        CallFamily::Custom => {
            json!({"type": "custom_tool_call_output", "call_id": id, "output": body})
        }
        CallFamily::ToolSearchClient => json!({"type": "tool_search_output", "call_id": id,
            "status": "completed", "execution": "client", "tools": []}),
        CallFamily::ToolSearchServer => json!({"type": "tool_search_output", "call_id": id,
            "status": "completed", "execution": "server", "tools": []}),
    }
}
