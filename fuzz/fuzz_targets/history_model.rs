//! History operations against a plain model: a `Vec` of item JSON texts with the documented
//! semantics, in several forks at once.
//!
//! Arbitrary sequences of the testing kit's history operations (`ForkOp`): recording (as JSON,
//! typed, and as built entries), rollback (`drop_last_n_user_turns`, and forks cut
//! `before_user_turn`), local compaction, `replace` (keeping, reordering and repeating entries,
//! adding one), `remove_first_item`, projecting, setting the reference context item and forking
//! are applied to a `History` and to the model. After every step, in every fork: the entries'
//! texts match the model's in order (recording appends exactly the item, or filters it, or
//! truncates a tool output it says it truncated), the version and the reference context item
//! match the documented rules (a rollback returns across compactions to the state before them),
//! each entry's user-turn flag matches the class the generator gave
//! it, `user_messages` matches the model's real user messages, histories compare equal exactly
//! when their models do (so a fork is unaffected by operations on the one it came from), and
//! `assert_invariants` holds.
#![no_main]

use agent_history::testing::{ForkOp, HistoryOp, place_fork};
use agent_history::{
    COMPACT_USER_MESSAGE_TOKENS, EMPTY_SUMMARY, Entry, FilterReason, History, ItemError, Message,
    Recorded, ResponseItem, Role, TruncationPolicy, approx_token_count, truncate_text,
};
use agent_history_fuzz::items::{GenItem, Generated, TurnClass, is_real_user_input, message_class};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// How a generated item is recorded.
#[derive(Arbitrary, Debug)]
enum Via {
    /// `record_json`.
    Json,
    /// `record` of the typed item.
    Typed,
    /// `record_entry` of the built entry.
    Entry,
}

/// An item to record, and how: the item of the testing kit's history operations here.
#[derive(Arbitrary, Debug)]
struct Recording {
    via: Via,
    item: GenItem,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// Record with a small truncation policy, so that most tool outputs are cut.
    small_truncation: bool,
    ops: Vec<ForkOp<Recording>>,
}

/// The most forks kept at once.
const MAX_FORKS: usize = 8;

/// One item of the model.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    json: String,
    class: TurnClass,
    /// The text parts of a user message.
    user_texts: Option<Vec<String>>,
    item_type: String,
    call_id: Option<String>,
}

impl Item {
    fn new(json: String, class: TurnClass, user_texts: Option<Vec<String>>) -> Item {
        let value: Value = serde_json::from_str(&json).expect("item JSON");
        Item {
            item_type: value["type"].as_str().expect("a type").to_owned(),
            call_id: value
                .get("call_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            json,
            class,
            user_texts,
        }
    }

    fn generated(generated: &Generated, json: String) -> Item {
        Item::new(json, generated.class, generated.user_texts.clone())
    }

    /// A one-part user message, as compaction writes them.
    fn user(text: &str) -> Item {
        let message = ResponseItem::Message(Message::text(Role::User, text));
        let json = serde_json::to_string(&message).expect("serializes");
        Item::new(
            json,
            message_class("user", &[text.to_owned()]),
            Some(vec![text.to_owned()]),
        )
    }
}

#[derive(Debug, Clone)]
struct Model {
    items: Vec<Item>,
    /// Per item: recorded into this state (not put there by a compaction or replace, whose
    /// user messages stand for turns of an earlier state).
    own: Vec<bool>,
    version: u64,
    reference: Option<Value>,
    /// The states each compaction or replace replaced, oldest first: a rollback returns to them.
    earlier: Vec<(Vec<Item>, Vec<bool>)>,
}

impl PartialEq for Model {
    /// As `History`'s equality: the items, the version and the reference, not the earlier states.
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
            && self.version == other.version
            && self.reference == other.reference
    }
}

impl Model {
    /// Marks the items recorded since the last call as the state's own.
    fn mark_recorded(&mut self) {
        self.own.resize(self.items.len(), true);
    }

