//! [`ProjectionError`]: a projection could not be made.

use crate::item::ItemError;

use super::repair::Violation;

/// A projection could not be made; nothing was projected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectionError {
    /// A strict projection found every violation that Codex treats as a bug (`error_or_panic`),
    /// listed in history order.
    #[error("{} protocol violation(s) in history: {}", .0.len(), list(.0))]
    Violations(Vec<Violation>),
    /// An item whose media must be stripped does not parse. Entries built by this library always
    /// parse; this is an entry of a snapshot crafted to hold text that its writer never parsed
    /// (see [`Entry::to_item`](crate::item::Entry::to_item)). The item is not sent unstripped.
    #[error("item {position} cannot be read to strip its media")]
    UnreadableItem {
        /// Its position in the live history.
        position: usize,
        /// Why it cannot be read.
        #[source]
        source: ItemError,
    },
}

fn list(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;
    use crate::projection::ProjectionOptions;

    /// A strict projection's error counts the violations and lists each in words, in history
    /// order, separated by `; `.
    #[test]
    fn a_strict_projection_error_lists_every_violation_in_words() {
        let mut history = History::new();
        for item in [
            r#"{"type":"function_call_output","call_id":"gone","output":"x"}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
            r#"{"type":"function_call_output","call_id":"lost","output":"y"}"#,
        ] {
            history.record_json(item).expect("valid item");
        }
        let error = history
            .project(&ProjectionOptions::default().strict())
            .expect_err("strict");
        let ProjectionError::Violations(violations) = &error else {
            panic!("{error:?}");
        };
        let said: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains("gone") && said[1].contains("lost"),
            "{said:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "2 protocol violation(s) in history: {}; {}",
                said[0], said[1]
            )
        );
    }
}
