//! `StreamAccumulator`: a streamed response (OpenAI Responses, Chat Completions, Anthropic
//! Messages) fed as the SDKs' event objects, dicts, JSON text or raw SSE bytes; only complete
//! items reach the history or session it records into.

use std::sync::{Mutex, MutexGuard, PoisonError};

use agent_history::{
    AnthropicAccumulator, ChatAccumulator, ResponsesAccumulator, StreamSummary, Update,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use serde::Serialize;

use crate::history::PyHistory;
use crate::session::PySession;
use crate::{errors, json};

/// The accumulator of one format.
enum Accumulator {
    Responses(ResponsesAccumulator),
    Chat(ChatAccumulator),
    Anthropic(AnthropicAccumulator),
}

/// Runs `$body` with `$acc` bound to the accumulator, whatever its format.
macro_rules! each {
    ($accumulator:expr, $acc:ident => $body:expr) => {
        match $accumulator {
            Accumulator::Responses($acc) => $body,
            Accumulator::Chat($acc) => $body,
            Accumulator::Anthropic($acc) => $body,
        }
    };
}

/// Where the complete items go.
enum Sink {
    History(Py<PyHistory>),
    Session(Py<PySession>),
}

/// One update, owned, so that it can be turned into a dict once the target's lock is released.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum UpdateRecord {
    Added {
        output_index: u64,
        item_type: Option<String>,
        item_id: Option<String>,
    },
    Delta {
        output_index: u64,
        kind: agent_history::DeltaKind,
        event_type: String,
        delta: String,
    },
    Done {
        output_index: u64,
        recorded: usize,
    },
    Ended {
        #[serde(flatten)]
        end: agent_history::StreamEnd,
    },
}

impl UpdateRecord {
    fn of(update: Update<'_>) -> Option<UpdateRecord> {
        Some(match update {
            Update::Added {
                output_index,
                item_type,
                item_id,
            } => UpdateRecord::Added {
                output_index,
                item_type: item_type.map(str::to_owned),
                item_id: item_id.map(str::to_owned),
            },
            Update::Delta {
                output_index,
                kind,
                event_type,
                delta,
                ..
            } => UpdateRecord::Delta {
                output_index,
                kind,
                event_type: event_type.to_owned(),
                delta: delta.to_owned(),
            },
            Update::Done {
                output_index,
                recorded,
            } => UpdateRecord::Done {
                output_index,
                recorded,
            },
            Update::Ended(end) => UpdateRecord::Ended { end },
            // Skipped and unknown events are counted in the summary.
            _ => return None,
        })
    }
}

/// What to hand the accumulator: one event's JSON text, or SSE bytes.
enum Input<'a> {
    Event(&'a str),
    Bytes(&'a [u8]),
}

/// Accumulates one streamed response into a `History` or a `Session`.
#[pyclass(frozen, module = "agenthistory", name = "StreamAccumulator")]
pub struct PyStreamAccumulator {
    accumulator: Mutex<Accumulator>,
    sink: Sink,
}

impl PyStreamAccumulator {
    fn accumulator(&self) -> MutexGuard<'_, Accumulator> {
        self.accumulator
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `input` to the accumulator with the target locked; the updates it made.
    fn drive(&self, py: Python<'_>, input: Input<'_>) -> PyResult<Vec<UpdateRecord>> {
        let mut updates = Vec::new();
        let mut keep = |update: Update<'_>| updates.extend(UpdateRecord::of(update));
        match &self.sink {
            Sink::History(history) => {
                let mut accumulator = self.accumulator();
                let mut history = history.get().lock();
                let done = each!(&mut *accumulator, acc => match input {
                    Input::Event(data) => acc.push_json(data, &mut *history, &mut keep),
                    Input::Bytes(bytes) => acc.feed(bytes, &mut *history, &mut keep),
                });
                done.map_err(|e| errors::stream(&e))?;
            }
            Sink::Session(session) => {
                // A session's write can be an fsync: made with the interpreter released.
                let session = session.get();
                let done = py.detach(|| {
                    let mut accumulator = self.accumulator();
                    let mut guard = session.lock();
                    let session = guard.as_mut()?;
                    Some(each!(&mut *accumulator, acc => match input {
                        Input::Event(data) => acc.push_json(data, session, &mut keep),
                        Input::Bytes(bytes) => acc.feed(bytes, session, &mut keep),
                    }))
                });
                match done {
                    Some(Ok(())) => {}
                    Some(Err(error)) => return Err(errors::any(&error)),
                    None => return Err(errors::argument("the session is closed")),
                }
            }
        }
        Ok(updates)
    }

    /// Ends the stream (`finish` or `abort`); its summary.
    fn end(&self, py: Python<'_>, abort: bool) -> PyResult<StreamSummary> {
        match &self.sink {
            Sink::History(history) => {
                let mut accumulator = self.accumulator();
                let mut history = history.get().lock();
                each!(&mut *accumulator, acc => if abort {
                    acc.abort(&mut *history)
                } else {
                    acc.finish(&mut *history)
                })
                .map_err(|e| errors::stream(&e))
            }
            Sink::Session(session) => {
                let session = session.get();
                let ended = py.detach(|| {
                    let mut accumulator = self.accumulator();
                    let mut guard = session.lock();
                    let session = guard.as_mut()?;
                    Some(each!(&mut *accumulator, acc => if abort {
                        acc.abort(session)
                    } else {
                        acc.finish(session)
                    }))
                });
                match ended {
                    Some(summary) => summary.map_err(|e| errors::any(&e)),
                    None => Err(errors::argument("the session is closed")),
                }
            }
        }
    }
}

fn updates<'py>(py: Python<'py>, records: &[UpdateRecord]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for record in records {
        list.append(json::to_python(py, record)?)?;
    }
    Ok(list)
}

