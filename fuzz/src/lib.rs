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
    History, Modalities, ProjectionOptions, RepairMode, Snapshot, SnapshotError, SnapshotOptions,
    UnknownItems, open_snapshot,
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
/// bits of `choice`.
pub fn projection_options(choice: u8) -> ProjectionOptions {
    ProjectionOptions {
        modalities: Modalities {
            image: choice & 1 != 0,
            audio: choice & 2 != 0,
        },
        repair: if choice & 4 != 0 {
            RepairMode::Strict
        } else {
            RepairMode::Lenient
        },
        unknown_items: if choice & 8 != 0 {
            UnknownItems::Send
        } else {
            UnknownItems::HoldBack
        },
    }
}

/// The entries' JSON texts, in order.
pub fn jsons(history: &History) -> Vec<&str> {
    history.iter().map(|entry| entry.json()).collect()
}
