//! The projection's overlay: the history's vector kept as it is, the repaired slots in a sorted
//! overlay merged in position order when the projection is read. Every way of reading a
//! projection (`iter`, `try_for_each_json`, `write_json_array`, `to_json_array`,
//! `json_array_len`, `len`) must agree with a naive rendering of the history, wherever the
//! repaired slots fall: at the first or last position of the history, at the edges of the
//! vector's leaves, several in one leaf.

use std::collections::HashSet;
use std::convert::Infallible;

use agent_history::{History, Projection, ProjectionOptions, RepairKind};
use proptest::prelude::*;

/// What one recorded item is, and how a default projection renders it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    /// A user message: sent as recorded.
    Message,
    /// A call whose output is recorded right after it: both sent as recorded.
    Answered,
    /// A call without output: sent, followed by a synthetic `"aborted"` output.
    Unanswered,
    /// An output whose call is nowhere: dropped.
    Orphan,
    /// An item of unknown type: held back.
    Unknown,
}

/// The history of `items` (the `i`-th with its own texts and call ids) and the items a default
/// projection must send, rendered naively one item after the other.
fn history_of(items: &[Item]) -> (History, Vec<String>) {
    let mut history = History::new();
    let mut expected = Vec::new();
    let record = |history: &mut History, json: String, sent: bool, expected: &mut Vec<String>| {
        history.record_json(json.as_str()).expect("valid item");
        if sent {
            expected.push(json);
        }
    };
    for (i, item) in items.iter().enumerate() {
        let message = format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"text {i}"}}]}}"#
        );
        let call = format!(
            r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"call_{i}"}}"#
        );
        let output =
            format!(r#"{{"type":"function_call_output","call_id":"call_{i}","output":"out {i}"}}"#);
        match item {
            Item::Message => record(&mut history, message, true, &mut expected),
            Item::Answered => {
                record(&mut history, call, true, &mut expected);
                record(&mut history, output, true, &mut expected);
            }
            Item::Unanswered => {
                record(&mut history, call, true, &mut expected);
                expected.push(format!(
                    r#"{{"type":"function_call_output","call_id":"call_{i}","output":"aborted"}}"#
                ));
            }
            Item::Orphan => record(
                &mut history,
                format!(r#"{{"type":"function_call_output","call_id":"gone_{i}","output":"x"}}"#),
                false,
                &mut expected,
            ),
            Item::Unknown => record(
                &mut history,
                format!(r#"{{"type":"future_thing","n":{i}}}"#),
                false,
                &mut expected,
            ),
        }
    }
    (history, expected)
}

/// Every way of reading `projection` gives `expected`.
fn assert_renders(projection: &Projection, expected: &[String]) {
    let by_iter: Vec<&str> = projection.iter().collect();
    assert_eq!(by_iter, expected, "iter");
    let mut by_leaves = Vec::new();
    projection
        .try_for_each_json(|json| {
            by_leaves.push(json.to_owned());
            Ok::<(), Infallible>(())
        })
        .unwrap();
    assert_eq!(by_leaves, expected, "try_for_each_json");
    let array = format!("[{}]", expected.join(","));
    assert_eq!(projection.to_json_array(), array, "to_json_array");
    let mut written = Vec::new();
    projection.write_json_array(&mut written).unwrap();
    assert_eq!(written, array.as_bytes(), "write_json_array");
    assert_eq!(projection.json_array_len(), array.len(), "json_array_len");
    assert_eq!(projection.len(), expected.len(), "len");
}

/// The positions of the first and last slot of every leaf of `history`'s vector.
fn leaf_edges(history: &History) -> Vec<usize> {
    let mut edges = Vec::new();
    let mut start = 0;
    for leaf in history.entries().leaves() {
        if !leaf.is_empty() {
            edges.push(start);
            edges.push(start + leaf.len() - 1);
        }
        start += leaf.len();
    }
    assert_eq!(start, history.len());
    edges
}

#[test]
fn a_repair_at_every_single_position_renders_in_place() {
    const N: usize = 150;
    for repair in [Item::Unanswered, Item::Orphan, Item::Unknown] {
        for position in 0..N {
            let mut items = vec![Item::Message; N];
            items[position] = repair;
            let (history, expected) = history_of(&items);
            let projection = history.project(&ProjectionOptions::default()).unwrap();
            assert_renders(&projection, &expected);
            assert_eq!(projection.report().len(), 1);
            assert_eq!(projection.report().repairs()[0].at.position, position);
        }
    }
}

#[test]
fn repairs_at_the_first_and_last_slot_of_every_leaf_and_of_the_history() {
    const N: usize = 1000;
    let (plain, _) = history_of(&[Item::Message; N]);
    let edges = leaf_edges(&plain);
    // Several leaves, or the edges are those of the history only.
    assert!(edges.len() > 4, "leaves: {edges:?}");
    assert!(edges.contains(&0) && edges.contains(&(N - 1)));
    let kinds = [Item::Unanswered, Item::Orphan, Item::Unknown];
    for shift in 0..kinds.len() {
        let mut items = vec![Item::Message; N];
        for (i, &position) in edges.iter().enumerate() {
            items[position] = kinds[(i + shift) % kinds.len()];
        }
        let (history, expected) = history_of(&items);
        // One item per slot, so the leaves are laid out as in the plain history.
        assert_eq!(leaf_edges(&history), edges);
        let projection = history.project(&ProjectionOptions::default()).unwrap();
        assert_renders(&projection, &expected);
        let repaired: HashSet<usize> = edges.iter().copied().collect();
        assert_eq!(projection.report().len(), repaired.len());
        for repair in projection.report().repairs() {
            assert!(repaired.contains(&repair.at.position), "{repair}");
        }
    }
}

#[test]
fn a_whole_leaf_of_repairs_renders_in_order() {
    // Every slot repaired, so every leaf is split into runs of one.
    let items: Vec<Item> = (0..300)
        .map(|i| [Item::Unanswered, Item::Orphan, Item::Message][i % 3])
        .collect();
    let (history, expected) = history_of(&items);
    let projection = history.project(&ProjectionOptions::default()).unwrap();
    assert_renders(&projection, &expected);
    assert_eq!(projection.report().len(), 200);
}

#[test]
fn a_projection_clone_is_independent_of_the_original_and_of_the_history() {
    let items: Vec<Item> = (0..400)
        .map(|i| match i % 7 {
            0 => Item::Unanswered,
            3 => Item::Orphan,
            5 => Item::Answered,
            _ => Item::Message,
        })
        .collect();
    let (mut history, expected) = history_of(&items);
    let original = history.project(&ProjectionOptions::default()).unwrap();
    let report = original.report().clone();
    let clone = original.clone();
    let version = original.history_version();
    drop(original);
    // The history moves on: the calls get their outputs, the front is trimmed, everything is
    // replaced; a projection of it now differs.
    for i in (0..items.len()).step_by(7) {
        history
            .record_json(format!(
                r#"{{"type":"function_call_output","call_id":"call_{i}","output":"late"}}"#
            ))
            .unwrap();
    }
    history.remove_first_item();
    let now = history.project(&ProjectionOptions::default()).unwrap();
    assert_ne!(now.to_json_array(), clone.to_json_array());
    history.replace(Vec::new());
    assert_renders(&clone, &expected);
    assert_eq!(clone.report(), &report);
    assert_eq!(clone.history_version(), version);
    assert!(matches!(
        clone.report().repairs()[0].kind,
        RepairKind::SynthesizedOutput { .. }
    ));
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        8 => Just(Item::Message),
        4 => Just(Item::Answered),
        1 => Just(Item::Unanswered),
        1 => Just(Item::Orphan),
        1 => Just(Item::Unknown),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Histories long enough for several leaves, repairs anywhere: `iter`, `try_for_each_json`
    /// and the written arrays agree with each other and with the naive rendering.
    #[test]
    fn every_reading_of_a_projection_agrees(items in prop::collection::vec(item(), 0..400)) {
        let (history, expected) = history_of(&items);
        let projection = history.project(&ProjectionOptions::default()).unwrap();
        assert_renders(&projection, &expected);
        let repairs = items
            .iter()
            .filter(|item| matches!(item, Item::Unanswered | Item::Orphan | Item::Unknown))
            .count();
        prop_assert_eq!(projection.report().len(), repairs);
    }
}
