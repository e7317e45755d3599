//! What the fuzz targets share: shaped item generators, a reference projection, checks of a
//! rollout read against its bytes, and the few calls that touch files.
//!
//! `fuzz/README.md` says what each target checks.

pub mod items;
pub mod reference;
pub mod rollout;
pub mod snapshot;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use agent_history::{
    Entry, Execution, History, Recorded, ResponseItem, Snapshot, SnapshotError, SnapshotOptions,
    ToolSearchCall, open_snapshot,
};

/// Opens a snapshot for a target as one this program wrote (the digest verified or not). The
/// targets call `open_snapshot` only here and in [`open_untrusted`], so that a change of the
/// snapshot API is made here once.
pub fn open(path: &Path, verify_digest: bool) -> Result<Snapshot, SnapshotError> {
    open_snapshot(
        path,
        SnapshotOptions {
            verify_digest,
            ..SnapshotOptions::default()
        },
    )
}

/// Opens a snapshot as one from elsewhere: digest verified and every entry checked against its
/// JSON.
pub fn open_untrusted(path: &Path) -> Result<Snapshot, SnapshotError> {
    open_snapshot(path, SnapshotOptions::untrusted())
}

/// A directory of this process for the files a target writes: in `/dev/shm` when there is one
/// (a memory file system: writing and syncing cost no disk I/O), else the temporary directory.
pub fn scratch_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_owned()
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("agent-history-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        dir
    })
}

/// A path in the scratch directory; `name` plus a counter kept small, so that a long run reuses
/// a few files instead of filling the directory.
pub fn scratch_file(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    scratch_dir().join(format!("{name}-{}", N.fetch_add(1, Ordering::Relaxed) % 4))
}

/// Every combination of projection options (modalities, repair mode, unknown items), from the
/// bits of a byte: the testing kit's, which the history operations use too.
pub use agent_history::testing::projection_options;

/// The entries' JSON texts, in order.
pub fn jsons(history: &History) -> Vec<&str> {
    history.iter().map(|entry| entry.json()).collect()
}

/// The call of a client-executed `tool_search_call`: the one item that durable-history
/// canonicalization rewrites (its arguments) or keeps out (without a call id).
pub fn client_tool_search(item: &ResponseItem) -> Option<&ToolSearchCall> {
    match item {
        ResponseItem::ToolSearchCall(call) if call.execution == Execution::Client => Some(call),
        _ => None,
    }
}

/// Whether a client tool search is kept out of a history: it has no call id, or an empty one.
pub fn client_tool_search_without_call_id(item: &ResponseItem) -> bool {
    client_tool_search(item)
        .is_some_and(|call| call.call_id.as_ref().is_none_or(|id| id.is_empty()))
}

/// Checks a stored client tool search that differs from what was recorded: only its arguments
/// changed, they are canonical — `{"query": <string>}` with an optional whole `limit` after it, or
/// the invalid-arguments marker — and recording the stored text again keeps it as it is.
pub fn check_canonicalized(recorded: &ResponseItem, stored: &Entry) {
    let given = client_tool_search(recorded).expect("only client tool searches are rewritten");
    let item = stored.to_item().expect("a stored entry parses");
    let call = client_tool_search(&item).expect("still a client tool search");
    assert_eq!(call.call_id, given.call_id);
    assert_eq!(call.id, given.id);
    let object = call
        .arguments
        .as_object()
        .expect("canonical arguments are an object");
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    assert!(
        keys == ["query"] || keys == ["query", "limit"],
        "{}",
        call.arguments
    );
    assert!(object["query"].is_string());
    assert!(object.get("limit").is_none_or(|limit| limit.is_u64()));
    let mut again = History::new();
    let recorded_again = again.record_json(stored.json()).expect("records again");
    assert!(matches!(
        recorded_again,
        Recorded::Stored {
            truncated: false,
            ..
        }
    ));
    assert_eq!(
        again.get(0).expect("stored").json(),
        stored.json(),
        "a fixed point"
    );
}
