//! Complexity guards: the O(1), O(log n) and O(k log n) claims of the README and `docs/` checked
//! by counting work, never by timing it, at two history sizes a hundredfold apart (1,000 and
//! 100,000 entries).
//!
//! Two counts are used:
//!
//! * `testing::entry_reads`, the reads of an entry's header or text through its accessors
//!   (feature `testing`). Outside the entry's own module every decision about an entry (its
//!   kind, its call id, its text) goes through one of them, so an operation that looks at every
//!   entry counts at least one read per entry: n at 100,000 is 100× n at 1,000.
//! * the allocations (blocks and bytes) made inside a window, counted by `dhat`'s global
//!   allocator in testing mode (no hand-written `unsafe`). An operation that copies the vector of
//!   entries, the pairing index or any per-entry structure allocates at least 16 bytes (an entry
//!   header) per entry: 1.6 MB at 100,000.
//!
//! The allocator counts every thread's allocations, so every test of this file holds one lock
//! for its whole run (they run one at a time), and the windows hold only the operation measured;
//! the test harness's own thread can still allocate while reporting, which the bounds leave room
//! for (they are a few hundred bytes where an O(n) implementation would need megabytes).
//!
//! A binary of its own, not a module of `tests/it/`: its global allocator counts every
//! allocation of the process, which the tests of other modules would make while one runs.
//!
//! The histories are built once per size (clones of a few entries recorded with
//! `History::record_entry`, so building 100,000 entries stays cheap in a debug build) and cloned
//! into each test.

use std::sync::{Mutex, MutexGuard, OnceLock};

use agent_history::testing::{entry_reads, item_conversions};
use agent_history::{
    DEFAULT_TRUNCATION, Entry, History, Modalities, ProjectionOptions, Recorded, ResumeOptions,
    Target, TargetOptions, resume_file,
};

// Every allocation of this test binary goes through `dhat`; it records only while a profiler
// runs (inside `allocations`).
#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// The two sizes every guard runs at, a hundredfold apart.
const SMALL: usize = 1_000;
const LARGE: usize = 100_000;

/// Items per user turn in the filler histories: a user message and assistant messages.
const TURN: usize = 10;

/// Calls without output and orphan outputs spread over the history with repairs (k = 2 × this).
const BROKEN: usize = 8;

/// One test at a time: the allocation windows count every thread's allocations.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a window allocated.
#[derive(Debug, Clone, Copy)]
struct Allocated {
    blocks: u64,
    bytes: u64,
}

/// Runs `op` on a state made by `setup` with the allocator counting, three times, and returns
/// the last state and result (dropped by the caller, outside the window), the fewest allocations
/// of the three windows (another thread's allocation during a window only adds to it: the
/// smallest figure is the operation's) and the entry reads `op` made (counted per thread, the
/// same each time).
fn measure<S, R>(setup: impl Fn() -> S, op: impl Fn(&mut S) -> R) -> (S, R, Allocated, u64) {
    let mut fewest: Option<Allocated> = None;
    let mut reads = None;
    let mut last = None;
    for _ in 0..3 {
        let mut state = setup();
        let profiler = dhat::Profiler::builder().testing().build();
        let before = entry_reads();
        let result = op(&mut state);
        let read = entry_reads() - before;
        let stats = dhat::HeapStats::get();
        drop(profiler);
        let allocated = Allocated {
            blocks: stats.total_blocks,
            bytes: stats.total_bytes,
        };
        fewest = Some(match fewest {
            Some(fewest) => Allocated {
                blocks: fewest.blocks.min(allocated.blocks),
                bytes: fewest.bytes.min(allocated.bytes),
            },
            None => allocated,
        });
        assert_eq!(
            *reads.get_or_insert(read),
            read,
            "entry reads differ between runs"
        );
        // The previous run's state and result are dropped here, outside any window.
        last = Some((state, result));
    }
    let (state, result) = last.expect("three runs");
    let (allocated, reads) = (fewest.expect("three runs"), reads.expect("three runs"));
    // The figures, for docs/verification.md (`cargo test --test complexity -- --nocapture`).
    println!("{allocated:?} reads {reads}");
    (state, result, allocated, reads)
}

fn entry(json: &str) -> Entry {
    Entry::from_json(json).expect("a valid item")
}

fn user() -> Entry {
    entry(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}"#)
}

