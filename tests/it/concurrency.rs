//! One writer, many readers: `HistoryPublisher` / `SharedHistory` and a session's `share`.
//!
//! The stress test runs one writer recording 100,000 items, with rollbacks and compactions,
//! publishing after every operation, against 8 reader threads that load, fingerprint and project
//! what they see. After the run, every version a reader saw is checked against the writer's log
//! of what it published: the same sequence number stands for the same history, and no reader
//! ever goes back.

use crate::common;

use std::collections::{HashSet, VecDeque};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use agent_history::{
    Durability, Entry, Error, History, HistoryPublisher, Projection, ProjectionOptions, Published,
    RepairKind, RolloutSink, RolloutWriter, Session, SessionMeta, SharedHistory,
};
use common::{LS, assistant, output, shell_call, thread as thread_id, user};
use serde::Deserialize;

// ---------------------------------------------------------------------------------------------
// The publisher and its readers, one step at a time.

#[test]
fn two_loads_without_a_publish_return_the_same_arc() {
    let mut history = History::new();
    history.record_json(user("hi")).expect("recorded");
    let mut publisher = HistoryPublisher::new(history.clone());
    let reader = publisher.share();
    let other_reader = reader.clone();

    let first = reader.load();
    assert!(
        Arc::ptr_eq(&first, &reader.load()),
        "a load without a publication in between copies nothing"
    );
    assert!(Arc::ptr_eq(&first, &other_reader.load()));
    assert_eq!(first.seq(), 0);
    assert_eq!(publisher.seq(), 0);
    assert_eq!(first.history(), &history);

    history.record_json(assistant("hello")).expect("recorded");
    assert_eq!(publisher.publish(history.clone()), 1);
    let second = other_reader.load();
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(second.seq(), 1);
    assert_eq!(publisher.seq(), 1);
    assert_eq!(second.history(), &history);
    assert!(Arc::ptr_eq(&second, &reader.load()));
}

#[test]
fn a_loaded_version_stays_as_it_was_while_the_writer_goes_on() {
    let mut history = History::new();
    history.record_json(user("first turn")).expect("recorded");
    history.record_json(shell_call("c1", LS)).expect("recorded");
    let mut publisher = HistoryPublisher::new(history.clone());
    let reader = publisher.share();
    let held = reader.load();
    let held_json: Vec<String> = common::jsons(held.history());

    history.record_json(output("c1", "ok")).expect("recorded");
    publisher.publish(history.clone());
    history.record_json(user("second turn")).expect("recorded");
    publisher.publish(history.clone());
    history.compact("summary").expect("compacted");
    publisher.publish(history.clone());
    history.drop_last_n_user_turns(1).expect("rolled back");
    publisher.publish(history.clone());

    assert_eq!(held.seq(), 0);
    assert_eq!(common::jsons(held.history()), held_json);
    assert_eq!(held.history().version(), 0);
    held.history().assert_invariants();
    let latest = reader.load();
    assert_eq!(latest.seq(), 4);
    assert_eq!(latest.history(), &history);
}

#[test]
fn readers_keep_the_last_version_when_the_publisher_is_dropped() {
    let mut history = History::new();
    history.record_json(user("hi")).expect("recorded");
    let mut publisher = HistoryPublisher::new(History::new());
    let reader = publisher.share();
    publisher.publish(history.clone());
    drop(publisher);
    let last = reader.load();
    assert_eq!(last.seq(), 1);
    assert_eq!(last.history(), &history);
}

// ---------------------------------------------------------------------------------------------
// A session publishes after each operation that changed its history.

fn memory_session() -> Session<Vec<u8>> {
    let meta = SessionMeta::new(thread_id("concurrency"));
    let mut writer = RolloutWriter::with_sink(Vec::new(), "memory", Durability::Flush);
    writer.append_session_meta(&meta).expect("in memory");
    Session::from_parts(History::new(), writer, meta.id)
}

/// The reader's current version: its sequence number, and whether it holds `session`'s history.
fn current<S: RolloutSink>(reader: &SharedHistory, session: &Session<S>) -> (u64, bool) {
    let published = reader.load();
    (published.seq(), published.history() == session.history())
}

