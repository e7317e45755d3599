//! Item kinds and the one pairing table that validation, indexing and repair all read.

use std::fmt;

use super::model::ResponseItem;

/// The `type` of a stored item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ItemKind {
    /// `message`
    Message,
    /// `agent_message`
    AgentMessage,
    /// `reasoning`
    Reasoning,
    /// `local_shell_call`
    LocalShellCall,
    /// `function_call`
    FunctionCall,
    /// `function_call_output`
    FunctionCallOutput,
    /// `custom_tool_call`
    CustomToolCall,
    /// `custom_tool_call_output`
    CustomToolCallOutput,
    /// `tool_search_call`
    ToolSearchCall,
    /// `tool_search_output`
    ToolSearchOutput,
    /// `web_search_call`
    WebSearchCall,
    /// `image_generation_call`
    ImageGenerationCall,
    /// `compaction` (or its alias `compaction_summary`)
    Compaction,
    /// `context_compaction`
    ContextCompaction,
    /// `additional_tools`
    AdditionalTools,
    /// An item whose `type` this library does not know. Kept in history and rollouts; not sent
    /// to the model unless projection options say so.
    Unknown,
}

impl serde::Serialize for ItemKind {
    /// The wire name, as in [`ItemKind::as_str`] (the JSON reports' `item_kind`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl ItemKind {
    /// The wire name of the kind (`"unknown"` for [`ItemKind::Unknown`]).
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Message => "message",
            ItemKind::AgentMessage => "agent_message",
            ItemKind::Reasoning => "reasoning",
            ItemKind::LocalShellCall => "local_shell_call",
            ItemKind::FunctionCall => "function_call",
            ItemKind::FunctionCallOutput => "function_call_output",
            ItemKind::CustomToolCall => "custom_tool_call",
            ItemKind::CustomToolCallOutput => "custom_tool_call_output",
            ItemKind::ToolSearchCall => "tool_search_call",
            ItemKind::ToolSearchOutput => "tool_search_output",
            ItemKind::WebSearchCall => "web_search_call",
            ItemKind::ImageGenerationCall => "image_generation_call",
            ItemKind::Compaction => "compaction",
            ItemKind::ContextCompaction => "context_compaction",
            ItemKind::AdditionalTools => "additional_tools",
            ItemKind::Unknown => "unknown",
        }
    }

    /// The prefix of new ids for this kind (`msg` in `msg_<UUIDv7>`, Codex's table); `None` for
    /// unknown items, which get no id.
    pub fn id_prefix(self) -> Option<&'static str> {
        Some(match self {
            ItemKind::AdditionalTools => "at",
            ItemKind::Message => "msg",
            ItemKind::AgentMessage => "amsg",
            ItemKind::Reasoning => "rs",
            ItemKind::LocalShellCall => "lsh",
            ItemKind::FunctionCall => "fc",
            ItemKind::ToolSearchCall => "tsc",
            ItemKind::FunctionCallOutput => "fco",
            ItemKind::CustomToolCall => "ctc",
            ItemKind::CustomToolCallOutput => "ctco",
            ItemKind::ToolSearchOutput => "tso",
            ItemKind::WebSearchCall => "ws",
            ItemKind::ImageGenerationCall => "ig",
            ItemKind::Compaction | ItemKind::ContextCompaction => "cmp",
            ItemKind::Unknown => return None,
        })
    }

    /// The kind of a typed item; `None` for the two variants that are never stored
    /// (`compaction_trigger`) or cannot be stored without their JSON (`Other`).
    pub(crate) fn of(item: &ResponseItem) -> Option<ItemKind> {
        Some(match item {
            ResponseItem::Message(_) => ItemKind::Message,
            ResponseItem::AgentMessage(_) => ItemKind::AgentMessage,
            ResponseItem::Reasoning(_) => ItemKind::Reasoning,
            ResponseItem::LocalShellCall(_) => ItemKind::LocalShellCall,
            ResponseItem::FunctionCall(_) => ItemKind::FunctionCall,
            ResponseItem::FunctionCallOutput(_) => ItemKind::FunctionCallOutput,
            ResponseItem::CustomToolCall(_) => ItemKind::CustomToolCall,
            ResponseItem::CustomToolCallOutput(_) => ItemKind::CustomToolCallOutput,
            ResponseItem::ToolSearchCall(_) => ItemKind::ToolSearchCall,
            ResponseItem::ToolSearchOutput(_) => ItemKind::ToolSearchOutput,
            ResponseItem::WebSearchCall(_) => ItemKind::WebSearchCall,
            ResponseItem::ImageGenerationCall(_) => ItemKind::ImageGenerationCall,
            ResponseItem::Compaction(_) => ItemKind::Compaction,
            ResponseItem::ContextCompaction(_) => ItemKind::ContextCompaction,
            ResponseItem::AdditionalTools(_) => ItemKind::AdditionalTools,
            ResponseItem::Other => ItemKind::Unknown,
            ResponseItem::CompactionTrigger => return None,
        })
    }

    /// How this kind takes part in call/output pairing: which calls want an output, which outputs
    /// want a call, and in which family.
    ///
    /// This is the one table every pairing decision reads. It has no `_` arm: a new kind does not
    /// compile until someone decides how it pairs.
    pub fn pairing(self) -> Pairing {
        match self {
            ItemKind::FunctionCall => Pairing::Call {
                family: Family::Function,
                missing_output: MissingOutput::Quiet,
                synthetic_id_prefix: "fco",
            },
            ItemKind::LocalShellCall => Pairing::Call {
                family: Family::Function,
                missing_output: MissingOutput::Violation,
                synthetic_id_prefix: "fco",
            },
            ItemKind::CustomToolCall => Pairing::Call {
                family: Family::Custom,
                missing_output: MissingOutput::Violation,
                synthetic_id_prefix: "ctco",
            },
            ItemKind::ToolSearchCall => Pairing::Call {
                family: Family::ToolSearch,
                missing_output: MissingOutput::Quiet,
                synthetic_id_prefix: "tso",
            },
            ItemKind::FunctionCallOutput => Pairing::Output {
                family: Family::Function,
            },
            ItemKind::CustomToolCallOutput => Pairing::Output {
                family: Family::Custom,
            },
            ItemKind::ToolSearchOutput => Pairing::Output {
                family: Family::ToolSearch,
            },
            ItemKind::Message
            | ItemKind::AgentMessage
            | ItemKind::Reasoning
            | ItemKind::WebSearchCall
            | ItemKind::ImageGenerationCall
            | ItemKind::Compaction
            | ItemKind::ContextCompaction
            | ItemKind::AdditionalTools
            | ItemKind::Unknown => Pairing::Unpaired,
        }
    }
}