fn assistant() -> Entry {
    entry(
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#,
    )
}

fn call(id: usize) -> Entry {
    entry(&format!(
        r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"broken_{id}"}}"#
    ))
}

fn orphan(id: usize) -> Entry {
    entry(&format!(
        r#"{{"type":"function_call_output","call_id":"orphan_{id}","output":"ok"}}"#
    ))
}

fn stored(history: &mut History, entry: Entry) {
    let recorded = history.record_entry(entry).expect("records");
    assert!(matches!(recorded, Recorded::Stored { .. }), "{recorded:?}");
}

/// `n` entries in user turns of `TURN` items, all of them paired (nothing to repair). With
/// `broken`, `BROKEN` calls without output and `BROKEN` orphan outputs take the place of
/// assistant messages at positions spread evenly over the history.
fn build(n: usize, broken: bool) -> History {
    let (user, assistant) = (user(), assistant());
    let spacing = n / (2 * BROKEN);
    let mut history = History::new();
    for position in 0..n {
        let entry = if position.is_multiple_of(TURN) {
            user.clone()
        } else if broken && position % spacing == 1 && position / spacing < 2 * BROKEN {
            let which = position / spacing;
            if which.is_multiple_of(2) {
                call(which)
            } else {
                orphan(which)
            }
        } else {
            assistant.clone()
        };
        stored(&mut history, entry);
    }
    assert_eq!(history.len(), n);
    history
}

/// The history of `n` entries without repairs, built once.
fn plain(n: usize) -> History {
    static SMALL_PLAIN: OnceLock<History> = OnceLock::new();
    static LARGE_PLAIN: OnceLock<History> = OnceLock::new();
    let cell = if n == SMALL {
        &SMALL_PLAIN
    } else {
        &LARGE_PLAIN
    };
    cell.get_or_init(|| build(n, false)).clone()
}

/// The history of `n` entries with 2 × `BROKEN` repairs, built once.
fn broken(n: usize) -> History {
    static SMALL_BROKEN: OnceLock<History> = OnceLock::new();
    static LARGE_BROKEN: OnceLock<History> = OnceLock::new();
    let cell = if n == SMALL {
        &SMALL_BROKEN
    } else {
        &LARGE_BROKEN
    };
    cell.get_or_init(|| build(n, true)).clone()
}

/// Claim: cloning a history is O(1) (README, "an O(1) clone that shares structure";
/// architecture.md, the pairing index "is cloned with the history in O(1)").
///
/// An O(n) clone (a deep copy of the vector, of the index or of any per-entry structure)
/// allocates at least 16 bytes per entry: 1.6 MB at 100,000, against the 256 bytes allowed.
#[test]
fn a_clone_allocates_nothing_that_grows_with_the_history() {
    let _serial = serial();
    for n in [SMALL, LARGE] {
        let (_, clone, allocated, reads) = measure(|| broken(n), |history| history.clone());
        assert_eq!(clone.len(), n);
        assert_eq!(reads, 0, "a clone read entries at n = {n}");
        assert!(
            allocated.blocks <= 4 && allocated.bytes <= 256,
            "a clone of {n} entries allocated {allocated:?}"
        );
        drop(clone);
    }
}

/// Claim: projecting costs O(1) when nothing needs repair (README, architecture.md).
///
/// The projection reads no entry and allocates the same at both sizes; a pass that scanned the
/// history would read 1,000 entries at the small size and 100,000 at the large one, and a
/// projection that copied the vector would allocate 1.6 MB at the large one.
#[test]
fn a_projection_without_repairs_reads_no_entry() {
    let _serial = serial();
    let options = ProjectionOptions::default();
    for n in [SMALL, LARGE] {
        let (_, projection, allocated, reads) = measure(
            || plain(n),
            |history| history.project(&options).expect("projects"),
        );
        assert_eq!(projection.len(), n);
        assert!(projection.report().is_empty());
        assert_eq!(
            reads, 0,
            "a projection without repairs read entries at n = {n}"
        );
        assert!(
            allocated.blocks <= 4 && allocated.bytes <= 1024,
            "a projection of {n} entries without repairs allocated {allocated:?}"
        );
        drop(projection);
    }
}

