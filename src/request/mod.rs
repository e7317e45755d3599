//! The request layer: the [`Prompt`], the [`ModelRequest`] around it, the [`PromptCompiler`]
//! that composes them, and the Responses API body writer (keys and values as Codex sends them).
//! `plan.rs` holds the tools of a step ([`ToolPlan`], [`ToolRegistry`]); `tools.rs` reads tool
//! specs from a file ([`read_tools`]).

mod plan;
mod prefix;
mod tools;

use std::io::Write;
use std::sync::Arc;

use serde::Serialize;
use serde::ser::{Error as _, SerializeSeq, SerializeStruct, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::history::History;
use crate::item::TurnId;
use crate::projection::{Projection, ProjectionError, ProjectionOptions};

#[cfg(feature = "testing")]
pub use plan::tool_plan_serializations;
pub use plan::{
    Runner, ToolCallKey, ToolMatch, ToolPlan, ToolPlanError, ToolPosition, ToolRegistry,
};
pub use prefix::{BodyPart, BodyPrefix};
pub use tools::{MAX_TOOLS_FILE_BYTES, ToolsError, read_tools};

/// Writing a request body failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The writer failed.
    #[error("cannot write request body")]
    Io(#[from] std::io::Error),
    /// A field (the output schema) could not be serialized.
    #[error("cannot serialize request field `{field}`")]
    Serialize {
        /// The field.
        field: &'static str,
        /// What serde_json found.
        #[source]
        source: serde_json::Error,
    },
}

/// The name Codex gives an output schema in `text.format`.
pub const OUTPUT_SCHEMA_NAME: &str = "codex_output_schema";

/// What the model is asked: instructions, the projected input, tools and output format.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// Base instructions (the `instructions` key).
    pub base_instructions: Arc<str>,
    /// The projected history.
    pub input: Projection,
    /// The tools, serialized once per plan; the executor looks the answer's calls up in it.
    pub tools: Arc<ToolPlan>,
    /// Whether the model may call tools in parallel.
    pub parallel_tool_calls: bool,
    /// A JSON schema the answer must follow.
    pub output_schema: Option<Arc<Value>>,
    /// Whether the schema is enforced strictly (Codex's default: true).
    pub output_schema_strict: bool,
}

/// Reasoning settings of a request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ReasoningConfig {
    /// Effort, e.g. `"medium"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Summary mode, e.g. `"auto"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// Output verbosity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verbosity {
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
}

/// Where in the agent loop a request is made, as the caller knows it; carried beside the
/// request, never sent. The tool generation comes from the request's plan: see
/// [`ModelRequest::step_identity`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepContext {
    /// The turn the request belongs to, if any.
    pub turn_id: Option<TurnId>,
    /// The step within the turn (each model request of a turn is one step).
    pub step_id: u64,
}

/// The identity of a request's step: its turn, its step, and the generation of the tool plan
/// its tools come from ([`ModelRequest::step_identity`]). Two requests with one identity offered
/// the model the same tools.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StepIdentity {
    /// The turn, if any.
    pub turn_id: Option<TurnId>,
    /// The step within the turn.
    pub step_id: u64,
    /// The generation of the request's [`ToolPlan`].
    pub tool_generation: u64,
}

/// What the model may do with the tools: the request's `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// `"auto"`: the model decides (Codex's choice, always).
    #[default]
    Auto,
    /// `"none"`: no tool call.
    None,
    /// `"required"`: at least one tool call.
    Required,
    /// Any other value the API accepts, sent as given, e.g.
    /// `{"type":"function","name":"shell"}`.
    Other(Value),
}

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolChoice::Auto => serializer.serialize_str("auto"),
            ToolChoice::None => serializer.serialize_str("none"),
            ToolChoice::Required => serializer.serialize_str("required"),
            ToolChoice::Other(value) => value.serialize(serializer),
        }
    }
}

/// What Codex puts in `include` when reasoning is set: the reasoning items' encrypted content, so
/// that they can be sent back in later requests.
pub const REASONING_ENCRYPTED_CONTENT: &str = "reasoning.encrypted_content";

