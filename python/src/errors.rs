//! The exception hierarchy: `agenthistory.Error(ValueError)` and one subclass per kind of library
//! error, each instance carrying the location the Rust error names (`path`, `line`, `byte`,
//! `position`; `None` where it names none).

use std::path::Path;

use agent_history::{
    Error, ItemError, RolloutError, RolloutWriteError, SnapshotError, StreamError,
    TargetProjectionError, TranscriptError, WriteStep,
};
use pyo3::PyTypeInfo;
use pyo3::prelude::*;

/// The exception classes, under their Python names (`__name__` is the Rust name).
pub mod exceptions {
    use pyo3::create_exception;
    use pyo3::exceptions::PyValueError;

    create_exception!(
        agenthistory,
        Error,
        PyValueError,
        "Any error of agenthistory."
    );
    create_exception!(
        agenthistory,
        ItemError,
        Error,
        "An item that is not valid JSON, not an object, or too large to store."
    );
    create_exception!(
        agenthistory,
        RolloutError,
        Error,
        "A rollout that cannot be read or resumed as a whole."
    );
    create_exception!(
        agenthistory,
        TranscriptError,
        Error,
        "A Claude Code transcript that cannot be read as a whole."
    );
    create_exception!(
        agenthistory,
        RolloutWriteError,
        Error,
        "Appending to a rollout failed; what was not written is still pending."
    );
    create_exception!(
        agenthistory,
        WriterLockError,
        RolloutWriteError,
        "Another writer (a second session, or Codex) holds the rollout."
    );
    create_exception!(
        agenthistory,
        SnapshotError,
        Error,
        "A snapshot that cannot be written, opened or trusted."
    );
    create_exception!(
        agenthistory,
        ProjectionError,
        Error,
        "A strict projection found the history's protocol shape broken."
    );
    create_exception!(
        agenthistory,
        StreamError,
        Error,
        "A streamed response that cannot be accumulated."
    );
}

/// Adds the exception classes to the module under their Python names. The location attributes
/// are class attributes too (`None`), so that an instance raised without them (by Python code,
/// or by a caller) still has them.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let base = py.get_type::<exceptions::Error>();
    for name in ["path", "line", "byte", "position"] {
        base.setattr(name, py.None())?;
    }
    let stream = py.get_type::<exceptions::StreamError>();
    stream.setattr("event", py.None())?;
    module.add("Error", base)?;
    module.add("ItemError", py.get_type::<exceptions::ItemError>())?;
    module.add("RolloutError", py.get_type::<exceptions::RolloutError>())?;
    module.add(
        "TranscriptError",
        py.get_type::<exceptions::TranscriptError>(),
    )?;
    module.add(
        "RolloutWriteError",
        py.get_type::<exceptions::RolloutWriteError>(),
    )?;
    module.add(
        "WriterLockError",
        py.get_type::<exceptions::WriterLockError>(),
    )?;
    module.add("SnapshotError", py.get_type::<exceptions::SnapshotError>())?;
    module.add(
        "ProjectionError",
        py.get_type::<exceptions::ProjectionError>(),
    )?;
    module.add("StreamError", stream)?;
    Ok(())
}

/// Where an error happened, as far as the Rust error says.
#[derive(Default)]
struct Location<'a> {
    path: Option<&'a Path>,
    line: Option<u64>,
    byte: Option<u64>,
    position: Option<usize>,
}

/// The exception for `error` with its message chain and location attributes.
fn raise<T: PyTypeInfo>(error: &dyn std::error::Error, at: Location<'_>) -> PyErr {
    let err = PyErr::new::<T, _>(agent_history::error_chain(error));
    Python::attach(|py| {
        let value = err.value(py);
        // Setting attributes on a fresh exception instance cannot fail but for memory; the
        // message is what matters then.
        let _ = value.setattr("path", at.path.map(|path| path.display().to_string()));
        let _ = value.setattr("line", at.line);
        let _ = value.setattr("byte", at.byte);
        let _ = value.setattr("position", at.position);
    });
    err
}

fn rollout_location(error: &RolloutError) -> Location<'_> {
    match error {
        RolloutError::BadLine {
            path, line, offset, ..
        } => Location {
            path: Some(path),
            line: Some(*line),
            byte: Some(*offset),
            ..Location::default()
        },
        RolloutError::Replay { path, line, .. } => Location {
            path: Some(path),
            line: Some(*line),
            ..Location::default()
        },
        RolloutError::Io { path, .. }
        | RolloutError::NotAFile { path, .. }
        | RolloutError::NotText { path, .. }
        | RolloutError::Lineage { path, .. }
        | RolloutError::Empty { path }
        | RolloutError::NoCompleteLine { path, .. }
        | RolloutError::NoSessionMeta { path, .. } => Location {
            path: Some(path),
            ..Location::default()
        },
        _ => Location::default(),
    }
}