    /// A compaction or replace: the state before is kept; none of the new items is a turn.
    fn replace_items(&mut self, items: Vec<Item>) {
        let own = vec![false; items.len()];
        let items = std::mem::replace(&mut self.items, items);
        let before_own = std::mem::replace(&mut self.own, own);
        self.earlier.push((items, before_own));
        self.version += 1;
    }

    /// Every turn a rollback can undo, oldest first: (state, position), the current state being
    /// `earlier.len()`.
    fn turns(&self) -> Vec<(usize, usize)> {
        let states = self
            .earlier
            .iter()
            .map(|(items, own)| (items, own))
            .chain(std::iter::once((&self.items, &self.own)));
        let mut turns = Vec::new();
        for (state, (items, own)) in states.enumerate() {
            for (position, item) in items.iter().enumerate() {
                if own[position] && item.class == TurnClass::Boundary {
                    turns.push((state, position));
                }
            }
        }
        turns
    }

    /// Rolls back `n` user turns: back to before the n-th last turn recorded into any reachable
    /// state (all of them when there are fewer); a turn of an earlier state makes that state the
    /// current one and clears the reference. Then cut there, trim the context updates right above
    /// the cut (not above the state's first boundary), clear the reference when one of them was
    /// mixed; bump the version, even with no turn.
    fn rollback(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.version += 1;
        let turns = self.turns();
        if turns.is_empty() {
            return;
        }
        let (state, mut cut) = turns[turns.len() - n.min(turns.len())];
        if state < self.earlier.len() {
            let (items, own) = self.earlier[state].clone();
            self.items = items;
            self.own = own;
            self.earlier.truncate(state);
            self.reference = None;
        }
        let first = (0..self.items.len())
            .find(|&i| self.items[i].class == TurnClass::Boundary)
            .expect("the cut is a boundary");
        while cut > first {
            match self.items[cut - 1].class {
                TurnClass::Context { mixed } => {
                    if mixed {
                        self.reference = None;
                    }
                    cut -= 1;
                }
                TurnClass::Boundary | TurnClass::Other => break,
            }
        }
        self.items.truncate(cut);
        self.own.truncate(cut);
    }

    fn user_turns(&self) -> usize {
        self.items
            .iter()
            .filter(|item| item.class == TurnClass::Boundary)
            .count()
    }

    /// The real user messages: user messages that are not context, not a summary, not empty,
    /// their text parts joined with `\n`.
    fn user_messages(&self) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|item| item.user_texts.as_ref())
            .filter(|texts| is_real_user_input(texts))
            .map(|texts| texts.join("\n"))
            .collect()
    }

    /// Local compaction: the newest real user messages within the budget, newest first; the
    /// first that does not fit is cut to what is left (if anything is), and selection stops;
    /// then the summary. Bumps the version.
    fn compact(&mut self, summary: &str) {
        let mut kept = Vec::new();
        let mut left = COMPACT_USER_MESSAGE_TOKENS;
        for message in self.user_messages().into_iter().rev() {
            let tokens = approx_token_count(&message);
            if left == 0 {
                break;
            }
            if tokens <= left {
                left -= tokens;
                kept.push(message);
            } else {
                kept.push(truncate_text(&message, TruncationPolicy::Tokens(left)).into_owned());
                break;
            }
        }
        kept.reverse();
        let summary = if summary.is_empty() {
            EMPTY_SUMMARY
        } else {
            summary
        };
        kept.push(summary.to_owned());
        self.replace_items(kept.iter().map(|text| Item::user(text)).collect());
    }

    /// Removes the first item and the first counterpart of it: a call's first output of its
    /// family, an output's first call (a function output tries `function_call`, then
    /// `local_shell_call`).
    fn remove_first(&mut self) -> Vec<Item> {
        if self.items.is_empty() {
            return Vec::new();
        }
        let first = self.items.remove(0);
        self.own.remove(0);
        let counterparts: &[&str] = match first.item_type.as_str() {
            "function_call" | "local_shell_call" => &["function_call_output"],
            "custom_tool_call" => &["custom_tool_call_output"],
            "tool_search_call" => &["tool_search_output"],
            "function_call_output" => &["function_call", "local_shell_call"],
            "custom_tool_call_output" => &["custom_tool_call"],
            "tool_search_output" => &["tool_search_call"],
            _ => &[],
        };
        let mut removed = vec![first];
        if let Some(call_id) = removed[0].call_id.clone() {
            for kind in counterparts {
                if let Some(position) = self.items.iter().position(|item| {
                    item.item_type == *kind && item.call_id.as_ref() == Some(&call_id)
                }) {
                    removed.push(self.items.remove(position));
                    self.own.remove(position);
                    break;
                }
            }
        }
        removed
    }
}

