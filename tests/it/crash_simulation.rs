//! Crash simulation (`docs/verification.md`, "Crash simulation"): the rollout writer and the
//! snapshot writer run on `SimulatedStorage`, which crashes at every operation of a scenario, in
//! turn, and tells what a process crash and a power loss leave.
//!
//! * A rollout, under each durability setting, after each kind of crash: the surviving bytes are
//!   a prefix of what the uncrashed run wrote; they resume to the live history at that point; and
//!   they hold every line the writer reported durable — whose count is pinned against an oracle
//!   kept by the test (the lines of the calls that returned, or of the last `flush`).
//! * A snapshot replaced at every crash point: the path holds the old file or the new one, byte
//!   for byte, never a mix and never nothing; which one is pinned per crash kind.

use crate::common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use agent_history::testing::{CrashKind, Operation, SimulatedFile, SimulatedStorage};
use agent_history::{
    DEFAULT_TRUNCATION, Durability, History, Session, SessionMeta, SnapshotOptions, open_snapshot,
};
use common::{assistant, call, output, resume_bytes, temp_dir, thread, user};

const ROLLOUT: &str = "sessions/rollout.jsonl";
const SNAPSHOT: &str = "snapshots/history.snap";

fn clock() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(1_762_178_401_137)
}

/// One call of the scenario on the session.
enum Step {
    /// Recorded as one batch (one item: `record_json`; more: `record_all_json`).
    Record(Vec<String>),
    Rollback(usize),
    Compact(&'static str),
    Flush,
}

/// The scenario: steps and the number of lines each writes, counted by hand (a system message
/// is not stored, so it writes none; a batch writes one line per stored item).
fn scenario() -> Vec<(Step, u64)> {
    vec![
        (Step::Record(vec![user("turn 0: list the files")]), 1),
        (Step::Record(vec![call("c0")]), 1),
        (Step::Record(vec![output("c0", "a.rs b.rs")]), 1),
        (Step::Record(vec![assistant("two files")]), 1),
        (Step::Flush, 0),
        (
            Step::Record(vec![
                user("turn 1: read a.rs"),
                call("c1"),
                output("c1", "fn main() {}"),
            ]),
            3,
        ),
        (Step::Record(vec![assistant("it is empty")]), 1),
        (Step::Rollback(1), 1),
        (
            Step::Record(vec![
                r#"{"type":"message","role":"system","content":[{"type":"input_text","text":"s"}]}"#
                    .to_owned(),
            ]),
            0,
        ),
        (Step::Record(vec![user("turn 1 again: read b.rs")]), 1),
        // Over the 64 KiB buffer: a buffered writer writes it out without a flush.
        (Step::Record(vec![assistant(&"b".repeat(70_000))]), 1),
        (Step::Compact("summary of the work so far"), 1),
        (Step::Record(vec![user("turn 2")]), 1),
        (Step::Flush, 0),
        (Step::Record(vec![assistant("last words")]), 1),
    ]
}

/// What one run of the scenario did.
struct Run {
    storage: SimulatedStorage,
    /// The writer's `durable_lines()` when the run stopped (at the crash, or at the end).
    reported_durable: u64,
    /// The oracle: lines of the calls that returned `Ok`, the session's first line included.
    returned: u64,
    /// The oracle: lines returned before the last `flush` that returned `Ok`.
    flushed: u64,
    /// Line count and history (item JSON) after the creation and after each step that returned.
    boundaries: Vec<(u64, Vec<String>)>,
}

fn jsons(history: &History) -> Vec<String> {
    history.iter().map(|e| e.json().to_owned()).collect()
}

/// Runs the scenario on a new storage, crashing at `crash` (`(operation, half)`) if given; stops
/// at the first error, as a process that crashed would.
fn run(durability: Durability, meta: &SessionMeta, crash: Option<(u64, bool)>) -> Run {
    let storage = SimulatedStorage::new();
    if let Some((operation, half)) = crash {
        storage.crash_at(operation, half);
    }
    let mut result = Run {
        storage: storage.clone(),
        reported_durable: 0,
        returned: 0,
        flushed: 0,
        boundaries: Vec::new(),
    };
    let writer = match storage.create_rollout(ROLLOUT, meta, durability, clock) {
        Ok(writer) => writer,
        Err(_) => return result,
    };
    result.returned = 1;
    result.boundaries.push((1, Vec::new()));
    let mut session: Session<SimulatedFile> =
        Session::from_parts(History::new(), writer, meta.id).with_id_assignment(false);
    for (step, lines) in scenario() {
        let ok = match &step {
            Step::Record(items) if items.len() == 1 => session.record_json(&items[0]).is_ok(),
            Step::Record(items) => session
                .record_all_json(items.iter().map(String::as_str))
                .is_ok(),
            Step::Rollback(n) => session.rollback(*n).is_ok(),
            Step::Compact(summary) => session.compact(summary).is_ok(),
            Step::Flush => session.flush().is_ok(),
        };
        if !ok {
            break;
        }
        result.returned += lines;
        if matches!(step, Step::Flush) {
            result.flushed = result.returned;
        }
        result
            .boundaries
            .push((result.returned, jsons(session.history())));
    }
    result.reported_durable = session.writer().durable_lines();
    // Dropping the writer writes what it still holds and flushes (best effort): its operations
    // are crash points too.
    drop(session);
    result
}

/// Whether `durability` promises that a crash of `kind` keeps every line reported durable.
fn protects(durability: Durability, kind: CrashKind) -> bool {
    match kind {
        CrashKind::Process => true,
        CrashKind::PowerLoss | CrashKind::PowerLossAfterDirectoryWrite => {
            durability == Durability::SyncData
        }
    }
}

/// What the crash tests of one setting found, for the checks across crash points.
#[derive(Default)]
struct Found {
    /// Crash points at which a crash of each kind kept fewer complete lines than the calls that
    /// had returned.
    lost_returned: [u32; 3],
    /// Of those, the ones where the lost lines were reported durable.
    lost_durable: [u32; 3],
    torn_tails: u32,
    missing_files: u32,
}

/// Checks what a crash of every kind leaves after `run`, against the uncrashed run's bytes
/// (`full`) and histories; returns what it found.
fn check_crash(
    durability: Durability,
    label: &str,
    run: &Run,
    full: &[u8],
    full_boundaries: &[(u64, Vec<String>)],
    found: &mut Found,
) {
    let expected_durable = match durability {
        Durability::Buffered => run.flushed,
        Durability::Flush | Durability::SyncData => run.returned,
    };
    assert_eq!(
        run.reported_durable, expected_durable,
        "{label}: the writer reports exactly the lines its setting makes durable"
    );
    for (index, kind) in CrashKind::ALL.into_iter().enumerate() {
        let label = format!("{label}, {kind:?}");
        let bytes = match run.storage.file_after(kind, ROLLOUT) {
            Some(bytes) => bytes,
            None => {
                found.missing_files += 1;
                Vec::new()
            }
        };
        assert!(
            full.starts_with(&bytes),
            "{label}: the surviving bytes are a prefix of what was written"
        );
        let complete = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        if complete < run.returned {
            found.lost_returned[index] += 1;
        }
        if complete < run.reported_durable {
            found.lost_durable[index] += 1;
            assert!(
                !protects(durability, kind),
                "{label}: {complete} complete lines survive, {} were reported durable",
                run.reported_durable
            );
        }
        if complete == 0 {
            continue; // no session_meta line: nothing to resume
        }
        let resumed = resume_bytes(&bytes, DEFAULT_TRUNCATION);
        let torn = bytes.last() != Some(&b'\n');
        found.torn_tails += u32::from(torn);
        assert_eq!(resumed.report().torn_tail, torn, "{label}");
        assert_eq!(resumed.thread_id(), thread("crash"), "{label}");
        let history = jsons(resumed.history());
        // The history is the live one after the last call whose lines all survived, plus the
        // items of a batch that survived in part (a batch only appends).
        let before = full_boundaries
            .iter()
            .rev()
            .find(|(lines, _)| *lines <= complete)
            .expect("the first line survived");
        if before.0 == complete {
            assert_eq!(history, before.1, "{label}: the live history at that point");
        } else {
            let after = full_boundaries
                .iter()
                .find(|(lines, _)| *lines > complete)
                .expect("a later boundary");
            assert!(
                history.starts_with(&before.1) && after.1.starts_with(&history),
                "{label}: a batch cut after a line resumes to the items before the cut"
            );
        }
    }
}

#[test]
fn a_rollout_crashed_at_every_operation_keeps_every_line_reported_durable() {
    let meta = SessionMeta::new(thread("crash"));
    for durability in [
        Durability::Buffered,
        Durability::Flush,
        Durability::SyncData,
    ] {
        let full_run = run(durability, &meta, None);
        let operations = full_run.storage.operations();
        let full = full_run
            .storage
            .file_after(CrashKind::Process, ROLLOUT)
            .expect("the rollout");
        let lines: u64 = 1 + scenario().iter().map(|(_, lines)| lines).sum::<u64>();
        assert_eq!(full.iter().filter(|&&b| b == b'\n').count() as u64, lines);
        assert_eq!(full_run.returned, lines);
        // The last line was never flushed under `Buffered`: the writer still holds it.
        let expected = if durability == Durability::Buffered {
            lines - 1
        } else {
            lines
        };
        assert_eq!(full_run.reported_durable, expected, "{durability:?}");
        // The operations of a batch, pinned: `SyncData` syncs the directory before the first
        // line and syncs every batch; `Flush` flushes every batch; `Buffered` flushes only on
        // `flush` (and writes its buffer out when it reaches 64 KiB).
        let count = |operation| operations.iter().filter(|&&o| o == operation).count();
        match durability {
            Durability::SyncData => {
                assert_eq!(
                    &operations[..2],
                    [Operation::Create, Operation::SyncDirectory]
                );
                // Every call's flush is followed by a sync; the drop's flush is not.
                assert_eq!(count(Operation::Flush), 1 + 12 + 2 + 1);
                assert_eq!(count(Operation::SyncData), 1 + 12 + 2);
            }
            Durability::Flush => {
                assert_eq!(count(Operation::SyncDirectory), 0);
                assert_eq!(count(Operation::SyncData), 0);
                // One flush per call that writes or flushes (the first line, the 12 calls that
                // write lines — the system message writes none —, the 2 flushes), and the drop's.
                assert_eq!(count(Operation::Flush), 1 + 12 + 2 + 1);
            }
            Durability::Buffered => {
                assert_eq!(count(Operation::SyncData), 0);
                assert_eq!(count(Operation::Flush), 3, "the two flushes and the drop's");
                assert_eq!(
                    count(Operation::Write),
                    4,
                    "the two flushes, the 64 KiB buffer and the drop"
                );
            }
        }
        let mut found = Found::default();
        for operation in 1..=operations.len() as u64 {
            for half in [false, true] {
                let crashed = run(durability, &meta, Some((operation, half)));
                assert!(crashed.storage.crashed().is_some());
                let label =
                    format!("{durability:?}, crash at operation {operation} (half: {half})");
                check_crash(
                    durability,
                    &label,
                    &crashed,
                    &full,
                    &full_run.boundaries,
                    &mut found,
                );
            }
        }
        // The model tells the settings apart: what each does not promise does happen.
        let [process, power_loss, after_directory_write] = found.lost_durable;
        assert_eq!(process, 0, "{durability:?}");
        match durability {
            Durability::SyncData => {
                assert_eq!((power_loss, after_directory_write), (0, 0));
            }
            Durability::Flush => {
                assert!(
                    power_loss > 0 && after_directory_write > 0,
                    "{durability:?}"
                );
                assert!(
                    found.missing_files > 0,
                    "the new file's name was never synced"
                );
            }
            Durability::Buffered => {
                assert!(
                    found.lost_returned[0] > 0,
                    "a process crash loses the buffer"
                );
                assert!(power_loss > 0);
            }
        }
        assert!(
            found.torn_tails > 0,
            "{durability:?}: half-done flushes tear lines"
        );
    }
}

/// A real session's snapshots: an older one and a newer one of the same rollout, opened.
fn two_snapshots() -> (Vec<u8>, agent_history::Snapshot, agent_history::Snapshot) {
    let dir = temp_dir();
    let rollout = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &rollout,
        SessionMeta::new(thread("snap")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    session.record_json(&user("first")).expect("recorded");
    session.record_json(&assistant("one")).expect("recorded");
    let old_path = dir.path().join("old.snap");
    session.write_snapshot(&old_path).expect("written");
    for turn in 0..5 {
        session
            .record_json(&user(&format!("turn {turn}")))
            .expect("recorded");
        session
            .record_json(&assistant(&"x".repeat(3_000)))
            .expect("recorded");
    }
    let new_path = dir.path().join("new.snap");
    session.write_snapshot(&new_path).expect("written");
    let old_bytes = std::fs::read(&old_path).expect("read");
    let open = |path: &Path| open_snapshot(path, SnapshotOptions::default()).expect("opens");
    (old_bytes, open(&old_path), open(&new_path))
}

/// Opens `bytes` as a snapshot file and returns its history's item JSON.
fn opened(bytes: &[u8]) -> Vec<String> {
    let dir = temp_dir();
    let path = dir.path().join("survivor.snap");
    std::fs::write(&path, bytes).expect("written");
    let snapshot = open_snapshot(&path, SnapshotOptions::default()).expect("opens");
    jsons(snapshot.history())
}

#[test]
fn a_snapshot_replaced_at_any_crash_point_is_the_old_or_the_new_file_whole() {
    let (old, old_snapshot, new_snapshot) = two_snapshots();
    // The uncrashed replacement, for its bytes and its operations.
    let storage = SimulatedStorage::new();
    storage.put_durable_file(SNAPSHOT, &old);
    storage
        .write_snapshot(&new_snapshot, SNAPSHOT)
        .expect("written");
    let operations = storage.operations();
    let new = storage
        .file_after(CrashKind::PowerLoss, SNAPSHOT)
        .expect("durable after the directory sync");
    assert_ne!(new, old);
    assert_eq!(opened(&old), jsons(old_snapshot.history()));
    assert_eq!(opened(&new), jsons(new_snapshot.history()));
    assert_eq!(
        storage.files_after(CrashKind::Process).len(),
        1,
        "no temporary file is left"
    );
    // The order that makes the replacement atomic: data flushed and synced, then the rename,
    // then the directory sync, last.
    let position = |operation| {
        operations
            .iter()
            .position(|&o| o == operation)
            .expect("the operation")
    };
    let rename = position(Operation::Rename);
    assert_eq!(operations[0], Operation::Create);
    assert_eq!(
        &operations[rename - 2..],
        [
            Operation::Flush,
            Operation::SyncData,
            Operation::Rename,
            Operation::SyncDirectory
        ]
    );
    for operation in 1..=operations.len() {
        for half in [false, true] {
            let storage = SimulatedStorage::new();
            storage.put_durable_file(SNAPSHOT, &old);
            storage.crash_at(operation as u64, half);
            storage
                .write_snapshot(&new_snapshot, SNAPSHOT)
                .expect_err("crashed");
            let renamed = operation > rename + 1; // the rename (1-based: rename + 1) was done
            for kind in CrashKind::ALL {
                let label = format!("crash at operation {operation} (half: {half}), {kind:?}");
                let bytes = storage
                    .file_after(kind, SNAPSHOT)
                    .unwrap_or_else(|| panic!("{label}: the snapshot is missing"));
                // Only the directory sync makes the rename durable, and it is the last step.
                let expected = match kind {
                    CrashKind::Process | CrashKind::PowerLossAfterDirectoryWrite if renamed => &new,
                    _ => &old,
                };
                assert!(bytes == *expected, "{label}: not the expected whole file");
            }
        }
    }
}

#[test]
fn a_first_snapshot_crashed_anywhere_is_missing_or_whole() {
    let (_, _, snapshot) = two_snapshots();
    let storage = SimulatedStorage::new();
    storage
        .write_snapshot(&snapshot, SNAPSHOT)
        .expect("written");
    let new = storage
        .file_after(CrashKind::PowerLoss, SNAPSHOT)
        .expect("written");
    let total = storage.operations().len() as u64;
    let mut missing = 0;
    for operation in 1..=total {
        for half in [false, true] {
            let storage = SimulatedStorage::new();
            storage.crash_at(operation, half);
            storage
                .write_snapshot(&snapshot, SNAPSHOT)
                .expect_err("crashed");
            for kind in CrashKind::ALL {
                match storage.file_after(kind, SNAPSHOT) {
                    None => missing += 1,
                    Some(bytes) => assert!(bytes == new, "operation {operation}, {kind:?}"),
                }
            }
        }
    }
    assert!(
        missing > 0,
        "before its directory sync, a power loss takes the new name"
    );
}