fn snapshot_path(error: &SnapshotError) -> Option<&Path> {
    match error {
        SnapshotError::Io { path, .. }
        | SnapshotError::NotAFile { path }
        | SnapshotError::Directory { path }
        | SnapshotError::BadMagic { path, .. }
        | SnapshotError::OlderVersion { path, .. }
        | SnapshotError::UnsupportedVersion { path, .. }
        | SnapshotError::UnsupportedFormat { path, .. }
        | SnapshotError::Truncated { path, .. }
        | SnapshotError::TrailingBytes { path, .. }
        | SnapshotError::BadHeader { path, .. }
        | SnapshotError::PayloadDigestMismatch { path }
        | SnapshotError::NotCovered { path }
        | SnapshotError::WouldReplace { path, .. }
        | SnapshotError::InvalidEntry { path, .. }
        | SnapshotError::InvalidArchive { path, .. } => Some(path),
        _ => None,
    }
}

/// `err` naming the bad item's index in the iterable it came from (`position`).
pub fn at_position(err: PyErr, index: usize) -> PyErr {
    Python::attach(|py| {
        let _ = err.value(py).setattr("position", index);
    });
    err
}

/// A bad item.
pub fn item(error: &ItemError) -> PyErr {
    raise::<exceptions::ItemError>(error, Location::default())
}

/// A rollout that cannot be read.
pub fn rollout(error: &RolloutError) -> PyErr {
    raise::<exceptions::RolloutError>(error, rollout_location(error))
}

/// A transcript that cannot be read.
pub fn transcript(error: &TranscriptError) -> PyErr {
    let at = match error {
        TranscriptError::BadLine {
            path, line, offset, ..
        } => Location {
            path: Some(path),
            line: Some(*line),
            byte: Some(*offset),
            position: None,
        },
        TranscriptError::Item { path, line, .. } => Location {
            path: Some(path),
            line: Some(*line),
            ..Location::default()
        },
        TranscriptError::Io { path, .. }
        | TranscriptError::NotAFile { path, .. }
        | TranscriptError::NotText { path, .. }
        | TranscriptError::Empty { path }
        | TranscriptError::NoRecords { path, .. } => Location {
            path: Some(path),
            ..Location::default()
        },
        _ => Location::default(),
    };
    raise::<exceptions::TranscriptError>(error, at)
}

/// A write that failed: `WriterLockError` when another writer holds the file.
pub fn rollout_write(error: &RolloutWriteError) -> PyErr {
    let at = Location {
        path: Some(&error.path),
        ..Location::default()
    };
    match error.step {
        WriteStep::Locked | WriteStep::HeldByCodex { .. } => {
            raise::<exceptions::WriterLockError>(error, at)
        }
        _ => raise::<exceptions::RolloutWriteError>(error, at),
    }
}

/// A stream that cannot be accumulated: a `StreamError` whose `event` is the event's number
/// (from 1).
pub fn stream(error: &StreamError) -> PyErr {
    let event = match error {
        StreamError::Malformed { event, .. }
        | StreamError::MissingType { event }
        | StreamError::MissingField { event, .. }
        | StreamError::AddedTwice { event, .. }
        | StreamError::NotOpen { event, .. }
        | StreamError::UnknownItem { event, .. }
        | StreamError::AfterEnd { event, .. }
        | StreamError::Item { event, .. }
        | StreamError::NotUtf8 { event }
        | StreamError::EventTooLarge { event, .. } => Some(*event),
        _ => None,
    };
    let err = raise::<exceptions::StreamError>(error, Location::default());
    Python::attach(|py| {
        let _ = err.value(py).setattr("event", event);
    });
    err
}

/// A projection for a target that could not be made.
pub fn target_projection(error: &TargetProjectionError) -> PyErr {
    match error {
        TargetProjectionError::Projection(_) => {
            raise::<exceptions::ProjectionError>(error, Location::default())
        }
        TargetProjectionError::UnreadableItem { position, .. } => raise::<exceptions::ItemError>(
            error,
            Location {
                position: Some(*position),
                ..Location::default()
            },
        ),
        _ => raise::<exceptions::Error>(error, Location::default()),
    }
}

/// Any error of the library.
pub fn any(error: &Error) -> PyErr {
    match error {
        Error::Item(error) => item(error),
        Error::Rollout(error) => rollout(error),
        Error::RolloutWrite(error) => rollout_write(error),
        Error::Snapshot(error) => raise::<exceptions::SnapshotError>(
            error,
            Location {
                path: snapshot_path(error),
                ..Location::default()
            },
        ),
        Error::Projection(_) => raise::<exceptions::ProjectionError>(error, Location::default()),
        Error::Stream(error) => stream(error),
        _ => raise::<exceptions::Error>(error, Location::default()),
    }
}

/// An error of the library that no subclass stands for (a bad tool spec, a body that cannot be
/// written): an `Error` with its message chain.
pub fn library(error: &dyn std::error::Error) -> PyErr {
    raise::<exceptions::Error>(error, Location::default())
}

/// A bad argument that no library error names (an unknown target, say): an `Error` too, so
/// that one `except agenthistory.Error` catches every bad input.
pub fn argument(message: impl Into<String>) -> PyErr {
    exceptions::Error::new_err(message.into())
}