/// How the answer is asked for: `tool_choice`, `store`, `stream` and `include`. The default is
/// what Codex sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseOptions {
    /// `tool_choice`; Codex's: [`ToolChoice::Auto`].
    pub tool_choice: ToolChoice,
    /// `store`: whether the provider keeps the response; Codex's: `false`.
    pub store: bool,
    /// `stream`: whether the response comes as server-sent events; Codex's: `true`.
    pub stream: bool,
    /// `include`; `None` sends Codex's: `["reasoning.encrypted_content"]`
    /// ([`REASONING_ENCRYPTED_CONTENT`]) when [`RequestSettings::reasoning`] is set, `[]`
    /// otherwise.
    pub include: Option<Vec<String>>,
}

impl Default for ResponseOptions {
    fn default() -> Self {
        ResponseOptions {
            tool_choice: ToolChoice::Auto,
            store: false,
            stream: true,
            include: None,
        }
    }
}

/// Request settings that do not come from the history.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestSettings {
    /// The model slug.
    pub model: String,
    /// Reasoning settings; `None` sends `"reasoning":null`.
    pub reasoning: Option<ReasoningConfig>,
    /// Output verbosity.
    pub verbosity: Option<Verbosity>,
    /// The prompt cache key; omitted when `None`, the default. Codex sends the thread id
    /// (`Some(thread_id.to_string())`), as `project --request --prompt-cache-key` does.
    pub prompt_cache_key: Option<String>,
    /// Service tier; omitted when `None`.
    pub service_tier: Option<String>,
    /// The most output tokens the answer may take (`max_output_tokens`; for Chat Completions
    /// `max_completion_tokens`, for Anthropic `max_tokens`); omitted when `None` (Anthropic
    /// requires the field: it then sends its default).
    pub max_output_tokens: Option<u32>,
}

/// A complete model request: the prompt, the request settings, how the answer is asked for, and
/// the step it belongs to.
///
/// Two ways to the body: [`ModelRequest::write_body`] copies each input item's bytes, and the
/// [`Serialize`] impl lets the request go straight into an HTTP client's JSON body (say
/// `serde_json::to_vec(&request)`). With `serde_json` both give the same bytes.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The prompt.
    pub prompt: Prompt,
    /// Request settings.
    pub settings: RequestSettings,
    /// `tool_choice`, `store`, `stream`, `include`.
    pub response: ResponseOptions,
    /// Turn and step (not sent).
    pub step: StepContext,
}

impl ModelRequest {
    /// Turn, step and the generation of the request's tool plan.
    pub fn step_identity(&self) -> StepIdentity {
        StepIdentity {
            turn_id: self.step.turn_id.clone(),
            step_id: self.step.step_id,
            tool_generation: self.prompt.tools.generation(),
        }
    }

