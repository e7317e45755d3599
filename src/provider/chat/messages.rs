//! The Chat Completions messages built from the steps pairing ordered. Each item is a message,
//! but an assistant message takes the calls that follow it into its `tool_calls`, and
//! consecutive calls share one array. The images of a batch's tool outputs go in a `user`
//! message after its tool messages. Call ids empty or used before are sent as `<id>_<n>`.

use std::sync::Arc;

use serde_json::Value;

use crate::projection::ABORTED_OUTPUT;

use super::super::assembly::{BuildStep, Finish, Format, Fragment, Lead, Out, Rendered, Source};
use super::super::options::{DeveloperRole, TargetOptions};
use super::super::report::TargetRepairKind;
use std::io::Write;

use crate::request::{ModelRequest, RequestError};

use super::super::assembly::Messages;
use super::super::tools::DroppedTool;
use super::convert::{AFTER_ID, ChatItem, IMAGES, MessageRole, Piece, TEXT};
use super::request::{chat_tools, write_body};

/// The Chat Completions target.
#[derive(Debug)]
pub(crate) struct Chat;

/// The static texts of [`Chat::PIECES`], by index.
const COMMA: u8 = 1;
const CLOSE_BRACE: u8 = 2;
const CLOSE_ARRAY: u8 = 3;
const OPEN_SYSTEM: u8 = 4;
const OPEN_DEVELOPER: u8 = 5;
const OPEN_USER: u8 = 6;
const OPEN_ASSISTANT: u8 = 7;
const OPEN_CALLS: u8 = 8;
const ADD_CALLS: u8 = 9;
const OPEN_TOOL: u8 = 10;
const OPEN_USER_PARTS: u8 = 11;

/// What is still open after a step: the message the next fragment must close first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Open {
    /// Nothing (the start, or a whole `tool` message).
    #[default]
    Closed,
    /// A message whose content was written: `}` closes it.
    Message,
    /// An assistant message whose content was written: calls may join it, `}` closes it.
    Assistant,
    /// A `tool_calls` array (or a user message's parts): `]}` closes it.
    Array,
}

/// The builder's state between steps.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    open: Open,
    /// Whether the open array is an assistant message's `tool_calls` (calls may join it).
    calls: bool,
    /// The tool outputs of the current batch whose images wait for the batch's last tool message.
    images: Vec<Arc<ChatItem>>,
    /// How many messages were started.
    messages: usize,
}

impl State {
    /// The lead of a new message opened by `opener`: the open one closed, a comma after the
    /// messages before.
    fn new_message(&mut self, opener: u8) -> Lead {
        let close = match self.open {
            Open::Closed => 0,
            Open::Message | Open::Assistant => CLOSE_BRACE,
            Open::Array => CLOSE_ARRAY,
        };
        let comma = if self.messages > 0 { COMMA } else { 0 };
        self.messages += 1;
        self.calls = false;
        [close, comma, opener]
    }

    /// The `user` message with the images of the batch's tool outputs, when there are any.
    fn flush_images(&mut self) -> Vec<Fragment<ChatItem>> {
        if self.images.is_empty() {
            return Vec::new();
        }
        let lead = self.new_message(OPEN_USER_PARTS);
        let images = std::mem::take(&mut self.images);
        self.open = Open::Array;
        images
            .iter()
            .enumerate()
            .map(|(n, item)| {
                let lead = if n == 0 { lead } else { [COMMA, 0, 0] };
                Fragment::part(lead, IMAGES, item)
            })
            .collect()
    }
}

impl Format for Chat {
    type Item = ChatItem;
    type State = State;
    type Key = TargetOptions;

