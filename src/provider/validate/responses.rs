//! The OpenAI Responses API's rules for `input`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{Findings, Rule, Severity, Wording, char_len, json_type, str_field};

/// The longest `call_id` the API takes, in characters.
const MAX_CALL_ID: usize = 64;

/// Which pairing a call or an output belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Family {
    /// `function_call` and `local_shell_call`, answered by `function_call_output`.
    Function,
    /// `custom_tool_call` and `custom_tool_call_output`.
    Custom,
    /// Client-executed `tool_search_call` and `tool_search_output`.
    ToolSearch,
}

/// A call seen in the input.
struct Call<'v> {
    index: usize,
    call_id: &'v str,
    family: Family,
    /// A `local_shell_call` (answered by a `function_call_output`, or a `local_shell_call_output`
    /// naming it).
    local_shell: bool,
    /// The call's item id, which a `local_shell_call_output` may name instead of the call id.
    id: Option<&'v str>,
}

/// An output seen in the input.
struct Output<'v> {
    index: usize,
    call_id: &'v str,
    family: Family,
    /// A `local_shell_call_output`, which names its call by `id`.
    local_shell: bool,
}

/// Checks a Responses body or a bare `input` array.
pub(super) fn check(input: &Value, findings: &mut Findings) {
    let Some(items) = input_items(input, findings) else {
        return;
    };
    let mut pairs = Pairs::default();
    let mut item_ids: HashMap<&str, usize> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("input[{index}]");
        let Some(kind) = item_type(item, index, &at, findings) else {
            continue;
        };
        check_item_id(item, kind, index, &at, &mut item_ids, findings);
        check_call_id_length(item, index, &at, findings);
        match kind {
            "message" => check_message(item, index, &at, findings),
            "reasoning" => check_reasoning(items, index, &at, findings),
            _ => pairs.read(item, kind, index, &at, findings),
        }
    }
    let orphans = !continues_a_stored_response(input);
    check_pairing(items, &pairs.calls, &pairs.outputs, orphans, findings);
}

/// The items to check: a bare array, or the `input` array of a body. `None` when there are none
/// to pair: a string input (one user message), or an input of another shape (a shape finding).
fn input_items<'v>(input: &'v Value, findings: &mut Findings) -> Option<&'v [Value]> {
    match input {
        Value::Array(items) => Some(items),
        Value::Object(body) => match body.get("input") {
            // A string input is one user message: nothing to pair.
            Some(Value::String(_)) => None,
            Some(Value::Array(items)) => Some(items),
            Some(other) => {
                findings.shape(
                    "input",
                    None,
                    format!(
                        "`input` must be a string or an array of items, not {}",
                        json_type(other)
                    ),
                );
                None
            }
            None => {
                findings.shape("input", None, "the request body has no `input`");
                None
            }
        },
        other => {
            findings.shape(
                "input",
                None,
                format!(
                    "expected a request body (an object) or an array of items, not {}",
                    json_type(other)
                ),
            );
            None
        }
    }
}

/// An item's type: its `type`, or `message` for an easy input message that leaves it out.
/// `None` (a shape finding) for an item that is not an object or has no string `type`.
fn item_type<'v>(
    item: &'v Value,
    index: usize,
    at: &str,
    findings: &mut Findings,
) -> Option<&'v str> {
    let Some(object) = item.as_object() else {
        findings.shape(
            at,
            Some(index),
            format!("an item must be an object, not {}", json_type(item)),
        );
        return None;
    };
    match object.get("type") {
        Some(Value::String(kind)) => Some(kind.as_str()),
        // An easy input message may leave out its type.
        None if object.contains_key("role") => Some("message"),
        _ => {
            findings.shape(at, Some(index), "the item has no string `type`");
            None
        }
    }
}

/// [`Rule::ResponsesDuplicateItemId`]: no two items with one `id` (`item_ids` holds the first
/// position of each id seen so far).
fn check_item_id<'v>(
    item: &'v Value,
    kind: &str,
    index: usize,
    at: &str,
    item_ids: &mut HashMap<&'v str, usize>,
    findings: &mut Findings,
) {
    // A local shell call's output names the call by `id`: not an id of its own.
    if kind != "local_shell_call_output"
        && let Some(id) = str_field(item, "id")
        && let Some(first) = item_ids.insert(id, index)
    {
        item_ids.insert(id, first);
        findings.error(
            Rule::ResponsesDuplicateItemId,
            at,
            Some(index),
            vec![id.to_owned()],
            format!(
                "Duplicate item found with id {id}. Remove duplicate items from your input and try again."
            ),
        );
    }
}

