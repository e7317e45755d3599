//! Between Python values and JSON text: an item comes in as a `dict` (or any JSON-shaped value),
//! or as JSON text (`str` or UTF-8 `bytes`, kept verbatim); items and reports go out as `dict`s.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use serde::Serialize;

use crate::errors;

/// The JSON text of one item: `str` and `bytes` as they are (the library checks them), anything
/// else serialized in its key order.
pub fn item_text(item: &Bound<'_, PyAny>) -> PyResult<Box<str>> {
    if let Ok(text) = item.cast::<PyString>() {
        return Ok(text.to_str()?.into());
    }
    if let Ok(bytes) = item.cast::<PyBytes>() {
        return match std::str::from_utf8(bytes.as_bytes()) {
            Ok(text) => Ok(text.into()),
            Err(error) => Err(errors::argument(format!(
                "the item's bytes are not UTF-8 (byte {}): {error}",
                error.valid_up_to()
            ))),
        };
    }
    let value: serde_json::Value = pythonize::depythonize(item).map_err(|error| {
        errors::argument(format!("the item cannot be written as JSON: {error}"))
    })?;
    Ok(value.to_string().into())
}

/// The JSON texts of every item of an iterable, converted before anything is recorded.
pub fn item_texts(items: &Bound<'_, PyAny>) -> PyResult<Vec<Box<str>>> {
    items.try_iter()?.map(|item| item_text(&item?)).collect()
}

/// A Python value for the JSON text `json` (an item the library stored or wrote).
pub fn parse<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyAny>> {
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|error| errors::argument(format!("stored JSON does not parse: {error}")))?;
    to_python(py, &value)
}

/// A Python value for anything the library serializes (a report, a header).
pub fn to_python<'py, T: Serialize + ?Sized>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value)
        .map_err(|error| errors::argument(format!("cannot convert to Python: {error}")))
}

/// The JSON text of one streamed event: an SDK event object (the `openai` and `anthropic`
/// packages' models, written by their own `to_json` with the fields the server sent), a dict, or
/// JSON text.
pub fn event_text(event: &Bound<'_, PyAny>) -> PyResult<Box<str>> {
    let kwargs = PyDict::new(event.py());
    if let Ok(to_json) = event.getattr("to_json")
        && to_json.is_callable()
    {
        kwargs.set_item("indent", event.py().None())?;
        let text: String = to_json.call((), Some(&kwargs))?.extract()?;
        return Ok(text.into());
    }
    if let Ok(dump) = event.getattr("model_dump_json")
        && dump.is_callable()
    {
        kwargs.set_item("exclude_unset", true)?;
        kwargs.set_item("by_alias", true)?;
        let text: String = dump.call((), Some(&kwargs))?.extract()?;
        return Ok(text.into());
    }
    item_text(event)
}
