//! The item layer, the lowest floor: the typed wire model, the stored [`Entry`], ids, kinds and
//! the one pairing table, what an item means for turns, and the token heuristic.
//!
//! Nothing here knows of histories, projections, rollouts or snapshots. An entry's text is either
//! owned or a slice of a shared read-only buffer; the snapshot layer provides such a buffer.

mod entry;
mod error;
mod estimate;
mod ids;
mod inter_agent;
mod kind;
mod model;
mod output;
mod parse;
mod turn;
mod work;

pub(crate) use entry::{Body, Payload, StripKey, StrippedForm, parse_item, turn_role};
pub use entry::{Entry, EntryFlags};
pub(crate) use error::json_type;
pub use error::{ItemError, error_chain};
pub(crate) use estimate::tokens_for_bytes;
pub use estimate::{
    BYTES_PER_TOKEN, IMAGE_ESTIMATE_BYTES, ORIGINAL_FILE_IMAGE_ESTIMATE_BYTES, approx_token_count,
};
pub use ids::{CallId, ItemId, SYNTHETIC_ID_NAMESPACE, ThreadId, TurnId, synthetic_output_id};
pub(crate) use inter_agent::InterAgentCommunication;
pub use kind::{Family, ItemKind, MissingOutput, Pairing};
pub use model::{
    AdditionalTools, AgentContentItem, AgentMessage, Compaction, ContentItem, ContextCompaction,
    CustomToolCall, CustomToolCallOutput, Execution, FunctionCall, FunctionCallOutput, ImageDetail,
    ImageGenerationCall, ImagePart, LocalShellAction, LocalShellCall, LocalShellStatus, Message,
    MessagePhase, Metadata, OutputContentItem, OutputPayload, Reasoning, ReasoningContent,
    ReasoningSummary, ResponseItem, Role, ToolSearchCall, ToolSearchOutput, WebSearchAction,
    WebSearchCall,
};
pub(crate) use output::OutputBody;
pub use turn::{
    SUMMARY_PREFIX, is_contextual_developer_text, is_contextual_user_text, is_summary_text,
};
pub(crate) use turn::{
    TurnRole, ends_with_ignore_case, is_first_turn_settings_text, kinds_mark_context,
    starts_with_ignore_case,
};
pub(crate) use work::{count_conversion, count_turn_steps};
#[cfg(feature = "testing")]
pub use work::{entry_reads, item_conversions, turn_steps};