#[test]
fn a_shared_session_publishes_after_each_operation_that_changes_its_history() {
    let mut session = memory_session();
    session
        .record_json(&user("before sharing"))
        .expect("recorded");
    let reader = session.share();
    assert_eq!(current(&reader, &session), (0, true));

    session.record_json(&user("turn 1")).expect("recorded");
    assert_eq!(current(&reader, &session), (1, true));

    // A batch is one publication: no reader sees the call without its output.
    session
        .record_all_json([shell_call("c1", LS).as_str(), output("c1", "ok").as_str()])
        .expect("recorded");
    assert_eq!(current(&reader, &session), (2, true));
    assert_eq!(reader.load().history().len(), 4);

    // Nothing changed, nothing published.
    let unchanged = reader.load();
    session
        .record_json(r#"{"type":"message","role":"system","content":[]}"#)
        .expect("filtered");
    session.record_json("not json").expect_err("not an item");
    session.rollback(0).expect("nothing to do");
    assert_eq!(current(&reader, &session), (2, true));
    assert!(Arc::ptr_eq(&unchanged, &reader.load()));

    session.record_json(&user("turn 2")).expect("recorded");
    assert_eq!(current(&reader, &session), (3, true));
    session.rollback(1).expect("rolled back");
    assert_eq!(current(&reader, &session), (4, true));
    session.compact("summary").expect("compacted");
    assert_eq!(current(&reader, &session), (5, true));
    assert_eq!(reader.load().history().version(), 2);

    // Sharing again gives another handle on the same versions.
    let second = session.share();
    assert!(Arc::ptr_eq(&reader.load(), &second.load()));
}

/// A sink whose every write fails.
struct BrokenSink;

impl RolloutSink for BrokenSink {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::other("injected failure"))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_change_whose_line_was_not_written_is_published_since_the_history_keeps_it() {
    let writer = RolloutWriter::with_sink(BrokenSink, "broken", Durability::Flush);
    let mut session = Session::from_parts(History::new(), writer, thread_id("broken"));
    let reader = session.share();
    let error = session
        .record_json(&user("hi"))
        .expect_err("the line cannot be written");
    assert!(matches!(error, Error::RolloutWrite(_)), "{error:?}");
    assert_eq!(session.history().len(), 1);
    assert_eq!(current(&reader, &session), (1, true));
}

// ---------------------------------------------------------------------------------------------
// The stress test.

/// Items the writer records (the issue's figure).
const ITEMS: usize = 100_000;
/// Reader threads.
const READERS: usize = 8;
/// A rollback of 1 to 3 user turns after every this many recorded items.
const ROLLBACK_EVERY: usize = 997;
/// A compaction after every this many recorded items.
const COMPACT_EVERY: usize = 4_999;
/// Every this many publications, the writer waits until every reader has seen the current one,
/// so that each reader sees versions from all through the run whatever the scheduler does. The
/// readers take turns at checking a checkpoint's version at length.
const CHECKPOINT_EVERY: u64 = 1_000;
/// A reader projects every this many versions it sees. (Projecting and checking every version
/// would make the readers, not the writer, the test's cost: it runs unoptimized on 2 cores.)
const PROJECT_EVERY: usize = 16;
/// A reader holds one version across this many later ones, re-checking it on the way.
const HOLD_FOR: usize = 32;

/// A small deterministic generator (xorshift), so every run records the same items.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What identifies a version cheaply: its shape, and the identity of its last entry (the
/// allocation of its payload, which the writer's log keeps alive so that it is not reused).
#[derive(Debug, Clone)]
struct Fingerprint {
    len: usize,
    version: u64,
    tokens: u64,
    user_turns: usize,
    last: Option<Entry>,
}

impl Fingerprint {
    fn of(history: &History) -> Fingerprint {
        Fingerprint {
            len: history.len(),
            version: history.version(),
            tokens: history.estimated_tokens(),
            user_turns: history.user_turn_count(),
            last: history
                .len()
                .checked_sub(1)
                .and_then(|at| history.get(at))
                .cloned(),
        }
    }

    fn matches(&self, other: &Fingerprint) -> bool {
        let same_last = match (&self.last, &other.last) {
            (Some(a), Some(b)) => a.shares_payload_with(b),
            (None, None) => true,
            _ => false,
        };
        same_last
            && (self.len, self.version, self.tokens, self.user_turns)
                == (other.len, other.version, other.tokens, other.user_turns)
    }
}

/// The content hashes of a history's prefixes: `chain[i]` stands for its first `i` entries'
/// JSON. The writer keeps it up to date as it goes; a reader recomputes it from scratch.
struct Chain(Vec<blake3::Hash>);

impl Chain {
    fn new() -> Chain {
        Chain(vec![blake3::hash(b"")])
    }

    fn link(previous: &blake3::Hash, entry: &Entry) -> blake3::Hash {
        let mut hasher = blake3::Hasher::new();
        hasher.update(previous.as_bytes());
        hasher.update(entry.json().as_bytes());
        hasher.finalize()
    }

    /// Brings the chain up to `history`, whose first `keep` entries are unchanged since the
    /// chain last followed it.
    fn follow(&mut self, history: &History, keep: usize) {
        self.0.truncate(keep + 1);
        // `get` rather than `iter().skip(keep)`, which would step through the kept entries.
        for entry in (keep..history.len()).filter_map(|at| history.get(at)) {
            let next = Chain::link(self.0.last().expect("never empty"), entry);
            self.0.push(next);
        }
    }

    fn head(&self) -> blake3::Hash {
        *self.0.last().expect("never empty")
    }

    fn of(history: &History) -> blake3::Hash {
        let mut chain = Chain::new();
        chain.follow(history, 0);
        chain.head()
    }
}

/// What the writer published under one sequence number.
struct Publication {
    fingerprint: Fingerprint,
    content: blake3::Hash,
}

/// One version a reader saw.
struct Observation {
    seq: u64,
    fingerprint: Fingerprint,
    /// The hash of its whole content, for the versions checked at length.
    content: Option<blake3::Hash>,
}

/// What a reader brings back.
#[derive(Default)]
struct ReaderLog {
    /// Each distinct version loaded, in the order loaded.
    seen: Vec<Observation>,
    /// A held version, looked at again after later publications.
    rechecked: Vec<Observation>,
    /// Loads that returned the version of the previous load.
    repeated_loads: u64,
    projections: usize,
    /// Versions checked at length: content hashed, every projected item read.
    full_checks: usize,
}

/// Projects `history` with the default options and checks that the report accounts for every
/// difference from the history: a synthesized output per call without one, a dropped orphan per
/// output whose call is gone, nothing else.
fn project(history: &History) -> Projection {
    let projection = history
        .project(&ProjectionOptions::default())
        .expect("a lenient projection succeeds");
    assert_eq!(projection.history_version(), history.version());
    let mut synthesized = 0;
    let mut dropped = 0;
    for repair in projection.report().repairs() {
        match repair.kind {
            RepairKind::SynthesizedOutput { .. } => synthesized += 1,
            RepairKind::DroppedOrphanOutput => dropped += 1,
            ref other => panic!("unexpected repair {other}"),
        }
    }
    assert_eq!(projection.len(), history.len() + synthesized - dropped);
    projection
}

/// The part of a projected call or output the pairing check reads.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    call_id: Option<&'a str>,
}

