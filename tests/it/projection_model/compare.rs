//! Comparing the library with the model, and an independent protocol checker for projected
//! items.

use super::model::*;
use super::prelude::*;
use super::reference::*;
use super::spec::*;

pub(crate) fn record_all(jsons: &[String]) -> (History, ModelHistory) {
    let mut history = fresh_history();
    let mut model = ModelHistory::default();
    for json in jsons {
        let got = history
            .record_json(json.as_str())
            .unwrap_or_else(|e| panic!("generated item rejected ({e}): {json}"));
        let want = model.record(json);
        assert_eq!(got, want, "record_json({json})");
    }
    (history, model)
}

pub(crate) fn lines(items: &[Value]) -> String {
    items.iter().fold(String::new(), |mut out, item| {
        let _ = writeln!(out, "    {item}");
        out
    })
}

pub(crate) fn compare_history(history: &History, model: &ModelHistory) -> Result<(), String> {
    let got: Vec<&str> = history.iter().map(Entry::json).collect();
    if got != model.items {
        return Err(format!(
            "entries differ\n  library:\n{}  model:\n{}",
            got.iter().fold(String::new(), |mut out, json| {
                let _ = writeln!(out, "    {json}");
                out
            }),
            model.items.iter().fold(String::new(), |mut out, json| {
                let _ = writeln!(out, "    {json}");
                out
            }),
        ));
    }
    if history.len() != model.items.len() {
        return Err(format!("len {} != {}", history.len(), model.items.len()));
    }
    for (position, (entry, json)) in history.iter().zip(&model.items).enumerate() {
        let item = parse(json);
        let header = (
            entry.kind(),
            entry.call_id().map(|id| id.as_str().to_owned()),
            entry.item_id().map(|id| id.as_str().to_owned()),
        );
        let want = (
            kind_of(&item),
            expected_call_id(&item),
            expected_item_id(&item),
        );
        if header != want {
            return Err(format!(
                "entry {position} header (kind, call_id, item_id) {header:?} != {want:?}: {json}"
            ));
        }
    }
    if history.version() != model.version {
        return Err(format!(
            "version {} != {}",
            history.version(),
            model.version
        ));
    }
    if history.reference_context_item().is_some() != model.has_reference_context {
        return Err(format!(
            "reference context item present: library {} model {}",
            history.reference_context_item().is_some(),
            model.has_reference_context
        ));
    }
    if history.reachable_user_turns() != model.reachable_user_turns() {
        return Err(format!(
            "reachable user turns: library {} model {}",
            history.reachable_user_turns(),
            model.reachable_user_turns()
        ));
    }
    if history.compactions_reachable() != model.earlier.len() {
        return Err(format!(
            "earlier states: library {} model {}",
            history.compactions_reachable(),
            model.earlier.len()
        ));
    }
    history.assert_invariants();
    Ok(())
}

/// Checks one projection of `history` against the reference projection of `items`.
/// Checks one projection of `history` against the reference projection of `raw`, the texts the
/// model recorded.
pub(crate) fn compare_projection(
    history: &History,
    raw: &[String],
    options: &ProjectionOptions,
) -> Result<(), String> {
    let items: Vec<Value> = raw.iter().map(|json| parse(json)).collect();
    let context = || format!("options {options:?}\n  history:\n{}", lines(&items));
    match (reference_project(&items, options), history.project(options)) {
        (Ok(reference), Ok(projection)) => {
            let want = &reference.items;
            let want_report = &reference.repairs;
            let got: Vec<Value> = projection.iter().map(parse).collect();
            if got != *want {
                return Err(format!(
                    "projected items differ; {}  library:\n{}  reference:\n{}",
                    context(),
                    lines(&got),
                    lines(want)
                ));
            }
            // An unchanged item goes out as the recorded text; a synthetic or rewritten one as
            // compact JSON with the key order kept. So the bytes must agree too (prompt-cache
            // stability).
            for ((got, want), verbatim) in projection.iter().zip(want).zip(&reference.verbatim) {
                let want = match verbatim {
                    Some(position) => raw[*position].clone(),
                    None => serde_json::to_string(want).expect("serialize"),
                };
                if got != want {
                    return Err(format!(
                        "projected bytes differ; {}  library:   {got}\n  reference: {want}",
                        context()
                    ));
                }
            }
            if projection.len() != want.len() {
                return Err(format!(
                    "Projection::len {} != {}; {}",
                    projection.len(),
                    want.len(),
                    context()
                ));
            }
            let array = parse(&projection.to_json_array());
            if array != Value::Array(want.clone()) {
                return Err(format!("to_json_array differs from iter; {}", context()));
            }
            let report: Vec<ExpectedRepair> = projection
                .report()
                .repairs()
                .iter()
                .map(observed_repair)
                .collect();
            if report != *want_report {
                return Err(format!(
                    "report differs; {}  library:   {report:#?}\n  reference: {want_report:#?}",
                    context()
                ));
            }
            if projection.history_version() != history.version() {
                return Err(format!(
                    "history_version {} != {}",
                    projection.history_version(),
                    history.version()
                ));
            }
            Ok(())
        }
        (Err(want), Err(ProjectionError::Violations(got))) => {
            let got: Vec<ExpectedViolation> = got.iter().map(observed_violation).collect();
            if got == want {
                Ok(())
            } else {
                Err(format!(
                    "violations differ; {}  library:   {got:#?}\n  reference: {want:#?}",
                    context()
                ))
            }
        }
        (Ok(_), Err(error)) => Err(format!(
            "library refused ({error}) but reference projects; {}",
            context()
        )),
        (Err(_), Err(error)) => Err(format!("unexpected projection error: {error}")),
        (Err(want), Ok(_)) => Err(format!(
            "library projected but reference expects violations {want:#?}; {}",
            context()
        )),
    }
}

