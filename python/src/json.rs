//! Between Python values and JSON text: an item comes in as a `dict` (or any JSON-shaped value),
//! or as JSON text (`str` or UTF-8 `bytes`, kept verbatim); items and reports go out as `dict`s.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString};
use serde::Serialize;

use crate::errors;

/// The `encode` of one `json.JSONEncoder` made once, as the items are written: compact,
/// non-ASCII kept, NaN and infinities refused (JSON has none), keys in their order. (`json.dumps`
/// with these options would make an encoder per call.)
fn dumps(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ENCODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    ENCODE
        .get_or_try_init(py, || {
            let kwargs = PyDict::new(py);
            kwargs.set_item("ensure_ascii", false)?;
            kwargs.set_item("allow_nan", false)?;
            kwargs.set_item("separators", (",", ":"))?;
            let encoder = py
                .import("json")?
                .getattr("JSONEncoder")?
                .call((), Some(&kwargs))?;
            Ok::<_, PyErr>(encoder.getattr("encode")?.unbind())
        })
        .map(|encode| encode.bind(py))
}

/// A bad item: an `ItemError`, like the library's own.
fn bad_item(message: String) -> PyErr {
    crate::errors::exceptions::ItemError::new_err(message)
}

/// The JSON text of one item: `str` and `bytes` as they are (the library checks them), anything
/// else written by `json.dumps` in its key order.
pub fn item_text(item: &Bound<'_, PyAny>) -> PyResult<Box<str>> {
    if let Ok(text) = item.cast::<PyString>() {
        return text
            .to_str()
            .map(Into::into)
            .map_err(|error| bad_item(format!("the item's text is not valid Unicode: {error}")));
    }
    if let Ok(bytes) = item.cast::<PyBytes>() {
        return match std::str::from_utf8(bytes.as_bytes()) {
            Ok(text) => Ok(text.into()),
            Err(error) => Err(bad_item(format!(
                "the item's bytes are not UTF-8 (byte {}): {error}",
                error.valid_up_to()
            ))),
        };
    }
    let text = dumps(item.py())?
        .call1((item,))
        .map_err(|error| bad_item(format!("the item cannot be written as JSON: {error}")))?;
    let text = text.cast_into::<PyString>()?;
    text.to_str()
        .map(Into::into)
        .map_err(|error| bad_item(format!("the item's text is not valid Unicode: {error}")))
}

/// The JSON texts of every item of an iterable, converted before anything is recorded; a bad one
/// is named by its `position` in the iterable. One `str` or `bytes` is refused: it is one item,
/// not a list of them.
pub fn item_texts(items: &Bound<'_, PyAny>) -> PyResult<Vec<Box<str>>> {
    if items.cast::<PyString>().is_ok() || items.cast::<PyBytes>().is_ok() {
        return Err(errors::argument(
            "expected an iterable of items, not one item's text (use record)",
        ));
    }
    let mut texts = Vec::new();
    for (index, item) in items.try_iter()?.enumerate() {
        texts.push(item_text(&item?).map_err(|err| errors::at_position(err, index))?);
    }
    Ok(texts)
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