    /// Writes the Responses API request body, copying each input item's JSON bytes (without any
    /// white space around an item's text, which is not part of its JSON value).
    ///
    /// Keys, in order: `model`, `instructions`, `input`, `tools`, `tool_choice`,
    /// `parallel_tool_calls`, `reasoning`, `store`, `stream`, `include` (the last four from
    /// [`ResponseOptions`], by default Codex's `"auto"`, `false`, `true`, and
    /// `["reasoning.encrypted_content"]` or `[]`), `prompt_cache_key` (if any), `text` (if
    /// verbosity or an output schema), `service_tier` (if any), `max_output_tokens` (if any).
    ///
    /// To get the body in memory, [`ModelRequest::body`] and [`ModelRequest::write_body_into`]
    /// size it up front.
    ///
    /// # Errors
    ///
    /// [`RequestError::Io`] from the writer, [`RequestError::Serialize`] if the schema cannot be
    /// serialized.
    pub fn write_body<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), RequestError> {
        self.write_head(out)?;
        let mut first = true;
        self.prompt.input.try_for_each_json(|json| {
            if !first {
                out.write_all(b",")?;
            }
            first = false;
            out.write_all(trim_json_space(json).as_bytes())
        })?;
        self.write_tail(out)
    }

    /// The request body as bytes, in a `Vec` allocated once at the body's size (see
    /// [`ModelRequest::write_body_into`]).
    ///
    /// # Errors
    ///
    /// As [`ModelRequest::write_body`].
    pub fn body(&self) -> Result<Vec<u8>, RequestError> {
        let mut out = Vec::new();
        self.write_body_into(&mut out)?;
        Ok(out)
    }

    /// Writes the request body into `out`, replacing what it held and keeping its capacity. The
    /// same bytes as [`ModelRequest::write_body`].
    ///
    /// A caller that sends one request after another can keep one buffer, whose memory is then
    /// warm: above the allocator's mmap threshold a fresh body is faulted in page by page, which
    /// costs more than copying the items (`docs/performance.md`, "The request body"). The body's
    /// size is known before an item is copied, so `out` grows at most once.
    ///
    /// # Errors
    ///
    /// [`RequestError::Serialize`] if the schema cannot be serialized; `out` is then left empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::{History, PromptCompiler, RequestSettings, StepContext};
    ///
    /// let mut history = History::new();
    /// history.record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#)?;
    /// let compiler = PromptCompiler::new(RequestSettings { model: "gpt-5".into(), ..Default::default() });
    /// let mut body = Vec::new();
    /// for _ in 0..3 {
    ///     let request = compiler.compile(&history, StepContext::default())?;
    ///     request.write_body_into(&mut body)?; // the buffer is reused
    ///     assert_eq!(body, request.body()?);
    /// }
    /// # Ok::<(), agent_history::Error>(())
    /// ```
    pub fn write_body_into(&self, out: &mut Vec<u8>) -> Result<(), RequestError> {
        out.clear();
        // The parts around the input are small (settings, instructions, tools): written apart
        // first, so that the body's size is known before anything is copied into it.
        let mut parts = Vec::new();
        self.write_head(&mut parts)?;
        let head = parts.len();
        self.write_tail(&mut parts)?;
        // The array's brackets are written by the head and the tail.
        let input = self.prompt.input.json_array_len().saturating_sub(2);
        out.reserve(parts.len().saturating_add(input));
        out.extend_from_slice(&parts[..head]);
        let mut first = true;
        let _ = self.prompt.input.try_for_each_json(|json| {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(trim_json_space(json).as_bytes());
            Ok::<(), std::convert::Infallible>(())
        });
        out.extend_from_slice(&parts[head..]);
        Ok(())
    }

    /// The body up to the input's first item: `{"model":…,"instructions":…,"input":[`.
    fn write_head<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), RequestError> {
        out.write_all(b"{\"model\":")?;
        write_json(out, "model", &self.settings.model)?;
        out.write_all(b",\"instructions\":")?;
        write_json(out, "instructions", &*self.prompt.base_instructions)?;
        out.write_all(b",\"input\":[")?;
        Ok(())
    }

    /// The body after the input's last item: `],"tools":…}`.
    fn write_tail<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), RequestError> {
        let settings = &self.settings;
        let prompt = &self.prompt;
        let response = &self.response;
        out.write_all(b"],\"tools\":")?;
        // Serialized when the plan was built: copied, never serialized per request.
        out.write_all(prompt.tools.json().as_bytes())?;
        out.write_all(b",\"tool_choice\":")?;
        write_json(out, "tool_choice", &response.tool_choice)?;
        out.write_all(b",\"parallel_tool_calls\":")?;
        write_json(out, "parallel_tool_calls", &prompt.parallel_tool_calls)?;
        out.write_all(b",\"reasoning\":")?;
        write_json(out, "reasoning", &settings.reasoning)?;
        out.write_all(b",\"store\":")?;
        write_json(out, "store", &response.store)?;
        out.write_all(b",\"stream\":")?;
        write_json(out, "stream", &response.stream)?;
        out.write_all(b",\"include\":")?;
        write_json(out, "include", &self.include())?;
        if let Some(key) = &settings.prompt_cache_key {
            out.write_all(b",\"prompt_cache_key\":")?;
            write_json(out, "prompt_cache_key", key)?;
        }
        if let Some(text) = self.text_controls() {
            out.write_all(b",\"text\":")?;
            write_json(out, "text", &text)?;
        }
        if let Some(tier) = &settings.service_tier {
            out.write_all(b",\"service_tier\":")?;
            write_json(out, "service_tier", tier)?;
        }
        if let Some(max) = settings.max_output_tokens {
            out.write_all(b",\"max_output_tokens\":")?;
            write_json(out, "max_output_tokens", &max)?;
        }
        out.write_all(b"}")?;
        Ok(())
    }

    /// The `include` list: the one set in [`ResponseOptions::include`], or Codex's.
    fn include(&self) -> Vec<&str> {
        match &self.response.include {
            Some(include) => include.iter().map(String::as_str).collect(),
            None if self.settings.reasoning.is_some() => vec![REASONING_ENCRYPTED_CONTENT],
            None => Vec::new(),
        }
    }

    fn text_controls(&self) -> Option<TextControls<'_>> {
        let format = self.prompt.output_schema.as_deref().map(|schema| Format {
            kind: "json_schema",
            strict: self.prompt.output_schema_strict,
            schema,
            name: OUTPUT_SCHEMA_NAME,
        });
        if format.is_none() && self.settings.verbosity.is_none() {
            return None;
        }
        Some(TextControls {
            verbosity: self.settings.verbosity,
            format,
        })
    }
}

