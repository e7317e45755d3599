//! A model of how Chat Completions and Anthropic Messages pair calls with outputs, written from
//! the rule in docs/providers.md (not from the projection's code), and histories that exercise
//! it: call ids reused across turns, calls left unanswered between answered ones, outputs
//! before their calls, duplicates, parallel calls of one id.

use proptest::prelude::*;
use serde_json::{Value, json};

/// What one generated item, or turn, is (the texts and arguments are numbered when the history
/// is made).
#[derive(Debug, Clone)]
enum Shape {
    User,
    Assistant,
    Reasoning,
    Call(&'static str),
    Output(&'static str),
    /// A user message and a call of this id, answered right after when `true`.
    Turn(&'static str, bool),
}

/// Histories of up to `max` items or turns: messages, reasoning, and function calls and outputs
/// with ids from a pool of three, one of them (`call_0`) drawn most often, alone or as turns (a
/// user message, a call, its output or none). Every call's arguments (`{"n":k}`) and every
/// output's text (`o<k>`) is its own.
pub fn histories(max: usize) -> impl Strategy<Value = Vec<Value>> {
    let id = prop_oneof![3 => Just("call_0"), 1 => Just("c1"), 1 => Just("c2")];
    let shape = prop_oneof![
        3 => Just(Shape::User),
        1 => Just(Shape::Assistant),
        1 => Just(Shape::Reasoning),
        3 => id.clone().prop_map(Shape::Call),
        3 => id.clone().prop_map(Shape::Output),
        3 => (id, prop::bool::weighted(0.7)).prop_map(|(id, answered)| Shape::Turn(id, answered)),
    ];
    prop::collection::vec(shape, 0..max).prop_map(|shapes| {
        let mut items = Vec::new();
        let user = |k: usize| json!({"type":"message","role":"user","content":[{"type":"input_text","text":format!("u{k}")}]});
        let call = |k: usize, id: &str| json!({"type":"function_call","name":"shell","arguments":format!(r#"{{"n":{k}}}"#),"call_id":id});
        let output = |k: usize, id: &str| json!({"type":"function_call_output","call_id":id,"output":format!("o{k}")});
        for shape in shapes {
            match shape {
                Shape::User => items.push(user(items.len())),
                Shape::Assistant => items.push(json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":format!("a{}", items.len())}]})),
                Shape::Reasoning => items.push(json!({"type":"reasoning","summary":[],"encrypted_content":"gAAA"})),
                Shape::Call(id) => items.push(call(items.len(), id)),
                Shape::Output(id) => items.push(output(items.len(), id)),
                Shape::Turn(id, answered) => {
                    items.push(user(items.len()));
                    items.push(call(items.len(), id));
                    if answered {
                        items.push(output(items.len(), id));
                    }
                }
            }
        }
        items
    })
}

/// How an item takes part in pairing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role<'a> {
    Call(&'a str),
    Output(&'a str),
    /// A message: ends a batch.
    Other,
    /// Sends nothing (reasoning): does not end a batch.
    Nothing,
}

fn role(item: &Value) -> Role<'_> {
    let id = || item["call_id"].as_str().unwrap_or("");
    match item["type"].as_str() {
        Some("function_call") => Role::Call(id()),
        Some("function_call_output") => Role::Output(id()),
        Some("reasoning") => Role::Nothing,
        _ => Role::Other,
    }
}

/// For each call of `items` (function calls, messages and reasoning only), in order: its
/// arguments and the text of the result a target sends for it (`aborted` when none).
///
/// The rule: first the Responses repairs (an output whose id no call has is dropped; a call
/// whose id no output has gets an `aborted` output right after it). Then each output answers
/// the earliest unanswered call of its id in the nearest batch (consecutive calls, reasoning
/// and the repairs' `aborted` outputs between them ignored) before it that has calls of its id; an output finding none there
/// answers no call before it, and a call still unanswered takes the first such output of its
/// id before it. A call left with none is answered `aborted`.
pub fn expected_results(items: &[Value]) -> Vec<(String, String)> {
    // The Responses repairs, as (role, arguments or text).
    let has_call = |id: &str| items.iter().any(|item| role(item) == Role::Call(id));
    let has_output = |id: &str| items.iter().any(|item| role(item) == Role::Output(id));
    let mut units: Vec<(Role<'_>, String)> = Vec::new();
    // The units that are the Responses repairs' `aborted` outputs.
    let mut repairs = std::collections::HashSet::new();
    for item in items {
        match role(item) {
            Role::Call(id) => {
                units.push((
                    Role::Call(id),
                    item["arguments"].as_str().unwrap().to_owned(),
                ));
                if !has_output(id) {
                    repairs.insert(units.len());
                    units.push((Role::Output(id), "aborted".to_owned()));
                }
            }
            Role::Output(id) if !has_call(id) => {}
            Role::Output(id) => units.push((
                Role::Output(id),
                item["output"].as_str().unwrap().to_owned(),
            )),
            other => units.push((other, String::new())),
        }
    }
    // The batch of each call: a number that changes when a message or an output comes between
    // (not a repair's output: it stands in for one the call lacks).
    let mut batch_of = vec![usize::MAX; units.len()];
    let mut batch = 0;
    let mut previous_call = false;
    for (i, (role, _)) in units.iter().enumerate() {
        match role {
            Role::Call(_) => {
                if !previous_call {
                    batch += 1;
                }
                batch_of[i] = batch;
                previous_call = true;
            }
            Role::Nothing => {}
            Role::Output(_) if repairs.contains(&i) => {}
            Role::Output(_) | Role::Other => previous_call = false,
        }
    }
    let mut answer: Vec<Option<usize>> = vec![None; units.len()];
    let mut free_outputs = Vec::new();
    for (j, (role, _)) in units.iter().enumerate() {
        let Role::Output(id) = *role else { continue };
        // The nearest batch before it with a call of its id.
        let nearest = (0..j)
            .rev()
            .find(|&i| units[i].0 == Role::Call(id))
            .map(|i| batch_of[i]);
        let call = nearest.and_then(|b| {
            (0..j)
                .find(|&i| batch_of[i] == b && units[i].0 == Role::Call(id) && answer[i].is_none())
        });
        match call {
            Some(call) => {
                answer[call] = Some(j);
            }
            None => free_outputs.push(j),
        }
    }
    for i in 0..units.len() {
        let Role::Call(id) = units[i].0 else { continue };
        if answer[i].is_some() {
            continue;
        }
        if let Some(k) = free_outputs
            .iter()
            .position(|&j| j < i && units[j].0 == Role::Output(id))
        {
            answer[i] = Some(free_outputs.remove(k));
        }
    }
    units
        .iter()
        .enumerate()
        .filter(|(_, (role, _))| matches!(role, Role::Call(_)))
        .map(|(i, (_, arguments))| {
            let result = answer[i].map_or("aborted".to_owned(), |j| units[j].1.clone());
            (arguments.clone(), result)
        })
        .collect()
}

/// Whether `items` hold the shape of issue 13: calls a, b, c of one id, in that order, an
/// output of that id between a and b, none between b and c, and one after c (a call left
/// unanswered between answered ones of its id).
pub fn unanswered_between_answered(items: &[Value]) -> bool {
    let roles: Vec<Role<'_>> = items.iter().map(role).collect();
    roles.iter().enumerate().any(|(b, role)| {
        let Role::Call(id) = *role else { return false };
        let answered_before =
            (0..b).any(|a| roles[a] == Role::Call(id) && roles[a..b].contains(&Role::Output(id)));
        let next = (b + 1..roles.len()).find(|&c| roles[c] == Role::Call(id));
        let unanswered_then_answered = next.is_some_and(|c| {
            !roles[b..c].contains(&Role::Output(id)) && roles[c..].contains(&Role::Output(id))
        });
        answered_before && unanswered_then_answered
    })
}

/// Of `cases` values drawn from `strategy` (deterministically), how many record the shape of
/// [`unanswered_between_answered`], `items` giving the items a value records: for the checks
/// that a generator meets that shape often.
pub fn cases_unanswered_between_answered<S: Strategy>(
    strategy: S,
    cases: usize,
    items: impl Fn(S::Value) -> Vec<Value>,
) -> usize {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..cases)
        .filter(|_| {
            let value = strategy.new_tree(&mut runner).expect("a value").current();
            unanswered_between_answered(&items(value))
        })
        .count()
}
