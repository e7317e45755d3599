//! The Anthropic Messages built from the steps pairing ordered. Blocks of one role merge into
//! one message, and each call batch's results open the next user message. Call ids are sent as
//! `^[a-zA-Z0-9_-]+$` and unique. A user message comes first when the history starts with the
//! assistant, and the final assistant text is trimmed.

use std::sync::Arc;

use serde_json::Value;

use crate::projection::{ABORTED_OUTPUT, Location, ProjectionOptions};

use super::super::assembly::{
    BuildStep, Finish, Format, Fragment, Lead, NO_LEAD, Out, Rendered, Source,
};
use super::super::options::TargetOptions;
use super::super::report::{TargetRepair, TargetRepairKind};
use std::io::Write;

use crate::request::{ModelRequest, RequestError};

use super::super::assembly::Messages;
use super::super::tools::DroppedTool;
use super::ANTHROPIC_LEADING_USER_TEXT;
use super::render::{AFTER_ID, AnthropicItem, Sent, TEXT, TOOL_RESULT_HEAD, TOOL_USE_HEAD};
use super::request::{anthropic_tools, write_body};

/// The Anthropic Messages target.
#[derive(Debug)]
pub(crate) struct Anthropic;

/// The static texts of [`Anthropic::PIECES`], by index.
const COMMA: u8 = 1;
const CLOSE_MESSAGE: u8 = 2;
const OPEN_USER: u8 = 3;
const OPEN_ASSISTANT: u8 = 4;

/// A message role of the Messages API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

/// A block waiting for the next user message: one fragment, or two (a mapped id, then the rest
/// of the block).
type Block = (Fragment<AnthropicItem>, Option<Fragment<AnthropicItem>>);

/// The last block written, when it is an assistant text: the one the final trim may replace.
#[derive(Debug, Clone)]
struct LastText {
    lead: Lead,
    item: Arc<AnthropicItem>,
    block: u32,
    at: Location,
}

/// The builder's state between steps.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// The role of the open message (`None`: no message yet).
    role: Option<Role>,
    /// The results of the open call batch, for the next user message.
    results: Vec<Block>,
    /// How many messages were started.
    messages: usize,
    /// The first message's role and where its first block comes from.
    first: Option<(Role, Location)>,
    last_text: Option<LastText>,
}

impl State {
    /// The lead of the next block of `role`, merged into the open message when it has that
    /// role, else opening a message.
    fn lead(&mut self, role: Role, at: &Location) -> Lead {
        if self.role == Some(role) {
            return [COMMA, 0, 0];
        }
        let close = if self.role.is_some() {
            CLOSE_MESSAGE
        } else {
            0
        };
        let comma = if self.messages > 0 { COMMA } else { 0 };
        let open = match role {
            Role::User => OPEN_USER,
            Role::Assistant => OPEN_ASSISTANT,
        };
        self.role = Some(role);
        self.messages += 1;
        self.first.get_or_insert_with(|| (role, at.clone()));
        [close, comma, open]
    }

    /// Sends the open batch's results as (the start of) a user message.
    fn close(&mut self, out: &mut Vec<Fragment<AnthropicItem>>, at: &Location) {
        for (first, rest) in std::mem::take(&mut self.results) {
            let lead = self.lead(Role::User, at);
            out.push(first.with_lead(lead));
            out.extend(rest);
            self.last_text = None;
        }
    }
}

impl Format for Anthropic {
    type Item = AnthropicItem;
    type State = State;
    type Key = ProjectionOptions;

