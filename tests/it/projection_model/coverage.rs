//! The generators reach every case the properties are meant to exercise.

use super::machine::*;
use super::model::*;
use super::prelude::*;
use super::reference::*;
use super::spec::*;
use super::strategies::*;

/// The situations one recorded sequence exercises, as seen by the reference.
pub(crate) fn sequence_features(jsons: &[String]) -> HashSet<&'static str> {
    let mut features = HashSet::new();
    let mut model = ModelHistory::default();
    for json in jsons {
        match model.record(json) {
            Recorded::Filtered(FilterReason::SystemMessage) => features.insert("filtered system"),
            Recorded::Filtered(FilterReason::CompactionTrigger) => {
                features.insert("filtered compaction_trigger")
            }
            Recorded::Filtered(FilterReason::ClientToolSearchWithoutCallId) => {
                features.insert("filtered client tool search without call id")
            }
            _ => false,
        };
    }
    let items = model.values();
    let text_only = ProjectionOptions::for_modalities(Modalities::TEXT);
    let reference = reference_project(&items, &text_only).expect("lenient");
    let (sent, report) = (reference.items, reference.repairs);
    for repair in &report {
        features.insert(match (&repair.what, repair.item_kind) {
            (
                RepairWhat::Synthesized {
                    output_id: None, ..
                },
                _,
            ) => "synthesized without id",
            (RepairWhat::Synthesized { .. }, ItemKind::FunctionCall) => "synthesized for function",
            (RepairWhat::Synthesized { .. }, ItemKind::LocalShellCall) => "synthesized for shell",
            (RepairWhat::Synthesized { .. }, ItemKind::CustomToolCall) => "synthesized for custom",
            (RepairWhat::Synthesized { .. }, ItemKind::ToolSearchCall) => {
                "synthesized for tool search"
            }
            (RepairWhat::DroppedOrphan, ItemKind::FunctionCallOutput) => "dropped function output",
            (RepairWhat::DroppedOrphan, ItemKind::CustomToolCallOutput) => "dropped custom output",
            (RepairWhat::DroppedOrphan, ItemKind::ToolSearchOutput) => "dropped tool search output",
            (RepairWhat::StrippedImages(_), ItemKind::Message) => "stripped message images",
            (RepairWhat::StrippedImages(_), _) => "stripped output images",
            (RepairWhat::StrippedAudio(_), _) => "stripped audio",
            (RepairWhat::ClearedImageGeneration, _) => "cleared generated image",
            (RepairWhat::HeldBackUnknown, _) => "held back unknown",
            _ => "other repair",
        });
    }
    if sent.iter().any(|item| {
        type_of(item) == "tool_search_output"
            && str_field(item, "execution") == Some("server")
            && str_field(item, "call_id").is_some()
    }) {
        features.insert("kept server tool search output");
    }
    if sent
        .iter()
        .any(|item| type_of(item) == "function_call_output" && item.get("call_id").is_none())
    {
        features.insert("kept output without call id");
    }
    for (i, item) in items.iter().enumerate() {
        if let Some((fam, Some(id))) = as_output(item)
            && items[i + 1..]
                .iter()
                .filter_map(as_call)
                .any(|c| c.fam == fam && c.call_id == id)
            && !items[..i]
                .iter()
                .filter_map(as_call)
                .any(|c| c.fam == fam && c.call_id == id)
        {
            features.insert("output before its call");
        }
        if let Some(facts) = as_call(item)
            && facts.call_id.is_empty()
            && items
                .iter()
                .filter_map(as_output)
                .any(|(fam, id)| fam == facts.fam && id == Some(""))
        {
            features.insert("empty call id paired");
        }
    }
    for violation in reference_violations(&items) {
        features.insert(match (violation.what, violation.item_kind) {
            (ViolationWhat::MissingOutput, ItemKind::CustomToolCall) => "strict: custom missing",
            (ViolationWhat::MissingOutput, ItemKind::LocalShellCall) => "strict: shell missing",
            (ViolationWhat::OrphanOutput, _) => "strict: orphan",
            _ => "strict: other",
        });
    }
    features
}