/// [`Rule::ResponsesCallIdTooLong`]: a `call_id` of at most [`MAX_CALL_ID`] characters.
fn check_call_id_length(item: &Value, index: usize, at: &str, findings: &mut Findings) {
    if let Some(call_id) = str_field(item, "call_id") {
        let length = char_len(call_id);
        if length > MAX_CALL_ID {
            findings.error(
                Rule::ResponsesCallIdTooLong,
                format!("{at}.call_id"),
                Some(index),
                vec![call_id.to_owned()],
                format!(
                    "Invalid '{at}.call_id': string too long. Expected a string with maximum length {MAX_CALL_ID}, but got a string with length {length} instead."
                ),
            );
        }
    }
}

/// The calls and outputs of the input, for [`check_pairing`], as the items are read.
#[derive(Default)]
struct Pairs<'v> {
    calls: Vec<Call<'v>>,
    outputs: Vec<Output<'v>>,
    /// The first position of each call id, by family.
    call_ids: HashMap<(Family, &'v str), usize>,
}

impl<'v> Pairs<'v> {
    /// Reads the item at `index` of type `kind` if it is a call or an output the client answers
    /// or sends. Other items (server-side calls, references, compactions, unknown types) pair
    /// with nothing the client sends.
    fn read(
        &mut self,
        item: &'v Value,
        kind: &str,
        index: usize,
        at: &str,
        findings: &mut Findings,
    ) {
        match kind {
            "function_call" | "custom_tool_call" | "local_shell_call" | "tool_search_call" => {
                self.read_call(item, kind, index, at, findings);
            }
            "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
                if let Some((family, call_id)) = paired_by_call_id(item, kind, index, at, findings)
                {
                    self.outputs.push(Output {
                        index,
                        call_id,
                        family,
                        local_shell: false,
                    });
                }
            }
            "local_shell_call_output" => match str_field(item, "id") {
                Some(id) => self.outputs.push(Output {
                    index,
                    call_id: id,
                    family: Family::Function,
                    local_shell: true,
                }),
                None => findings.shape(at, Some(index), "a local_shell_call_output has no `id`"),
            },
            _ => {}
        }
    }

    /// A call, and [`Rule::ResponsesDuplicateCallId`]: no two calls of a family with one
    /// `call_id`.
    fn read_call(
        &mut self,
        item: &'v Value,
        kind: &str,
        index: usize,
        at: &str,
        findings: &mut Findings,
    ) {
        let Some((family, call_id)) = paired_by_call_id(item, kind, index, at, findings) else {
            return;
        };
        if let Some(first) = self.call_ids.insert((family, call_id), index) {
            self.call_ids.insert((family, call_id), first);
            findings.push(
                Rule::ResponsesDuplicateCallId,
                Severity::Warning,
                Wording::Unconfirmed,
                at,
                Some(index),
                vec![call_id.to_owned()],
                format!("{kind} with call_id {call_id} repeats the call_id of input[{first}]"),
            );
        }
        self.calls.push(Call {
            index,
            call_id,
            family,
            local_shell: kind == "local_shell_call",
            id: str_field(item, "id"),
        });
    }
}

/// The family and `call_id` of a call or an output of type `kind` that pairs by `call_id`.
/// `None` for a server-executed tool search (the client sends it no output), and for an item
/// without a `call_id` (a shape finding).
fn paired_by_call_id<'v>(
    item: &'v Value,
    kind: &str,
    index: usize,
    at: &str,
    findings: &mut Findings,
) -> Option<(Family, &'v str)> {
    let family = match kind {
        "custom_tool_call" | "custom_tool_call_output" => Family::Custom,
        "tool_search_call" | "tool_search_output" => Family::ToolSearch,
        _ => Family::Function,
    };
    if family == Family::ToolSearch && str_field(item, "execution") != Some("client") {
        // Server-executed searches need no output from the client.
        return None;
    }
    let call_id = required_call_id(item, index, at, kind, findings)?;
    Some((family, call_id))
}

/// Whether the request continues a stored response (or conversation): it may then answer the
/// calls the server keeps, and its outputs need no call in the input.
fn continues_a_stored_response(input: &Value) -> bool {
    input.as_object().is_some_and(|body| {
        ["previous_response_id", "conversation"]
            .iter()
            .any(|key| body.get(*key).is_some_and(|value| !value.is_null()))
    })
}