pub(crate) fn check(result: Result<(), String>) -> Result<(), TestCaseError> {
    result.map_err(TestCaseError::fail)
}

// ------------------------------------------------------------------------------------------------
// An independent protocol checker for projected items (property 4).
// ------------------------------------------------------------------------------------------------

/// Everything wrong with a projected list that a lenient projection must have repaired.
pub(crate) fn protocol_problems(items: &[Value], options: &ProjectionOptions) -> Vec<String> {
    let mut problems = Vec::new();
    let id_of = |item: &Value| str_field(item, "call_id").map(str::to_owned);
    let find = |ty: &str, call_id: &str| {
        items
            .iter()
            .any(|other| type_of(other) == ty && str_field(other, "call_id") == Some(call_id))
    };
    for (i, item) in items.iter().enumerate() {
        let ty = type_of(item);
        let call_id = id_of(item);
        let problem = match (ty, call_id.as_deref()) {
            ("function_call" | "local_shell_call", Some(id))
                if !find("function_call_output", id) =>
            {
                format!("{ty} {id:?} has no output")
            }
            ("custom_tool_call", Some(id)) if !find("custom_tool_call_output", id) => {
                format!("custom call {id:?} has no output")
            }
            ("tool_search_call", Some(id)) if !find("tool_search_output", id) => {
                format!("tool search {id:?} has no output")
            }
            ("function_call_output", Some(id))
                if !find("function_call", id) && !find("local_shell_call", id) =>
            {
                format!("function output {id:?} has no call")
            }
            ("custom_tool_call_output", Some(id)) if !find("custom_tool_call", id) => {
                format!("custom output {id:?} has no call")
            }
            ("tool_search_output", Some(id))
                if str_field(item, "execution") != Some("server")
                    && !find("tool_search_call", id) =>
            {
                format!("tool search output {id:?} has no call")
            }
            _ => String::new(),
        };
        if !problem.is_empty() {
            problems.push(format!("item {i}: {problem}"));
        }
        let parts = match ty {
            "message" => item.get("content"),
            "function_call_output" | "custom_tool_call_output" => item.get("output"),
            _ => None,
        };
        for part in parts.and_then(Value::as_array).into_iter().flatten() {
            if !options.modalities.image && type_of(part) == "input_image" {
                problems.push(format!("item {i}: image sent to a model without images"));
            }
            if !options.modalities.audio && type_of(part) == "input_audio" {
                problems.push(format!("item {i}: audio sent to a model without audio"));
            }
        }
        if ty == "image_generation_call"
            && !options.modalities.image
            && str_field(item, "result").is_some_and(|r| !r.is_empty())
        {
            problems.push(format!(
                "item {i}: generated image sent to a model without images"
            ));
        }
        if options.unknown_items == UnknownItems::HoldBack && kind_of(item) == ItemKind::Unknown {
            problems.push(format!("item {i}: unknown item {ty:?} sent"));
        }
    }
    problems
}
