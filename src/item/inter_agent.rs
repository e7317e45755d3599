//! Inter-agent communications: the message one agent of a multi-agent thread sends another.
//!
//! Codex records a communication in two places, and this module reads both:
//!
//! * an `inter_agent_communication` rollout line (older multi-agent sessions), whose payload is
//!   the communication itself; resume turns it into the `agent_message` item Codex turns it into
//!   ([`InterAgentCommunication::to_agent_message`]);
//! * an assistant message whose only content part is the communication's JSON (a *structured
//!   inter-agent instruction*), which starts a user turn ([`is_inter_agent_instruction`]).
//!
//! The payload's fields, as Codex reads them, are listed in `docs/rollout-format.md`, "Types";
//! other keys are ignored. A payload without that shape is not a communication: Codex cannot
//! read such a line and skips it.

use serde::Deserialize;

use super::ids::ItemId;
use super::model::{AgentContentItem, AgentMessage, Metadata};

/// A communication between two agents, as an `inter_agent_communication` line holds it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct InterAgentCommunication {
    #[serde(default)]
    id: Option<ItemId>,
    author: AgentPath,
    recipient: AgentPath,
    #[serde(default)]
    #[allow(dead_code)] // Read for the shape only: the item Codex builds does not carry it.
    other_recipients: Vec<AgentPath>,
    content: String,
    #[serde(default)]
    encrypted_content: Option<String>,
    #[serde(default)]
    internal_chat_message_metadata_passthrough: Option<Metadata>,
    trigger_turn: bool,
}

impl InterAgentCommunication {
    /// Reads a communication from its JSON.
    ///
    /// # Errors
    ///
    /// serde's error when `json` is not an object of the communication's shape.
    pub(crate) fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        if !json.trim_start().starts_with('{') {
            return Err(serde::de::Error::custom(
                "an inter-agent communication is a JSON object",
            ));
        }
        let communication: Self = serde_json::from_str(json)?;
        if communication
            .internal_chat_message_metadata_passthrough
            .as_ref()
            .is_some_and(|meta| !meta.is_object())
        {
            return Err(serde::de::Error::custom(
                "internal_chat_message_metadata_passthrough is not an object",
            ));
        }
        Ok(communication)
    }

    /// The model input item Codex turns the communication into on resume: an `agent_message`
    /// with the communication's id, author, recipient and host metadata, whose content is the
    /// communication's text as one `input_text` part. An encrypted communication becomes two
    /// parts instead: an `input_text` header naming the message type (`NEW_TASK` when it
    /// triggers a turn, `MESSAGE` otherwise), the recipient as task name and the author as
    /// sender, then the `encrypted_content`.
    pub(crate) fn to_agent_message(&self) -> AgentMessage {
        let content = match &self.encrypted_content {
            Some(encrypted_content) => {
                let message_type = if self.trigger_turn {
                    "NEW_TASK"
                } else {
                    "MESSAGE"
                };
                vec![
                    AgentContentItem::InputText {
                        text: format!(
                            "Message Type: {message_type}\nTask name: {}\nSender: {}\nPayload:\n",
                            self.recipient.0, self.author.0
                        ),
                    },
                    AgentContentItem::EncryptedContent {
                        encrypted_content: encrypted_content.clone(),
                    },
                ]
            }
            None => vec![AgentContentItem::InputText {
                text: self.content.clone(),
            }],
        };
        AgentMessage {
            id: self.id.clone(),
            author: self.author.0.clone(),
            recipient: self.recipient.0.clone(),
            content,
            meta: self.internal_chat_message_metadata_passthrough.clone(),
        }
    }
}

/// Whether a message text is a structured inter-agent instruction: the JSON of a communication
/// (see the module documentation for its shape).
pub(crate) fn is_inter_agent_instruction(text: &str) -> bool {
    InterAgentCommunication::from_json(text).is_ok()
}

/// An agent's path in a multi-agent thread: `/root`, then segments of lowercase ASCII letters,
/// digits and `_` (none of them empty, `root`, `.` or `..`), e.g. `/root/worker`. Codex reads
/// no other path from a file.
#[derive(Debug, Clone, PartialEq)]
struct AgentPath(String);

impl<'de> Deserialize<'de> for AgentPath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let path = String::deserialize(deserializer)?;
        if is_agent_path(&path) {
            Ok(AgentPath(path))
        } else {
            Err(serde::de::Error::custom(format!(
                "`{path}` is not an agent path (`/root`, then lowercase segments)"
            )))
        }
    }
}

fn is_agent_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/root") else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    let Some(rest) = rest.strip_prefix('/') else {
        return false;
    };
    rest.split('/').all(|segment| {
        !segment.is_empty()
            && segment != "root"
            && segment
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_paths_follow_codex_syntax() {
        for good in ["/root", "/root/worker", "/root/a_1/b2"] {
            assert!(is_agent_path(good), "{good}");
        }
        for bad in [
            "",
            "root",
            "/rooty",
            "/root/",
            "/root//w",
            "/root/Worker",
            "/root/root",
            "/root/..",
            "/other",
            "/root/a-b",
        ] {
            assert!(!is_agent_path(bad), "{bad}");
        }
    }

    #[test]
    fn a_communication_needs_content_and_trigger_turn() {
        assert!(is_inter_agent_instruction(
            r#"{"author":"/root","recipient":"/root/w","content":"do it","trigger_turn":true}"#
        ));
        assert!(is_inter_agent_instruction(
            r#" {"author":"/root","recipient":"/root/w","other_recipients":[],"content":"","trigger_turn":false,"extra":1} "#
        ));
        for bad in [
            r#"{"author":"/root","recipient":"/root/w","content":"do it"}"#,
            r#"{"author":"/root","recipient":"/root/w","trigger_turn":true}"#,
            r#"{"author":"/x","recipient":"/root/w","content":"","trigger_turn":true}"#,
            r#"{"author":"/root","recipient":"/root/w","content":"","trigger_turn":"yes"}"#,
            r#"{"author":"/root","recipient":"/root/w","other_recipients":null,"content":"","trigger_turn":true}"#,
            r#"{"author":"/root","recipient":"/root/w","content":"","internal_chat_message_metadata_passthrough":"x","trigger_turn":true}"#,
            "author: /root\nrecipient: /root/w",
            r#"["/root"]"#,
        ] {
            assert!(!is_inter_agent_instruction(bad), "{bad}");
        }
    }

    #[test]
    fn encrypted_communications_get_the_header() {
        let communication = InterAgentCommunication::from_json(
            r#"{"author":"/root/a","recipient":"/root","content":"","encrypted_content":"gAAA","trigger_turn":false}"#,
        )
        .expect("a communication");
        let message = communication.to_agent_message();
        assert_eq!(
            message.content,
            vec![
                AgentContentItem::InputText {
                    text: "Message Type: MESSAGE\nTask name: /root\nSender: /root/a\nPayload:\n"
                        .to_owned()
                },
                AgentContentItem::EncryptedContent {
                    encrypted_content: "gAAA".to_owned()
                },
            ]
        );
    }
}