/// Claim: a projection with k repairs costs O(k log k + k log n) (architecture.md; the README
/// rounds it to O(k log n)): the passes look up the k positions in the index and read those
/// k entries, never the others.
///
/// The entry reads are counted: the same at 1,000 and 100,000 entries for the same k (the
/// log n is the depth of the persistent vector and index, walked inside `imbl`, which these
/// counts do not see), and at most a few per repair. A pass that scanned the history would read
/// at least n entries, 100× more at the large size. The allocations (the k repaired slots, the
/// overlay, the report) are bounded the same way: an implementation that copied the vector, or
/// path-copied it k times as before the overlay, allocates in proportion to n or to k × depth.
#[test]
fn a_projection_with_k_repairs_reads_k_entries_at_any_size() {
    let _serial = serial();
    let options = ProjectionOptions::default();
    let k = (2 * BROKEN) as u64;
    let mut seen = Vec::new();
    for n in [SMALL, LARGE] {
        let (_, projection, allocated, reads) = measure(
            || broken(n),
            |history| history.project(&options).expect("projects"),
        );
        // Each call without output renders with its synthetic output; each orphan renders as
        // nothing.
        assert_eq!(projection.len(), n);
        assert_eq!(projection.report().len(), 2 * BROKEN);
        assert!(
            reads <= 8 * k,
            "a projection with {k} repairs read {reads} entries at n = {n}"
        );
        seen.push((reads, allocated));
        drop(projection);
    }
    let ((small_reads, small), (large_reads, large)) = (seen[0], seen[1]);
    assert_eq!(
        small_reads, large_reads,
        "entry reads at {SMALL} and {LARGE}"
    );
    assert!(
        large.bytes <= small.bytes + 1024 && large.bytes <= 1024 * k,
        "allocations grew with the history: {small:?} at {SMALL}, {large:?} at {LARGE}"
    );
}

/// Claim: recording is O(log n) (architecture.md) — it does not rescan earlier entries.
///
/// Recording a call, its output and a user message into a history of n entries reads the same
/// number of entries at both sizes (only the new ones and the call the output answers, through
/// the index), and allocates what the new entries and the path copies of one leaf and the tree
/// nodes above it cost: bounded by the tree's depth, one more level at 100,000 than at 1,000.
/// A record that rescanned the history would read n entries (100× more at the large size); one
/// that copied the vector or the index would allocate at least 16 bytes per entry (1.6 MB).
#[test]
fn recording_reads_and_allocates_the_same_at_any_size() {
    let _serial = serial();
    let items = [
        r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"fresh"}"#,
        r#"{"type":"function_call_output","call_id":"fresh","output":"done"}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"more"}]}"#,
    ];
    let mut seen = Vec::new();
    for n in [SMALL, LARGE] {
        // The history shares its structure with the cached one, as a history does with the
        // versions a session published: the first record path-copies what it changes.
        let (history, conversions, allocated, reads) = measure(
            || plain(n),
            |history| {
                let conversions = item_conversions();
                for item in items {
                    history.record_json(item).expect("records");
                }
                item_conversions() - conversions
            },
        );
        // A parse and an entry build per item, whatever the history's length.
        assert_eq!(conversions, 2 * items.len() as u64);
        assert_eq!(history.len(), n + items.len());
        seen.push((reads, allocated));
    }
    let ((small_reads, small), (large_reads, large)) = (seen[0], seen[1]);
    assert_eq!(
        small_reads, large_reads,
        "entry reads at {SMALL} and {LARGE}"
    );
    assert!(
        small_reads <= 16 * items.len() as u64,
        "{small_reads} entry reads"
    );
    assert!(
        large.bytes <= 2 * small.bytes && large.bytes < 64 * 1024,
        "recording allocated {small:?} at {SMALL}, {large:?} at {LARGE}"
    );
}

