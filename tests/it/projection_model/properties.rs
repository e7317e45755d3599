//! Properties over one recorded sequence.

use super::compare::*;
use super::prelude::*;
use super::spec::*;
use super::strategies::*;

proptest! {
    #![proptest_config(config())]

    /// 1. The projection equals the reference item by item, with the same report; strict mode
    ///    gives the reference's violations, or (with none) exactly the lenient projection.
    #[test]
    fn projection_matches_reference(jsons in items(), options in options()) {
        let (history, model) = record_all(&jsons);
        check(compare_history(&history, &model))?;
        check(compare_projection(&history, &model.items, &options))?;
        if options.repair == RepairMode::Strict
            && let Ok(strict) = history.project(&options)
        {
            let lenient = history.project(&lenient(options)).expect("lenient never fails");
            prop_assert_eq!(strict.to_json_array(), lenient.to_json_array());
            prop_assert_eq!(strict.report(), lenient.report());
        }
    }

    /// 2. Projecting twice gives the same bytes and the same report.
    #[test]
    fn projection_is_deterministic(jsons in items(), options in options()) {
        let (history, _) = record_all(&jsons);
        let options = lenient(options);
        let first = history.project(&options).expect("lenient");
        let second = history.project(&options).expect("lenient");
        prop_assert_eq!(first.to_json_array(), second.to_json_array());
        prop_assert_eq!(first.report(), second.report());
        let third = history.clone().project(&options).expect("lenient");
        prop_assert_eq!(first.to_json_array(), third.to_json_array());
    }

    /// 3. Projecting leaves the live history as it was: entries, version, index.
    #[test]
    fn projection_does_not_touch_history(jsons in items(), options in options()) {
        let (history, _) = record_all(&jsons);
        let before = history.clone();
        let before_json: Vec<String> = before.iter().map(|e| e.json().to_owned()).collect();
        let _ = history.project(&options);
        let _ = history.project(&lenient(options));
        let after_json: Vec<String> = history.iter().map(|e| e.json().to_owned()).collect();
        prop_assert_eq!(before_json, after_json);
        prop_assert_eq!(before.version(), history.version());
        prop_assert_eq!(&before, &history);
        history.assert_invariants();
    }

    /// 4. After a lenient projection no call lacks an output, no orphan output is left, no
    ///    unsupported media is sent and (by default) no unknown item is sent.
    #[test]
    fn lenient_projection_is_well_formed(jsons in items(), options in options()) {
        let (history, _) = record_all(&jsons);
        let options = lenient(options);
        let projection = history.project(&options).expect("lenient");
        let items: Vec<Value> = projection.iter().map(parse).collect();
        let problems = protocol_problems(&items, &options);
        prop_assert!(problems.is_empty(), "{problems:#?}\nprojected:\n{}", lines(&items));
    }

    /// 5. Synthetic ids survive a JSON round trip: the entries written out as JSON lines and
    ///    recorded into a fresh history project to the same bytes.
    #[test]
    fn projection_survives_json_round_trip(jsons in single_line_items(), options in options()) {
        let (history, _) = record_all(&jsons);
        let options = lenient(options);
        let first = history.project(&options).expect("lenient");
        let mut file = String::new();
        for entry in history.iter() {
            file.push_str(entry.json());
            file.push('\n');
        }
        let mut resumed = fresh_history();
        for line in file.lines() {
            let recorded = resumed.record_json(line).expect("a stored item records again");
            prop_assert!(
                matches!(recorded, Recorded::Stored { truncated: false, .. }),
                "{recorded:?} for {line}"
            );
        }
        resumed.assert_invariants();
        let second = resumed.project(&options).expect("lenient");
        prop_assert_eq!(first.to_json_array(), second.to_json_array());
        prop_assert_eq!(first.report(), second.report());
    }

    /// 7. Recording the typed item (`record`) decides and pairs exactly as recording its JSON
    ///    (`record_json`); the stored items agree once read in the typed model's normal form
    ///    (see `typed_normal_form`).
    #[test]
    fn typed_record_agrees_with_json_record(jsons in items(), options in options()) {
        let options = lenient(options);
        let mut by_json = fresh_history();
        let mut by_type = fresh_history();
        for json in &jsons {
            let typed: agent_history::ResponseItem =
                serde_json::from_str(json).expect("a generated item parses");
            let item = parse(json);
            if kind_of(&item) == ItemKind::Unknown && type_of(&item) != "compaction_trigger" {
                // The typed model cannot hold an unknown item's content.
                prop_assert!(by_type.record(&typed).is_err());
                continue;
            }
            let written = serde_json::to_value(&typed).expect("serialize");
            if typed_normal_form(&written) != typed_normal_form(&item) {
                // A part of a kind the typed model does not know (an image in an agent message)
                // reads as `other`: the typed item is not the same item.
                continue;
            }
            let from_json = by_json.record_json(json.as_str()).expect("records");
            let from_type = by_type.record(&typed).expect("records");
            prop_assert_eq!(from_json, from_type, "{}", json);
        }
        by_type.assert_invariants();
        let by_json_items: Vec<Value> = model_of(&by_json).iter().map(typed_normal_form).collect();
        let by_type_items: Vec<Value> = model_of(&by_type).iter().map(typed_normal_form).collect();
        prop_assert_eq!(by_json_items, by_type_items);
        check(compare_projection(&by_type, &texts_of(&by_type), &options))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.div_ceil(8), ..config() })]

    /// 8. Histories longer than one leaf of the persistent vector (64 entries): the repaired
    ///    slots, merged into the leaves when the projection is read, land where the reference
    ///    puts them, byte for byte, with the same report.
    #[test]
    fn long_projection_matches_reference(
        jsons in prop::collection::vec(any_json(), 64..260),
        options in options(),
    ) {
        let (history, model) = record_all(&jsons);
        check(compare_projection(&history, &model.items, &options))?;
        let options = lenient(options);
        let projection = history.project(&options).expect("lenient");
        let mut by_leaves = Vec::new();
        projection
            .try_for_each_json(|json| {
                by_leaves.push(json.to_owned());
                Ok::<(), std::convert::Infallible>(())
            })
            .expect("infallible");
        let by_iter: Vec<&str> = projection.iter().collect();
        prop_assert_eq!(by_iter, by_leaves);
        prop_assert_eq!(projection.to_json_array().len(), projection.json_array_len());
    }
}

/// The live history's recorded texts.
pub(crate) fn texts_of(history: &History) -> Vec<String> {
    history
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect()
}

/// The live history's items as JSON values.
pub(crate) fn model_of(history: &History) -> Vec<Value> {
    history.iter().map(|entry| parse(entry.json())).collect()
}

/// The item as the typed model writes it: the alias `compaction_summary` becomes `compaction`,
/// an `id` or a `function_call_output` `call_id` that is `null` is left out, and the
/// always-written nullable `call_id` keys are written out.
pub(crate) fn typed_normal_form(item: &Value) -> Value {
    let mut item = item.clone();
    let ty = type_of(&item).to_owned();
    if let Value::Object(fields) = &mut item {
        if ty == "compaction_summary" {
            fields.insert("type".into(), "compaction".into());
        }
        if fields.get("id") == Some(&Value::Null) {
            fields.shift_remove("id");
        }
        if ty == "function_call_output" && fields.get("call_id") == Some(&Value::Null) {
            fields.shift_remove("call_id");
        }
        if matches!(
            ty.as_str(),
            "local_shell_call" | "tool_search_call" | "tool_search_output"
        ) {
            fields.entry("call_id").or_insert(Value::Null);
        }
    }
    item
}