    const PIECES: &'static [&'static str] = &[
        "",
        ",",
        "]}",
        r#"{"role":"user","content":["#,
        r#"{"role":"assistant","content":["#,
    ];
    const REPAIR_ORDER: [Source; 4] = [
        Source::Notes,
        Source::Pairing,
        Source::Naming,
        Source::Building,
    ];
    const FIRST_CANDIDATE: u32 = 0;

    fn key(options: &TargetOptions) -> ProjectionOptions {
        options.projection
    }

    /// An id outside `^[a-zA-Z0-9_-]+$`, or one an earlier call used.
    fn needs_new_id(id: &str, nth: u32) -> bool {
        nth > 1 || !is_valid_tool_id(id)
    }

    fn resume_key(_id: &str) -> Option<&str> {
        None
    }

    /// [`mapped_tool_id`] of the id, keyed by the id (`id#n` for the n-th use, n ≥ 2), with 8,
    /// 16, 32 then 64 hex digits, then the 64-digit form with `_2`, `_3`, ….
    fn candidate(id: &str, nth: u32, k: u32) -> String {
        let key = if nth <= 1 {
            id.to_owned()
        } else {
            format!("{id}#{nth}")
        };
        match k {
            0..4 => mapped_tool_id(id, &key, 8 << k),
            _ => format!("{}_{}", mapped_tool_id(id, &key, 64), k - 2),
        }
    }

    /// Non-empty `system` texts, hoisted into the top-level `system`.
    fn hoisted(item: &AnthropicItem) -> bool {
        matches!(&item.piece, Sent::System(text) if !text.trim().is_empty())
    }

    fn build(
        _key: &ProjectionOptions,
        state: &mut State,
        step: BuildStep<'_, AnthropicItem>,
        out: &mut Out<'_, AnthropicItem>,
    ) {
        let mut closed = Vec::new();
        match step {
            BuildStep::Synthetic { id } => {
                let block = format!(
                    r#"{TOOL_RESULT_HEAD}{},"content":{},"is_error":true}}"#,
                    Value::from(id),
                    Value::from(ABORTED_OUTPUT)
                );
                state.results.push((Fragment::made(NO_LEAD, block), None));
            }
            BuildStep::Output { unit, id, renamed } => {
                let block = if unit.synthetic {
                    // The Responses projection's `aborted` output: sent as an error.
                    let after = unit.rendered.part(AFTER_ID);
                    let after = after.strip_suffix('}').unwrap_or(after);
                    let text = format!(
                        r#"{TOOL_RESULT_HEAD}{}{after},"is_error":true}}"#,
                        Value::from(id)
                    );
                    (Fragment::made(NO_LEAD, text), None)
                } else if renamed {
                    let head = format!("{TOOL_RESULT_HEAD}{}", Value::from(id));
                    (
                        Fragment::made(NO_LEAD, head),
                        Some(Fragment::part(NO_LEAD, AFTER_ID, &unit.rendered)),
                    )
                } else {
                    (Fragment::part(NO_LEAD, TEXT, &unit.rendered), None)
                };
                state.results.push(block);
            }
            BuildStep::Call { unit, id, renamed } => {
                if !state.results.is_empty() {
                    state.close(&mut closed, &unit.at);
                }
                let lead = state.lead(Role::Assistant, &unit.at);
                if renamed {
                    closed.push(Fragment::made(
                        lead,
                        format!("{TOOL_USE_HEAD}{}", Value::from(id)),
                    ));
                    closed.push(Fragment::part(NO_LEAD, AFTER_ID, &unit.rendered));
                } else {
                    closed.push(Fragment::part(lead, TEXT, &unit.rendered));
                }
                state.last_text = None;
            }
            BuildStep::Other(unit) => {
                let (role, blocks) = match &unit.rendered.piece {
                    Sent::User(blocks) => (Role::User, blocks),
                    Sent::Assistant(blocks) => (Role::Assistant, blocks),
                    // Pairing gives calls and outputs their own steps; the rest sends nothing.
                    _ => return,
                };
                state.close(&mut closed, &unit.at);
                for b in 0..blocks.len() {
                    let lead = state.lead(role, &unit.at);
                    let block = u32::try_from(b).unwrap_or(u32::MAX);
                    closed.push(Fragment::part(lead, block, &unit.rendered));
                    state.last_text = (role == Role::Assistant).then(|| LastText {
                        lead,
                        item: Arc::clone(&unit.rendered),
                        block,
                        at: unit.at.clone(),
                    });
                }
            }
        }
        for fragment in closed {
            out.push(fragment);
        }
    }

    const SENDS_REASONING_EFFORT: bool = false;

    fn tools(specs: &[Value]) -> (Vec<Value>, Vec<DroppedTool>) {
        let tools = anthropic_tools(specs);
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

    fn finish(_key: &ProjectionOptions, state: &State) -> Finish<AnthropicItem> {
        let mut state = state.clone();
        let mut finish = Finish::default();
        let at = state
            .first
            .as_ref()
            .map(|(_, at)| at.clone())
            .unwrap_or_else(|| Location {
                position: 0,
                item_kind: crate::item::ItemKind::Unknown,
                call_id: None,
            });
        state.close(&mut finish.after, &at);
        if let Some((Role::Assistant, at)) = &state.first {
            finish.before.push(Fragment::made(
                NO_LEAD,
                format!(
                    r#"{{"role":"user","content":[{}]}},"#,
                    serde_json::json!({"type": "text", "text": ANTHROPIC_LEADING_USER_TEXT})
                ),
            ));
            finish.messages += 1;
            finish
                .repairs
                .push(repair(TargetRepairKind::LeadingUserMessage, at));
        }
        if let Some(last) = state.last_text.as_ref()
            && let Some(trimmed) = trimmed(last.item.part(last.block))
        {
            finish.last = Some(Fragment::made(last.lead, trimmed));
            finish
                .repairs
                .push(repair(TargetRepairKind::TrimmedFinalWhitespace, &last.at));
        }
        if state.role.is_some() {
            finish.after.push(Fragment::Lead([CLOSE_MESSAGE, 0, 0]));
        }
        finish.messages += state.messages;
        finish
    }
}

/// The text block `block` with the white space at the end of its text trimmed, or `None` when
/// it has none to trim.
fn trimmed(block: &str) -> Option<String> {
    let mut value = serde_json::from_str::<Value>(block).ok()?;
    let text = value.get("text").and_then(Value::as_str)?;
    if text.trim_end().len() == text.len() {
        return None;
    }
    // Rendering skips white-space-only texts, so something is left.
    value["text"] = Value::String(text.trim_end().to_owned());
    Some(value.to_string())
}

fn repair(kind: TargetRepairKind, at: &Location) -> TargetRepair {
    TargetRepair {
        kind,
        at: at.clone(),
    }
}

/// Whether `id` matches `^[a-zA-Z0-9_-]+$`.
pub(crate) fn is_valid_tool_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// `id` with every character outside `[a-zA-Z0-9_-]` replaced by `_`, then `_` and the first
/// `hash_len` hex digits of the BLAKE3 hash of `key`.
fn mapped_tool_id(id: &str, key: &str, hash_len: usize) -> String {
    let mut mapped: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    mapped.push('_');
    mapped.push_str(&blake3::hash(key.as_bytes()).to_hex()[..hash_len]);
    mapped
}