/// Claim: a rollback removes the k items it cuts from the back in O(k log n) (architecture.md,
/// `drop_last_n_user_turns`).
///
/// Rolling back three turns (30 items) reads the same number of entries at both sizes, and
/// allocates within the same bound; a rollback that rebuilt the index or scanned the history
/// would read n entries.
#[test]
fn a_rollback_of_k_turns_reads_the_same_at_any_size() {
    let _serial = serial();
    let mut seen = Vec::new();
    for n in [SMALL, LARGE] {
        let turns = plain(n).user_turn_count();
        let (history, (), allocated, reads) = measure(
            || plain(n),
            |history| history.drop_last_n_user_turns(3).expect("rolls back"),
        );
        assert_eq!(history.len(), n - 3 * TURN);
        assert_eq!(history.user_turn_count(), turns - 3);
        assert!(
            reads <= 8 * 3 * TURN as u64,
            "{reads} entry reads at n = {n}"
        );
        seen.push((reads, allocated));
    }
    let ((small_reads, small), (large_reads, large)) = (seen[0], seen[1]);
    assert_eq!(
        small_reads, large_reads,
        "entry reads at {SMALL} and {LARGE}"
    );
    assert!(
        large.bytes <= 2 * small.bytes && large.bytes < 64 * 1024,
        "a rollback allocated {small:?} at {SMALL}, {large:?} at {LARGE}"
    );
}

