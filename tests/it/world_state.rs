//! The world-state layer: sections with stable ids rendered into fragments and merged into
//! messages, rendered in full or against a stored snapshot and the history, and the history's
//! world-state updates (`docs/world-state.md`). Each test names the Codex test it matches, when
//! there is one.

use crate::common;

use std::sync::Mutex;

use agent_history::{
    ContextUpdate, ContextualFragment, FragmentMarkers, FragmentMatcher, FragmentRole, History,
    JsonSection, Placement, Previous, ResponseItem, Section, UpdateContent, WorldSnapshot,
    WorldState, WorldStateChange, WorldStateError, WorldStateHash, merge_updates,
    split_prefix_updates,
};
use common::{assistant, developer, user};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers

fn snapshot(value: Value) -> WorldSnapshot {
    WorldSnapshot::from_value(value).expect("a valid snapshot")
}

fn state(sections: impl IntoIterator<Item = JsonSection>) -> WorldState {
    let mut state = WorldState::new();
    for section in sections {
        state.add(section).expect("a new id");
    }
    state
}

/// The items as JSON values.
fn values(items: &[ResponseItem]) -> Vec<Value> {
    items
        .iter()
        .map(|item| serde_json::to_value(item).expect("an item serializes"))
        .collect()
}

/// The texts of the fragments of `updates`, in order (`"<item>"` for an item).
fn texts(updates: &[ContextUpdate]) -> Vec<String> {
    updates
        .iter()
        .map(|update| match &update.content {
            UpdateContent::Fragment(fragment) => fragment.render(),
            UpdateContent::Item(_) => "<item>".to_owned(),
        })
        .collect()
}

/// The `input_text` texts of a message item.
fn message_texts(item: &Value) -> Vec<&str> {
    item["content"]
        .as_array()
        .expect("a message")
        .iter()
        .map(|part| part["text"].as_str().expect("a text part"))
        .collect()
}

fn record_all(history: &mut History, items: &[ResponseItem]) {
    for item in items {
        history.record(item).expect("recorded");
    }
}

/// What a [`Probe`] was rendered against.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Absent,
    Unknown,
    Known(Value),
}

/// The typed snapshot of a [`Probe`] (as an application would define one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ProbeSnapshot {
    value: String,
    optional: Option<String>,
    #[serde(default)]
    array: Vec<Value>,
}

/// A section with a typed snapshot that records what it was rendered against.
struct Probe {
    id: &'static str,
    /// `None`: no snapshot (keep the stored one); `Some(None)`: a `null` snapshot.
    snapshot: Option<Option<ProbeSnapshot>>,
    legacy: Option<FragmentMarkers>,
    seen: Mutex<Vec<Seen>>,
}

