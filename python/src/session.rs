//! `Session` (a history and its rollout kept in step) and `resume` (a rollout read into a
//! `History`, read-only).

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use agent_history::{
    DEFAULT_TRUNCATION, Durability, FileSink, History, LoadReport, ResumeOptions, ResumeSource,
    Session, SessionMeta, ThreadId, TurnAbortReason, TurnId, resume_file, summary_text,
};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::history::{PyHistory, position, record_all};
use crate::{errors, json};

/// The durability names Python passes.
fn durability(name: &str) -> PyResult<Durability> {
    match name {
        "buffered" => Ok(Durability::Buffered),
        "flush" => Ok(Durability::Flush),
        "sync_data" => Ok(Durability::SyncData),
        other => Err(errors::argument(format!(
            "unknown durability `{other}` (expected buffered, flush or sync_data)"
        ))),
    }
}

fn resume_options(snapshot: Option<PathBuf>) -> ResumeOptions {
    match snapshot {
        Some(snapshot) => ResumeOptions::default().with_snapshot(snapshot),
        None => ResumeOptions::default(),
    }
}

/// A history and its rollout file kept in step: every recorded item is appended before the
/// call returns (as `durability` says), and the file's lock is held until `close()`.
///
/// Every operation runs with the interpreter released and takes the session's lock only then,
/// so a thread writing (an fsync, a snapshot) never blocks the others' Python code.
#[pyclass(frozen, module = "agenthistory", name = "Session")]
pub struct PySession {
    inner: Mutex<Option<Session<FileSink>>>,
    /// What resuming read and how (none for a created session).
    report: Option<serde_json::Value>,
}

impl PySession {
    pub fn lock(&self) -> MutexGuard<'_, Option<Session<FileSink>>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the open session with the interpreter released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Session<FileSink>) -> Result<T, PyErrSource> + Send,
    ) -> PyResult<T> {
        py.detach(|| match self.lock().as_mut() {
            Some(session) => f(session),
            None => Err(PyErrSource::Closed),
        })
        .map_err(PyErrSource::into_py_err)
    }
}

/// An error made without the interpreter, turned into an exception once it is held again.
enum PyErrSource {
    Library(agent_history::Error),
    Closed,
}

impl PyErrSource {
    fn into_py_err(self) -> PyErr {
        match self {
            PyErrSource::Library(error) => errors::any(&error),
            PyErrSource::Closed => errors::argument("the session is closed"),
        }
    }
}

impl<E: Into<agent_history::Error>> From<E> for PyErrSource {
    fn from(error: E) -> Self {
        PyErrSource::Library(error.into())
    }
}

