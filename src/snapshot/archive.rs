//! The rkyv payload of a snapshot (docs/snapshot-format.md, "Payload").

use rkyv::{Archive, Deserialize, Serialize};

use crate::item::{EntryFlags, ItemKind, Role};

/// The root of a version-1 payload.
#[derive(Archive, Serialize, Deserialize, Debug)]
pub(crate) struct SnapshotV1 {
    pub(crate) thread_id: Option<String>,
    pub(crate) resume_flags: u8,
    pub(crate) truncation_mode: u8,
    pub(crate) truncation_limit: u64,
    pub(crate) reference_context_item: Option<String>,
    pub(crate) previous_turn_settings: Option<String>,
    pub(crate) entries: Vec<EntryV1>,
}

/// One entry of a version-1 payload.
#[derive(Archive, Serialize, Deserialize, Debug)]
pub(crate) struct EntryV1 {
    pub(crate) kind: u8,
    pub(crate) role: u8,
    pub(crate) flags: u8,
    pub(crate) tokens: u64,
    pub(crate) call_id: Option<String>,
    pub(crate) item_id: Option<String>,
    pub(crate) json: String,
}

/// The numbering of item kinds in the format. Exhaustive both ways: a new kind does not compile
/// until it has a number (which is a format change).
pub(crate) fn kind_code(kind: ItemKind) -> u8 {
    match kind {
        ItemKind::Message => 0,
        ItemKind::AgentMessage => 1,
        ItemKind::Reasoning => 2,
        ItemKind::LocalShellCall => 3,
        ItemKind::FunctionCall => 4,
        ItemKind::FunctionCallOutput => 5,
        ItemKind::CustomToolCall => 6,
        ItemKind::CustomToolCallOutput => 7,
        ItemKind::ToolSearchCall => 8,
        ItemKind::ToolSearchOutput => 9,
        ItemKind::WebSearchCall => 10,
        ItemKind::ImageGenerationCall => 11,
        ItemKind::Compaction => 12,
        ItemKind::ContextCompaction => 13,
        ItemKind::AdditionalTools => 14,
        ItemKind::Unknown => 15,
    }
}

/// The kind a code stands for; `None` for a code the format does not define.
pub(crate) fn kind_from_code(code: u8) -> Option<ItemKind> {
    Some(match code {
        0 => ItemKind::Message,
        1 => ItemKind::AgentMessage,
        2 => ItemKind::Reasoning,
        3 => ItemKind::LocalShellCall,
        4 => ItemKind::FunctionCall,
        5 => ItemKind::FunctionCallOutput,
        6 => ItemKind::CustomToolCall,
        7 => ItemKind::CustomToolCallOutput,
        8 => ItemKind::ToolSearchCall,
        9 => ItemKind::ToolSearchOutput,
        10 => ItemKind::WebSearchCall,
        11 => ItemKind::ImageGenerationCall,
        12 => ItemKind::Compaction,
        13 => ItemKind::ContextCompaction,
        14 => ItemKind::AdditionalTools,
        15 => ItemKind::Unknown,
        _ => return None,
    })
}

/// The numbering of roles in the format (0 = none).
pub(crate) fn role_code(role: Option<Role>) -> u8 {
    match role {
        None => 0,
        Some(Role::User) => 1,
        Some(Role::Assistant) => 2,
        Some(Role::Developer) => 3,
        Some(Role::System) => 4,
    }
}

/// The role a code stands for; the outer `None` for a code the format does not define.
pub(crate) fn role_from_code(code: u8) -> Option<Option<Role>> {
    Some(match code {
        0 => None,
        1 => Some(Role::User),
        2 => Some(Role::Assistant),
        3 => Some(Role::Developer),
        4 => Some(Role::System),
        _ => return None,
    })
}

/// Flags from their stored bits; `None` when an undefined bit is set.
pub(crate) fn flags_from_bits(bits: u8) -> Option<EntryFlags> {
    EntryFlags::from_bits(bits)
}