/// Claim: `remove_first_item` is O(log n) (architecture.md, performance.md "Trimming the
/// front"): it finds the first entry's counterpart through the call id's slot of the index
/// instead of scanning the history.
///
/// The first item here is a call whose output is the second item; removing it (from a clone of
/// the history, as a session's published version shares it) reads the same number of entries at
/// both sizes. A search for the counterpart by scanning would read up to n
/// entries; rebuilding the index would read all n.
#[test]
fn removing_the_first_item_reads_the_same_at_any_size() {
    let _serial = serial();
    let mut seen = Vec::new();
    for n in [SMALL, LARGE] {
        let mut history = History::new();
        stored(&mut history, call(0));
        stored(
            &mut history,
            entry(r#"{"type":"function_call_output","call_id":"broken_0","output":"ok"}"#),
        );
        let rest = plain(n);
        for entry in rest.iter() {
            stored(&mut history, entry.clone());
        }
        let (history, removed, allocated, reads) =
            measure(|| history.clone(), History::remove_first_item);
        assert_eq!(removed.len(), 2, "the call and its output");
        assert_eq!(history.len(), n);
        assert!(reads <= 32, "{reads} entry reads at n = {n}");
        seen.push((reads, allocated));
        drop(removed);
    }
    let ((small_reads, small), (large_reads, large)) = (seen[0], seen[1]);
    assert_eq!(
        small_reads, large_reads,
        "entry reads at {SMALL} and {LARGE}"
    );
    assert!(
        large.bytes < 64 * 1024,
        "removing the first item allocated {small:?} at {SMALL}, {large:?} at {LARGE}"
    );
}

/// Claim: a projection is a persistent value, cheap to clone (architecture.md: "cloning a
/// projection stays O(1)").
///
/// Measured: the slots (the vector and the overlay) are shared, but the repair report's list of
/// the k repairs made while projecting is a `Vec` that a clone copies, so a clone of a
/// projection with k repairs allocates O(k) — the same at both sizes, nothing that grows with
/// n. An O(n) clone would allocate at least 16 bytes per slot (1.6 MB at 100,000).
#[test]
fn a_projection_clone_allocates_nothing_that_grows_with_the_history() {
    let _serial = serial();
    let options = ProjectionOptions::default();
    let k = (2 * BROKEN) as u64;
    let mut seen = Vec::new();
    for n in [SMALL, LARGE] {
        let history = broken(n);
        let projection = history.project(&options).expect("projects");
        let (_, clone, allocated, reads) = measure(|| (), |()| projection.clone());
        assert_eq!(clone.len(), projection.len());
        assert_eq!(reads, 0);
        assert!(
            allocated.blocks <= 4 && allocated.bytes <= 128 * k,
            "a projection clone at {n} entries allocated {allocated:?}"
        );
        seen.push(allocated);
        drop(clone);
    }
    assert!(seen[1].bytes <= seen[0].bytes + 256, "{seen:?}");
}

/// A rollout line.
fn line(kind: &str, payload: &str) -> String {
    format!(r#"{{"timestamp":"2026-11-03T14:00:00.000Z","type":"{kind}","payload":{payload}}}"#)
}

/// Claim: resuming through a snapshot reads only the lines after the prefix it stands for;
/// opening the snapshot parses no JSON (architecture.md, "Snapshots": "no JSON is parsed";
/// README: a session "continued 100 turns after its snapshot resumed in about 0.26× the time of a
/// JSONL resume").
///
/// A rollout of n items (200 and 20,000 here, a hundredfold apart: resuming the rollout to
/// write its snapshot is the slow part of this file in a debug build) is resumed and snapshotted, ten more lines are appended, and the rollout
/// is resumed through the snapshot: the item conversions (a JSON parse of an item, an entry
/// build) are counted, the same at both sizes (those of the ten later lines). A resume that
/// parsed the snapshot's entries, or fell back to the full file, would convert n items or more.
/// (Opening the map costs O(n) pointer work and the index build, which these counts do not see;
/// `benches/snapshot.rs` measures it.)
#[test]
fn a_resume_through_a_snapshot_parses_only_the_later_lines() {
    let _serial = serial();
    const LATER: usize = 10;
    let meta = line(
        "session_meta",
        r#"{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2026-11-03T14:00:00.000Z"}"#,
    );
    let user = line(
        "response_item",
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}"#,
    );
    let assistant = line(
        "response_item",
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#,
    );
    let directory = tempfile::tempdir().expect("a temporary directory");
    let mut seen = Vec::new();
    for n in [SMALL / 5, LARGE / 5] {
        let rollout = directory.path().join(format!("{n}.jsonl"));
        let snapshot = directory.path().join(format!("{n}.snap"));
        let mut text = format!("{meta}\n");
        for position in 0..n {
            text.push_str(if position.is_multiple_of(TURN) {
                &user
            } else {
                &assistant
            });
            text.push('\n');
        }
        std::fs::write(&rollout, &text).expect("write the rollout");
        let prefix = resume_file(
            &rollout,
            &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
        )
        .expect("resumes");
        prefix
            .write_snapshot(&snapshot)
            .expect("writes the snapshot");
        for _ in 0..LATER {
            text.push_str(&assistant);
            text.push('\n');
        }
        std::fs::write(&rollout, &text).expect("append the later lines");
        let options = ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(&snapshot);
        let conversions = item_conversions();
        let resumed = resume_file(&rollout, &options).expect("resumes through the snapshot");
        let conversions = item_conversions() - conversions;
        assert!(resumed.used_snapshot(), "{:?}", resumed.fallback_reason());
        assert_eq!(resumed.history().len(), n + LATER);
        println!("{conversions} item conversions at n = {n}");
        assert!(
            conversions <= 2 * LATER as u64,
            "{conversions} item conversions through a snapshot of {n} items"
        );
        seen.push(conversions);
    }
    assert_eq!(seen[0], seen[1], "item conversions at 200 and 20,000 items");
}

/// A history of `n` entries, with repairs, in a lineage of its own: nothing assembled for it yet
/// (its entries are the cached history's, so their conversions are cached once projected).
fn new_lineage(n: usize) -> History {
    let mut history = History::new();
    history.replace(broken(n).iter().cloned());
    history
}

/// Claim: a warm projection for Chat Completions (nothing changed since the last one) costs the
/// Responses projection plus O(k) for the k repairs (docs/performance.md, "Per-target
/// projections"): the assembly kept in the lineage is returned as it is.
///
/// What it allocates beyond the Responses projection of the same history (measured beside it)
/// is the same at 1,000 and 100,000 entries, and under 2 KB; so are its entry reads. One that
/// re-assembled, or copied the steps, would allocate at least a pointer per step (800 KB at
/// 100,000).
#[test]
fn a_warm_chat_projection_allocates_the_same_at_any_size() {
    let _serial = serial();
    let options = TargetOptions::new(Target::ChatCompletions);
    let mut seen = Vec::new();
    for n in [SMALL, LARGE] {
        let history = new_lineage(n);
        history.project_for(&options).expect("projects");
        let (_, _, responses, responses_reads) = measure(
            || history.clone(),
            |history| history.project(&options.projection).expect("projects"),
        );
        let (_, projection, chat, reads) = measure(
            || history.clone(),
            |history| history.project_for(&options).expect("projects"),
        );
        assert_eq!(projection.report().projection().len(), 2 * BROKEN);
        let beyond = (
            chat.blocks - responses.blocks,
            chat.bytes - responses.bytes,
            reads - responses_reads,
        );
        println!("warm Chat beyond Responses at {n}: (blocks, bytes, reads) {beyond:?}");
        seen.push(beyond);
    }
    assert_eq!(
        seen[0], seen[1],
        "a warm Chat projection's (blocks, bytes, reads) beyond the Responses projection's at {SMALL} and {LARGE}"
    );
    assert!(seen[1].1 < 2 * 1024, "{seen:?}");
}

/// Claim: a projection for Chat Completions after an append re-assembles only what changed
/// (docs/performance.md, "Per-target projections"): O(changes) plus the path copies of the
/// persistent vectors the assembly keeps.
///
/// A history whose last version was projected gets a call and its output appended; projecting
/// it allocates about 20 KB at both sizes (the Responses projection's share included), at most
/// 4 KB more at 100,000 entries than at 1,000 (room for the path copy of one more level of the
/// persistent vectors; measured: the same bytes). An assembly in full would allocate at least a
/// pointer per step: 800 KB at 100,000.
#[test]
fn a_chat_projection_after_an_append_allocates_the_same_at_any_size() {
    let _serial = serial();
    let options = TargetOptions::new(Target::ChatCompletions);
    let mut seen = Vec::new();
    for n in [SMALL, LARGE] {
        let (history, projection, allocated, _) = measure(
            || {
                let mut history = new_lineage(n);
                history.project_for(&options).expect("projects");
                stored(&mut history, call(2 * BROKEN));
                stored(
                    &mut history,
                    entry(&format!(
                        r#"{{"type":"function_call_output","call_id":"broken_{}","output":"ok"}}"#,
                        2 * BROKEN
                    )),
                );
                history
            },
            |history| history.project_for(&options).expect("projects"),
        );
        assert_eq!(history.len(), n + 2);
        assert_eq!(projection.report().projection().len(), 2 * BROKEN);
        seen.push(allocated);
    }
    let (small, large) = (seen[0], seen[1]);
    assert!(
        large.bytes <= small.bytes + 4 * 1024 && large.bytes < 64 * 1024,
        "a Chat projection after an append allocated {small:?} at {SMALL}, {large:?} at {LARGE}"
    );
}

/// `n` entries in user turns of `TURN` items whose user message holds an image: `n / TURN`
/// media items, which a text-only projection strips (and lists as repairs only when its report
/// is read), in a lineage of its own.
fn with_images(n: usize) -> History {
    let user = entry(
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"https://example.com/a.png"}]}"#,
    );
    let assistant = assistant();
    let mut history = History::new();
    for position in 0..n {
        let next = if position.is_multiple_of(TURN) {
            user.clone()
        } else {
            assistant.clone()
        };
        stored(&mut history, next);
    }
    history
}