#[pymethods]
impl PySession {
    /// Starts a session in a new rollout at `path` (which must not exist).
    #[staticmethod]
    #[pyo3(signature = (path, durability="sync_data", thread_id=None, base_instructions=None))]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        durability: &str,
        thread_id: Option<&str>,
        base_instructions: Option<String>,
    ) -> PyResult<PySession> {
        let durability = self::durability(durability)?;
        let id = match thread_id {
            Some(text) => text
                .parse::<ThreadId>()
                .map_err(|e| errors::argument(format!("thread id `{text}`: {e}")))?,
            None => ThreadId::random(),
        };
        let mut meta = SessionMeta::new(id);
        if let Some(text) = base_instructions {
            meta = meta.with_base_instructions(text);
        }
        let session = py
            .detach(|| Session::create(&path, meta, DEFAULT_TRUNCATION, durability))
            .map_err(|e| errors::any(&e))?;
        Ok(PySession {
            inner: Mutex::new(Some(session)),
            report: None,
        })
    }

    /// Resumes the session in the rollout at `path` (through `snapshot` when it stands for a
    /// prefix of the file) and goes on appending to it.
    #[staticmethod]
    #[pyo3(signature = (path, snapshot=None, durability="sync_data"))]
    fn resume(
        py: Python<'_>,
        path: PathBuf,
        snapshot: Option<PathBuf>,
        durability: &str,
    ) -> PyResult<PySession> {
        let durability = self::durability(durability)?;
        let options = resume_options(snapshot);
        let resumed = py
            .detach(|| Session::resume(&path, &options, durability))
            .map_err(|e| errors::any(&e))?;
        let report = report_value(resumed.report(), resumed.source())?;
        Ok(PySession {
            inner: Mutex::new(Some(resumed.into_session())),
            report: Some(report),
        })
    }

    /// Records one item and appends it to the rollout; returns its position, or `None` when it
    /// is filtered out.
    fn record(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let text = json::item_text(item)?;
        self.with(py, |session| Ok(position(session.record_json(&text)?)))
    }

    /// Records every item, in order, and appends them as one batch: all or nothing, so a bad one
    /// (named by its `position`) leaves the history and the file as they were; a failed write
    /// leaves the lines not written pending, as for `record`.
    fn extend(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<()> {
        let texts = json::item_texts(items)?;
        let recorded = self.with(py, |session| {
            session.record_all_json(texts.iter().map(|text| &**text))?;
            Ok(())
        });
        match recorded {
            // Which item it was, found on the error path only: recording into an empty history
            // fails at the same item (an item's validity does not depend on those before it).
            Err(err) if err.is_instance_of::<errors::exceptions::ItemError>(py) => {
                Err(record_all(&History::new(), texts).err().unwrap_or(err))
            }
            other => other,
        }
    }

    /// The session's history now: an O(1) copy, independent of what is recorded later.
    #[getter]
    fn history(&self, py: Python<'_>) -> PyResult<PyHistory> {
        self.with(py, |session| {
            Ok(PyHistory::from_history(session.history().clone()))
        })
    }

    /// Writes a snapshot of the history at `path` (memory-mapped on resume); returns its
    /// header.
    fn write_snapshot<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        let header = self.with(py, |session| Ok(session.write_snapshot(&path)?))?;
        json::to_python(py, &header)
    }

    /// Compacts the history into the model's `summary` (written with the summary prefix) and
    /// appends the `compacted` line.
    fn compact(&self, py: Python<'_>, summary: &str) -> PyResult<()> {
        let text = summary_text(summary);
        self.with(py, |session| {
            session.compact(&text)?;
            Ok(())
        })
    }

    /// Rolls the last `n` user turns back and appends the `thread_rolled_back` event.
    fn rollback(&self, py: Python<'_>, n: usize) -> PyResult<()> {
        self.with(py, |session| Ok(session.rollback(n)?))
    }

    /// Begins a Codex turn with `settings` (a dict, or its JSON text: the turn's
    /// `turn_context`), writing `task_started` and the `turn_context`; returns the turn id (a
    /// UUIDv7, or `turn_id` when given). Refused while a turn is active.
    #[pyo3(signature = (settings, turn_id=None))]
    fn begin_turn(
        &self,
        py: Python<'_>,
        settings: &Bound<'_, PyAny>,
        turn_id: Option<String>,
    ) -> PyResult<String> {
        let settings = json::item_text(settings)?;
        self.with(py, |session| match turn_id {
            Some(id) => {
                session.begin_turn_with_id(TurnId::new(id.clone()), &settings)?;
                Ok(id)
            }
            None => Ok(session.begin_turn(&settings)?.to_string()),
        })
    }

    /// Completes the active turn (`task_complete`, with the last agent message if given).
    #[pyo3(signature = (last_agent_message=None))]
    fn complete_turn(&self, py: Python<'_>, last_agent_message: Option<String>) -> PyResult<()> {
        self.with(py, |session| {
            Ok(session.complete_turn(last_agent_message.as_deref())?)
        })
    }

    /// Aborts the active turn (`turn_aborted`): `reason` is `interrupted`, `replaced` or
    /// `review_ended`.
    #[pyo3(signature = (reason="interrupted"))]
    fn abort_turn(&self, py: Python<'_>, reason: &str) -> PyResult<()> {
        let reason = match reason {
            "interrupted" => TurnAbortReason::Interrupted,
            "replaced" => TurnAbortReason::Replaced,
            "review_ended" => TurnAbortReason::ReviewEnded,
            other => {
                return Err(errors::argument(format!(
                    "unknown abort reason `{other}` (expected interrupted, replaced or review_ended)"
                )));
            }
        };
        self.with(py, |session| Ok(session.abort_turn(reason)?))
    }

    /// The id of the active turn, or `None`.
    #[getter]
    fn active_turn(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |session| {
            Ok(session
                .active_turn()
                .and_then(|turn| turn.id())
                .map(ToString::to_string))
        })
    }

    /// Writes what is buffered to the file.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |session| Ok(session.flush()?))
    }

    /// The thread id (a UUID string).
    #[getter]
    fn thread_id(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |session| Ok(session.thread_id().to_string()))
    }

    /// The rollout file.
    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<PathBuf> {
        self.with(py, |session| Ok(session.path()))
    }

    /// What resuming read (skipped lines, a torn tail, …) as a dict; `None` for a created
    /// session.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.report
            .as_ref()
            .map(|report| json::to_python(py, report))
            .transpose()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        // Released: another thread may hold the session through a long write.
        py.detach(|| self.lock().is_none())
    }

    /// Flushes and releases the file; later calls but `close()` raise. Closing twice is
    /// allowed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| match self.lock().take() {
            Some(mut session) => session.flush().map_err(|e| PyErrSource::Library(e.into())),
            None => Ok(()),
        })
        .map_err(PyErrSource::into_py_err)
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

/// Resumes the Codex rollout at `path` read-only (through `snapshot` when it stands for a prefix
/// of the file).
#[pyfunction]
#[pyo3(signature = (path, snapshot=None))]
pub fn resume(py: Python<'_>, path: PathBuf, snapshot: Option<PathBuf>) -> PyResult<PyHistory> {
    Ok(resume_with_report(py, path, snapshot)?.0)
}

/// As `resume`, with what was read (skipped lines, a torn tail, …) as a dict.
#[pyfunction]
#[pyo3(signature = (path, snapshot=None))]
pub fn resume_with_report(
    py: Python<'_>,
    path: PathBuf,
    snapshot: Option<PathBuf>,
) -> PyResult<(PyHistory, Py<PyAny>)> {
    let options = resume_options(snapshot);
    let resumed = py
        .detach(|| resume_file(&path, &options))
        .map_err(|e| errors::rollout(&e))?;
    let report = json::to_python(py, &report_value(resumed.report(), resumed.source())?)?.unbind();
    Ok((PyHistory::from_history(resumed.into_history()), report))
}

/// The load report with `source`: how the history was read (`rollout`, `snapshot` with what it
/// covered, or `fallback` with the reason the snapshot was not used).
fn report_value(report: &LoadReport, source: &ResumeSource) -> PyResult<serde_json::Value> {
    let mut value = serde_json::to_value(report)
        .map_err(|e| errors::argument(format!("cannot write the load report: {e}")))?;
    if let serde_json::Value::Object(fields) = &mut value {
        let source = serde_json::to_value(source)
            .map_err(|e| errors::argument(format!("cannot write the resume source: {e}")))?;
        fields.insert("source".into(), source);
    }
    Ok(value)
}
