//! The snapshot fast path for sessions that continue: Codex-shaped rollouts —
//! turn events, `turn_context` lines, `user_message` events, compactions mid-turn, rollbacks
//! across compactions — resumed through a snapshot of a prefix equal a full resume in everything
//! resume settles, and in how the history rolls back; and the fast path is actually taken.

use crate::common;

use std::path::Path;

use agent_history::{
    DEFAULT_TRUNCATION, ResumeOptions, Resumed, SnapshotError, SnapshotOptions, open_snapshot,
    resume_file,
};
use common::{assistant, event_line, item_line, line, meta_line, temp_dir, user};
use proptest::prelude::*;

/// Writes Codex-shaped turns, deterministically from a seed.
struct CodexSession {
    state: u64,
    turn: u64,
    lines: Vec<String>,
    /// The user messages of the turns so far (JSON), for replacement histories.
    users: Vec<String>,
    /// Whether legacy compactions (no replacement history) may be written.
    legacy: bool,
}

impl CodexSession {
    fn new(seed: u64, legacy: bool) -> Self {
        CodexSession {
            state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            turn: 0,
            lines: vec![meta_line()],
            users: Vec::new(),
            legacy,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn event(&mut self, json: &str) {
        self.lines.push(event_line(json));
    }

    fn item(&mut self, json: &str) {
        self.lines.push(item_line(json));
    }

    fn user_message(&mut self, text: &str) {
        self.event(&format!(
            r#"{{"type":"user_message","message":"{text}","images":[]}}"#
        ));
        let json = user(text);
        self.item(&json);
        self.users.push(json);
    }

    /// A compaction with a replacement history: the last two user messages and a summary.
    fn compaction(&mut self, n: u64) {
        let mut replacement: Vec<String> = self.users.iter().rev().take(2).rev().cloned().collect();
        replacement.push(user(&format!("summary of the work up to turn {n}")));
        self.lines.push(line(
            "compacted",
            &format!(
                r#"{{"message":"summary {n}","replacement_history":[{}]}}"#,
                replacement.join(",")
            ),
        ));
    }

    /// One turn, as Codex writes it: task_started, turn_context, user_message + user item (some
    /// turns two), token counts, a tool call with its exec event and output, sometimes a
    /// compaction mid-turn, the assistant's answer, task_complete (or turn_aborted). Some turns
    /// have no turn events at all (a harness that writes only items). After the turn, sometimes
    /// a rollback of one to a few turns (now and then of many), sometimes an inter-agent line.
    fn turn(&mut self) {
        self.turn += 1;
        let n = self.turn;
        let id = format!("turn-{n}");
        let with_events = !self.chance(5);
        if with_events {
            self.event(&format!(r#"{{"type":"task_started","turn_id":"{id}"}}"#));
            let model = if self.chance(30) { "gpt-b" } else { "gpt-a" };
            self.lines.push(line(
                "turn_context",
                &format!(
                    r#"{{"turn_id":"{id}","cwd":"/w","approval_policy":"on-request","model":"{model}"}}"#
                ),
            ));
        }
        self.user_message(&format!("question {n}"));
        if self.chance(25) {
            self.user_message(&format!("and also {n}"));
        }
        self.event(r#"{"type":"token_count","info":null}"#);
        self.item(&format!(
            r#"{{"type":"function_call","id":"fc_{n}","name":"shell","arguments":"{{}}","call_id":"c{n}"}}"#
        ));
        self.event(&format!(
            r#"{{"type":"exec_command_end","call_id":"c{n}","exit_code":0}}"#
        ));
        self.item(&format!(
            r#"{{"type":"function_call_output","call_id":"c{n}","output":"ok {n}"}}"#
        ));
        if self.chance(10) {
            self.compaction(n);
        } else if self.legacy && self.chance(15) {
            self.lines.push(line(
                "compacted",
                &format!(r#"{{"message":"legacy summary {n}"}}"#),
            ));
        }
        self.item(&assistant(&format!("answer {n}")));
        self.event(r#"{"type":"token_count","info":null}"#);
        if with_events {
            if self.chance(10) {
                self.event(&format!(
                    r#"{{"type":"turn_aborted","turn_id":"{id}","reason":"interrupted"}}"#
                ));
            } else {
                self.event(&format!(r#"{{"type":"task_complete","turn_id":"{id}"}}"#));
            }
        }
        if self.chance(12) {
            let turns = if self.chance(15) {
                10 + self.next() % 40
            } else {
                1 + self.next() % 4
            };
            self.event(&format!(
                r#"{{"type":"thread_rolled_back","num_turns":{turns}}}"#
            ));
        }
        if self.chance(4) {
            self.lines.push(line(
                "inter_agent_communication",
                r#"{"author":"/root","recipient":"/root/worker","content":"status?"}"#,
            ));
        }
    }

    fn text(&self) -> String {
        self.lines.iter().map(|line| format!("{line}\n")).collect()
    }
}

/// Asserts that `fast` (through a snapshot) equals `full` (every line) in everything resume
/// settles and in how the history rolls back, to every depth.
fn assert_same(fast: &Resumed, full: &Resumed, context: &str) {
    let (ours, theirs) = (fast.history(), full.history());
    ours.assert_invariants();
    assert_eq!(ours, theirs, "entries, version: {context}");
    assert_eq!(
        ours.reference_context_item(),
        theirs.reference_context_item(),
        "reference context item: {context}"
    );
    assert_eq!(
        fast.previous_turn_settings().map(|raw| raw.get()),
        full.previous_turn_settings().map(|raw| raw.get()),
        "previous-turn settings: {context}"
    );
    assert_eq!(fast.thread_id(), full.thread_id(), "thread id: {context}");
    assert_eq!(
        fast.ends_inside_turn(),
        full.ends_inside_turn(),
        "ends inside a turn: {context}"
    );
    assert_eq!(
        fast.incomplete_turn(),
        full.incomplete_turn(),
        "incomplete turn: {context}"
    );
    assert_eq!(
        ours.reachable_user_turns(),
        theirs.reachable_user_turns(),
        "reachable user turns: {context}"
    );
    assert_eq!(
        ours.compactions_reachable(),
        theirs.compactions_reachable(),
        "compactions reachable: {context}"
    );
    for depth in 1..=theirs.reachable_user_turns() + 1 {
        let mut ours = ours.clone();
        let mut theirs = theirs.clone();
        ours.drop_last_n_user_turns(depth).expect("rolls back");
        theirs.drop_last_n_user_turns(depth).expect("rolls back");
        ours.assert_invariants();
        assert_eq!(ours, theirs, "rolled back {depth} turns: {context}");
        assert_eq!(
            ours.reference_context_item(),
            theirs.reference_context_item(),
            "rolled back {depth} turns: {context}"
        );
        assert_eq!(
            ours.compactions_reachable(),
            theirs.compactions_reachable(),
            "rolled back {depth} turns: {context}"
        );
    }
}

fn ready() -> ResumeOptions {
    ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready()
}

/// Resumes `rollout` through `snapshot`.
fn through(rollout: &Path, snapshot: &Path) -> Resumed {
    resume_file(
        rollout,
        &ResumeOptions::new(DEFAULT_TRUNCATION).with_snapshot(snapshot),
    )
    .expect("resumes")
}

/// A snapshot taken mid-session, then a thousand more Codex turns (rollbacks of one to many
/// turns, compactions mid-turn among them): resume reads only the later lines, and the history
/// equals a full resume's — entries, version, reference context, previous-turn settings, turn
/// state, and every rollback depth across the compactions the snapshot covers.
#[test]
fn a_codex_session_continues_from_its_snapshot_through_a_thousand_turns() {
    let dir = temp_dir();
    let rollout = dir.path().join("rollout.jsonl");
    let snapshot = dir.path().join("rollout.snap");
    let mut session = CodexSession::new(7, false);
    for _ in 0..200 {
        session.turn();
    }
    // Cut inside a turn too: the snapshot's prefix ends after a user message of an open turn.
    session.event(r#"{"type":"task_started","turn_id":"open"}"#);
    session.user_message("a turn still open at the snapshot");
    std::fs::write(&rollout, session.text()).expect("prefix written");
    let prefix = resume_file(&rollout, &ready()).expect("resumes");
    assert!(prefix.ends_inside_turn());
    assert!(
        prefix.history().compactions_reachable() > 0,
        "the prefix covers compactions a rollback can return across"
    );
    prefix.write_snapshot(&snapshot).expect("snapshot written");
    session.user_message("a second message in the open turn");
    session.event(r#"{"type":"task_complete","turn_id":"open"}"#);
    for _ in 0..1000 {
        session.turn();
    }
    std::fs::write(&rollout, session.text()).expect("rollout written");
    let fast = through(&rollout, &snapshot);
    assert!(fast.used_snapshot(), "{:?}", fast.source());
    assert_eq!(
        fast.report().lines,
        session.lines.len() as u64,
        "the line count goes on from the prefix's"
    );
    let full = common::resume_path(&rollout, DEFAULT_TRUNCATION);
    assert!(
        full.history().compactions_reachable() > 1,
        "{}",
        full.history().compactions_reachable()
    );
    assert_same(&fast, &full, "a thousand turns after the snapshot");
    // A snapshot written from the resume through the first one (a refresh) is used in turn.
    let ready_fast = resume_file(&rollout, &ready().with_snapshot(&snapshot)).expect("resumes");
    assert!(ready_fast.used_snapshot());
    let refreshed = dir.path().join("refreshed.snap");
    ready_fast.write_snapshot(&refreshed).expect("written");
    for _ in 0..50 {
        session.turn();
    }
    std::fs::write(&rollout, session.text()).expect("rollout written");
    let fast = through(&rollout, &refreshed);
    assert!(fast.used_snapshot(), "{:?}", fast.source());
    let full = common::resume_path(&rollout, DEFAULT_TRUNCATION);
    assert_same(&fast, &full, "after a refreshed snapshot");
}

/// Snapshots at every line boundary of a small Codex-shaped rollout; returns how many cuts used
/// the snapshot, and how many cuts there were.
fn every_cut(text: &str) -> (usize, usize) {
    let dir = temp_dir();
    let rollout = dir.path().join("rollout.jsonl");
    std::fs::write(&rollout, text).expect("written");
    let full = common::resume_path(&rollout, DEFAULT_TRUNCATION);
    let full_ready = resume_file(&rollout, &ready()).expect("resumes");
    let prefix_path = dir.path().join("prefix.jsonl");
    let snapshot = dir.path().join("cut.snap");
    let (mut used, mut cuts) = (0, 0);
    let mut end = 0;
    for (k, piece) in text.split_inclusive('\n').enumerate() {
        end += piece.len();
        std::fs::write(&prefix_path, &text[..end]).expect("prefix");
        let prefix = resume_file(&prefix_path, &ready()).expect("resumes");
        prefix
            .write_snapshot_with(&snapshot, agent_history::Replace::Anything)
            .expect("snapshot written");
        cuts += 1;
        let fast = through(&rollout, &snapshot);
        let context = format!("snapshot after line {}: {:?}", k + 1, fast.source());
        if fast.used_snapshot() {
            used += 1;
        }
        assert_same(&fast, &full, &context);
        let ready_fast = resume_file(&rollout, &ready().with_snapshot(&snapshot)).expect("ok");
        assert_eq!(ready_fast.covered(), full_ready.covered(), "{context}");
        assert_eq!(ready_fast.history(), full_ready.history(), "{context}");
    }
    (used, cuts)
}

proptest! {
    // Each case writes and resumes a snapshot at every line (a few dozen): 32 cases keep the
    // test within seconds on two cores.
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Fast path = full resume at every cut of generated Codex-shaped rollouts (legacy
    /// compactions among them in half the cases). Every cut must take the fast path: a snapshot
    /// falls back only for reasons these rollouts do not have (another policy, a
    /// changed prefix, a legacy-format rollout, strict reading, a stream), so a single fallback
    /// is a failure — a test that passed with the snapshot unused would prove nothing.
    #[test]
    fn the_fast_path_equals_a_full_resume_at_every_cut(seed in any::<u64>(), turns in 1usize..7, legacy in any::<bool>()) {
        let mut session = CodexSession::new(seed, legacy);
        for _ in 0..turns {
            session.turn();
        }
        let (used, cuts) = every_cut(&session.text());
        prop_assert_eq!(used, cuts, "seed {} turns {}", seed, turns);
    }
}

/// A crafted snapshot whose earlier state points past the entry table, or whose
/// `turns_from` is past its state, is refused with an error naming the field; never a panic.
#[test]
fn a_crafted_earlier_state_is_a_typed_error() {
    let dir = temp_dir();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let golden = std::fs::read(fixtures.join("snapshot-v6.snap")).expect("golden");
    let opened = open_snapshot(
        fixtures.join("snapshot-v6.snap"),
        SnapshotOptions::untrusted(),
    )
    .expect("opens");
    assert_eq!(opened.history().compactions_reachable(), 1);
    // The archive layout is rkyv's; rather than decode it, try every 4-byte-aligned u32 of the
    // payload set to a huge value: each crafted file must open or fail with a typed error, and
    // the errors must include a bad earlier-state index and a bad turns_from.
    let path = dir.path().join("crafted.snap");
    let (mut bad_index, mut bad_turns_from) = (false, false);
    for at in (4096..golden.len() - 4).step_by(4) {
        let mut bytes = golden.clone();
        bytes[at..at + 4].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
        let digest = blake3::hash(&bytes[4096..]);
        bytes[40..72].copy_from_slice(digest.as_bytes());
        let digest = blake3::hash(&bytes[..224]);
        bytes[224..256].copy_from_slice(digest.as_bytes());
        std::fs::write(&path, &bytes).expect("written");
        for options in [SnapshotOptions::default(), SnapshotOptions::untrusted()] {
            match open_snapshot(&path, options) {
                Ok(snapshot) => snapshot.history().assert_invariants(),
                Err(SnapshotError::InvalidArchive { detail, .. }) => {
                    bad_index |= detail.contains("earlier state 0: entry")
                        && detail.contains("past the table");
                    bad_turns_from |= detail.contains("turns_from");
                }
                Err(SnapshotError::InvalidEntry { .. }) => {}
                Err(other) => panic!("byte {at}: unexpected error {other}"),
            }
        }
    }
    assert!(bad_index, "no crafted earlier-state index was refused");
    assert!(bad_turns_from, "no crafted turns_from was refused");
}

/// A snapshot, then a few turns and a rollback of more turns than were written since: the scan
/// settles on a `turn_context` the snapshot covers, which only its stored facts can give.
#[test]
fn a_rollback_into_the_covered_prefix_settles_on_the_prefix_turns() {
    let dir = temp_dir();
    let rollout = dir.path().join("rollout.jsonl");
    let snapshot = dir.path().join("rollout.snap");
    let mut session = CodexSession::new(11, false);
    for _ in 0..40 {
        session.turn();
    }
    std::fs::write(&rollout, session.text()).expect("prefix written");
    let prefix = resume_file(&rollout, &ready()).expect("resumes");
    prefix.write_snapshot(&snapshot).expect("snapshot written");
    for n in 0..3 {
        session.event(&format!(
            r#"{{"type":"task_started","turn_id":"late-{n}"}}"#
        ));
        session.lines.push(line(
            "turn_context",
            &format!(r#"{{"turn_id":"late-{n}","model":"late"}}"#),
        ));
        session.user_message(&format!("late {n}"));
        session.event(&format!(
            r#"{{"type":"task_complete","turn_id":"late-{n}"}}"#
        ));
    }
    session.event(r#"{"type":"thread_rolled_back","num_turns":8}"#);
    std::fs::write(&rollout, session.text()).expect("rollout written");
    let fast = through(&rollout, &snapshot);
    assert!(fast.used_snapshot(), "{:?}", fast.source());
    let full = common::resume_path(&rollout, DEFAULT_TRUNCATION);
    let settings = full
        .previous_turn_settings()
        .expect("a covered turn's settings")
        .get();
    assert!(settings.contains("turn-"), "{settings}");
    assert_same(&fast, &full, "a rollback into the covered prefix");
}

/// The line right after a rollback starts a segment even when it carries no scan fact (a token
/// count): it closes the segment of what follows before the rollback is counted, even when a
/// `task_started` further on has another turn id than the segment's `turn_context`. Cut at every
/// line, the snapshot's facts and the later lines' keep that line, across the cut too.
#[test]
fn the_line_after_a_rollback_starts_a_segment_across_a_cut() {
    let lines = [
        meta_line(),
        item_line(&user("one")),
        event_line(r#"{"type":"thread_rolled_back","num_turns":1}"#),
        event_line(r#"{"type":"token_count","info":null}"#),
        event_line(r#"{"type":"task_started","turn_id":"A"}"#),
        event_line(r#"{"type":"user_message","message":"two","images":[]}"#),
        item_line(&user("two")),
        line("turn_context", r#"{"turn_id":"B","model":"b"}"#),
        item_line(&assistant("answer")),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let full = common::resume_bytes(text.as_bytes(), DEFAULT_TRUNCATION);
    assert_eq!(
        full.previous_turn_settings().map(|raw| raw.get()),
        Some(r#"{"turn_id":"B","model":"b"}"#),
        "the rollback discards turn one, not the turn after it"
    );
    let (used, cuts) = every_cut(&text);
    assert_eq!(used, cuts);
}

/// Legacy compactions (no replacement history) before and after the cut: the snapshot's history
/// is the rebuilt one, a legacy compaction after it is rebuilt from the snapshot's history as
/// from the replayed one, and the reference context item is cleared whichever side of the cut the
/// legacy compaction lies on. Cut at every line, with compactions with replacement history and
/// rollbacks around them.
#[test]
fn legacy_compactions_on_either_side_of_the_cut() {
    let mut session = CodexSession::new(3, false);
    session.turn();
    session.turn();
    session.compaction(2);
    session.turn();
    session
        .lines
        .push(line("compacted", r#"{"message":"legacy summary A"}"#));
    session.turn();
    session.event(r#"{"type":"thread_rolled_back","num_turns":1}"#);
    session.turn();
    session.compaction(5);
    session.turn();
    session
        .lines
        .push(line("compacted", r#"{"message":"legacy summary B"}"#));
    session.turn();
    session.event(r#"{"type":"thread_rolled_back","num_turns":2}"#);
    session.turn();
    let text = session.text();
    let full = common::resume_bytes(text.as_bytes(), DEFAULT_TRUNCATION);
    assert!(full.compactions().expect("read every line").legacy_rebuilt);
    assert_eq!(full.history().reference_context_item(), None);
    let (used, cuts) = every_cut(&text);
    assert_eq!(used, cuts);
}
