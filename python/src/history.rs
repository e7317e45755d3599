//! `History`, `Projection` and the pure `project` over a list of items.

use std::sync::{Mutex, MutexGuard, PoisonError};

use agent_history::{
    History, Modalities, ProjectionOptions, Recorded, Target, TargetOptions, TargetProjection,
    TargetReport,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use serde_json::{Map, Value};

use crate::{errors, json};

/// An agent's history: a persistent vector of items, O(1) to fork.
///
/// One lock guards the current version; nothing that holds it waits for the interpreter, so
/// threads cannot deadlock on it. A projection copies the version (O(1)) and works on the copy
/// with the interpreter released.
#[pyclass(frozen, module = "agenthistory", name = "History")]
pub struct PyHistory {
    inner: Mutex<History>,
}

impl PyHistory {
    pub fn from_history(history: History) -> PyHistory {
        PyHistory {
            inner: Mutex::new(history),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, History> {
        // A panic never leaves a history half-changed (every change is made on a copy or is
        // one push), so a poisoned lock still guards a whole version.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current version (O(1)).
    pub fn current(&self) -> History {
        self.lock().clone()
    }
}

/// The position an item was stored at, or `None` when the library filters it out.
pub fn position(recorded: Recorded) -> Option<usize> {
    match recorded {
        Recorded::Stored { position, .. } => Some(position),
        _ => None,
    }
}

/// Records every text on a copy of `history`, which is returned only when all of them are
/// recorded: a bad item leaves the history as it was.
pub fn record_all(history: &History, texts: Vec<Box<str>>) -> PyResult<History> {
    let mut next = history.clone();
    for (index, text) in texts.into_iter().enumerate() {
        next.record_json(text)
            .map_err(|error| errors::at_position(errors::item(&error), index))?;
    }
    Ok(next)
}

#[pymethods]
impl PyHistory {
    #[new]
    #[pyo3(signature = (items=None))]
    fn new(items: Option<&Bound<'_, PyAny>>) -> PyResult<PyHistory> {
        let history = match items {
            Some(items) => record_all(&History::new(), json::item_texts(items)?)?,
            None => History::new(),
        };
        Ok(PyHistory::from_history(history))
    }

    /// Records one item; returns its position, or `None` when it is filtered out.
    fn record(&self, item: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let text = json::item_text(item)?;
        let recorded = self
            .lock()
            .record_json(text)
            .map_err(|e| errors::item(&e))?;
        Ok(position(recorded))
    }

    /// Records every item, or none of them when one is bad.
    fn extend(&self, items: &Bound<'_, PyAny>) -> PyResult<()> {
        let texts = json::item_texts(items)?;
        let mut history = self.lock();
        let next = record_all(&history, texts)?;
        *history = next;
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.lock().len()
    }

    /// The durable items, as dicts.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let history = self.current();
        let items = PyList::empty(py);
        for entry in history.iter() {
            items.append(json::parse(py, entry.json())?)?;
        }
        Ok(items)
    }

    /// The durable items as one JSON array (`bytes`), written from the stored texts.
    fn items_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let history = self.current();
        let mut out = Vec::with_capacity(usize::try_from(history.json_bytes()).unwrap_or(0) + 2);
        out.push(b'[');
        for (index, entry) in history.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            out.extend_from_slice(entry.json().as_bytes());
        }
        out.push(b']');
        PyBytes::new(py, &out)
    }

    /// An independent copy (O(1): the versions share their items).
    fn fork(&self) -> PyHistory {
        PyHistory::from_history(self.current())
    }

    fn __copy__(&self) -> PyHistory {
        self.fork()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyHistory {
        // Items are immutable values: sharing them is a deep copy.
        self.fork()
    }

    /// Drops the last `n` user turns (and everything after the first of them).
    fn drop_last_user_turns(&self, n: usize) -> PyResult<()> {
        let mut history = self.lock();
        let mut next = history.clone();
        next.drop_last_n_user_turns(n)
            .map_err(|e| errors::item(&e))?;
        *history = next;
        Ok(())
    }

    /// How many user turns the history holds.
    #[getter]
    fn user_turn_count(&self) -> usize {
        self.lock().user_turn_count()
    }

    /// An estimate of the tokens the items take.
    #[getter]
    fn estimated_tokens(&self) -> u64 {
        self.lock().estimated_tokens()
    }

    /// The projection of the history for `target`, repaired in the projection only.
    #[pyo3(signature = (target="responses", modalities="text,image", strict=false))]
    fn project(
        &self,
        py: Python<'_>,
        target: &str,
        modalities: &str,
        strict: bool,
    ) -> PyResult<PyProjection> {
        let options = target_options(target, modalities, strict)?;
        let history = self.current();
        project_history(py, history, options)
    }

    fn __repr__(&self) -> String {
        let history = self.lock();
        format!(
            "History(items={}, user_turns={})",
            history.len(),
            history.user_turn_count()
        )
    }
}

/// The options of a projection, from the names Python passes.
pub fn target_options(target: &str, modalities: &str, strict: bool) -> PyResult<TargetOptions> {
    let target: Target = target
        .parse()
        .map_err(|e: agent_history::ParseTargetError| errors::argument(e.to_string()))?;
    let modalities: Modalities = modalities
        .parse()
        .map_err(|e: agent_history::ParseModalitiesError| errors::argument(e.to_string()))?;
    let mut projection = ProjectionOptions::for_modalities(modalities);
    if strict {
        projection = projection.strict();
    }
    Ok(TargetOptions::new(target).with_projection(projection))
}

/// Projects `history` with the interpreter released.
pub fn project_history(
    py: Python<'_>,
    history: History,
    options: TargetOptions,
) -> PyResult<PyProjection> {
    let projected = py.detach(|| {
        let projected = history.project_for(&options)?;
        // Read the report once here, while the interpreter is free: its media lines are
        // listed on first access.
        let _ = projected.report().projection().repairs();
        Ok(projected)
    });
    projected
        .map(|inner| PyProjection { inner })
        .map_err(|e| errors::target_projection(&e))
}

/// A history projected for one target: what is sent, and what was repaired to send it.
#[pyclass(frozen, module = "agenthistory", name = "Projection")]
pub struct PyProjection {
    inner: TargetProjection,
}

/// One repair as a flat dict: its kind and fields, then where (`position`, `item_kind`,
/// `call_id`), then `stage` (`projection` for the repairs every target shares, `target` for
/// the target's own).
fn flat_repair<'py>(
    py: Python<'py>,
    repair: &impl serde::Serialize,
    stage: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let mut value = serde_json::to_value(repair)
        .map_err(|e| errors::argument(format!("cannot write a repair: {e}")))?;
    if let Value::Object(fields) = &mut value {
        let mut flat = Map::new();
        for (key, field) in std::mem::take(fields) {
            match (key.as_str(), field) {
                ("at", Value::Object(at)) => flat.extend(at),
                (_, field) => {
                    flat.insert(key, field);
                }
            }
        }
        flat.insert("stage".into(), stage.into());
        *fields = flat;
    }
    json::to_python(py, &value)
}

/// Every repair of `report` as a flat dict: the projection's, then the target's.
pub fn repair_list<'py>(py: Python<'py>, report: &TargetReport) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for repair in report.projection().repairs() {
        list.append(flat_repair(py, repair, "projection")?)?;
    }
    for repair in report.repairs() {
        list.append(flat_repair(py, repair, "target")?)?;
    }
    Ok(list)
}