/// Claim: after an append, a text-only projection for Chat Completions or Anthropic Messages of
/// a history holding m images costs O(changes), not O(m) (docs/performance.md, "Per-target
/// projections"): the per-target assembly must not list the Responses report's media repairs
/// (which the report lists lazily, O(m log n), when it is read).
///
/// A projected history gets a user message with an image appended; the projection after it
/// allocates at most 4 KB more at 100,000 entries (10,000 images) than at 1,000 (100 images).
/// Listing the media repairs would allocate a repair per image: over 500 KB at 100,000.
#[test]
fn a_text_only_projection_after_an_append_allocates_the_same_however_many_images() {
    let _serial = serial();
    for target in [Target::ChatCompletions, Target::AnthropicMessages] {
        let options = TargetOptions::new(target)
            .with_projection(ProjectionOptions::for_modalities(Modalities::TEXT));
        let mut seen = Vec::new();
        for n in [SMALL, LARGE] {
            let base = with_images(n);
            let (history, projection, allocated, _) = measure(
                || {
                    // A lineage of its own each time: one append per length stays in a lineage.
                    let mut history = History::new();
                    history.replace(base.iter().cloned());
                    history.project_for(&options).expect("projects");
                    stored(&mut history, user());
                    history
                },
                |history| history.project_for(&options).expect("projects"),
            );
            assert_eq!(history.len(), n + 1);
            // The report still lists every stripped image once asked (outside the window).
            assert_eq!(projection.report().projection().len(), n / TURN);
            println!("{target:?} after an append at {n}: {allocated:?}");
            seen.push(allocated);
        }
        let (small, large) = (seen[0], seen[1]);
        assert!(
            large.bytes <= small.bytes + 4 * 1024,
            "{target:?}: a text-only projection after an append allocated {small:?} at {SMALL}, {large:?} at {LARGE}"
        );
    }
}

