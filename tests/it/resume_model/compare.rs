//! The library's resume against the model, and a resume through a snapshot against a full one.

use std::path::Path;

use agent_history::{History, ResumeOptions, Resumed, TruncationPolicy, resume_file};
use serde_json::Value;

use super::model::Outcome;

/// The truncation limit of every resume here (`bytes:40`, a budget of 48 bytes with the
/// allowance): the generated outputs run from a few bytes to about 110.
pub const LIMIT: usize = 40;

/// The truncation policy of every resume here.
pub fn policy() -> TruncationPolicy {
    TruncationPolicy::Bytes(LIMIT)
}

/// Resumes the file at `path` in full.
pub fn resume(path: &Path) -> Resumed {
    resume_file(path, &ResumeOptions::new(policy())).expect("a generated rollout resumes")
}

/// The history's entries as stored, byte for byte.
pub fn texts(history: &History) -> Vec<String> {
    history
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect()
}

/// The first difference between the library's resume and the model's, if any: the entries byte
/// for byte against the model's values in compact JSON (an item kept as written is the line's
/// payload text, which the generator wrote the same way; a rewritten one must be written as
/// `serde_json` writes it, keys in order), the
/// version, the thread id, the reachable user turns, the history after a rollback of every depth
/// (one more than reachable included), and whether the rollout ends inside a turn.
pub fn disagreement(resumed: &Resumed, model: &Outcome) -> Option<String> {
    let library = texts(resumed.history());
    let expected: Vec<String> = model.items.iter().map(Value::to_string).collect();
    if library != expected {
        let at = library
            .iter()
            .zip(&expected)
            .position(|(a, b)| a != b)
            .unwrap_or(library.len().min(expected.len()));
        return Some(format!(
            "items differ at {at} (library {} items, model {}):\n library: {:?}\n model:   {:?}",
            library.len(),
            expected.len(),
            library.get(at),
            expected.get(at)
        ));
    }
    if resumed.history().version() != model.version {
        return Some(format!(
            "version: library {}, model {}",
            resumed.history().version(),
            model.version
        ));
    }
    if resumed.thread_id().to_string() != model.thread_id {
        return Some(format!(
            "thread id: library {}, model {}",
            resumed.thread_id(),
            model.thread_id
        ));
    }
    if resumed.history().reachable_user_turns() != model.reachable_turns {
        return Some(format!(
            "reachable user turns: library {}, model {}",
            resumed.history().reachable_user_turns(),
            model.reachable_turns
        ));
    }
    for (at, expected) in model.rolled_back.iter().enumerate() {
        let mut history = resumed.history().clone();
        history
            .drop_last_n_user_turns(at + 1)
            .expect("the history rolls back");
        let expected: Vec<String> = expected.iter().map(Value::to_string).collect();
        if texts(&history) != expected {
            return Some(format!(
                "after a rollback of {} turns:\n library: {:?}\n model:   {:?}",
                at + 1,
                texts(&history),
                expected
            ));
        }
    }
    if resumed.ends_inside_turn() != model.ends_inside_turn
        || resumed.incomplete_turn().is_some() != model.ends_inside_turn
    {
        return Some(format!(
            "ends inside a turn: library {} (report {}), model {}",
            resumed.ends_inside_turn(),
            resumed.incomplete_turn().is_some(),
            model.ends_inside_turn
        ));
    }
    None
}

/// The first difference between a resume through a snapshot and a full resume, if any: the
/// entries byte for byte, the version, the previous-turn settings, the reference context item,
/// the thread id, the base instructions, the incomplete turn, the turns and compactions a
/// rollback can reach, and the history after a rollback of every depth.
pub fn snapshot_disagreement(through: &Resumed, full: &Resumed) -> Option<String> {
    let (a, b) = (through.history(), full.history());
    if texts(a) != texts(b) {
        return Some(format!(
            "entries:\n through {:?}\n full    {:?}",
            texts(a),
            texts(b)
        ));
    }
    let facts = |r: &Resumed| {
        format!(
            "version {} settings {:?} reference {:?} thread {} instructions {:?} incomplete {:?} \
             reachable turns {} compactions {}",
            r.history().version(),
            r.previous_turn_settings().map(|raw| raw.get()),
            r.history().reference_context_item(),
            r.thread_id(),
            r.report().base_instructions,
            r.report().incomplete_turn,
            r.history().reachable_user_turns(),
            r.history().compactions_reachable(),
        )
    };
    if facts(through) != facts(full) {
        return Some(format!(
            "facts:\n through {}\n full    {}",
            facts(through),
            facts(full)
        ));
    }
    // The whole load report: skipped, repaired and left-out lines of the covered prefix too.
    if through.report() != full.report() {
        return Some(format!(
            "load report:\n through {:?}\n full    {:?}",
            through.report(),
            full.report()
        ));
    }
    for turns in 1..=b.reachable_user_turns() + 1 {
        let (mut a, mut b) = (a.clone(), b.clone());
        a.drop_last_n_user_turns(turns).expect("rolls back");
        b.drop_last_n_user_turns(turns).expect("rolls back");
        if texts(&a) != texts(&b) || a.reference_context_item() != b.reference_context_item() {
            return Some(format!("after a rollback of {turns} turns"));
        }
    }
    None
}