/// Checks that `projection` is a valid request input: every call is followed by its output, and
/// every output follows its call. Items are messages, calls and outputs (that is what the writer
/// records and the repairs add); only calls and outputs are parsed, which keeps the check cheap
/// enough to run unoptimized.
fn check_pairing(projection: &Projection) {
    let mut calls = HashSet::new();
    let mut open = HashSet::new();
    let mut sent = 0;
    for json in projection.iter() {
        sent += 1;
        if json.starts_with(r#"{"type":"message","#) {
            continue;
        }
        let head: Head<'_> = serde_json::from_str(json).expect("a projected item is JSON");
        let id = head.call_id.expect("a call or an output has a call id");
        match head.kind {
            "function_call" => {
                assert!(calls.insert(id), "call {id} sent twice");
                open.insert(id);
            }
            "function_call_output" => {
                assert!(
                    calls.contains(id),
                    "output of {id} sent before its call, or without"
                );
                open.remove(id);
            }
            other => panic!("unexpected item of type {other}: {json}"),
        }
    }
    assert_eq!(sent, projection.len());
    assert!(open.is_empty(), "calls sent without output: {open:?}");
}

/// Sets a reader's progress to "past everything" when the reader ends, normally or by a
/// panic, so that a failing reader never leaves the writer waiting at a checkpoint.
struct Finished<'a>(&'a AtomicU64);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.store(u64::MAX, Ordering::Release);
    }
}