    const PIECES: &'static [&'static str] = &[
        "",
        ",",
        "}",
        "]}",
        r#"{"role":"system","content":"#,
        r#"{"role":"developer","content":"#,
        r#"{"role":"user","content":"#,
        r#"{"role":"assistant","content":"#,
        r#"{"role":"assistant","content":null,"tool_calls":["#,
        r#","tool_calls":["#,
        r#"{"role":"tool","tool_call_id":"#,
        r#"{"role":"user","content":["#,
    ];
    const REPAIR_ORDER: [Source; 4] = [
        Source::Notes,
        Source::Building,
        Source::Naming,
        Source::Pairing,
    ];
    const FIRST_CANDIDATE: u32 = 2;

    fn key(options: &TargetOptions) -> TargetOptions {
        *options
    }

    /// An empty id, or one an earlier call used.
    fn needs_new_id(id: &str, nth: u32) -> bool {
        id.is_empty() || nth > 1
    }

    /// The names `<id>_<n>` (`call_<n>` for an empty id) continue where the last search for the
    /// same base stopped: every name it passed is still taken.
    fn resume_key(id: &str) -> Option<&str> {
        Some(if id.is_empty() { "call" } else { id })
    }

    fn candidate(id: &str, _nth: u32, k: u32) -> String {
        let base = if id.is_empty() { "call" } else { id };
        format!("{base}_{k}")
    }

    fn hoisted(_item: &ChatItem) -> bool {
        false
    }

    fn build(
        key: &TargetOptions,
        state: &mut State,
        step: BuildStep<'_, ChatItem>,
        out: &mut Out<'_, ChatItem>,
    ) {
        if !matches!(step, BuildStep::Output { .. } | BuildStep::Synthetic { .. }) {
            for fragment in state.flush_images() {
                out.push(fragment);
            }
        }
        match step {
            BuildStep::Call { unit, id, renamed } => {
                let lead = match (state.open, state.calls) {
                    (Open::Assistant, _) => [ADD_CALLS, 0, 0],
                    (Open::Array, true) => [COMMA, 0, 0],
                    _ => state.new_message(OPEN_CALLS),
                };
                state.open = Open::Array;
                state.calls = true;
                if renamed {
                    out.push(Fragment::made(
                        lead,
                        format!(r#"{{"id":{}"#, Value::from(id)),
                    ));
                    out.push(Fragment::part([0; 3], AFTER_ID, &unit.rendered));
                } else {
                    out.push(Fragment::part(lead, TEXT, &unit.rendered));
                }
            }
            BuildStep::Output { unit, id, renamed } => {
                if renamed {
                    let lead = state.new_message(OPEN_TOOL);
                    out.push(Fragment::made(lead, Value::from(id).to_string()));
                    out.push(Fragment::part([0; 3], AFTER_ID, &unit.rendered));
                } else {
                    let lead = state.new_message(0);
                    out.push(Fragment::part(lead, TEXT, &unit.rendered));
                }
                state.open = Open::Closed;
                if !unit.rendered.part(IMAGES).is_empty() {
                    state.images.push(Arc::clone(&unit.rendered));
                }
            }
            BuildStep::Synthetic { id, .. } => {
                let lead = state.new_message(OPEN_TOOL);
                state.open = Open::Closed;
                out.push(Fragment::made(
                    lead,
                    format!(
                        r#"{},"content":{}}}"#,
                        Value::from(id),
                        Value::from(ABORTED_OUTPUT)
                    ),
                ));
            }
            BuildStep::Other(unit) => match &unit.rendered.piece {
                Piece::Message { role, .. } => {
                    let opener = match (role, key.developer_role) {
                        (MessageRole::System, _) => OPEN_SYSTEM,
                        (MessageRole::Developer, DeveloperRole::System) => {
                            out.repair(
                                TargetRepairKind::MappedRole {
                                    from: "developer".into(),
                                    to: "system".into(),
                                },
                                &unit.at,
                            );
                            OPEN_SYSTEM
                        }
                        (MessageRole::Developer, DeveloperRole::Developer) => OPEN_DEVELOPER,
                        (MessageRole::User, _) => OPEN_USER,
                    };
                    let lead = state.new_message(opener);
                    state.open = Open::Message;
                    out.push(Fragment::part(lead, TEXT, &unit.rendered));
                }
                Piece::Assistant { .. } => {
                    let lead = state.new_message(OPEN_ASSISTANT);
                    state.open = Open::Assistant;
                    out.push(Fragment::part(lead, TEXT, &unit.rendered));
                }
                // Pairing gives calls and outputs their own steps; nothing else is sent.
                Piece::Call { .. } | Piece::Output { .. } | Piece::Nothing => {}
            },
        }
    }

    const SENDS_REASONING_EFFORT: bool = true;

    fn tools(specs: &[Value]) -> (Vec<Value>, Vec<DroppedTool>) {
        let tools = chat_tools(specs);
        (tools.tools, tools.dropped)
    }

    fn write_body<W: Write + ?Sized>(
        request: &ModelRequest,
        messages: &Messages<Self>,
        tools: &str,
        out: &mut W,
    ) -> Result<(), RequestError> {
        write_body(request, messages, tools, out)
    }

    fn finish(_key: &TargetOptions, state: &State) -> Finish<ChatItem> {
        let mut state = state.clone();
        let mut after = state.flush_images();
        match state.open {
            Open::Closed => {}
            Open::Message | Open::Assistant => after.push(Fragment::Lead([CLOSE_BRACE, 0, 0])),
            Open::Array => after.push(Fragment::Lead([CLOSE_ARRAY, 0, 0])),
        }
        Finish {
            after,
            messages: state.messages,
            ..Finish::default()
        }
    }
}