/// The request body, as [`ModelRequest::write_body`] writes it: with `serde_json`, the same
/// bytes. Each input item is passed on as a [`RawValue`], so its text is checked to be JSON (the
/// items of a history always are; a snapshot opened as trusted is taken without that check) but
/// not rebuilt: key order, spacing and number spelling stay as recorded. Meant for JSON
/// serializers: another format gets `serde_json`'s raw-value wrapper for each item.
///
/// # Errors
///
/// The serializer's error when an input item is not JSON, naming its position.
impl Serialize for ModelRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let settings = &self.settings;
        let prompt = &self.prompt;
        let response = &self.response;
        let text = self.text_controls();
        let fields = 10
            + usize::from(settings.prompt_cache_key.is_some())
            + usize::from(text.is_some())
            + usize::from(settings.service_tier.is_some())
            + usize::from(settings.max_output_tokens.is_some());
        let mut body = serializer.serialize_struct("ModelRequest", fields)?;
        body.serialize_field("model", &settings.model)?;
        body.serialize_field("instructions", &*prompt.base_instructions)?;
        body.serialize_field("input", &Input(&prompt.input))?;
        body.serialize_field("tools", &*prompt.tools)?;
        body.serialize_field("tool_choice", &response.tool_choice)?;
        body.serialize_field("parallel_tool_calls", &prompt.parallel_tool_calls)?;
        body.serialize_field("reasoning", &settings.reasoning)?;
        body.serialize_field("store", &response.store)?;
        body.serialize_field("stream", &response.stream)?;
        body.serialize_field("include", &self.include())?;
        match &settings.prompt_cache_key {
            Some(key) => body.serialize_field("prompt_cache_key", key)?,
            None => body.skip_field("prompt_cache_key")?,
        }
        match &text {
            Some(text) => body.serialize_field("text", text)?,
            None => body.skip_field("text")?,
        }
        match &settings.service_tier {
            Some(tier) => body.serialize_field("service_tier", tier)?,
            None => body.skip_field("service_tier")?,
        }
        match &settings.max_output_tokens {
            Some(max) => body.serialize_field("max_output_tokens", max)?,
            None => body.skip_field("max_output_tokens")?,
        }
        body.end()
    }
}

/// The input items of a request, each passed on as its JSON text.
struct Input<'a>(&'a Projection);

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut items = serializer.serialize_seq(Some(self.0.len()))?;
        for (index, json) in self.0.iter().enumerate() {
            let item: &RawValue = serde_json::from_str(json).map_err(|error| {
                S::Error::custom(format_args!("input item {index} is not JSON: {error}"))
            })?;
            items.serialize_element(item)?;
        }
        items.end()
    }
}

/// `text` without the JSON white space (space, tab, line feed, carriage return) around it.
/// Byte by byte: an item's text starts with `{` and ends with `}`, so this is two comparisons.
fn trim_json_space(text: &str) -> &str {
    let space = |byte: &u8| matches!(byte, b' ' | b'\t' | b'\n' | b'\r');
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|b| !space(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !space(b))
        .map_or(start, |last| last + 1);
    // Both ends are next to ASCII bytes (or the ends of the text): character boundaries.
    text.get(start..end).unwrap_or(text)
}

#[derive(Serialize)]
struct TextControls<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    verbosity: Option<Verbosity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<Format<'a>>,
}

#[derive(Serialize)]
struct Format<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    strict: bool,
    schema: &'a Value,
    name: &'static str,
}

