//! `read_transcript` and `read_transcript_with_report`: a Claude Code transcript's conversation
//! as a `History`.

use std::path::PathBuf;

use agent_history::{ReadMode, Transcript};
use pyo3::prelude::*;

use crate::errors;
use crate::history::PyHistory;
use crate::json;

/// The conversation a resume of the Claude Code transcript at `path` sends, as a history.
#[pyfunction]
pub fn read_transcript(py: Python<'_>, path: PathBuf) -> PyResult<PyHistory> {
    Ok(read_transcript_with_report(py, path)?.0)
}

/// As `read_transcript`, with what reading found and how the conversation was chosen as a dict:
/// `transcript` (lines, skipped, repaired, read_past), `conversation` (rescues, branches, cut,
/// dropped), `session_id`, `model`.
#[pyfunction]
pub fn read_transcript_with_report(
    py: Python<'_>,
    path: PathBuf,
) -> PyResult<(PyHistory, Py<PyAny>)> {
    let (history, report) = py
        .detach(|| {
            let transcript = Transcript::read_file(&path, ReadMode::Lenient)?;
            let conversation = transcript.conversation();
            let history = conversation.history()?;
            let report = serde_json::json!({
                "transcript": transcript.report,
                "conversation": conversation.report,
                "session_id": transcript.session_id(),
                "model": transcript.model(),
            });
            Ok((history, report))
        })
        .map_err(|e| errors::transcript(&e))?;
    let report = json::to_python(py, &report)?.unbind();
    Ok((PyHistory::from_history(history), report))
}
