//! The reference history: a `Vec` of JSON texts and a version counter, edited as the
//! specification says.

use super::prelude::*;
use super::spec::*;

#[derive(Debug, Clone, Default)]
pub(crate) struct ModelHistory {
    pub(crate) items: Vec<String>,
    /// For each item, whether it was recorded into this state (not put there by a replace, whose
    /// user messages stand for turns of an earlier state).
    pub(crate) own: Vec<bool>,
    pub(crate) version: u64,
    /// Whether a reference context item is set.
    pub(crate) has_reference_context: bool,
    /// The states each replace replaced, oldest first: a rollback can return to them.
    pub(crate) earlier: Vec<(Vec<String>, Vec<bool>)>,
}

/// How an item counts for rollback (rollback and user turns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnClass {
    Boundary,
    /// Context injected by the harness; `mixed` when a developer message also holds
    /// non-contextual text.
    Context {
        mixed: bool,
    },
    Other,
}

/// The texts of a message's `input_text` / `output_text` parts.
pub(crate) fn message_texts(item: &Value) -> Vec<&str> {
    item.get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|part| matches!(type_of(part), "input_text" | "output_text"))
                .filter_map(|part| str_field(part, "text"))
                .collect()
        })
        .unwrap_or_default()
}

/// A structured inter-agent instruction: the message's only part is text holding a JSON object
/// with string `author`, `recipient` and `content` and a boolean `trigger_turn` (the generators
/// use valid agent paths only). (They only put such text in single-part assistant messages,
/// where every reading of the user-turn rule agrees.)
pub(crate) fn is_inter_agent_message(item: &Value) -> bool {
    let parts = item.get("content").and_then(Value::as_array);
    let Some([part]) = parts.map(Vec::as_slice) else {
        return false;
    };
    let Some(text) = str_field(part, "text") else {
        return false;
    };
    serde_json::from_str::<Value>(text.trim()).is_ok_and(|value| {
        value.get("author").is_some_and(Value::is_string)
            && value.get("recipient").is_some_and(Value::is_string)
            && value.get("content").is_some_and(Value::is_string)
            && value.get("trigger_turn").is_some_and(Value::is_boolean)
    })
}

pub(crate) fn turn_class(item: &Value) -> TurnClass {
    match type_of(item) {
        "agent_message" => return TurnClass::Boundary,
        "message" => {}
        _ => return TurnClass::Other,
    }
    let texts = message_texts(item);
    match str_field(item, "role") {
        Some("user") => {
            if texts.iter().any(|text| is_contextual_user_text(text)) {
                TurnClass::Context { mixed: false }
            } else if texts.iter().any(|text| is_summary_text(text)) {
                TurnClass::Other
            } else {
                TurnClass::Boundary
            }
        }
        Some("assistant") if is_inter_agent_message(item) => TurnClass::Boundary,
        Some("developer") if texts.iter().any(|text| is_contextual_developer_text(text)) => {
            TurnClass::Context {
                mixed: texts.iter().any(|text| !is_contextual_developer_text(text)),
            }
        }
        _ => TurnClass::Other,
    }
}

impl ModelHistory {
    pub(crate) fn values(&self) -> Vec<Value> {
        self.items.iter().map(|json| parse(json)).collect()
    }

    /// The record filter, plus the library's decision to keep unknown types.
    pub(crate) fn record(&mut self, json: &str) -> Recorded {
        let item = parse(json);
        match type_of(&item) {
            "message" if str_field(&item, "role") == Some("system") => {
                Recorded::Filtered(FilterReason::SystemMessage)
            }
            "compaction_trigger" => Recorded::Filtered(FilterReason::CompactionTrigger),
            // The generators write canonical arguments, so canonicalization only drops the
            // client calls without a call id.
            "tool_search_call"
                if str_field(&item, "execution") == Some("client")
                    && str_field(&item, "call_id").is_none_or(str::is_empty) =>
            {
                Recorded::Filtered(FilterReason::ClientToolSearchWithoutCallId)
            }
            _ => {
                self.items.push(json.to_owned());
                self.own.push(true);
                Recorded::Stored {
                    position: self.items.len() - 1,
                    truncated: false,
                }
            }
        }
    }

