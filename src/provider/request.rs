//! One request compiler for every target: [`PromptCompiler::compile_for`] compiles a Chat
//! Completions or Anthropic Messages request as [`PromptCompiler::compile`] does a Responses
//! one (model, instructions, tools from the [`ToolPlan`](crate::ToolPlan), settings), around the
//! target's projection; [`TargetRequest`] writes its body.

use std::io::Write;

use serde_json::Value;

use crate::history::History;
use crate::request::{ModelRequest, PromptCompiler, RequestError, StepContext, StepIdentity};

use super::Target;
use super::anthropic::Anthropic;
use super::assembly::Format;
use super::chat::Chat;
use super::options::TargetOptions;
use super::projection::{Inner, TargetProjection};
use super::report::{TargetProjectionError, TargetReport};
use super::tools::DroppedTool;

/// A model request for any target: the compiled request (prompt, settings, response options,
/// step), the projection for the target, and the tools converted for it.
#[derive(Debug, Clone)]
pub struct TargetRequest {
    request: ModelRequest,
    projection: TargetProjection,
    /// The converted tools' JSON array (empty when none is left; unused for Responses, whose
    /// plan holds its own).
    tools: String,
    dropped: Vec<DroppedTool>,
    left_out: Vec<&'static str>,
}

impl PromptCompiler {
    /// Projects `history` for `target` and composes the request for `step` with the compiler's
    /// settings, instructions, tools and response options. The projection uses
    /// `target.projection`, not the compiler's projection options. For [`Target::Responses`] the
    /// body is exactly [`PromptCompiler::compile`]'s. Settings the target's body has no field
    /// for are not sent: [`TargetRequest::left_out`] names them. Tool specs it cannot take are
    /// left out: [`TargetRequest::dropped_tools`] names them.
    ///
    /// # Errors
    ///
    /// As [`History::project_for`].
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::{History, PromptCompiler, RequestSettings, StepContext, Target, TargetOptions};
    ///
    /// let mut history = History::new();
    /// history.record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#)?;
    /// let compiler = PromptCompiler::new(RequestSettings { model: "claude-x".into(), ..Default::default() })
    ///     .with_base_instructions("Be brief.");
    /// let target = TargetOptions::new(Target::AnthropicMessages);
    /// let request = compiler.compile_for(&history, &target, StepContext::default())?;
    /// let body = String::from_utf8(request.body()?).unwrap();
    /// assert_eq!(
    ///     body,
    ///     r#"{"model":"claude-x","max_tokens":8192,"system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true}"#
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile_for(
        &self,
        history: &History,
        target: &TargetOptions,
        step: StepContext,
    ) -> Result<TargetRequest, TargetProjectionError> {
        let projection = history.project_for(target)?;
        let request = self.request(projection.projection().clone(), step);
        let (tools, dropped, left_out) = match target.target {
            Target::Responses => (Vec::new(), Vec::new(), Vec::new()),
            Target::ChatCompletions => for_target::<Chat>(&request),
            Target::AnthropicMessages => for_target::<Anthropic>(&request),
        };
        let tools = if tools.is_empty() {
            String::new()
        } else {
            Value::Array(tools).to_string()
        };
        Ok(TargetRequest {
            request,
            projection,
            tools,
            dropped,
            left_out,
        })
    }
}

/// The tools of `request` converted for target `F`, those left out, and the settings left out.
fn for_target<F: Format>(
    request: &ModelRequest,
) -> (Vec<Value>, Vec<DroppedTool>, Vec<&'static str>) {
    let (tools, dropped) = F::tools(request.prompt.tools.specs());
    (tools, dropped, left_out(request, F::SENDS_REASONING_EFFORT))
}

/// The settings of `request` that Chat Completions and Anthropic Messages bodies have no field
/// for; `effort`: the reasoning effort has one (Chat's `reasoning_effort`).
fn left_out(request: &ModelRequest, effort: bool) -> Vec<&'static str> {
    let (settings, response) = (&request.settings, &request.response);
    let reasoning = settings.reasoning.as_ref();
    [
        (
            "reasoning",
            !effort && reasoning.is_some_and(|r| r.effort.is_some()),
        ),
        (
            "reasoning.summary",
            reasoning.is_some_and(|r| r.summary.is_some()),
        ),
        ("verbosity", settings.verbosity.is_some()),
        ("prompt_cache_key", settings.prompt_cache_key.is_some()),
        ("service_tier", settings.service_tier.is_some()),
        ("output_schema", request.prompt.output_schema.is_some()),
        ("store", response.store),
        ("include", response.include.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect()
}

impl TargetRequest {
    /// The target.
    pub fn target(&self) -> Target {
        self.projection.target()
    }

    /// The compiled request: the prompt (with the Responses projection and the tool plan the
    /// answer's calls are looked up in), the settings, the response options, the step.
    pub fn request(&self) -> &ModelRequest {
        &self.request
    }

    /// The projection for the target.
    pub fn projection(&self) -> &TargetProjection {
        &self.projection
    }

    /// What was repaired, by the Responses projection and by the target.
    pub fn report(&self) -> &TargetReport {
        self.projection.report()
    }

    /// Turn, step and the generation of the request's tool plan.
    pub fn step_identity(&self) -> StepIdentity {
        self.request.step_identity()
    }

    /// The tool specs the target has no equivalent for (or refuses), left out of the body.
    pub fn dropped_tools(&self) -> &[DroppedTool] {
        &self.dropped
    }

    /// The settings that are set but that the target's body has no field for (not sent):
    /// `reasoning` (its effort: Anthropic), `reasoning.summary`, `verbosity`, `prompt_cache_key`,
    /// `service_tier`, `output_schema`, `store` (when true) and `include`.
    pub fn left_out(&self) -> &[&'static str] {
        &self.left_out
    }

    /// Writes the request body: for Responses, [`ModelRequest::write_body`]'s; for the other
    /// targets, the fields `docs/providers.md` lists. The messages' bytes are copied from the
    /// renderings.
    ///
    /// # Errors
    ///
    /// [`RequestError::Io`] from the writer, [`RequestError::Serialize`] if a Responses field
    /// cannot be serialized.
    pub fn write_body<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), RequestError> {
        match self.projection.inner() {
            Inner::Responses => self.request.write_body(out),
            Inner::Chat(messages) => Chat::write_body(&self.request, messages, &self.tools, out),
            Inner::Anthropic(messages) => {
                Anthropic::write_body(&self.request, messages, &self.tools, out)
            }
        }
    }

    /// The request body as bytes, in a `Vec` allocated once at about its size.
    ///
    /// # Errors
    ///
    /// As [`TargetRequest::write_body`].
    pub fn body(&self) -> Result<Vec<u8>, RequestError> {
        let mut out = Vec::new();
        self.write_body_into(&mut out)?;
        Ok(out)
    }

    /// Writes the request body into `out`, replacing what it held and keeping its capacity (see
    /// [`ModelRequest::write_body_into`]): `out` is first grown to the messages' size (known
    /// without writing them) and an estimate of the rest.
    ///
    /// # Errors
    ///
    /// As [`TargetRequest::write_body`]; `out` is then left empty.
    pub fn write_body_into(&self, out: &mut Vec<u8>) -> Result<(), RequestError> {
        if let Inner::Responses = self.projection.inner() {
            return self.request.write_body_into(out);
        }
        out.clear();
        let around = self.tools.len()
            + self.request.prompt.base_instructions.len()
            + self.request.settings.model.len()
            + 256;
        out.reserve(self.projection.json_len().saturating_add(around));
        let written = self.write_body(out);
        if written.is_err() {
            out.clear();
        }
        written
    }
}