/// The memory an assembly for `options` keeps per entry: the bytes still allocated after the
/// first projection of a lineage whose entries' conversions are cached, once the projection
/// itself is dropped (what stays is the assembly in the lineage), divided by the entries, at
/// [`SMALL`] and [`LARGE`] entries; and the bytes an older version's assembly keeps when it is
/// projected after a writer appended `appended` messages (it starts from the writer's, kept
/// beside it, sharing all but the nodes on the path where it differs).
fn assembly_bytes(options: &TargetOptions, appended: usize) -> (Vec<f64>, Vec<usize>) {
    let (mut per_entry, mut older) = (Vec::new(), Vec::new());
    for n in [SMALL, LARGE] {
        // Every entry's conversion cached: the entries are shared with this history.
        new_lineage(n).project_for(options).expect("projects");
        let history = new_lineage(n);
        let profiler = dhat::Profiler::builder().testing().build();
        drop(history.project_for(options).expect("projects"));
        let stats = dhat::HeapStats::get();
        drop(profiler);
        let bytes = stats.curr_bytes as f64 / n as f64;
        println!(
            "a {:?} assembly of {n} entries keeps {} bytes in {} blocks: {bytes:.1} bytes per entry",
            options.target, stats.curr_bytes, stats.curr_blocks
        );
        per_entry.push(bytes);
        // A writer appends messages and projects (its assembly takes the place of the one it
        // extended); then the older version is projected again.
        let mut writer = history.clone();
        for position in 0..appended {
            stored(
                &mut writer,
                if position == 0 { user() } else { assistant() },
            );
        }
        drop(writer.project_for(options).expect("projects"));
        let profiler = dhat::Profiler::builder().testing().build();
        drop(history.project_for(options).expect("projects"));
        let stats = dhat::HeapStats::get();
        drop(profiler);
        println!(
            "an older version's {:?} assembly, from a newer one's, keeps {} bytes in {} blocks at {n}",
            options.target, stats.curr_bytes, stats.curr_blocks
        );
        older.push(stats.curr_bytes);
        drop((history, writer));
    }
    (per_entry, older)
}

/// The memory an assembly keeps per entry (docs/performance.md, "Per-target projections"),
/// measured by [`assembly_bytes`] for each target: a fragment per message (16 bytes, in the
/// persistent vector's chunks), the repairs, the map of call ids, and a fixed part, the
/// checkpoints kept (the last eight and about one per doubling of the distance back), whose
/// builder states share the assembly's structures. Pinned: at most 150 bytes per entry at
/// 100,000 entries (17.2 for either target when written; before one engine 316 for Anthropic
/// and up to 150 for Chat), and what the figure at 1,000 adds to it at most 128 KB (13.5 KB
/// when written). An older version four messages behind, which resumes the newer version's
/// assembly and is kept beside it, keeps under 16 KB at both sizes (under 3 KB when written).
#[test]
fn an_assembly_keeps_a_bounded_number_of_bytes_per_entry() {
    let _serial = serial();
    for target in [Target::ChatCompletions, Target::AnthropicMessages] {
        let (per_entry, older) = assembly_bytes(&TargetOptions::new(target), 4);
        let (small, large) = (per_entry[0], per_entry[1]);
        let fixed = (small - large) * SMALL as f64;
        println!("{target:?}: the checkpoints kept, about {fixed:.0} bytes");
        assert!(
            large <= 150.0 && (0.0..=128.0 * 1024.0).contains(&fixed),
            "{target:?}: {per_entry:?} bytes per entry at {SMALL} and {LARGE}"
        );
        assert!(
            older.iter().all(|&bytes| bytes < 16 * 1024),
            "{target:?}: an older version's assembly kept {older:?} bytes at {SMALL} and {LARGE}"
        );
    }
}

/// A history of `n` entries in turns of a user message, a function call, its output and an
/// assistant message; every call has an id of its own, or (with `reuse`) every call uses
/// `call_0`, which Chat Completions maps and Anthropic keeps once.
fn tool_heavy(n: usize, reuse: bool) -> History {
    let (user, assistant) = (user(), assistant());
    let mut history = History::new();
    for turn in 0..n / 4 {
        let id = if reuse {
            "call_0".to_owned()
        } else {
            format!("call_{turn}")
        };
        stored(&mut history, user.clone());
        stored(
            &mut history,
            entry(&format!(
                r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"{id}"}}"#
            )),
        );
        stored(
            &mut history,
            entry(&format!(
                r#"{{"type":"function_call_output","call_id":"{id}","output":"ok"}}"#
            )),
        );
        stored(&mut history, assistant.clone());
    }
    history
}