/// The repairs of `report` counted by kind.
pub fn repair_counts<'py>(py: Python<'py>, report: &TargetReport) -> PyResult<Bound<'py, PyDict>> {
    let counts = PyDict::new(py);
    let kinds = report
        .projection()
        .counts()
        .into_iter()
        .chain(report.counts());
    for (kind, count) in kinds {
        let before: u64 = counts
            .get_item(kind)?
            .map(|v| v.extract())
            .transpose()?
            .unwrap_or(0);
        counts.set_item(kind, before + count)?;
    }
    Ok(counts)
}

#[pymethods]
impl PyProjection {
    /// The target: `responses`, `chat` or `anthropic`.
    #[getter]
    fn target(&self) -> &'static str {
        self.inner.target().name()
    }

    /// The items (Responses) or messages (Chat Completions, Anthropic Messages) sent, as dicts.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::parse(py, &self.inner.to_json())
    }

    /// The JSON array sent (`bytes`), written by copying the stored items' bytes.
    fn json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        PyBytes::new_with(py, self.inner.json_len(), |buffer| {
            let mut out = &mut buffer[..];
            self.inner
                .write_json(&mut out)
                .map_err(|e| errors::argument(format!("cannot write the projection: {e}")))
        })
    }

    /// Anthropic Messages: the texts that go into the request's `system`; empty otherwise.
    fn system_texts(&self) -> Vec<String> {
        self.inner.system_texts().map(str::to_owned).collect()
    }

    /// Every repair, in position order: the projection's, then the target's.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        repair_list(py, self.inner.report())
    }

    /// The repairs counted by kind.
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        repair_counts(py, self.inner.report())
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Projection(target={:?}, len={}, repairs={})",
            self.inner.target().name(),
            self.inner.len(),
            self.inner.report().projection().len() + self.inner.report().repairs().len()
        )
    }
}

/// Projects a list of items for `target` without keeping a history (the items are recorded
/// into a fresh one, then projected).
#[pyfunction]
#[pyo3(signature = (items, target="responses", modalities="text,image", strict=false))]
pub fn project(
    py: Python<'_>,
    items: &Bound<'_, PyAny>,
    target: &str,
    modalities: &str,
    strict: bool,
) -> PyResult<PyProjection> {
    let options = target_options(target, modalities, strict)?;
    let history = record_all(&History::new(), json::item_texts(items)?)?;
    project_history(py, history, options)
}
