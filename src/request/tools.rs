//! Tool specs read from a file: a JSON array of objects, each one tool as the Responses API
//! takes it (`{"type":"function","name":…,"parameters":…}`, say), made into a [`ToolPlan`].

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::plan::{ToolPlan, ToolPlanError};
use crate::item::json_type;

/// The largest tools file [`read_tools`] reads: 64 MiB. Real tool lists are kilobytes; the limit
/// keeps a wrong path (a device, a huge log) from being read into memory.
pub const MAX_TOOLS_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reading tool specs from a file failed. Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsError {
    /// The file cannot be opened or read.
    #[error("cannot read tools file {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_TOOLS_FILE_BYTES`].
    #[error(
        "tools file {} is larger than {limit} bytes, too large for a list of tools",
        path.display()
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, [`MAX_TOOLS_FILE_BYTES`].
        limit: u64,
    },
    /// The file is not one JSON value.
    #[error("tools file {} is not JSON", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What serde_json found, with its line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The file is JSON, but not an array.
    #[error("tools file {} holds {found}, not a JSON array of tool specs", path.display())]
    NotAnArray {
        /// The file.
        path: PathBuf,
        /// What it holds: "an object", "a string", …
        found: &'static str,
    },
    /// An element of the array is not an object.
    #[error(
        "tools file {}: element {index} of the array is {found}, not a tool spec object",
        path.display()
    )]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// The element's 0-based index.
        index: usize,
        /// What it is: "a string", "null", …
        found: &'static str,
    },
    /// The array holds tool specs a plan refuses: one without what its calls are found by, or
    /// two with one name.
    #[error("tools file {} is not a usable list of tools", path.display())]
    Plan {
        /// The file.
        path: PathBuf,
        /// What the plan refused, naming the spec.
        #[source]
        source: ToolPlanError,
    },
}

/// Reads tool specs from the JSON file at `path` into a [`ToolPlan`] (generation 0), for
/// [`PromptCompiler::with_tools`](super::PromptCompiler::with_tools): an array of objects, each
/// sent as given (keys in the file's order). Of their contents, only what a plan finds calls by
/// is checked (a `type`; a `name` for `function`, `custom` and `namespace` tools; names that
/// differ): the provider knows which tool types it takes.
///
/// # Errors
///
/// [`ToolsError::Io`] when the file cannot be read, [`ToolsError::TooLarge`] over
/// [`MAX_TOOLS_FILE_BYTES`], [`ToolsError::Json`] when it is not JSON,
/// [`ToolsError::NotAnArray`] and [`ToolsError::NotAnObject`] when it is JSON of another shape,
/// [`ToolsError::Plan`] when [`ToolPlan::new`] refuses the specs.
///
/// # Examples
///
/// ```
/// use agent_history::{ToolsError, read_tools};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("tools.json");
/// std::fs::write(&path, r#"[{"type":"function","name":"shell","parameters":{"type":"object"}}]"#)?;
/// assert_eq!(read_tools(&path)?.specs()[0]["name"], "shell");
///
/// std::fs::write(&path, r#"{"type":"function","name":"shell"}"#)?;
/// assert!(matches!(read_tools(&path), Err(ToolsError::NotAnArray { found: "an object", .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_tools(path: impl AsRef<Path>) -> Result<ToolPlan, ToolsError> {
    let path = path.as_ref();
    let io_error = |source| ToolsError::Io {
        path: path.to_owned(),
        source,
    };
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|file| file.take(MAX_TOOLS_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(io_error)?;
    if bytes.len() as u64 > MAX_TOOLS_FILE_BYTES {
        return Err(ToolsError::TooLarge {
            path: path.to_owned(),
            limit: MAX_TOOLS_FILE_BYTES,
        });
    }
    let value: Value = serde_json::from_slice(&bytes).map_err(|source| ToolsError::Json {
        path: path.to_owned(),
        source,
    })?;
    let Value::Array(tools) = value else {
        return Err(ToolsError::NotAnArray {
            path: path.to_owned(),
            found: json_type(&value),
        });
    };
    if let Some((index, tool)) = tools.iter().enumerate().find(|(_, tool)| !tool.is_object()) {
        return Err(ToolsError::NotAnObject {
            path: path.to_owned(),
            index,
            found: json_type(tool),
        });
    }
    ToolPlan::new(tools).map_err(|source| ToolsError::Plan {
        path: path.to_owned(),
        source,
    })
}