    /// Remove-first: index 0, then the first counterpart; the version is not bumped.
    pub(crate) fn remove_first_item(&mut self) -> Vec<String> {
        if self.items.is_empty() {
            return Vec::new();
        }
        let first = self.items.remove(0);
        self.own.remove(0);
        let item = parse(&first);
        let mut removed = vec![first];
        let Some(call_id) = str_field(&item, "call_id").filter(|_| has_call_id_field(&item)) else {
            return removed;
        };
        let wanted: &[&str] = match type_of(&item) {
            "function_call" | "local_shell_call" => &["function_call_output"],
            "custom_tool_call" => &["custom_tool_call_output"],
            "tool_search_call" => &["tool_search_output"],
            "function_call_output" => &["function_call", "local_shell_call"],
            "custom_tool_call_output" => &["custom_tool_call"],
            "tool_search_output" => &["tool_search_call"],
            _ => &[],
        };
        for ty in wanted {
            let found = self.items.iter().position(|json| {
                let other = parse(json);
                type_of(&other) == *ty && str_field(&other, "call_id") == Some(call_id)
            });
            if let Some(position) = found {
                removed.push(self.items.remove(position));
                self.own.remove(position);
                break;
            }
        }
        removed
    }

    /// The user turns a rollback can undo: boundaries recorded into a reachable state.
    pub(crate) fn reachable_user_turns(&self) -> usize {
        self.earlier
            .iter()
            .map(|(items, own)| (items, own))
            .chain(std::iter::once((&self.items, &self.own)))
            .map(|(items, own)| {
                items
                    .iter()
                    .zip(own)
                    .filter(|(json, own)| **own && turn_class(&parse(json)) == TurnClass::Boundary)
                    .count()
            })
            .sum()
    }

    /// Replace: the state before is kept for rollbacks, and none of the new items is a turn of
    /// its own.
    pub(crate) fn replace(&mut self, items: Vec<String>) {
        let own = vec![false; items.len()];
        let before_items = std::mem::replace(&mut self.items, items);
        let before_own = std::mem::replace(&mut self.own, own);
        self.earlier.push((before_items, before_own));
        self.version = self.version.saturating_add(1);
    }

    /// Rollback: the history returns to what it was before the n-th last user turn recorded into
    /// it (in any state, oldest first) began. Returns how many context items were trimmed above
    /// the cut (for coverage checks).
    pub(crate) fn drop_last_n_user_turns(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // Every turn recorded into a state still reachable: (state, position), oldest first;
        // state `earlier.len()` is the current one.
        let mut turns = Vec::new();
        let states = self
            .earlier
            .iter()
            .map(|(items, own)| (items, own))
            .chain(std::iter::once((&self.items, &self.own)));
        for (state, (items, own)) in states.enumerate() {
            for (position, json) in items.iter().enumerate() {
                if own[position] && turn_class(&parse(json)) == TurnClass::Boundary {
                    turns.push((state, position));
                }
            }
        }
        if turns.is_empty() {
            self.version = self.version.saturating_add(1);
            return 0;
        }
        let (state, boundary_cut) = turns[turns.len() - n.min(turns.len())];
        if state < self.earlier.len() {
            let (items, own) = self.earlier[state].clone();
            self.items = items;
            self.own = own;
            self.earlier.truncate(state);
            self.has_reference_context = false;
        }
        let values = self.values();
        let first = values
            .iter()
            .position(|item| turn_class(item) == TurnClass::Boundary)
            .expect("the cut is at a boundary");
        let mut cut = boundary_cut;
        while cut > first {
            match turn_class(&values[cut - 1]) {
                TurnClass::Context { mixed } => {
                    if mixed {
                        self.has_reference_context = false;
                    }
                    cut -= 1;
                }
                TurnClass::Boundary | TurnClass::Other => break,
            }
        }
        self.items.truncate(cut);
        self.own.truncate(cut);
        self.version = self.version.saturating_add(1);
        boundary_cut - cut
    }
}
