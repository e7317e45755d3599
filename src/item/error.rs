//! [`ItemError`]: building an entry failed.

use std::error::Error as StdError;

/// Building an entry from an item or from JSON text failed.
///
/// Like every error of this crate, its message says what failed and leaves the cause to
/// [`source()`](std::error::Error::source): print the chain (`{:#}` with `anyhow`) to see both.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ItemError {
    /// The text is not JSON, not an object with a string `type`, or not the shape of its type.
    #[error("invalid item JSON{}", type_suffix(item_type.as_deref()))]
    InvalidJson {
        /// The `type` the text declared, when it could be read.
        item_type: Option<String>,
        /// What serde_json found.
        #[source]
        source: serde_json::Error,
    },
    /// The item is a kind that is never stored (`compaction_trigger`), or a typed
    /// [`ResponseItem::Other`](super::ResponseItem::Other) whose content is unknown.
    #[error("a `{item_type}` item cannot be stored")]
    NotStorable {
        /// The item's type.
        item_type: &'static str,
    },
    /// The item's JSON is larger than 4 GiB.
    #[error("item of {bytes} bytes is larger than the 4 GiB an entry can hold")]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// A typed item could not be serialized.
    #[error("cannot serialize item")]
    Serialize(#[source] serde_json::Error),
}

fn type_suffix(item_type: Option<&str>) -> String {
    item_type.map_or_else(String::new, |t| format!(" (type `{t}`)"))
}

/// An error's message followed by those of its sources, joined by `": "` (what failed: why), as
/// `{:#}` prints an `anyhow` error — for reports and bindings that keep an error as text.
pub fn error_chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The kind of a JSON value, with its article, for messages.
pub(crate) fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_leaves_the_cause_to_the_source_chain() {
        let source = serde_json::from_str::<serde_json::Value>("{").expect_err("invalid");
        let error = ItemError::InvalidJson {
            item_type: Some("message".into()),
            source,
        };
        assert_eq!(error.to_string(), "invalid item JSON (type `message`)");
        assert_eq!(
            error_chain(&error),
            "invalid item JSON (type `message`): EOF while parsing an object at line 1 column 1"
        );
    }
}