/// The kind of an item given as JSON.
fn history_kind_of(json: &str) -> agent_history::ItemKind {
    Entry::from_json(json).expect("valid").kind()
}

fn check(history: &History, model: &Model) {
    history.assert_invariants();
    let texts: Vec<&str> = history.iter().map(Entry::json).collect();
    let expected: Vec<&str> = model.items.iter().map(|item| item.json.as_str()).collect();
    assert_eq!(texts, expected, "entries");
    assert_eq!(history.version(), model.version, "version");
    assert_eq!(history.reference_context_item(), model.reference.as_ref());
    for (entry, item) in history.iter().zip(&model.items) {
        assert_eq!(
            entry.flags().is_user_turn_boundary(),
            item.class == TurnClass::Boundary,
            "turn flag of {}",
            item.json
        );
    }
    assert_eq!(history.user_turn_count(), model.user_turns());
    assert_eq!(history.reachable_user_turns(), model.turns().len());
    assert_eq!(history.compactions_reachable(), model.earlier.len());
    assert_eq!(
        history.user_messages().expect("parses"),
        model.user_messages()
    );
}

/// Checks a record's outcome; returns the model item to append, if any.
fn recorded(
    history: &History,
    result: Result<Recorded, ItemError>,
    generated: &Generated,
    expected_json: &str,
) -> Option<Item> {
    match result.expect("generated items record") {
        Recorded::Filtered(reason) => {
            assert!(generated.filtered, "{} filtered", generated.json);
            let expected = if generated.json.contains("compaction_trigger") {
                FilterReason::CompactionTrigger
            } else if generated.json.contains("tool_search_call") {
                FilterReason::ClientToolSearchWithoutCallId
            } else {
                FilterReason::SystemMessage
            };
            assert_eq!(reason, expected);
            None
        }
        Recorded::Stored {
            position,
            truncated,
        } => {
            assert!(!generated.filtered, "{} stored", generated.json);
            assert_eq!(position, history.len() - 1);
            let entry = history.get(position).expect("stored");
            if truncated {
                assert_ne!(entry.json(), expected_json);
                // (Not necessarily shorter: the marker can weigh what it replaces.)
                assert_eq!(entry.kind(), history_kind_of(expected_json));
            } else {
                assert_eq!(entry.json(), expected_json);
            }
            Some(Item::generated(generated, entry.json().to_owned()))
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// Applies `op` to `history` and to its model, checking what the history returns.
fn apply(history: &mut History, model: &mut Model, op: HistoryOp<Recording>) {
    match op {
        HistoryOp::Record(Recording { via, item }) => {
            let generated = item.build();
            match via {
                Via::Json => {
                    let result = history.record_json(generated.json.clone());
                    model
                        .items
                        .extend(recorded(history, result, &generated, &generated.json));
                }
                Via::Typed => {
                    let typed: ResponseItem =
                        serde_json::from_str(&generated.json).expect("generated items parse");
                    let result = history.record(&typed);
                    if matches!(typed, ResponseItem::Other) {
                        assert!(matches!(result, Err(ItemError::NotStorable { .. })));
                    } else {
                        let json = serde_json::to_string(&typed).expect("serializes");
                        model
                            .items
                            .extend(recorded(history, result, &generated, &json));
                    }
                }
                Via::Entry => match Entry::from_json(generated.json.clone()) {
                    Ok(entry) => {
                        let result = history.record_entry(entry);
                        model
                            .items
                            .extend(recorded(history, result, &generated, &generated.json));
                    }
                    Err(error) => {
                        assert!(generated.json.contains("compaction_trigger"), "{error}");
                    }
                },
            }
        }
        HistoryOp::Project(options) => {
            // A projection changes nothing: the checks after the step compare with the model.
            let _ = history.project(&options);
        }
        HistoryOp::Rollback(n) => {
            history.drop_last_n_user_turns(n).expect("parses");
            model.rollback(n);
        }
        HistoryOp::Compact(summary) => {
            let compacted = history.compact(&summary).expect("compacts");
            model.compact(&summary);
            assert_eq!(compacted.message, summary);
            let replacement: Vec<&str> = compacted
                .replacement_history
                .iter()
                .map(Entry::json)
                .collect();
            let expected: Vec<&str> = model.items.iter().map(|item| item.json.as_str()).collect();
            assert_eq!(replacement, expected, "replacement history");
        }
        HistoryOp::Replace { keep, new } => {
            let entries: Vec<Entry> = history.iter().cloned().collect();
            let mut entries = keep.pick(&entries);
            let mut items = keep.pick(&model.items);
            if let Some(new) = new {
                let generated = new.item.build();
                if let Ok(entry) = Entry::from_json(generated.json.clone()) {
                    entries.push(entry);
                    items.push(Item::generated(&generated, generated.json.clone()));
                }
            }
            history.replace(entries);
            model.replace_items(items);
        }
        HistoryOp::RemoveFirst => {
            let removed = history.remove_first_item();
            let expected = model.remove_first();
            let removed: Vec<&str> = removed.iter().map(Entry::json).collect();
            let expected: Vec<&str> = expected.iter().map(|item| item.json.as_str()).collect();
            assert_eq!(removed, expected, "removed entries");
        }
        HistoryOp::SetReferenceContext(value) => {
            history.set_reference_context_item(value.clone());
            model.reference = value;
        }
    }
}

fuzz_target!(|input: Input| {
    let truncation = if input.small_truncation {
        TruncationPolicy::Bytes(64)
    } else {
        TruncationPolicy::Tokens(10_000)
    };
    let empty = Model {
        items: Vec::new(),
        own: Vec::new(),
        version: 0,
        reference: None,
        earlier: Vec::new(),
    };
    let mut forks = vec![(History::with_truncation(truncation), empty)];
    for op in input.ops.into_iter().take(40) {
        let len = forks.len();
        match op {
            ForkOp::On { fork, op } => {
                let (history, model) = &mut forks[fork % len];
                apply(history, model, op);
            }
            ForkOp::Fork { from, before_turn } => {
                let (history, model) = &forks[from % len];
                let fork = match before_turn {
                    None => (history.clone(), model.clone()),
                    Some(turn) => {
                        let fork = history.before_user_turn(turn).expect("parses");
                        let mut fork_model = model.clone();
                        let total = model.turns().len();
                        if turn >= 1 && turn <= total {
                            fork_model.rollback(total - turn + 1);
                        }
                        (fork, fork_model)
                    }
                };
                place_fork(&mut forks, from, fork, MAX_FORKS);
            }
        }
        for (_, model) in &mut forks {
            model.mark_recorded();
        }
        for (history, model) in &forks {
            check(history, model);
        }
        for (i, (a, model_a)) in forks.iter().enumerate() {
            for (b, model_b) in &forks[i + 1..] {
                assert_eq!(a == b, model_a == model_b, "equality of forks");
            }
        }
    }
});