impl Probe {
    fn new(id: &'static str, value: &str) -> Probe {
        Probe {
            id,
            snapshot: Some(Some(ProbeSnapshot {
                value: value.to_owned(),
                optional: None,
                array: Vec::new(),
            })),
            legacy: None,
            seen: Mutex::new(Vec::new()),
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Section for Probe {
    fn id(&self) -> &str {
        self.id
    }

    fn snapshot(&self) -> Option<Value> {
        self.snapshot
            .as_ref()
            .map(|snapshot| serde_json::to_value(snapshot).unwrap())
    }

    /// The stored value must decode into the typed snapshot.
    fn can_read_snapshot(&self, stored: &Value) -> bool {
        serde_json::from_value::<ProbeSnapshot>(stored.clone()).is_ok()
    }

    /// The new value only, whatever the previous one was (decoded to check it is typed).
    fn render(&self, previous: Previous<'_>) -> Vec<ContextUpdate> {
        self.seen.lock().unwrap().push(match previous {
            Previous::Absent => Seen::Absent,
            Previous::Unknown => Seen::Unknown,
            Previous::Known(value) => {
                let _typed: ProbeSnapshot =
                    serde_json::from_value(value.clone()).expect("a readable snapshot");
                Seen::Known(value.clone())
            }
        });
        let Some(Some(snapshot)) = &self.snapshot else {
            return Vec::new();
        };
        vec![ContextUpdate::fragment(ContextualFragment::new(
            FragmentRole::Developer,
            format!("{}.instructions", self.id),
            FragmentMarkers::tag(self.id),
            snapshot.value.clone(),
        ))]
    }

    fn legacy_fragment(&self) -> Option<FragmentMatcher> {
        self.legacy
            .clone()
            .map(|markers| FragmentMatcher::new(FragmentRole::Developer, markers))
    }
}

fn probe_state(probe: &std::sync::Arc<Probe>) -> WorldState {
    let mut state = WorldState::new();
    state.add_shared(probe.clone()).expect("a new id");
    state
}

// ---------------------------------------------------------------------------------------------
// Hashes

/// Codex's `world_state_hash_normalizes_crlf_line_endings`.
#[test]
fn world_state_hash_normalizes_crlf_line_endings() {
    let fragment = |body: &str| {
        ContextualFragment::new(
            FragmentRole::Developer,
            "test.instructions",
            FragmentMarkers::tag("test"),
            body,
        )
    };
    assert_eq!(
        fragment("\r\nline one\r\nline two\r\n").hash(),
        fragment("\nline one\nline two\n").hash()
    );
    assert_ne!(
        fragment("line one").hash(),
        fragment("line two").hash(),
        "the body counts"
    );
}

/// Codex's `world_state_json_hash_ignores_object_key_order`.
#[test]
fn world_state_json_hash_ignores_object_key_order() {
    let one: Value = serde_json::from_str(r#"{"b":{"y":2,"x":1},"a":[{"q":1,"p":0}]}"#).unwrap();
    let two: Value = serde_json::from_str(r#"{"a":[{"p":0,"q":1}],"b":{"x":1,"y":2}}"#).unwrap();
    assert_eq!(WorldStateHash::of_json(&one), WorldStateHash::of_json(&two));
    assert_ne!(
        WorldStateHash::of_json(&one),
        WorldStateHash::of_json(&json!({"a": [], "b": {}}))
    );
}

// ---------------------------------------------------------------------------------------------
// Snapshots and sections

/// Codex's `snapshot_uses_stable_section_ids_and_omits_null_fields`.
#[test]
fn snapshot_uses_stable_section_ids_and_omits_null_fields() {
    let mut probe = Probe::new("test", "current");
    probe.snapshot = Some(Some(ProbeSnapshot {
        value: "current".into(),
        optional: None,
        array: vec![json!({"value": null})],
    }));
    let mut state = WorldState::new();
    state.add(probe).unwrap();
    let expected = r#"{"test":{"value":"current","array":[{"value":null}]}}"#;
    assert_eq!(serde_json::to_string(&state.snapshot()).unwrap(), expected);
    assert_eq!(
        serde_json::to_string(&state.render_full().snapshot).unwrap(),
        expected
    );
}

/// Codex's `render_diff_restores_the_typed_section_snapshot`: a known previous snapshot with a
/// different value reaches the section (readable as its typed snapshot), and only the new value
/// is rendered.
#[test]
fn render_diff_restores_the_typed_section_snapshot() {
    let probe = std::sync::Arc::new(Probe::new("test", "after"));
    let stored = snapshot(json!({"test": {"value": "before", "array": []}}));
    let rendered = probe_state(&probe)
        .render_history_diff(Some(&stored), &[])
        .unwrap();
    assert_eq!(
        probe.seen(),
        [Seen::Known(json!({"value": "before", "array": []}))]
    );
    assert_eq!(texts(&rendered.updates), ["<test>after</test>"]);
    assert_eq!(
        rendered.snapshot,
        snapshot(json!({"test": {"value": "after", "array": []}}))
    );
    assert_eq!(
        rendered.change_from(Some(&stored)),
        Some(WorldStateChange {
            full: false,
            state: json!({"test": {"value": "after"}})
        })
    );
}

/// A known previous snapshot equal to the current one: the section is not asked to render.
#[test]
fn an_unchanged_known_section_is_not_rendered() {
    let probe = std::sync::Arc::new(Probe::new("test", "same"));
    let stored = snapshot(json!({"test": {"value": "same", "array": []}}));
    let rendered = probe_state(&probe)
        .render_history_diff(Some(&stored), &[])
        .unwrap();
    assert!(rendered.updates.is_empty());
    assert!(probe.seen().is_empty());
    assert_eq!(rendered.snapshot, stored);
    assert_eq!(rendered.change_from(Some(&stored)), None);
}

/// An application's own section: a custom one with its own snapshot and renderer.
struct Extension {
    value: &'static str,
}

impl Section for Extension {
    fn id(&self) -> &str {
        "extension_test"
    }

    fn snapshot(&self) -> Option<Value> {
        Some(json!({"value": self.value, "unset": null, "nested": {"gone": null}}))
    }

    fn render(&self, _previous: Previous<'_>) -> Vec<ContextUpdate> {
        vec![ContextUpdate::fragment(ContextualFragment::new(
            FragmentRole::Developer,
            "extension_test.instructions",
            FragmentMarkers::tag("extension_test"),
            self.value,
        ))]
    }
}

/// Codex's `extension_owned_section_uses_its_snapshot_and_renderer`, with an application's own
/// section and with the ready-made [`JsonSection`].
#[test]
fn extension_owned_section_uses_its_snapshot_and_renderer() {
    let mut custom = WorldState::new();
    custom.add(Extension { value: "after" }).unwrap();
    let rendered = custom.render_full();
    assert_eq!(
        rendered.snapshot,
        snapshot(json!({"extension_test": {"value": "after", "nested": {}}}))
    );
    assert_eq!(
        serde_json::to_string(&rendered.snapshot).unwrap(),
        r#"{"extension_test":{"value":"after","nested":{}}}"#,
        "null fields removed"
    );
    let items = values(&rendered.items());
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["role"], "developer");
    assert_eq!(
        message_texts(&items[0]),
        ["<extension_test>after</extension_test>"]
    );

    let ready_made = state([JsonSection::new("extension_test", json!("after"))]);
    let rendered = ready_made.render_full();
    assert_eq!(
        rendered.snapshot,
        snapshot(json!({"extension_test": "after"}))
    );
    let items = values(&rendered.items());
    assert_eq!(items[0]["role"], "developer");
    assert_eq!(
        message_texts(&items[0]),
        ["<extension_test>after</extension_test>"]
    );
    let object = state([JsonSection::new(
        "extension_test",
        json!({"value": "after", "optional": null}),
    )]);
    assert_eq!(
        object.render_full().snapshot,
        snapshot(json!({"extension_test": {"value": "after"}})),
        "null fields removed"
    );
}

/// Codex's `extension_owned_section_uses_its_stable_id_as_content_kind_feature`.
#[test]
fn extension_owned_section_uses_its_stable_id_as_content_kind_feature() {
    let items = values(
        &state([JsonSection::new("extension_test", json!("after"))])
            .render_full()
            .items(),
    );
    assert_eq!(
        items[0]["internal_chat_message_metadata_passthrough"],
        json!({"content_item_kinds": ["extension_test.instructions"]})
    );
}

/// Codex's `missing_retained_fragment_is_rendered_again`: a stored snapshot does not stop a
/// section from rendering when its fragment has left the history.
#[test]
fn missing_retained_fragment_is_rendered_again() {
    let state = state([JsonSection::new("retained_test", json!("same")).retained()]);
    let stored = snapshot(json!({"retained_test": "same"}));

    let gone = History::new();
    let rendered = state
        .render_history_diff(Some(&stored), gone.iter())
        .unwrap();
    assert_eq!(
        texts(&rendered.updates),
        ["<retained_test>same</retained_test>"]
    );
    assert_eq!(
        rendered.change_from(Some(&stored)),
        None,
        "the snapshot is the same"
    );

    let mut kept = History::new();
    kept.record_json(developer("<retained_test>same</retained_test>"))
        .unwrap();
    let rendered = state
        .render_history_diff(Some(&stored), kept.iter())
        .unwrap();
    assert!(rendered.updates.is_empty(), "the fragment is still there");

    // The fragment must be in a message of the section's role.
    let mut wrong_role = History::new();
    wrong_role
        .record_json(user("<retained_test>same</retained_test>"))
        .unwrap();
    let rendered = state
        .render_history_diff(Some(&stored), wrong_role.iter())
        .unwrap();
    assert_eq!(rendered.updates.len(), 1);
}

/// A section that may have no snapshot now, or a `null` one.
struct Skippable {
    id: &'static str,
    snapshot: Option<Value>,
}

impl Section for Skippable {
    fn id(&self) -> &str {
        self.id
    }

    fn snapshot(&self) -> Option<Value> {
        self.snapshot.clone()
    }

    fn render(&self, _previous: Previous<'_>) -> Vec<ContextUpdate> {
        Vec::new()
    }
}

/// Codex's `extension_snapshot_updates_preserve_skipped_state`: a `null` snapshot removes the
/// section (the patch says `null`); no snapshot keeps the stored one.
#[test]
fn extension_snapshot_updates_preserve_skipped_state() {
    let stored = snapshot(json!({"dropped": {"v": 1}, "skipped": {"v": 2}, "kept": 3}));
    let mut state = WorldState::new();
    state
        .add(Skippable {
            id: "dropped",
            snapshot: Some(Value::Null),
        })
        .unwrap();
    state
        .add(Skippable {
            id: "skipped",
            snapshot: None,
        })
        .unwrap();
    state
        .add(Skippable {
            id: "kept",
            snapshot: Some(json!(3)),
        })
        .unwrap();
    let rendered = state.render_history_diff(Some(&stored), &[]).unwrap();
    assert_eq!(
        rendered.snapshot,
        snapshot(json!({"skipped": {"v": 2}, "kept": 3}))
    );
    let change = rendered.change_from(Some(&stored)).unwrap();
    assert_eq!(
        change,
        WorldStateChange {
            full: false,
            state: json!({"dropped": null})
        }
    );
    assert_eq!(change.apply_to(Some(&stored)).unwrap(), rendered.snapshot);

    // Without a stored value, no snapshot stores nothing.
    assert_eq!(state.render_full().snapshot, snapshot(json!({"kept": 3})));
}

/// A section the state no longer has is left out of the new snapshot (the patch deletes it).
#[test]
fn a_removed_section_is_deleted_by_the_patch() {
    let stored = snapshot(json!({"old": 1, "kept": "x"}));
    let state = state([JsonSection::new("kept", json!("x"))]);
    let rendered = state.render_history_diff(Some(&stored), &[]).unwrap();
    assert!(rendered.updates.is_empty());
    assert_eq!(
        rendered.change_from(Some(&stored)).unwrap().state,
        json!({"old": null})
    );
}

/// Codex's `unreadable_section_snapshot_is_treated_as_unknown`.
#[test]
fn unreadable_section_snapshot_is_treated_as_unknown() {
    let probe = std::sync::Arc::new(Probe::new("test", "current"));
    let stored = snapshot(json!({"test": {"legacy_shape": true}}));
    let rendered = probe_state(&probe)
        .render_history_diff(Some(&stored), &[])
        .unwrap();
    assert_eq!(probe.seen(), [Seen::Unknown]);
    assert_eq!(texts(&rendered.updates), ["<test>current</test>"]);
    assert_eq!(
        rendered.snapshot,
        snapshot(json!({"test": {"value": "current", "array": []}})),
        "the unreadable value is replaced"
    );
}

/// A legacy fragment in the history makes a section without a stored value unknown, also when
/// other sections have stored values.
#[test]
fn a_legacy_fragment_makes_a_section_unknown() {
    let mut probe = Probe::new("test", "current");
    probe.legacy = Some(FragmentMarkers::tag("legacy_test"));
    let probe = std::sync::Arc::new(probe);
    let mut state = probe_state(&probe);
    state.add(JsonSection::new("other", json!(1))).unwrap();
    let stored = snapshot(json!({"other": 1}));

    let mut history = History::new();
    history
        .record_json(developer("  <LEGACY_TEST>old text</legacy_test>\n"))
        .unwrap();
    let rendered = state
        .render_history_diff(Some(&stored), history.iter())
        .unwrap();
    assert_eq!(probe.seen(), [Seen::Unknown]);
    assert_eq!(texts(&rendered.updates), ["<test>current</test>"]);

    let rendered = state.render_history_diff(Some(&stored), &[]).unwrap();
    assert_eq!(probe.seen()[1], Seen::Absent, "no legacy fragment");
    assert_eq!(rendered.updates.len(), 1);
}

/// Codex's `duplicate_section_ids_are_rejected`: a typed error, not a panic.
#[test]
fn duplicate_section_ids_are_rejected() {
    let mut state = WorldState::new();
    state.add(JsonSection::new("test", json!(1))).unwrap();
    let err = state.add(Probe::new("test", "x")).unwrap_err();
    assert_eq!(err, WorldStateError::DuplicateSection { id: "test".into() });
    assert_eq!(err.to_string(), "duplicate world-state section id `test`");
    assert_eq!(state.len(), 1);
}

/// Codex's `snapshot_merge_patch_changes_and_removes_nested_values`, through a world state.
#[test]
fn snapshot_merge_patch_changes_and_removes_nested_values() {
    let previous = snapshot(json!({
        "kept": {"same": true, "changed": "before", "removed": true},
        "removed_section": {"value": true},
    }));
    let state = state([JsonSection::new(
        "kept",
        json!({"same": true, "changed": "after"}),
    )]);
    let rendered = state.render_history_diff(Some(&previous), &[]).unwrap();
    let change = rendered.change_from(Some(&previous)).unwrap();
    assert_eq!(
        change.state,
        json!({"kept": {"changed": "after", "removed": null}, "removed_section": null})
    );
    assert_eq!(change.apply_to(Some(&previous)).unwrap(), rendered.snapshot);
    assert_eq!(rendered.change_from(Some(&rendered.snapshot)), None);
}

/// A section that renders several updates: fragments, an item, prefix ones.
struct Mixed;

fn tools_item() -> ResponseItem {
    serde_json::from_value(json!({
        "type": "additional_tools",
        "role": "developer",
        "tools": [{"type": "function", "name": "lookup"}],
    }))
    .expect("an additional_tools item")
}

fn dev_fragment(body: &str) -> ContextualFragment {
    ContextualFragment::new(
        FragmentRole::Developer,
        "generic.developer_instructions",
        FragmentMarkers::none(),
        body,
    )
}

fn user_fragment(body: &str) -> ContextualFragment {
    ContextualFragment::new(
        FragmentRole::User,
        "generic.user_instructions",
        FragmentMarkers::none(),
        body,
    )
}

impl Section for Mixed {
    fn id(&self) -> &str {
        "mixed"
    }

    fn snapshot(&self) -> Option<Value> {
        Some(json!({"version": 2}))
    }

    fn render(&self, _previous: Previous<'_>) -> Vec<ContextUpdate> {
        vec![
            ContextUpdate::fragment(dev_fragment("first")),
            ContextUpdate::fragment(dev_fragment("prefix")).with_placement(Placement::Prefix),
            ContextUpdate::item(tools_item()).with_placement(Placement::Prefix),
            ContextUpdate::fragment(user_fragment("last")),
        ]
    }
}

/// Codex's `mixed_output_preserves_order_and_restores_its_snapshot`.
#[test]
fn mixed_output_preserves_order_and_restores_its_snapshot() {
    let mut state = WorldState::new();
    state.add(JsonSection::new("before", json!("b"))).unwrap();
    state.add(Mixed).unwrap();
    let rendered = state.render_full();
    assert_eq!(
        texts(&rendered.updates),
        ["<before>b</before>", "first", "prefix", "<item>", "last"]
    );
    assert_eq!(
        rendered
            .updates
            .iter()
            .map(ContextUpdate::is_prefix)
            .collect::<Vec<_>>(),
        [false, false, true, true, false]
    );
    let (prefix, rest) = split_prefix_updates(rendered.updates.clone());
    assert_eq!(texts(&prefix), ["prefix", "<item>"]);
    assert_eq!(texts(&rest), ["<before>b</before>", "first", "last"]);

    // The full change restores the snapshot on its own.
    let change = rendered.change_from(None).unwrap();
    assert!(change.full);
    assert_eq!(change.apply_to(None).unwrap(), rendered.snapshot);
    assert_eq!(
        rendered.snapshot,
        snapshot(json!({"before": "b", "mixed": {"version": 2}}))
    );
}

// ---------------------------------------------------------------------------------------------
// Fragments into messages

/// Codex's `updates_preserve_item_boundaries_roles_and_standalone_fragments`: the grouping
/// example, exactly.
#[test]
fn updates_preserve_item_boundaries_roles_and_standalone_fragments() {
    let dev = |body| ContextUpdate::fragment(dev_fragment(body));
    let updates = [
        dev("before one"),
        dev("before two"),
        dev("prefix").with_placement(Placement::Prefix),
        dev("after prefix"),
        ContextUpdate::item(tools_item()).with_placement(Placement::Prefix),
        dev("after"),
        dev("standalone").with_placement(Placement::Standalone),
        dev("last developer"),
        ContextUpdate::fragment(user_fragment("user")),
        ContextUpdate::item(tools_item()).with_placement(Placement::Standalone),
    ];
    let message = |role: &str, texts: &[&str], kind: &str| {
        json!({
            "type": "message",
            "role": role,
            "content": texts.iter().map(|text| json!({"type": "input_text", "text": text}))
                .collect::<Vec<_>>(),
            "internal_chat_message_metadata_passthrough":
                {"content_item_kinds": vec![kind; texts.len()]},
        })
    };
    let developer = |texts: &[&str]| message("developer", texts, "generic.developer_instructions");
    let tools = serde_json::to_value(tools_item()).unwrap();
    assert_eq!(
        values(&merge_updates(&updates)),
        [
            developer(&["before one", "before two"]),
            developer(&["prefix"]),
            developer(&["after prefix"]),
            tools.clone(),
            developer(&["after"]),
            developer(&["standalone"]),
            developer(&["last developer"]),
            message("user", &["user"], "generic.user_instructions"),
            tools,
        ]
    );
}

/// Rendering is `start + body + end`; recognition is trimmed, case-insensitive, and never
/// matches empty markers.
#[test]
fn fragments_render_and_are_recognised_by_their_markers() {
    let fragment = ContextualFragment::new(
        FragmentRole::User,
        "env.context",
        FragmentMarkers::new("<environment_context>\n", "</environment_context>"),
        "  <cwd>/repo</cwd>\n",
    );
    let text = fragment.render();
    assert_eq!(
        text,
        "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"
    );
    assert!(fragment.matches_text(&text));
    assert!(fragment.matches_text(&format!("\n\n{}\n", text.to_uppercase())));
    assert!(!fragment.matches_text("<environment_context>\n<cwd>/repo</cwd>"));
    let bare = ContextualFragment::new(
        FragmentRole::User,
        "bare.text",
        FragmentMarkers::none(),
        "body",
    );
    assert_eq!(bare.render(), "body");
    assert!(!bare.matches_text("body"));
}

// ---------------------------------------------------------------------------------------------
// The history's world-state updates

/// Codex's `world_state_baseline_deduplicates_until_history_is_replaced`.
#[test]
fn world_state_baseline_deduplicates_until_history_is_replaced() {
    let state = state([JsonSection::new("extension_test", json!("value"))]);
    let mut history = History::new();
    history.record_json(user("hello")).unwrap();

    let first = history.update_world_state(&state).unwrap();
    assert_eq!(first.updates.len(), 1, "one fragment");
    assert_eq!(first.items.len(), 1);
    assert_eq!(
        first.change,
        Some(WorldStateChange {
            full: true,
            state: json!({"extension_test": "value"})
        })
    );
    assert_eq!(history.world_state_baseline(), Some(&first.snapshot));
    record_all(&mut history, &first.items);

    let second = history.update_world_state(&state).unwrap();
    assert!(second.is_empty(), "{second:?}");
    assert!(second.updates.is_empty());

    let items: Vec<_> = history.iter().cloned().collect();
    history.replace(items);
    let third = history.update_world_state(&state).unwrap();
    assert_eq!(third.items.len(), 1);
    assert!(third.change.as_ref().is_some_and(|change| change.full));
}

/// Codex's `world_state_transitions_persist_changed_state_and_skip_unchanged_state`.
#[test]
fn world_state_transitions_persist_changed_state_and_skip_unchanged_state() {
    let before = state([
        JsonSection::new("environment", json!({"cwd": "/repo", "shell": "bash"})),
        JsonSection::new("extension_test", json!({"mode": "before", "limit": 3})),
    ]);
    let after = state([
        JsonSection::new("environment", json!({"cwd": "/repo", "shell": "bash"})),
        JsonSection::new("extension_test", json!({"mode": "after", "limit": 3})),
    ]);
    let mut history = History::new();
    let first = history.update_world_state(&before).unwrap();
    record_all(&mut history, &first.items);
    let baseline = history.world_state_baseline().cloned().unwrap();

    let changed = history.update_world_state(&after).unwrap();
    let change = changed.change.clone().expect("a change");
    assert!(!change.full);
    assert_eq!(change.state, json!({"extension_test": {"mode": "after"}}));
    assert_eq!(change.apply_to(Some(&baseline)).unwrap(), changed.snapshot);
    assert_eq!(history.world_state_baseline(), Some(&changed.snapshot));
    let items = values(&changed.items);
    assert_eq!(items.len(), 1, "only the changed section renders");
    assert_eq!(
        message_texts(&items[0]),
        [r#"<extension_test>{"mode":"after","limit":3}</extension_test>"#]
    );
    record_all(&mut history, &changed.items);

    let unchanged = history.update_world_state(&after).unwrap();
    assert!(unchanged.is_empty());
}

/// Codex's `world_state_reconciles_matching_legacy_history_once`.
#[test]
fn world_state_reconciles_matching_legacy_history_once() {
    let mut probe = Probe::new("test", "current");
    probe.legacy = Some(FragmentMarkers::tag("legacy_test"));
    let probe = std::sync::Arc::new(probe);
    let state = probe_state(&probe);
    let mut history = History::new();
    history
        .record_json(developer("<legacy_test>old</legacy_test>"))
        .unwrap();
    history.record_json(user("hello")).unwrap();

    let first = history.update_world_state(&state).unwrap();
    assert_eq!(probe.seen(), [Seen::Unknown]);
    assert_eq!(first.items.len(), 1);
    assert!(first.change.as_ref().is_some_and(|change| change.full));
    record_all(&mut history, &first.items);

    for _ in 0..2 {
        let again = history.update_world_state(&state).unwrap();
        assert!(again.is_empty());
    }
    assert_eq!(probe.seen().len(), 1, "rendered once");
}

/// The non-mutating variant leaves the baseline alone; setting its snapshot afterwards gives
/// the same state as the mutating one.
#[test]
fn diff_world_state_does_not_move_the_baseline() {
    let state = state([JsonSection::new("rules", json!("Be brief."))]);
    let mut history = History::new();
    let update = history.diff_world_state(&state).unwrap();
    assert_eq!(history.world_state_baseline(), None);
    assert!(update.change.as_ref().is_some_and(|change| change.full));
    record_all(&mut history, &update.items);
    // … the change is persisted here …
    history.set_world_state_baseline(Some(update.snapshot.clone()));

    let mut mutating = History::new();
    let same = mutating.update_world_state(&state).unwrap();
    assert_eq!(same, update);
    record_all(&mut mutating, &same.items);
    assert_eq!(mutating, history);
}

/// A section that opts out of persistence is compared within the process but not written; a
/// baseline rebuilt from the written changes (a resume) renders it again, and only it.
#[test]
fn a_section_that_is_not_persisted_renders_again_after_a_resume() {
    let state = state([
        JsonSection::new("persisted", json!("p")),
        JsonSection::new("transient", json!("t")).not_persisted(),
    ]);
    let mut history = History::new();
    let first = history.update_world_state(&state).unwrap();
    assert_eq!(
        first.items.len(),
        1,
        "both fragments in one developer message"
    );
    let change = first.change.clone().unwrap();
    assert_eq!(change.state, json!({"persisted": "p"}));
    record_all(&mut history, &first.items);
    assert!(history.update_world_state(&state).unwrap().is_empty());

    // A resume: the same items, the baseline rebuilt from the rollout's change.
    let mut resumed = history.clone();
    resumed.set_world_state_baseline(Some(change.apply_to(None).unwrap()));
    let after = resumed.update_world_state(&state).unwrap();
    assert_eq!(texts(&after.updates), ["<transient>t</transient>"]);
    assert_eq!(after.change, None, "nothing persisted changed");
}

/// The items of a first (full) and a later (diff) update, as `docs/world-state.md` shows them.
#[test]
fn the_documented_example_holds() {
    let first_state = state([
        JsonSection::new(
            "repository_rules",
            json!("Run `cargo test` before committing."),
        ),
        JsonSection::new("environment", json!({"cwd": "/repo", "shell": "bash"}))
            .with_role(FragmentRole::User),
    ]);
    let mut history = History::new();
    let first = history.update_world_state(&first_state).unwrap();
    assert_eq!(
        values(&first.items),
        [
            json!({"type": "message", "role": "developer",
                   "content": [{"type": "input_text",
                                "text": "<repository_rules>Run `cargo test` before committing.</repository_rules>"}],
                   "internal_chat_message_metadata_passthrough":
                       {"content_item_kinds": ["repository_rules.instructions"]}}),
            json!({"type": "message", "role": "user",
                   "content": [{"type": "input_text",
                                "text": r#"<environment>{"cwd":"/repo","shell":"bash"}</environment>"#}],
                   "internal_chat_message_metadata_passthrough":
                       {"content_item_kinds": ["environment.instructions"]}}),
        ]
    );
    assert_eq!(
        serde_json::to_string(first.change.as_ref().unwrap()).unwrap(),
        r#"{"full":true,"state":{"environment":{"cwd":"/repo","shell":"bash"},"repository_rules":"Run `cargo test` before committing."}}"#
    );
    record_all(&mut history, &first.items);
    history.record_json(user("Fix the build.")).unwrap();
    history.record_json(assistant("Done.")).unwrap();

    let later_state = state([
        JsonSection::new(
            "repository_rules",
            json!("Run `cargo test` before committing."),
        ),
        JsonSection::new(
            "environment",
            json!({"cwd": "/repo/crates/core", "shell": "bash"}),
        )
        .with_role(FragmentRole::User),
    ]);
    let later = history.update_world_state(&later_state).unwrap();
    assert_eq!(
        values(&later.items),
        [json!({"type": "message", "role": "user",
                "content": [{"type": "input_text",
                             "text": r#"<environment>{"cwd":"/repo/crates/core","shell":"bash"}</environment>"#}],
                "internal_chat_message_metadata_passthrough":
                    {"content_item_kinds": ["environment.instructions"]}})]
    );
    assert_eq!(
        serde_json::to_string(later.change.as_ref().unwrap()).unwrap(),
        r#"{"full":false,"state":{"environment":{"cwd":"/repo/crates/core"}}}"#
    );
}

/// A fragment is looked for only in `user` and `developer` messages: the same text in an
/// assistant message or a call's arguments is not the section's.
#[test]
fn history_messages_of_other_roles_do_not_match() {
    let state =
        state([JsonSection::new("s", json!(1)).with_legacy_markers(FragmentMarkers::tag("s"))]);
    let mut history = History::new();
    history.record_json(assistant("<s>1</s>")).unwrap();
    history
        .record_json(r#"{"type":"function_call","name":"f","arguments":"<s>1</s>","call_id":"c"}"#)
        .unwrap();
    let rendered = state.render_history_diff(None, history.iter()).unwrap();
    assert_eq!(rendered.updates.len(), 1);
    // Absent, not Unknown: a JsonSection renders the same either way, so check through a probe.
    let mut probe = Probe::new("s", "x");
    probe.legacy = Some(FragmentMarkers::tag("s"));
    let probe = std::sync::Arc::new(probe);
    probe_state(&probe)
        .render_history_diff(None, history.iter())
        .unwrap();
    assert_eq!(probe.seen(), [Seen::Absent]);
}
