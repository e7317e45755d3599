//! The request layer: the [`Prompt`], the [`ModelRequest`] around it, the [`PromptCompiler`]
//! that composes them, and the Responses API body writer (keys and values as Codex sends them).

use std::io::Write;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::history::History;
use crate::item::TurnId;
use crate::projection::{Projection, ProjectionError, ProjectionOptions};

/// Writing a request body failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The writer failed.
    #[error("cannot write request body")]
    Io(#[from] std::io::Error),
    /// A field (tools, schema) could not be serialized.
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
    /// Tool definitions as JSON.
    pub tools: Arc<[Value]>,
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

/// Where in the agent loop a request is made; carried beside the request, never sent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepContext {
    /// The turn the request belongs to, if any.
    pub turn_id: Option<TurnId>,
    /// The step within the turn (each model request of a turn is one step).
    pub step_id: u64,
    /// The generation of the tool plan the request's tools come from.
    pub tool_plan_generation: u64,
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
    /// The prompt cache key (Codex uses the thread id); omitted when `None`.
    pub prompt_cache_key: Option<String>,
    /// Service tier; omitted when `None`.
    pub service_tier: Option<String>,
}

/// A complete model request: the prompt, the request settings and the step it belongs to.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The prompt.
    pub prompt: Prompt,
    /// Request settings.
    pub settings: RequestSettings,
    /// Turn, step and tool-plan generation (not sent).
    pub step: StepContext,
}

impl ModelRequest {
    /// Writes the Responses API request body, copying each input item's JSON bytes.
    ///
    /// Keys, in order: `model`, `instructions`, `input`, `tools`, `tool_choice` (`"auto"`),
    /// `parallel_tool_calls`, `reasoning`, `store` (`false`), `stream` (`true`), `include`,
    /// `prompt_cache_key` (if any), `text` (if verbosity or an output schema), `service_tier`
    /// (if any).
    ///
    /// # Errors
    ///
    /// [`RequestError::Io`] from the writer, [`RequestError::Serialize`] if a tool or the schema
    /// cannot be serialized.
    pub fn write_body<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), RequestError> {
        let settings = &self.settings;
        let prompt = &self.prompt;
        out.write_all(b"{\"model\":")?;
        write_json(out, "model", &settings.model)?;
        out.write_all(b",\"instructions\":")?;
        write_json(out, "instructions", &*prompt.base_instructions)?;
        out.write_all(b",\"input\":")?;
        prompt.input.write_json_array(out)?;
        out.write_all(b",\"tools\":")?;
        write_json(out, "tools", &*prompt.tools)?;
        out.write_all(b",\"tool_choice\":\"auto\",\"parallel_tool_calls\":")?;
        write_json(out, "parallel_tool_calls", &prompt.parallel_tool_calls)?;
        out.write_all(b",\"reasoning\":")?;
        write_json(out, "reasoning", &settings.reasoning)?;
        out.write_all(b",\"store\":false,\"stream\":true,\"include\":")?;
        let include: &[&str] = if settings.reasoning.is_some() {
            &["reasoning.encrypted_content"]
        } else {
            &[]
        };
        write_json(out, "include", &include)?;
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
        out.write_all(b"}")?;
        Ok(())
    }

    /// The request body as bytes.
    ///
    /// # Errors
    ///
    /// As [`ModelRequest::write_body`].
    pub fn body(&self) -> Result<Vec<u8>, RequestError> {
        let mut out = Vec::with_capacity(4096);
        self.write_body(&mut out)?;
        Ok(out)
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
    tools: Arc<[Value]>,
    parallel_tool_calls: bool,
    output_schema: Option<Arc<Value>>,
    output_schema_strict: bool,
}

impl PromptCompiler {
    /// A compiler with these settings, default projection options, no instructions and no tools.
    pub fn new(settings: RequestSettings) -> Self {
        PromptCompiler {
            settings,
            projection: ProjectionOptions::default(),
            base_instructions: Arc::from(""),
            tools: Arc::from(Vec::new()),
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

    /// Sets the tools and whether they may be called in parallel.
    pub fn with_tools(mut self, tools: Vec<Value>, parallel_tool_calls: bool) -> Self {
        self.tools = Arc::from(tools);
        self.parallel_tool_calls = parallel_tool_calls;
        self
    }

    /// Sets an output schema (strict by default, as in Codex).
    pub fn with_output_schema(mut self, schema: Value, strict: bool) -> Self {
        self.output_schema = Some(Arc::new(schema));
        self.output_schema_strict = strict;
        self
    }

    /// Projects `history` and composes the request for `step`.
    ///
    /// # Errors
    ///
    /// [`ProjectionError`] when the projection is strict and the history has violations.
    pub fn compile(
        &self,
        history: &History,
        step: StepContext,
    ) -> Result<ModelRequest, ProjectionError> {
        let input = history.project(&self.projection)?;
        Ok(ModelRequest {
            prompt: Prompt {
                base_instructions: Arc::clone(&self.base_instructions),
                input,
                tools: Arc::clone(&self.tools),
                parallel_tool_calls: self.parallel_tool_calls,
                output_schema: self.output_schema.clone(),
                output_schema_strict: self.output_schema_strict,
            },
            settings: self.settings.clone(),
            step,
        })
    }
}
