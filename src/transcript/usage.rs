//! The tokens a transcript's model responses were billed for: each assistant message's
//! `usage`, as the Messages API reported it, counted once per message id.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::reader::Transcript;

/// One model response's usage, as the file holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageUsage {
    /// The line it was read from: the last of the message's lines with the most output tokens
    /// (Claude Code writes a response's usage on each of its lines, complete on the last).
    pub line: u64,
    /// The message id.
    pub message_id: String,
    /// The model that answered.
    pub model: Option<String>,
    /// The subagent whose response it is (`None`: the main thread's).
    pub thread: Option<String>,
    /// The `usage` object, as written (`input_tokens`, `output_tokens`, the cache counts, and
    /// whatever else the API reported).
    pub usage: Value,
}

/// The usage of every response of a transcript, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Responses with a usage.
    pub messages: u64,
    /// `input_tokens`: input not read from or written to the prompt cache.
    pub input_tokens: u64,
    /// `cache_creation_input_tokens`: input written to the cache.
    pub cache_creation_input_tokens: u64,
    /// `cache_read_input_tokens`: input read from the cache.
    pub cache_read_input_tokens: u64,
    /// `output_tokens`.
    pub output_tokens: u64,
}

impl UsageTotals {
    /// Adds one response's usage (a missing or non-numeric count adds nothing).
    fn add(&mut self, usage: &Value) {
        let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        // Counts come from the file: a sum never overflows, it stops at the largest.
        self.messages = self.messages.saturating_add(1);
        self.input_tokens = self.input_tokens.saturating_add(count("input_tokens"));
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(count("cache_creation_input_tokens"));
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(count("cache_read_input_tokens"));
        self.output_tokens = self.output_tokens.saturating_add(count("output_tokens"));
    }
}

impl Transcript {
    /// The usage of every model response the file holds, on every thread and branch (each was
    /// a request, whatever a resume sends), once per message id, in line order. Lines of API
    /// errors Claude Code wrote as assistant lines are left out: no model answered them.
    pub fn usage(&self) -> Vec<MessageUsage> {
        let mut chosen: HashMap<&str, usize> = HashMap::new();
        let output = |at: usize| {
            self.records[at]
                .usage
                .as_ref()
                .and_then(|usage| usage.get("output_tokens"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        for (at, record) in self.records.iter().enumerate() {
            let (Some(id), Some(_)) = (record.message_id.as_deref(), record.usage.as_ref()) else {
                continue;
            };
            if record.api_error {
                continue;
            }
            let keep = chosen.get(id).is_none_or(|&known| {
                (output(at), record.line) >= (output(known), self.records[known].line)
            });
            if keep {
                chosen.insert(id, at);
            }
        }
        let mut usage: Vec<MessageUsage> = chosen
            .into_iter()
            .map(|(id, at)| {
                let record = &self.records[at];
                MessageUsage {
                    line: record.line,
                    message_id: id.to_owned(),
                    model: record.model.as_deref().map(str::to_owned),
                    thread: record.thread().map(str::to_owned),
                    usage: record.usage.as_deref().cloned().unwrap_or(Value::Null),
                }
            })
            .collect();
        usage.sort_by_key(|usage| usage.line);
        usage
    }

    /// [`Transcript::usage`], summed.
    pub fn usage_totals(&self) -> UsageTotals {
        let mut totals = UsageTotals::default();
        for usage in self.usage() {
            totals.add(&usage.usage);
        }
        totals
    }
}