/// What the writer tells the readers as it goes.
struct Progress {
    /// The sequence number of the writer's last publication, stored after it.
    latest: AtomicU64,
    /// Stored after the last publication.
    done: AtomicBool,
}

/// Reader number `index`: loads until it has seen the writer's last publication.
fn read(index: usize, reader: SharedHistory, progress: &Progress, seen: &AtomicU64) -> ReaderLog {
    let _finished = Finished(seen);
    let mut log = ReaderLog::default();
    let mut previous: Option<Arc<Published>> = None;
    let mut held: Option<Arc<Published>> = None;
    loop {
        // Read before loading: a load returns what was published before it, or newer (and so
        // the last version once the writer is done). This also turns a publisher that hands out
        // the wrong sequence numbers into a failure rather than a writer waiting forever at a
        // checkpoint.
        let last = progress.done.load(Ordering::Acquire);
        let floor = progress.latest.load(Ordering::Acquire);
        let published = reader.load();
        assert!(
            published.seq() >= floor,
            "reader {index} loaded seq {} after seq {floor} was published",
            published.seq()
        );
        if let Some(previous) = &previous
            && previous.seq() == published.seq()
        {
            assert!(
                Arc::ptr_eq(previous, &published),
                "one sequence number, one version"
            );
            log.repeated_loads += 1;
            if last {
                break;
            }
            thread::yield_now();
            continue;
        }
        let seq = published.seq();
        // Tell the writer first, so that it goes on while this reader checks what it loaded.
        seen.store(seq, Ordering::Release);
        let history = published.history();
        let n = log.seen.len();
        let full = last
            || (seq.is_multiple_of(CHECKPOINT_EVERY)
                && (seq / CHECKPOINT_EVERY) as usize % READERS == index);
        if full {
            check_pairing(&project(history));
            log.full_checks += 1;
        } else if n % PROJECT_EVERY == 0 {
            project(history);
            log.projections += 1;
        }
        log.seen.push(Observation {
            seq,
            fingerprint: Fingerprint::of(history),
            content: full.then(|| Chain::of(history)),
        });
        if n % HOLD_FOR == 0 {
            held = Some(Arc::clone(&published));
        } else if let Some(held) = &held
            && (full || n % 4 == 0)
        {
            log.rechecked.push(Observation {
                seq: held.seq(),
                fingerprint: Fingerprint::of(held.history()),
                content: full.then(|| Chain::of(held.history())),
            });
        }
        previous = Some(published);
        if last {
            break;
        }
    }
    log
}