#[pymethods]
impl PyStreamAccumulator {
    /// An accumulator of `format` (`responses`, `chat`, `anthropic`) recording into `target`, a
    /// `History` or a `Session`.
    #[new]
    #[pyo3(signature = (target, format="responses"))]
    fn new(target: &Bound<'_, PyAny>, format: &str) -> PyResult<PyStreamAccumulator> {
        let accumulator = match format {
            "responses" => Accumulator::Responses(ResponsesAccumulator::new()),
            "chat" => Accumulator::Chat(ChatAccumulator::new()),
            "anthropic" => Accumulator::Anthropic(AnthropicAccumulator::new()),
            other => {
                return Err(errors::argument(format!(
                    "unknown stream format `{other}` (expected responses, chat or anthropic)"
                )));
            }
        };
        let sink = if let Ok(history) = target.cast::<PyHistory>() {
            Sink::History(history.clone().unbind())
        } else if let Ok(session) = target.cast::<PySession>() {
            Sink::Session(session.clone().unbind())
        } else {
            return Err(errors::argument(
                "a stream records into a History or a Session",
            ));
        };
        Ok(PyStreamAccumulator {
            accumulator: Mutex::new(accumulator),
            sink,
        })
    }

    /// Handles one event: an SDK event object, a dict, or its JSON text. Returns what it did
    /// (`added`, `delta`, `done`, `ended` dicts).
    fn push<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let text = json::event_text(event)?;
        let records = self.drive(py, Input::Event(&text))?;
        updates(py, &records)
    }

    /// Handles raw server-sent-event bytes (any split: an event may span calls).
    fn feed<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyBytes>,
    ) -> PyResult<Bound<'py, PyList>> {
        let records = self.drive(py, Input::Bytes(data.as_bytes()))?;
        updates(py, &records)
    }

    /// The input has ended: records what is complete, drops what is not; the summary.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let summary = self.end(py, false)?;
        json::to_python(py, &summary)
    }

    /// Cancels the stream: the items not complete are dropped; the summary.
    fn abort<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let summary = self.end(py, true)?;
        json::to_python(py, &summary)
    }

    /// What the stream did so far.
    #[getter]
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // Released: a thread feeding a session may hold the accumulator through a write.
        let summary = py.detach(|| each!(&*self.accumulator(), acc => acc.summary()));
        json::to_python(py, &summary)
    }

    /// Whether the stream has ended.
    #[getter]
    fn ended(&self, py: Python<'_>) -> bool {
        py.detach(|| each!(&*self.accumulator(), acc => acc.is_ended()))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let summary: Bound<'_, PyDict> = self.summary(py)?.cast_into()?;
        Ok(format!("StreamAccumulator({summary})"))
    }
}
