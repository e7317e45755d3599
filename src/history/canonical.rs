//! Durable-history canonicalization of client tool searches: the one record-time rule that
//! rewrites an item other than by truncation.
//!
//! A `tool_search_call` executed by the client (`"execution":"client"`, exactly) has arguments
//! of a fixed schema, `{query: string, limit?: integer}`, so the history keeps them in that
//! canonical form: re-read through the schema (unknown keys dropped, `query` then `limit`, an
//! absent or `null` limit omitted) or, when they do not fit it, replaced by
//! [`INVALID_TOOL_SEARCH_ARGUMENTS`]. A client call without a call id (missing, `null` or empty)
//! is not recorded at all: nothing could ever answer it. Server-executed calls, calls with any
//! other `execution`, function-call arguments and custom tool input are never rewritten.
//!
//! Only the `arguments` value of the item's JSON text is replaced; its other keys, their order
//! and their text stay as they were, so a canonical item is stored byte for byte as given.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::item::{Entry, Execution, ItemError, ItemKind, ResponseItem, ToolSearchCall};

use super::FilterReason;

/// The arguments a client `tool_search_call` gets when its own do not fit the schema
/// `{query: string, limit?: integer}`: the query `[invalid tool_search arguments omitted]`
/// (Codex's text; a history written with another would not be the one Codex writes).
pub(crate) const INVALID_TOOL_SEARCH_ARGUMENTS: &str =
    r#"{"query":"[invalid tool_search arguments omitted]"}"#;

/// The schema of a client tool search's arguments. Read as serde reads a struct, so unknown keys
/// are ignored; written with `query` first and `limit` only when present.
#[derive(Deserialize, Serialize)]
struct SearchArguments {
    query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limit: Option<u64>,
}

/// What canonicalization makes of an item.
#[derive(Debug)]
pub(crate) enum Canonical {
    /// Record the item as given: not a client tool search, or one already canonical.
    Unchanged,
    /// Do not record it.
    Filtered(FilterReason),
    /// Record this instead: the item's JSON text with canonical arguments, and its typed item.
    Rewritten {
        /// The new text.
        json: String,
        /// The item it parses into.
        item: Box<ResponseItem>,
    },
}

/// Canonicalizes `item` for the durable history. `json` is its text when it was given as text
/// (only `arguments` is replaced in it); without one, a rewritten item is serialized.
///
/// # Errors
///
/// [`ItemError::InvalidJson`] when `json` is not a JSON object (it was parsed into `item`, so only
/// a text and an item that do not belong together get it), [`ItemError::Serialize`] when the
/// rewritten item cannot be serialized.
pub(crate) fn canonicalize(
    json: Option<&str>,
    item: &ResponseItem,
) -> Result<Canonical, ItemError> {
    let ResponseItem::ToolSearchCall(call) = item else {
        return Ok(Canonical::Unchanged);
    };
    match call.execution {
        Execution::Client => {}
        Execution::Server | Execution::Other(_) => return Ok(Canonical::Unchanged),
    }
    if call.call_id.as_ref().is_none_or(|id| id.is_empty()) {
        return Ok(Canonical::Filtered(
            FilterReason::ClientToolSearchWithoutCallId,
        ));
    }
    let arguments = canonical_arguments(&call.arguments);
    if arguments == call.arguments && same_key_order(&arguments, &call.arguments) {
        return Ok(Canonical::Unchanged);
    }
    let rewritten = ResponseItem::ToolSearchCall(ToolSearchCall {
        arguments: arguments.clone(),
        ..call.clone()
    });
    let json = match json {
        None => serde_json::to_string(&rewritten).map_err(ItemError::Serialize)?,
        Some(json) => {
            let mut value: Value =
                serde_json::from_str(json).map_err(|source| ItemError::InvalidJson {
                    item_type: Some(ItemKind::ToolSearchCall.as_str().to_owned()),
                    source,
                })?;
            let Some(object) = value.as_object_mut() else {
                return Err(ItemError::InvalidJson {
                    item_type: Some(ItemKind::ToolSearchCall.as_str().to_owned()),
                    source: serde::de::Error::custom("an item must be a JSON object"),
                });
            };
            // The key exists (the item parsed with it); replacing keeps its place.
            object.insert("arguments".to_owned(), arguments);
            value.to_string()
        }
    };
    Ok(Canonical::Rewritten {
        json,
        item: Box::new(rewritten),
    })
}