impl fmt::Display for ItemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pairing family: calls and outputs pair only within their family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// `function_call` and `local_shell_call`, answered by `function_call_output`.
    Function,
    /// `custom_tool_call`, answered by `custom_tool_call_output`.
    Custom,
    /// `tool_search_call`, answered by `tool_search_output`.
    ToolSearch,
}

impl Family {
    /// The kind of output that answers calls of this family.
    pub fn output_kind(self) -> ItemKind {
        match self {
            Family::Function => ItemKind::FunctionCallOutput,
            Family::Custom => ItemKind::CustomToolCallOutput,
            Family::ToolSearch => ItemKind::ToolSearchOutput,
        }
    }

    /// The call kinds of this family, in the order an output looks for its call when it is
    /// removed with it (a function output looks for a `function_call` first).
    pub fn call_kinds(self) -> &'static [ItemKind] {
        match self {
            Family::Function => &[ItemKind::FunctionCall, ItemKind::LocalShellCall],
            Family::Custom => &[ItemKind::CustomToolCall],
            Family::ToolSearch => &[ItemKind::ToolSearchCall],
        }
    }
}

/// What a missing output means for a call kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingOutput {
    /// Normal after an interruption: repaired silently even in strict mode (Codex logs at info).
    Quiet,
    /// A protocol violation: repaired in lenient mode, an error in strict mode (Codex's
    /// `error_or_panic`).
    Violation,
}

/// How an item kind takes part in pairing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// A call that wants an output of its family.
    Call {
        /// The family.
        family: Family,
        /// Whether a missing output is a violation.
        missing_output: MissingOutput,
        /// Prefix of the synthetic output's id.
        synthetic_id_prefix: &'static str,
    },
    /// An output that wants a call of its family. An orphan output is always a violation.
    Output {
        /// The family.
        family: Family,
    },
    /// Not part of any pair.
    Unpaired,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codex's id table (`docs/codex-compatibility.md`), written out here rather than read from
    /// the code: each stored kind, by its `type`, and the prefix of the ids it is given.
    #[test]
    fn every_stored_kind_has_codexs_id_prefix() {
        let table = [
            (ItemKind::AdditionalTools, "additional_tools", "at"),
            (ItemKind::Message, "message", "msg"),
            (ItemKind::AgentMessage, "agent_message", "amsg"),
            (ItemKind::Reasoning, "reasoning", "rs"),
            (ItemKind::LocalShellCall, "local_shell_call", "lsh"),
            (ItemKind::FunctionCall, "function_call", "fc"),
            (ItemKind::ToolSearchCall, "tool_search_call", "tsc"),
            (ItemKind::FunctionCallOutput, "function_call_output", "fco"),
            (ItemKind::CustomToolCall, "custom_tool_call", "ctc"),
            (
                ItemKind::CustomToolCallOutput,
                "custom_tool_call_output",
                "ctco",
            ),
            (ItemKind::ToolSearchOutput, "tool_search_output", "tso"),
            (ItemKind::WebSearchCall, "web_search_call", "ws"),
            (ItemKind::ImageGenerationCall, "image_generation_call", "ig"),
            (ItemKind::Compaction, "compaction", "cmp"),
            (ItemKind::ContextCompaction, "context_compaction", "cmp"),
        ];
        for (kind, name, prefix) in table {
            assert_eq!(kind.to_string(), name);
            assert_eq!(kind.id_prefix(), Some(prefix), "{kind}");
        }
        assert_eq!(ItemKind::Unknown.id_prefix(), None);
    }
}