/// The writer: records `ITEMS` items with rollbacks and compactions, publishing after every
/// operation, and returns what it published under each sequence number.
fn write(
    mut publisher: HistoryPublisher,
    progress: &Progress,
    seen: &[AtomicU64],
) -> Vec<Publication> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut history = History::new();
    let mut chain = Chain::new();
    let mut log = vec![Publication {
        fingerprint: Fingerprint::of(&history),
        content: chain.head(),
    }];
    // Outputs still to come: (recorded-item count when due, call id). A rollback or compaction
    // does not cancel them, so some arrive after their call is gone (orphans).
    let mut pending: VecDeque<(usize, String)> = VecDeque::new();
    let mut recorded = 0;
    let mut calls = 0;
    let mut next_compaction = COMPACT_EVERY;
    let mut next_rollback = ROLLBACK_EVERY;
    // Long enough that a compaction keeps a few hundred user messages, not thousands.
    let words = "lorem ipsum dolor sit amet ".repeat(6);
    while recorded < ITEMS {
        let before = history.len();
        let keep;
        if recorded >= next_compaction {
            next_compaction += COMPACT_EVERY;
            history
                .compact(&format!("summary after {recorded} items"))
                .expect("compacts");
            keep = 0;
        } else if recorded >= next_rollback {
            next_rollback += ROLLBACK_EVERY;
            let turns = 1 + rng.below(3) as usize;
            history.drop_last_n_user_turns(turns).expect("rolls back");
            keep = history.len();
        } else {
            let json = match pending.front() {
                Some((due, _)) if *due <= recorded => {
                    let (_, call_id) = pending.pop_front().expect("a pending output");
                    output(&call_id, &format!("output of {call_id}"))
                }
                _ => match rng.below(10) {
                    0..=1 => user(&format!("user message {recorded}: {words}")),
                    2..=4 => assistant(&format!("assistant message {recorded}")),
                    _ => {
                        calls += 1;
                        let call_id = format!("call_{calls}");
                        // Nine calls in ten get an output, up to three items later.
                        if rng.below(10) != 0 {
                            let due = recorded + 1 + rng.below(3) as usize;
                            pending.push_back((due, call_id.clone()));
                        }
                        shell_call(&call_id, LS)
                    }
                },
            };
            history.record_json(json).expect("records");
            recorded += 1;
            keep = before;
        }
        chain.follow(&history, keep);
        let seq = publisher.publish(history.clone());
        progress.latest.store(seq, Ordering::Release);
        log.push(Publication {
            fingerprint: Fingerprint::of(&history),
            content: chain.head(),
        });
        assert_eq!(seq as usize, log.len() - 1);
        if seq.is_multiple_of(CHECKPOINT_EVERY) {
            if seq.is_multiple_of(10 * CHECKPOINT_EVERY) {
                history.assert_invariants();
            }
            while seen
                .iter()
                .any(|reader| reader.load(Ordering::Acquire) < seq)
            {
                thread::yield_now();
            }
        }
    }
    progress.done.store(true, Ordering::Release);
    log
}

#[test]
fn readers_see_only_published_versions_in_order_while_one_writer_records_100k_items() {
    let publisher = HistoryPublisher::new(History::new());
    let readers: Vec<SharedHistory> = (0..READERS).map(|_| publisher.share()).collect();
    let progress = Progress {
        latest: AtomicU64::new(0),
        done: AtomicBool::new(false),
    };
    let seen: Vec<AtomicU64> = (0..READERS).map(|_| AtomicU64::new(0)).collect();
    let (published, logs) = thread::scope(|scope| {
        let progress = &progress;
        let handles: Vec<_> = readers
            .into_iter()
            .zip(&seen)
            .enumerate()
            .map(|(index, (reader, seen))| scope.spawn(move || read(index, reader, progress, seen)))
            .collect();
        let published = write(publisher, progress, &seen);
        let logs: Vec<ReaderLog> = handles
            .into_iter()
            .map(|handle| handle.join().expect("a reader does not panic"))
            .collect();
        (published, logs)
    });

    let last_seq = published.len() as u64 - 1;
    assert!(last_seq > ITEMS as u64, "every recorded item was published");
    let replacements = published
        .windows(2)
        .filter(|pair| pair[1].fingerprint.version > pair[0].fingerprint.version)
        .count();
    assert_eq!(
        replacements,
        ITEMS / ROLLBACK_EVERY + ITEMS / COMPACT_EVERY,
        "every rollback and compaction was published"
    );

    let check = |reader: usize, observation: &Observation| {
        let publication = published.get(observation.seq as usize).unwrap_or_else(|| {
            panic!(
                "reader {reader} saw seq {} never published",
                observation.seq
            )
        });
        assert!(
            observation.fingerprint.matches(&publication.fingerprint),
            "reader {reader}, seq {}: saw {:?}, the writer published {:?}",
            observation.seq,
            observation.fingerprint,
            publication.fingerprint
        );
        if let Some(content) = observation.content {
            assert_eq!(
                content, publication.content,
                "reader {reader}, seq {}: the content differs from what was published",
                observation.seq
            );
        }
    };
    for (reader, log) in logs.iter().enumerate() {
        for observation in log.seen.iter().chain(&log.rechecked) {
            check(reader, observation);
        }
        for pair in log.seen.windows(2) {
            assert!(
                pair[0].seq < pair[1].seq,
                "reader {reader} went back from seq {} to {}",
                pair[0].seq,
                pair[1].seq
            );
        }
        let seqs: HashSet<u64> = log.seen.iter().map(|observation| observation.seq).collect();
        for checkpoint in (CHECKPOINT_EVERY..=last_seq).step_by(CHECKPOINT_EVERY as usize) {
            assert!(
                seqs.contains(&checkpoint),
                "reader {reader} did not see checkpoint {checkpoint}"
            );
        }
        assert_eq!(
            log.seen.last().map(|observation| observation.seq),
            Some(last_seq),
            "reader {reader} ends on the last version"
        );
        assert!(log.projections > 0, "reader {reader} projected");
        assert!(
            log.full_checks > 1,
            "reader {reader} checked versions at length"
        );
        assert!(
            log.rechecked
                .iter()
                .any(|observation| observation.content.is_some()),
            "reader {reader} re-checked a held version at length"
        );
    }
    let seen: usize = logs.iter().map(|log| log.seen.len()).sum();
    let projections: usize = logs.iter().map(|log| log.projections).sum();
    let full_checks: usize = logs.iter().map(|log| log.full_checks).sum();
    let repeated: u64 = logs.iter().map(|log| log.repeated_loads).sum();
    eprintln!(
        "{} publications; readers saw {seen} versions, loaded the same one again {repeated} \
         times, projected {projections} versions and checked {full_checks} at length",
        published.len()
    );
}