/// The `call_id` of a call or output that must have one, or a shape finding.
fn required_call_id<'v>(
    item: &'v Value,
    index: usize,
    at: &str,
    kind: &str,
    findings: &mut Findings,
) -> Option<&'v str> {
    let call_id = str_field(item, "call_id");
    if call_id.is_none() {
        findings.shape(at, Some(index), format!("a {kind} has no string `call_id`"));
    }
    call_id
}

/// A message's content: not null; an assistant's parts are output text or refusals.
fn check_message(item: &Value, index: usize, at: &str, findings: &mut Findings) {
    match item.get("content") {
        Some(Value::Null) => findings.push(
            Rule::ResponsesNullContent,
            Severity::Error,
            // Seen only as a gateway's paraphrase.
            Wording::Unconfirmed,
            format!("{at}.content"),
            Some(index),
            Vec::new(),
            format!(
                "Invalid type for '{at}.content': expected one of an array of objects or string, but got null instead."
            ),
        ),
        None => findings.shape(at, Some(index), "a message has no `content`"),
        Some(Value::Array(parts)) if str_field(item, "role") == Some("assistant") => {
            for (part_index, part) in parts.iter().enumerate() {
                let kind = str_field(part, "type").unwrap_or("");
                if kind != "output_text" && kind != "refusal" {
                    findings.error(
                        Rule::ResponsesAssistantContentType,
                        format!("{at}.content[{part_index}]"),
                        Some(index),
                        Vec::new(),
                        format!(
                            "Invalid value: '{kind}'. Supported values are: 'output_text' and 'refusal'."
                        ),
                    );
                }
            }
        }
        Some(_) => {}
    }
    if str_field(item, "role").is_none() {
        findings.shape(at, Some(index), "a message has no string `role`");
    }
}

/// Whether an item of this type is something a model produces (what a reasoning item precedes).
fn model_output(item: &Value) -> bool {
    match str_field(item, "type") {
        Some("message") | None => str_field(item, "role") == Some("assistant"),
        Some(
            "function_call"
            | "custom_tool_call"
            | "local_shell_call"
            | "web_search_call"
            | "tool_search_call"
            | "image_generation_call"
            | "file_search_call"
            | "computer_call"
            | "code_interpreter_call"
            | "shell_call"
            | "apply_patch_call"
            | "mcp_call"
            | "mcp_list_tools"
            | "mcp_approval_request",
        ) => true,
        _ => false,
    }
}

/// A reasoning item must be followed by the item it produced.
fn check_reasoning(items: &[Value], index: usize, at: &str, findings: &mut Findings) {
    if items.get(index + 1).is_some_and(model_output) {
        return;
    }
    let id = str_field(&items[index], "id").unwrap_or("");
    findings.push(
        Rule::ResponsesReasoningWithoutFollowingItem,
        // The API pairs a reasoning item with its following item by identity, which an input
        // does not show; the position is a strong hint only.
        Severity::Warning,
        Wording::Exact,
        at,
        Some(index),
        if id.is_empty() {
            Vec::new()
        } else {
            vec![id.to_owned()]
        },
        format!(
            "Item '{id}' of type 'reasoning' was provided without its required following item."
        ),
    );
}

