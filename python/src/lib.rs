//! `agenthistory`: the agent-history engine as a Python extension module.
//!
//! The Python package (`python/agenthistory/`) re-exports what this module defines; the API, the
//! error mapping and the threading model are in `docs/python.md`.
//!
//! Each job is in one file: `errors.rs` maps the library's errors to the exception hierarchy,
//! `json.rs` converts between Python values and JSON, `history.rs` holds `History`, `Projection`
//! and `project`, `session.rs` `Session` and `resume`, `stream.rs` `StreamAccumulator`, `request.rs` `ToolPlan`,
//! `PromptCompiler`, `Request` and `validate`, `transcript.rs` `read_transcript` (Claude Code).

mod errors;
mod history;
mod json;
mod request;
mod session;
mod stream;
mod transcript;

use pyo3::prelude::*;

/// The extension module `agenthistory._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(module)?;
    module.add_class::<history::PyHistory>()?;
    module.add_class::<history::PyProjection>()?;
    module.add_function(wrap_pyfunction!(history::project, module)?)?;
    module.add_class::<session::PySession>()?;
    module.add_class::<stream::PyStreamAccumulator>()?;
    module.add_class::<request::PyToolPlan>()?;
    module.add_class::<request::PyPromptCompiler>()?;
    module.add_class::<request::PyRequest>()?;
    module.add_function(wrap_pyfunction!(request::validate, module)?)?;
    module.add_function(wrap_pyfunction!(session::resume, module)?)?;
    module.add_function(wrap_pyfunction!(session::resume_with_report, module)?)?;
    module.add_function(wrap_pyfunction!(transcript::read_transcript, module)?)?;
    module.add_function(wrap_pyfunction!(
        transcript::read_transcript_with_report,
        module
    )?)?;
    module.add(
        "SYNTHETIC_ID_NAMESPACE",
        agent_history::SYNTHETIC_ID_NAMESPACE.to_string(),
    )?;
    module.add("ABORTED_OUTPUT", agent_history::ABORTED_OUTPUT)?;
    Ok(())
}