/// The memory an assembly of a session where every other entry is a call or an output keeps
/// per entry (docs/performance.md, "Per-target projections"), for both targets, with call ids of
/// their own and with one id reused by every call. The filler histories of the tests above hold
/// 16 calls; state kept per call (say a persistent set of the ids seen, copied at each call)
/// shows only here. Pinned at 200 bytes per entry for Chat Completions (124 at 40,000 entries
/// when written, 60 with one reused id; 137 and 83 since the lineage's one map of call ids also
/// records the names minted for mapped ids, with 16-byte values; 111 and 142 since a reused id's
/// turns are pieces of their own, each piece's ids shared with the map's keys) and 250 for
/// Anthropic Messages
/// (157 and 172), at 4,000 and 40,000 entries: an assembly that kept a copied set's path per
/// call measured 826 bytes per entry for Chat.
#[test]
fn a_tool_heavy_assembly_keeps_a_bounded_number_of_bytes_per_entry() {
    let _serial = serial();
    for (target, bound) in [
        (Target::ChatCompletions, 200.0),
        (Target::AnthropicMessages, 250.0),
    ] {
        let options = TargetOptions::new(target);
        for reuse in [false, true] {
            for n in [4_000, 40_000] {
                let cached = tool_heavy(n, reuse);
                // Every entry's conversion cached: the entries are shared with the new lineage.
                cached.project_for(&options).expect("projects");
                let mut history = History::new();
                history.replace(cached.iter().cloned());
                let profiler = dhat::Profiler::builder().testing().build();
                drop(history.project_for(&options).expect("projects"));
                let stats = dhat::HeapStats::get();
                drop(profiler);
                let bytes = stats.curr_bytes as f64 / n as f64;
                println!(
                    "a tool-heavy {target:?} assembly of {n} entries (one id reused: {reuse}) keeps {bytes:.1} bytes per entry"
                );
                assert!(
                    bytes <= bound,
                    "{target:?}, {n} entries, one id reused: {reuse}: {bytes:.1} bytes per entry"
                );
            }
        }
    }
}

/// Claim: lines that add nothing to the history cost about their text to keep while a rollout
/// resumes (`docs/reliability.md`, "Hostile input to the commands"). A rollout of 2,000
/// `turn_context` lines of a realistic size is resumed with the allocator counting: the peak of
/// live heap bytes stays under twice the file's size. Keeping each payload parsed, as resume
/// did, took about seven times the file (1 GB for 200,000 such lines, 146 MB).
#[test]
fn turn_context_lines_cost_about_their_text_while_resuming() {
    let _serial = serial();
    let meta = line(
        "session_meta",
        r#"{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2026-11-03T14:00:00.000Z"}"#,
    );
    let mut text = format!("{meta}\n");
    for turn in 0..2_000 {
        let payload = format!(
            r#"{{"turn_id":"t{turn}","cwd":"/home/user/project","approval_policy":"on-request","sandbox_policy":{{"mode":"workspace-write","network_access":false,"writable_roots":["/home/user/project","/tmp"]}},"model":"gpt-5.1-codex","effort":"medium","summary":"auto","user_instructions":"{}","truncation_policy":{{"mode":"tokens","limit":10000}}}}"#,
            "Be careful. ".repeat(20)
        );
        text.push_str(&line("turn_context", &payload));
        text.push('\n');
    }
    let directory = tempfile::tempdir().expect("a temporary directory");
    let rollout = directory.path().join("turn-contexts.jsonl");
    std::fs::write(&rollout, &text).expect("write the rollout");
    let profiler = dhat::Profiler::builder().testing().build();
    let resumed = resume_file(&rollout, &ResumeOptions::new(DEFAULT_TRUNCATION)).expect("resumes");
    let stats = dhat::HeapStats::get();
    drop(profiler);
    assert_eq!(resumed.report().lines, 2_001);
    let file = text.len() as u64;
    println!("peak {} bytes for a file of {file}", stats.max_bytes);
    assert!(
        (stats.max_bytes as u64) < 2 * file,
        "peak {} bytes while resuming a file of {file} bytes",
        stats.max_bytes
    );
}