/// Every call answered, every output called (unless `orphans` is false: the request continues
/// a stored response), and (strict servers) each output right after its calls.
fn check_pairing(
    items: &[Value],
    calls: &[Call],
    outputs: &[Output],
    orphans: bool,
    findings: &mut Findings,
) {
    let answered: HashSet<(Family, &str)> = outputs
        .iter()
        .map(|output| (output.family, output.call_id))
        .collect();
    let mut missing: Vec<(usize, Finding3)> = Vec::new();
    for call in calls {
        let has_output = answered.contains(&(call.family, call.call_id))
            || (call.local_shell
                && call
                    .id
                    .is_some_and(|id| answered.contains(&(Family::Function, id))));
        if has_output {
            continue;
        }
        let id = call.call_id;
        let finding = match (call.family, call.local_shell) {
            (Family::Function, false) => (
                Rule::ResponsesCallWithoutOutput,
                Severity::Error,
                Wording::Exact,
                format!("No tool output found for function call {id}."),
            ),
            // Codex answers a local shell call with a function output; the API's text for a
            // local shell call left unanswered was not seen.
            (Family::Function, true) => (
                Rule::ResponsesCallWithoutOutput,
                Severity::Error,
                Wording::Unconfirmed,
                format!("No tool output found for function call {id}."),
            ),
            (Family::Custom, _) => (
                Rule::ResponsesCustomCallWithoutOutput,
                Severity::Error,
                Wording::Exact,
                format!("No tool output found for custom tool call {id}"),
            ),
            (Family::ToolSearch, _) => (
                Rule::ResponsesToolSearchWithoutOutput,
                Severity::Warning,
                Wording::Unconfirmed,
                format!("No tool_search_output found for client tool_search_call {id}"),
            ),
        };
        missing.push((call.index, finding));
    }
    let called: HashSet<(Family, &str)> = calls
        .iter()
        .flat_map(|call| {
            let by_item_id = call
                .local_shell
                .then_some(call.id)
                .flatten()
                .map(|id| (call.family, id));
            [(call.family, call.call_id)].into_iter().chain(by_item_id)
        })
        .collect();
    for output in outputs.iter().filter(|_| orphans) {
        if called.contains(&(output.family, output.call_id)) {
            continue;
        }
        let id = output.call_id;
        let finding = match output.family {
            Family::Function if !output.local_shell => (
                Rule::ResponsesOutputWithoutCall,
                Severity::Error,
                Wording::Exact,
                format!("No tool call found for function call output with call_id {id}."),
            ),
            Family::Function => (
                Rule::ResponsesOutputWithoutCall,
                Severity::Error,
                Wording::Unconfirmed,
                format!("No local_shell_call found for local_shell_call_output with id {id}."),
            ),
            Family::Custom => (
                Rule::ResponsesCustomOutputWithoutCall,
                Severity::Error,
                Wording::Unconfirmed,
                format!("No tool call found for custom tool call output with call_id {id}."),
            ),
            Family::ToolSearch => continue,
        };
        missing.push((output.index, finding));
    }
    // In input order.
    missing.sort_by_key(|(index, _)| *index);
    for (index, (rule, severity, wording, message)) in missing {
        let ids = vec![ids_of(&items[index])];
        findings.push(
            rule,
            severity,
            wording,
            format!("input[{index}]"),
            Some(index),
            ids,
            message,
        );
    }
    check_adjacency(items, calls, outputs, findings);
}

/// A rule, severity, wording and message, before its position is added.
type Finding3 = (Rule, Severity, Wording, String);

/// The id an item is paired by: its `call_id`, or a local shell output's `id`.
fn ids_of(item: &Value) -> String {
    str_field(item, "call_id")
        .or_else(|| str_field(item, "id"))
        .unwrap_or("")
        .to_owned()
}

/// Whether an item is part of a run of calls and their outputs.
fn in_tool_run(item: &Value) -> bool {
    matches!(
        str_field(item, "type"),
        Some(
            "function_call"
                | "custom_tool_call"
                | "local_shell_call"
                | "function_call_output"
                | "custom_tool_call_output"
                | "local_shell_call_output"
        )
    )
}

/// Strict compatible servers (DeepSeek's Responses implementation) want a call's output in the
/// run of calls and outputs that starts with the call, with nothing else in between.
fn check_adjacency(items: &[Value], calls: &[Call], outputs: &[Output], findings: &mut Findings) {
    let output_at: HashMap<(Family, &str), Vec<usize>> =
        outputs.iter().fold(HashMap::new(), |mut map, output| {
            map.entry((output.family, output.call_id))
                .or_default()
                .push(output.index);
            map
        });
    // Where the run of calls and outputs that goes on after each item ends (one pass from the
    // back, so that a long run is not scanned once per call in it).
    let mut run_end = vec![items.len(); items.len() + 1];
    for index in (0..items.len()).rev() {
        run_end[index] = if in_tool_run(&items[index]) {
            run_end[index + 1]
        } else {
            index
        };
    }
    for call in calls {
        if call.family == Family::ToolSearch {
            continue;
        }
        let Some(at) = output_at.get(&(call.family, call.call_id)) else {
            // Unanswered: reported above.
            continue;
        };
        let run_end = run_end[call.index + 1];
        if at
            .iter()
            .any(|&index| index > call.index && index < run_end)
        {
            continue;
        }
        let id = call.call_id;
        findings.push(
            Rule::ResponsesOutputNotAdjacent,
            Severity::Warning,
            Wording::Exact,
            format!("input[{}]", call.index),
            Some(call.index),
            vec![id.to_owned()],
            format!("No tool output found for tool call {id}"),
        );
    }
}