fn write_json<W: Write + ?Sized, T: Serialize + ?Sized>(
    out: &mut W,
    field: &'static str,
    value: &T,
) -> Result<(), RequestError> {
    serde_json::to_writer(&mut *out, value).map_err(|source| {
        if source.is_io() {
            RequestError::Io(source.into())
        } else {
            RequestError::Serialize { field, source }
        }
    })
}

/// Composes model requests from a history. It performs no I/O and never mutates the history:
/// each call projects the history (a persistent value) and wraps the projection with the fixed
/// parts of the request.
///
/// # Examples
///
/// ```
/// use agent_history::{History, PromptCompiler, RequestSettings, StepContext};
///
/// let mut history = History::new();
/// history.record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#)?;
/// let compiler = PromptCompiler::new(RequestSettings { model: "gpt-5".into(), ..Default::default() })
///     .with_base_instructions("Be brief.");
/// let request = compiler.compile(&history, StepContext::default())?;
/// let body = String::from_utf8(request.body()?).unwrap();
/// assert!(body.starts_with(r#"{"model":"gpt-5","instructions":"Be brief.","input":[{"type":"message""#));
/// # Ok::<(), agent_history::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PromptCompiler {
    settings: RequestSettings,
    projection: ProjectionOptions,
    base_instructions: Arc<str>,
    tools: Arc<ToolPlan>,
    parallel_tool_calls: bool,
    output_schema: Option<Arc<Value>>,
    output_schema_strict: bool,
    response: ResponseOptions,
}

impl PromptCompiler {
    /// A compiler with these settings, default projection options, no instructions, no tools and
    /// Codex's [`ResponseOptions`].
    pub fn new(settings: RequestSettings) -> Self {
        PromptCompiler {
            response: ResponseOptions::default(),
            settings,
            projection: ProjectionOptions::default(),
            base_instructions: Arc::from(""),
            tools: Arc::new(ToolPlan::empty()),
            parallel_tool_calls: false,
            output_schema: None,
            output_schema_strict: true,
        }
    }

    /// Sets the projection options.
    pub fn with_projection(mut self, options: ProjectionOptions) -> Self {
        self.projection = options;
        self
    }

    /// Sets the base instructions.
    pub fn with_base_instructions(mut self, text: impl Into<Arc<str>>) -> Self {
        self.base_instructions = text.into();
        self
    }

    /// Sets the tool plan and whether its tools may be called in parallel.
    pub fn with_tools(mut self, plan: impl Into<Arc<ToolPlan>>, parallel_tool_calls: bool) -> Self {
        self.tools = plan.into();
        self.parallel_tool_calls = parallel_tool_calls;
        self
    }

    /// Sets the tool plan of the requests compiled from now on, say the current plan of a
    /// [`ToolRegistry`] before each step. Requests compiled before keep theirs.
    pub fn set_tools(&mut self, plan: impl Into<Arc<ToolPlan>>) {
        self.tools = plan.into();
    }

    /// Sets an output schema (strict by default, as in Codex).
    pub fn with_output_schema(mut self, schema: Value, strict: bool) -> Self {
        self.output_schema = Some(Arc::new(schema));
        self.output_schema_strict = strict;
        self
    }

    /// Sets `tool_choice`, `store`, `stream` and `include`.
    pub fn with_response_options(mut self, options: ResponseOptions) -> Self {
        self.response = options;
        self
    }

    /// Projects `history` and composes the request for `step`, with the current tool plan (its
    /// generation is the request's [`StepIdentity::tool_generation`]).
    ///
    /// # Errors
    ///
    /// [`ProjectionError`] when the projection is strict and the history has violations.
    pub fn compile(
        &self,
        history: &History,
        step: StepContext,
    ) -> Result<ModelRequest, ProjectionError> {
        Ok(self.request(history.project(&self.projection)?, step))
    }

    /// The request for `step` with `input` as its projection (crate-internal: the provider
    /// layer compiles requests for other targets around their projections).
    pub(crate) fn request(&self, input: Projection, step: StepContext) -> ModelRequest {
        ModelRequest {
            prompt: Prompt {
                base_instructions: Arc::clone(&self.base_instructions),
                input,
                tools: Arc::clone(&self.tools),
                parallel_tool_calls: self.parallel_tool_calls,
                output_schema: self.output_schema.clone(),
                output_schema_strict: self.output_schema_strict,
            },
            settings: self.settings.clone(),
            response: self.response.clone(),
            step,
        }
    }
}
