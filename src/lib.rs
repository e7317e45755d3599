#![doc = include_str!("../README.md")]
//!
//! # Layers
//!
//! The modules are private; everything public is re-exported below, grouped by the layer that
//! defines it. Data flows item → history → projection → request; snapshot, rollout and session
//! sit beside and above (`docs/architecture.md` draws the layers, and a test keeps the imports
//! going down them).

mod error;
mod history;
mod item;
mod projection;
mod provider;
mod request;
mod rollout;
mod session;
mod snapshot;
mod stream;
mod transcript;
mod world;

// The item layer: the wire model, stored entries, ids, kinds and pairing, turns, tokens.
pub use item::{
    AdditionalTools, AgentContentItem, AgentMessage, BYTES_PER_TOKEN, CallId, Compaction,
    ContentItem, ContextCompaction, CustomToolCall, CustomToolCallOutput, Entry, EntryFlags,
    Execution, Family, FunctionCall, FunctionCallOutput, IMAGE_ESTIMATE_BYTES, ImageDetail,
    ImageGenerationCall, ImagePart, ItemError, ItemId, ItemKind, LocalShellAction, LocalShellCall,
    LocalShellStatus, Message, MessagePhase, Metadata, MissingOutput,
    ORIGINAL_FILE_IMAGE_ESTIMATE_BYTES, OutputContentItem, OutputPayload, Pairing, Reasoning,
    ReasoningContent, ReasoningSummary, ResponseItem, Role, SUMMARY_PREFIX, SYNTHETIC_ID_NAMESPACE,
    ThreadId, ToolSearchCall, ToolSearchOutput, TurnId, WebSearchAction, WebSearchCall,
    approx_token_count, error_chain, is_contextual_developer_text, is_contextual_user_text,
    is_summary_text, synthetic_output_id,
};

// The world-state layer: the runtime context a model is shown, as sections with snapshots and
// their merge patches, rendered into fragments and the messages that carry them.
pub use world::{
    ContextUpdate, ContextualFragment, FragmentMarkers, FragmentMatcher, FragmentRole, JsonSection,
    Placement, Previous, RenderedWorld, Section, UpdateContent, WorldSnapshot, WorldState,
    WorldStateChange, WorldStateError, WorldStateHash, merge_patch, merge_updates,
    remove_null_fields, split_prefix_updates,
};

// The history layer: the persistent history, recording, truncation, compaction, sharing
// between threads.
pub use history::{
    COMPACT_USER_MESSAGE_TOKENS, Compacted, DEFAULT_TRUNCATION, EMPTY_SUMMARY, FilterReason,
    History, HistoryPublisher, HistoryStats, KindStats, ParseTruncationError, Published, Recorded,
    SharedHistory, TruncationPolicy, WorldStateUpdate, summary_text, truncate_text,
};

// The projection layer: a history turned into a model's input, repaired and reported.
pub use projection::{
    ABORTED_OUTPUT, AUDIO_PLACEHOLDER, CommonPrefix, DifferingItem, FirstDifference,
    IMAGE_PLACEHOLDER, Location, Modalities, ParseModalitiesError, Projection, ProjectionError,
    ProjectionOptions, Repair, RepairKind, RepairMode, RepairReport, UnknownItems, Violation,
    ViolationKind,
};

// The request layer: prompts, model requests, the Responses API body, tool plans, tools files.
pub use request::{
    BodyPart, BodyPrefix, MAX_TOOLS_FILE_BYTES, ModelRequest, OUTPUT_SCHEMA_NAME, Prompt,
    PromptCompiler, REASONING_ENCRYPTED_CONTENT, ReasoningConfig, RequestError, RequestSettings,
    ResponseOptions, Runner, StepContext, StepIdentity, ToolCallKey, ToolChoice, ToolMatch,
    ToolPlan, ToolPlanError, ToolPosition, ToolRegistry, ToolsError, Verbosity, read_tools,
};

// The provider layer: the model API a request is for; per-target projections and validators.
pub use provider::{
    ANTHROPIC_BLOCK_KEY, ANTHROPIC_LEADING_USER_TEXT, AnthropicTools, CUSTOM_TOOL_INPUT_KEY,
    ChatTools, DEFAULT_ANTHROPIC_MAX_TOKENS, DeveloperRole, DroppedTool, Finding, InputFallback,
    LOCAL_SHELL_FUNCTION, ParseTargetError, PlaceholderReason, RAW_ARGUMENTS_KEY, Rule, Severity,
    TOOL_IMAGE_PLACEHOLDER, Target, TargetOptions, TargetProjection, TargetProjectionError,
    TargetRepair, TargetRepairKind, TargetReport, TargetRequest, UNNAMED_TOOL_FUNCTION, Validation,
    Wording, anthropic_tool_choice, anthropic_tools, chat_tool_choice, chat_tools, validate,
};

// The stream layer: a streamed model response (OpenAI Responses, Chat Completions, Anthropic
// Messages) recorded as complete items only.
pub use stream::{
    AnthropicAccumulator, ChatAccumulator, DeltaKind, MAX_EVENT_BYTES, NotUtf8Event, PartialItem,
    RecordFailure, ResponsesAccumulator, SseDecoder, SseEvent, StreamAccumulator, StreamEnd,
    StreamError, StreamSummary, StreamTarget, Update,
};

// The snapshot layer: memory-mapped archives of a history.
pub use snapshot::{
    ExistingFile, OpenTurn, PrefixState, Replace, RolloutPosition, SNAPSHOT_FORMAT_VERSION,
    Snapshot, SnapshotError, SnapshotHeader, SnapshotOptions, SnapshotStep, SnapshotTrust,
    is_snapshot, open_snapshot,
};

// The rollout layer: reading, resuming and writing Codex rollout files.
pub use rollout::{
    BaseInstructions, BinaryContent, CODEX_HOME_VAR, CodexWriterLock, Compactions,
    DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_REPORTED, Durability, FallbackReason, FileSink,
    HistoryBase, HistoryMode, IncompleteTurn, LeftOut, LineKind, LineRepair, LineageFile,
    LineageProblem, LoadReport, OpenCall, OrdinalDamage, Pagination, READER_LABEL, ReadMode,
    ReadOptions, RepairedLine, ResumeOptions, ResumeSource, Resumed, Rollout, RolloutError,
    RolloutLine, RolloutSink, RolloutText, RolloutWriteError, RolloutWriter, SessionMeta,
    SkipCounts, SkipReason, SkippedLine, WorldStateIssue, WorldStateProblem, WorldStateReport,
    WriteStep, codex_home, is_compressed, open_rollout, resume_file, resume_reader,
    rollout_file_ids, rollout_file_name,
};

// The transcript layer: Claude Code transcripts read, their conversation chosen as a resume
// does, held in a history.
pub use transcript::{
    Branch, CompactCut, Conversation, ConversationReport, Dropped, DroppedKind, MessageUsage,
    ParseSessionFormatError, REPAIR_MARK_KEY, REPAIR_RESULT_TEXT, Rescue, RescueKind,
    ResumedTranscript, SentRecord, SessionFormat, Transcript, TranscriptError, TranscriptRepair,
    TranscriptReport, UsageTotals,
};

// The session layer: a history and its rollout kept in step.
pub use session::{ActiveTurn, ResumedSession, Session, TurnAbortReason};

// Any error of the crate.
pub use error::Error;

/// `docs/library.md`, whose examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/library.md")]
pub struct LibraryDoc;

/// `docs/claude-code.md`, whose example is compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../docs/claude-code.md")]
pub struct ClaudeCodeDoc;

#[cfg(feature = "testing")]
pub mod testing;