/// The situations one action list exercises, replayed on the model alone.
pub(crate) fn machine_features(actions: &[Action]) -> HashSet<&'static str> {
    let mut features = HashSet::new();
    let mut forks = vec![ModelHistory::default()];
    for action in actions {
        let len = forks.len();
        match action {
            ForkOp::On { fork, op } => {
                let model = &mut forks[fork % len];
                match op {
                    HistoryOp::Record(json) => {
                        model.record(json);
                    }
                    HistoryOp::Project(_) => {
                        features.insert("project");
                    }
                    HistoryOp::RemoveFirst => {
                        let before = model.values();
                        let removed = model.remove_first_item();
                        if removed.len() == 2 {
                            features.insert("remove first with counterpart");
                            let first = &before[0];
                            let id = str_field(first, "call_id");
                            let shell = before.iter().position(|i| {
                                type_of(i) == "local_shell_call" && str_field(i, "call_id") == id
                            });
                            let call = before.iter().position(|i| {
                                type_of(i) == "function_call" && str_field(i, "call_id") == id
                            });
                            if type_of(first) == "function_call_output"
                                && matches!((shell, call), (Some(s), Some(c)) if s < c)
                            {
                                features
                                    .insert("remove first output: function call after shell call");
                            }
                        }
                    }
                    HistoryOp::Rollback(n) => {
                        let had_reference = model.has_reference_context;
                        let boundaries = model
                            .values()
                            .iter()
                            .filter(|i| turn_class(i) == TurnClass::Boundary)
                            .count();
                        if *n > 0 && *n < boundaries {
                            features.insert("rollback inside");
                        }
                        if *n > 0 && boundaries == 0 {
                            features.insert("rollback without boundary");
                        }
                        if model.drop_last_n_user_turns(*n) > 0 {
                            features.insert("rollback trimmed context");
                        }
                        if had_reference && !model.has_reference_context {
                            features.insert("rollback cleared reference context");
                        }
                    }
                    HistoryOp::Replace { keep, new } => {
                        replace_in_model(model, keep, new_entry(new.as_deref()).as_ref());
                        features.insert("replace");
                    }
                    HistoryOp::SetReferenceContext(value) => {
                        model.has_reference_context = value.is_some();
                    }
                    HistoryOp::Compact(_) => {
                        features.insert("compact (not modelled)");
                    }
                }
            }
            ForkOp::Fork { from, before_turn } => {
                let fork = forks[from % len].clone();
                place_fork(&mut forks, *from, fork, MAX_FORKS);
                features.insert(if before_turn.is_some() {
                    "fork before a turn (not modelled)"
                } else {
                    "fork"
                });
            }
        }
    }
    features
}

#[test]
pub(crate) fn generators_reach_every_case() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::HashMap;

    let mut runner = TestRunner::deterministic();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let samples = 1000;
    for _ in 0..samples {
        let jsons = items().new_tree(&mut runner).expect("tree").current();
        for feature in sequence_features(&jsons) {
            *counts.entry(feature).or_default() += 1;
        }
    }
    let machine_samples = 256;
    let mut machine_counts: HashMap<&str, usize> = HashMap::new();
    for _ in 0..machine_samples {
        let actions = actions().new_tree(&mut runner).expect("tree").current();
        for feature in machine_features(&actions) {
            *machine_counts.entry(feature).or_default() += 1;
        }
    }
    let mut report = format!("sequences ({samples}):\n");
    let mut sorted: Vec<_> = counts.iter().collect();
    sorted.sort();
    for (feature, count) in sorted {
        let _ = writeln!(report, "  {count:5}  {feature}");
    }
    let _ = writeln!(report, "action lists ({machine_samples}):");
    let mut sorted: Vec<_> = machine_counts.iter().collect();
    sorted.sort();
    for (feature, count) in sorted {
        let _ = writeln!(report, "  {count:5}  {feature}");
    }
    println!("{report}");
    let sequence_wanted = [
        "cleared generated image",
        "dropped custom output",
        "dropped function output",
        "dropped tool search output",
        "empty call id paired",
        "filtered client tool search without call id",
        "filtered compaction_trigger",
        "filtered system",
        "held back unknown",
        "kept output without call id",
        "kept server tool search output",
        "output before its call",
        "strict: custom missing",
        "strict: orphan",
        "strict: shell missing",
        "stripped audio",
        "stripped message images",
        "stripped output images",
        "synthesized for custom",
        "synthesized for function",
        "synthesized for shell",
        "synthesized for tool search",
        "synthesized without id",
    ];
    for feature in sequence_wanted {
        let count = counts.get(feature).copied().unwrap_or(0);
        assert!(
            count >= samples / 100,
            "`{feature}` in {count} of {samples} sequences\n{report}"
        );
    }
    let machine_wanted = [
        "fork",
        "project",
        "remove first with counterpart",
        "remove first output: function call after shell call",
        "replace",
        "rollback inside",
        "rollback trimmed context",
        "rollback cleared reference context",
        "rollback without boundary",
    ];
    for feature in machine_wanted {
        let count = machine_counts.get(feature).copied().unwrap_or(0);
        assert!(
            count >= 1,
            "`{feature}` in {count} of {machine_samples} action lists\n{report}"
        );
    }
    for feature in [
        "compact (not modelled)",
        "fork before a turn (not modelled)",
    ] {
        assert!(
            !machine_counts.contains_key(feature),
            "the generators make `{feature}`\n{report}"
        );
    }
}
