//! [`SessionFormat`]: which agent wrote a session file, told from its content.

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use serde_json::Value;

use crate::rollout::{RolloutText, open_input, without_byte_order_mark};

/// How many bytes [`SessionFormat::of_file`] reads to tell.
const SNIFF_BYTES: u64 = 64 * 1024;

/// The agent whose session format a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionFormat {
    /// A Codex rollout.
    Codex,
    /// A Claude Code transcript.
    ClaudeCode,
}

/// The record types only a Claude Code transcript has at the top level of a line.
const TRANSCRIPT_TYPES: [&str; 9] = [
    "user",
    "assistant",
    "system",
    "attachment",
    "progress",
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "last-prompt",
];

impl SessionFormat {
    /// The format of a file that starts with `start`, told by its first line that is not blank:
    /// a Codex line is an envelope with a `payload` (or, in the legacy format, a metadata object
    /// without a `type`), a Claude Code line a record of one of its types or with a `uuid`.
    /// `None` when the line is neither, or too long to be read from `start` and saying nothing
    /// in its first bytes.
    pub fn sniff(start: &[u8]) -> Option<SessionFormat> {
        let start = without_byte_order_mark(start, 0).unwrap_or(start);
        let line = start
            .split(|&byte| byte == b'\n')
            .find(|line| line.iter().any(|byte| !byte.is_ascii_whitespace()))?;
        let text = String::from_utf8_lossy(line);
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(object)) => {
                let kind = object.get("type").and_then(Value::as_str);
                if object.contains_key("payload") {
                    Some(SessionFormat::Codex)
                } else if kind.is_some_and(|kind| TRANSCRIPT_TYPES.contains(&kind))
                    || object.contains_key("uuid")
                    || object.contains_key("parentUuid")
                {
                    Some(SessionFormat::ClaudeCode)
                } else if kind.is_none() && object.contains_key("id") {
                    Some(SessionFormat::Codex)
                } else {
                    None
                }
            }
            // A first line cut off by the end of `start`, or damaged: its first keys tell.
            _ if text.contains("\"payload\":") => Some(SessionFormat::Codex),
            _ if text.contains("\"parentUuid\":") || text.contains("\"sessionId\":") => {
                Some(SessionFormat::ClaudeCode)
            }
            _ => None,
        }
    }

    /// The format of the regular file at `path` (plain or zstd-compressed), from its first
    /// 64 KiB; `None` when they do not tell, the file cannot be read (reading it then says why),
    /// or it is a FIFO or a socket (looking would consume what the reader is to read).
    pub fn of_file(path: impl AsRef<Path>) -> Option<SessionFormat> {
        let path = path.as_ref();
        if !std::fs::metadata(path).ok()?.is_file() {
            return None;
        }
        let file = open_input(path).ok()?;
        let mut start = Vec::new();
        RolloutText::new(file)
            .ok()?
            .take(SNIFF_BYTES)
            .read_to_end(&mut start)
            .ok()?;
        SessionFormat::sniff(&start)
    }

    /// The name the command-line tool and the JSON reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionFormat::Codex => "codex",
            SessionFormat::ClaudeCode => "claude-code",
        }
    }
}

impl fmt::Display for SessionFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A session format name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown session format `{0}` (expected codex or claude-code)")]
pub struct ParseSessionFormatError(pub String);

impl FromStr for SessionFormat {
    type Err = ParseSessionFormatError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "codex" => Ok(SessionFormat::Codex),
            "claude-code" | "claude" => Ok(SessionFormat::ClaudeCode),
            other => Err(ParseSessionFormatError(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_told_by_its_first_line() {
        let codex = br#"{"timestamp":"2026-11-03T14:00:00.000Z","type":"session_meta","payload":{"id":"x"}}"#;
        assert_eq!(SessionFormat::sniff(codex), Some(SessionFormat::Codex));
        let legacy = br#"{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0c","timestamp":"2025-01-01","instructions":null}"#;
        assert_eq!(SessionFormat::sniff(legacy), Some(SessionFormat::Codex));
        let claude = b"\xEF\xBB\xBF{\"type\":\"summary\",\"summary\":\"t\",\"leafUuid\":\"u\"}\n";
        assert_eq!(
            SessionFormat::sniff(claude),
            Some(SessionFormat::ClaudeCode)
        );
        let blank_first = b" \n{\"type\":\"user\",\"uuid\":\"u1\"}";
        assert_eq!(
            SessionFormat::sniff(blank_first),
            Some(SessionFormat::ClaudeCode)
        );
        let cut =
            br#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"content":"aaaa"#;
        assert_eq!(SessionFormat::sniff(cut), Some(SessionFormat::ClaudeCode));
        assert_eq!(SessionFormat::sniff(b"[1,2]\n"), None);
        assert_eq!(SessionFormat::sniff(b"  \n"), None);
        assert_eq!("claude-code".parse(), Ok(SessionFormat::ClaudeCode));
        assert!("gemini".parse::<SessionFormat>().is_err());
    }
}