/// Whether two equal values list their keys in the same order (object equality ignores it; the
/// canonical form does not). Only the top level matters: the canonical values inside are a
/// string and a number.
fn same_key_order(a: &Value, b: &Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => a.keys().eq(b.keys()),
        _ => true,
    }
}

/// Canonicalizes an entry (recorded from a rollout, say): only a `tool_search_call` that is not
/// server-executed is read again to decide.
///
/// # Errors
///
/// [`ItemError::InvalidJson`] when such an entry's text does not parse (an entry from a crafted
/// snapshot, see [`Entry::to_item`]); as [`canonicalize`] otherwise.
pub(crate) fn canonicalize_entry(entry: &Entry) -> Result<Canonical, ItemError> {
    if entry.kind() != ItemKind::ToolSearchCall || entry.flags().is_server_executed() {
        return Ok(Canonical::Unchanged);
    }
    canonicalize(Some(entry.json()), &entry.to_item()?)
}

/// The canonical form of a client tool search's arguments: the schema's reading written back,
/// or [`INVALID_TOOL_SEARCH_ARGUMENTS`] when they do not fit it (not an object with a string
/// `query`; a `limit` that is not a whole number from 0 to 2^64 − 1).
fn canonical_arguments(arguments: &Value) -> Value {
    SearchArguments::deserialize(arguments)
        .ok()
        .and_then(|arguments| serde_json::to_value(arguments).ok())
        .unwrap_or_else(invalid_arguments)
}

fn invalid_arguments() -> Value {
    serde_json::from_str(INVALID_TOOL_SEARCH_ARGUMENTS).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(arguments: &str) -> String {
        canonical_arguments(&serde_json::from_str(arguments).expect("JSON")).to_string()
    }

    #[test]
    fn arguments_are_read_through_the_schema() {
        assert_eq!(canonical(r#"{"query":"q"}"#), r#"{"query":"q"}"#);
        assert_eq!(
            canonical(r#"{"limit":3,"extra":[1],"query":"q"}"#),
            r#"{"query":"q","limit":3}"#
        );
        assert_eq!(
            canonical(r#"{"query":"q","limit":null}"#),
            r#"{"query":"q"}"#
        );
        for invalid in [
            r#"{"query":"q","limit":-1}"#,
            r#"{"query":"q","limit":1.5}"#,
            r#"{"query":"q","limit":"3"}"#,
            r#"{"query":"q","limit":18446744073709551616}"#,
            r#"{"query":7}"#,
            r#"{"limit":3}"#,
            r#""{\"query\":\"q\"}""#,
            "null",
            "42",
        ] {
            assert_eq!(
                canonical(invalid),
                INVALID_TOOL_SEARCH_ARGUMENTS,
                "{invalid}"
            );
        }
    }

    /// Object equality ignores key order; canonical arguments do not: `limit` before `query` is
    /// rewritten, the canonical order is left alone.
    #[test]
    fn key_order_alone_is_rewritten() {
        let text = |arguments: &str| {
            format!(
                r#"{{"type":"tool_search_call","call_id":"c","execution":"client","arguments":{arguments}}}"#
            )
        };
        let reordered = text(r#"{"limit":3,"query":"q"}"#);
        let item = crate::item::parse_item(&reordered).expect("an item");
        match canonicalize(Some(&reordered), &item).expect("canonicalizes") {
            Canonical::Rewritten { json, .. } => {
                assert_eq!(json, text(r#"{"query":"q","limit":3}"#));
            }
            other => panic!("{other:?}"),
        }
        let canonical = text(r#"{"query":"q","limit":3}"#);
        let item = crate::item::parse_item(&canonical).expect("an item");
        assert!(matches!(
            canonicalize(Some(&canonical), &item).expect("canonicalizes"),
            Canonical::Unchanged
        ));
    }

    #[test]
    fn the_invalid_arguments_constant_is_json() {
        assert_eq!(
            invalid_arguments().to_string(),
            INVALID_TOOL_SEARCH_ARGUMENTS
        );
    }
}