// ---------------------------------------------------------------------------------------------
// Per-target assemblies kept in a lineage, projected from several threads at once.

/// A history of `len` items recorded one by one, with every version kept: user messages,
/// two parallel calls per turn answered in the other order (every other turn with an image), so
/// a version may end with a call whose output comes later.
fn versions_of_one_lineage(round: usize, len: usize) -> Vec<History> {
    let mut history = History::new();
    let mut versions = Vec::with_capacity(len);
    for i in 0..len {
        let id = |k: usize| format!("r{round}c{k}");
        let item = match i % 5 {
            0 => user("go"),
            1 => shell_call(&id(i), LS),
            2 => shell_call(&id(i + 1_000), LS),
            3 => output(&id(i + 999), "second call's, first"),
            _ if i % 10 == 4 => serde_json::json!({
                "type": "function_call_output",
                "call_id": id(i - 3),
                "output": [
                    {"type": "input_text", "text": "first call's, with an image"},
                    {"type": "input_image", "image_url": "https://example.com/a.png"}
                ]
            })
            .to_string(),
            _ => output(&id(i - 3), "first call's, last"),
        };
        history.record_json(item).expect("recorded");
        versions.push(history.clone());
    }
    versions
}

/// The versions share one lineage and so its memo cells; threads project them for Chat
/// Completions and Anthropic Messages with two option sets each, in different orders (later
/// and older versions interleaved), and every projection must equal one from scratch (the same
/// entries in a history of their own, so nothing is kept for them).
#[test]
fn threads_projecting_versions_of_one_lineage_get_what_an_assembly_from_scratch_gives() {
    use agent_history::{Modalities, Target, TargetOptions};
    let options = |k: usize| {
        let target = if k % 4 < 2 {
            Target::ChatCompletions
        } else {
            Target::AnthropicMessages
        };
        let options = TargetOptions::new(target);
        if k % 2 == 1 {
            options.with_projection(ProjectionOptions::for_modalities(Modalities::TEXT))
        } else {
            options
        }
    };
    for round in 0..6 {
        let versions = versions_of_one_lineage(round, 120);
        thread::scope(|scope| {
            for worker in 0..4 {
                let versions = &versions;
                scope.spawn(move || {
                    for k in 0..120 {
                        let version = &versions[(k * 7 + worker * 31) % versions.len()];
                        let options = options(k + worker);
                        let kept = version.project_for(&options).expect("projects").to_json();
                        let mut fresh = History::new();
                        fresh.replace(version.iter().cloned());
                        let scratch = fresh.project_for(&options).expect("projects").to_json();
                        assert_eq!(kept, scratch, "round {round}, worker {worker}, k {k}");
                    }
                });
            }
        });
    }
}
