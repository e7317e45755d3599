//! Whole request bodies: `ToolPlan`, `PromptCompiler`, `Request`, and `validate` of a body.

use std::sync::Arc;

use agent_history::{
    PromptCompiler, ReasoningConfig, RequestSettings, ResponseOptions, StepContext, Target,
    TargetRequest, ToolChoice, ToolPlan,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use serde_json::Value;

use crate::history::{PyHistory, repair_counts, repair_list, target_options};
use crate::{errors, json};

/// An immutable list of tool specs (Responses' `tools` form), serialized once.
#[pyclass(frozen, module = "agenthistory", name = "ToolPlan")]
pub struct PyToolPlan {
    plan: Arc<ToolPlan>,
}

#[pymethods]
impl PyToolPlan {
    #[new]
    fn new(specs: &Bound<'_, PyAny>) -> PyResult<PyToolPlan> {
        let specs = specs
            .try_iter()?
            .map(|spec| json_value(&spec?))
            .collect::<PyResult<Vec<Value>>>()?;
        let plan = ToolPlan::new(specs).map_err(|e| errors::library(&e))?;
        Ok(PyToolPlan {
            plan: Arc::new(plan),
        })
    }

    /// The specs, as dicts.
    fn specs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::to_python(py, self.plan.specs())
    }

    fn __len__(&self) -> usize {
        self.plan.len()
    }
}

/// Any JSON-shaped value, or JSON text (`str`, `bytes`), as a `serde_json::Value`.
fn json_value(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    let text = json::item_text(value)?;
    serde_json::from_str(&text).map_err(|e| errors::argument(format!("not JSON: {e}")))
}

/// What a request may do with the tools, from `"auto"`, `"none"`, `"required"` or any other
/// value the API takes.
fn tool_choice(value: &Bound<'_, PyAny>) -> PyResult<ToolChoice> {
    if let Ok(name) = value.cast::<PyString>() {
        match name.to_str()? {
            "auto" => return Ok(ToolChoice::Auto),
            "none" => return Ok(ToolChoice::None),
            "required" => return Ok(ToolChoice::Required),
            _ => {}
        }
    }
    Ok(ToolChoice::Other(json_value(value)?))
}

/// Compiles whole request bodies for a history: model, instructions, tools and settings, with
/// the history's repaired projection as the input.
#[pyclass(frozen, module = "agenthistory", name = "PromptCompiler")]
pub struct PyPromptCompiler {
    compiler: PromptCompiler,
}

#[pymethods]
impl PyPromptCompiler {
    #[new]
    #[pyo3(signature = (
        model, instructions=None, tools=None, parallel_tool_calls=false, reasoning_effort=None,
        reasoning_summary=None, max_output_tokens=None, prompt_cache_key=None, tool_choice=None,
        store=None, stream=None, include=None,
    ))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per request setting.
    fn new(
        model: String,
        instructions: Option<String>,
        tools: Option<&Bound<'_, PyAny>>,
        parallel_tool_calls: bool,
        reasoning_effort: Option<String>,
        reasoning_summary: Option<String>,
        max_output_tokens: Option<u32>,
        prompt_cache_key: Option<String>,
        tool_choice: Option<&Bound<'_, PyAny>>,
        store: Option<bool>,
        stream: Option<bool>,
        include: Option<Vec<String>>,
    ) -> PyResult<PyPromptCompiler> {
        let reasoning = (reasoning_effort.is_some() || reasoning_summary.is_some()).then_some(
            ReasoningConfig {
                effort: reasoning_effort,
                summary: reasoning_summary,
            },
        );
        let settings = RequestSettings {
            model,
            reasoning,
            prompt_cache_key,
            max_output_tokens,
            ..RequestSettings::default()
        };
        let defaults = ResponseOptions::default();
        let response = ResponseOptions {
            tool_choice: tool_choice
                .map(self::tool_choice)
                .transpose()?
                .unwrap_or(defaults.tool_choice),
            store: store.unwrap_or(defaults.store),
            stream: stream.unwrap_or(defaults.stream),
            include: include.or(defaults.include),
        };
        let plan = match tools {
            None => None,
            Some(tools) => Some(match tools.cast::<PyToolPlan>() {
                Ok(plan) => plan.get().plan.clone(),
                Err(_) => PyToolPlan::new(tools)?.plan,
            }),
        };
        let mut compiler = PromptCompiler::new(settings).with_response_options(response);
        if let Some(text) = instructions {
            compiler = compiler.with_base_instructions(text);
        }
        // `parallel_tool_calls` reaches the body with or without tools.
        if plan.is_some() || parallel_tool_calls {
            let plan = plan.unwrap_or_else(|| Arc::new(ToolPlan::empty()));
            compiler = compiler.with_tools(plan, parallel_tool_calls);
        }
        Ok(PyPromptCompiler { compiler })
    }

    /// The request for `history` to `target`, its input repaired in the projection only.
    #[pyo3(signature = (history, target="responses", modalities="text,image", strict=false))]
    fn compile(
        &self,
        py: Python<'_>,
        history: &PyHistory,
        target: &str,
        modalities: &str,
        strict: bool,
    ) -> PyResult<PyRequest> {
        let options = target_options(target, modalities, strict)?;
        let history = history.current();
        py.detach(|| {
            self.compiler
                .compile_for(&history, &options, StepContext::default())
        })
        .map(|request| PyRequest { request })
        .map_err(|e| errors::target_projection(&e))
    }
}

/// A compiled request: its body, the tools and settings the target could not take, its repairs.
#[pyclass(frozen, module = "agenthistory", name = "Request")]
pub struct PyRequest {
    request: TargetRequest,
}

#[pymethods]
impl PyRequest {
    /// The target: `responses`, `chat` or `anthropic`.
    #[getter]
    fn target(&self) -> &'static str {
        self.request.target().name()
    }

    /// The JSON body, as an HTTP client sends it.
    fn body<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let body = py
            .detach(|| self.request.body())
            .map_err(|e| errors::library(&e))?;
        Ok(PyBytes::new(py, &body))
    }

    /// The tool specs the target has no equivalent for, left out (`index`, `type`, `name`).
    #[getter]
    fn dropped_tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::to_python(py, self.request.dropped_tools())
    }

    /// The settings the target's body has no field for, left out.
    #[getter]
    fn left_out(&self) -> Vec<&'static str> {
        self.request.left_out().to_vec()
    }

    /// Every repair of its input, as `Projection.report`.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        repair_list(py, self.request.report())
    }

    /// The repairs counted by kind.
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        repair_counts(py, self.request.report())
    }
}

/// Checks a request body (or a bare input array) against `target`'s rules; every finding as a
/// dict (`rule`, `severity`, `wording`, `position`, `item`, `ids`, `message`), in input order.
#[pyfunction]
#[pyo3(signature = (body, target="responses"))]
pub fn validate<'py>(
    py: Python<'py>,
    body: &Bound<'py, PyAny>,
    target: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let target: Target = target
        .parse()
        .map_err(|e: agent_history::ParseTargetError| errors::argument(e.to_string()))?;
    let body = json_value(body)?;
    let validation = py.detach(|| agent_history::validate(target, &body));
    json::to_python(py, &validation.findings)
}
