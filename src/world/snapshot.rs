//! [`WorldSnapshot`]: the comparison data of every world-state section, by section id, and the
//! RFC 7386 merge patches between two of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::WorldStateError;
use crate::item::json_type;

/// The snapshot of a world state: each section's comparison data (JSON, never `null`) by section
/// id, keys in sorted order. It is what a [`History`](crate::History) keeps as its world-state
/// baseline and what a rollout's `world_state` line carries (`{"full": true, "state": …}`);
/// between two snapshots a line carries the merge patch ([`WorldSnapshot::merge_patch_from`]).
///
/// It serializes as a JSON object `{section_id: value}` with the ids in sorted order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct WorldSnapshot {
    sections: BTreeMap<String, Value>,
}

impl WorldSnapshot {
    /// An empty snapshot (no sections).
    pub fn new() -> WorldSnapshot {
        WorldSnapshot::default()
    }

    /// The snapshot a JSON object stands for (the `state` of a `full` world-state line). Object
    /// `null` fields inside a section are removed ([`remove_null_fields`]).
    ///
    /// # Errors
    ///
    /// [`WorldStateError::SnapshotNotAnObject`] when `value` is not an object, and
    /// [`WorldStateError::NullSection`] when a section's value is `null`.
    pub fn from_value(value: Value) -> Result<WorldSnapshot, WorldStateError> {
        let Value::Object(map) = value else {
            return Err(WorldStateError::SnapshotNotAnObject {
                found: json_type(&value),
            });
        };
        let mut snapshot = WorldSnapshot::new();
        for (id, section) in map {
            snapshot.insert(id, section)?;
        }
        Ok(snapshot)
    }

    /// The snapshot as a JSON object, keys in sorted order.
    pub fn to_value(&self) -> Value {
        Value::Object(
            self.sections
                .iter()
                .map(|(id, value)| (id.clone(), value.clone()))
                .collect(),
        )
    }

    /// Sets a section's snapshot, with its object `null` fields removed
    /// ([`remove_null_fields`]); returns the value it replaces.
    ///
    /// # Errors
    ///
    /// [`WorldStateError::NullSection`] when `value` is `null` (a merge patch would read it as
    /// the section's deletion); the snapshot is then unchanged.
    pub fn insert(
        &mut self,
        id: impl Into<String>,
        mut value: Value,
    ) -> Result<Option<Value>, WorldStateError> {
        let id = id.into();
        if value.is_null() {
            return Err(WorldStateError::NullSection { section: id });
        }
        remove_null_fields(&mut value);
        Ok(self.sections.insert(id, value))
    }

    /// Removes a section; returns its snapshot.
    pub fn remove(&mut self, id: &str) -> Option<Value> {
        self.sections.remove(id)
    }

    /// A section's snapshot.
    pub fn get(&self, id: &str) -> Option<&Value> {
        self.sections.get(id)
    }

    /// Whether the snapshot has a section with this id.
    pub fn contains(&self, id: &str) -> bool {
        self.sections.contains_key(id)
    }

    /// The sections, by id in sorted order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.sections.iter().map(|(id, value)| (id.as_str(), value))
    }

    /// The number of sections.
    pub fn len(&self) -> usize {
        self.sections.len()
    }

    /// Whether there are no sections.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// The RFC 7386 merge patch that turns `previous` into `self`, or `None` when they are equal
    /// (an empty difference, which persists nothing). Sections of `previous` that `self` lacks
    /// come first, as `null`; then each section of `self`, in id order: whole when `previous`
    /// lacks it, else its [`merge_patch`] (left out when equal).
    ///
    /// Applying the patch to `previous` ([`WorldSnapshot::apply_merge_patch`]) gives `self`.
    /// Time: O(size of both snapshots) in the worst case; equal sections cost one comparison.
    pub fn merge_patch_from(&self, previous: &WorldSnapshot) -> Option<Value> {
        let mut patch = Map::new();
        for id in previous.sections.keys() {
            if !self.sections.contains_key(id) {
                patch.insert(id.clone(), Value::Null);
            }
        }
        for (id, current) in &self.sections {
            match previous.sections.get(id) {
                None => {
                    patch.insert(id.clone(), current.clone());
                }
                Some(before) => {
                    if let Some(section_patch) = merge_patch(before, current) {
                        patch.insert(id.clone(), section_patch);
                    }
                }
            }
        }
        (!patch.is_empty()).then_some(Value::Object(patch))
    }

    /// Applies an RFC 7386 merge patch (a `world_state` line with `full: false`): a `null`
    /// section deletes the section, any other value is merged into it (`null` fields delete,
    /// objects merge recursively, anything else replaces).
    ///
    /// The merge itself is `json-patch`'s RFC 7386 implementation. Key order inside a section
    /// can differ from a snapshot built directly (a removed key's place is taken by the last
    /// one); the values are equal, which is what a snapshot is compared by.
    ///
    /// # Errors
    ///
    /// [`WorldStateError::PatchNotAnObject`] when `patch` is not an object (a snapshot is always
    /// an object, so the patch of two snapshots is too); the snapshot is then unchanged.
    pub fn apply_merge_patch(&mut self, patch: &Value) -> Result<(), WorldStateError> {
        let Value::Object(patch) = patch else {
            return Err(WorldStateError::PatchNotAnObject {
                found: json_type(patch),
            });
        };
        for (id, section_patch) in patch {
            if section_patch.is_null() {
                self.sections.remove(id);
                continue;
            }
            let section = self.sections.entry(id.clone()).or_insert(Value::Null);
            json_patch::merge(section, section_patch);
            // A merge result holds no `null` field (RFC 7386 deletes them), but a section that
            // merged into `{}` from a patch of only deletions is a value like any other.
        }
        Ok(())
    }
}

/// What a rollout's `world_state` line records: a whole snapshot that becomes the new baseline
/// (`full: true`), or the merge patch of the baseline into the new snapshot (`full: false`).
/// Its JSON is the line's payload, `{"full": …, "state": …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorldStateChange {
    /// Whether `state` is a whole snapshot rather than a patch.
    pub full: bool,
    /// The snapshot (`full`) or the RFC 7386 merge patch (otherwise); always an object.
    pub state: Value,
}

impl WorldSnapshot {
    /// The change to persist when the baseline was `previous` and the state is now `self`: the
    /// whole snapshot when there was no baseline, the merge patch when there was, `None` when
    /// nothing changed (nothing is persisted).
    pub fn change_from(&self, previous: Option<&WorldSnapshot>) -> Option<WorldStateChange> {
        match previous {
            None => Some(WorldStateChange {
                full: true,
                state: self.to_value(),
            }),
            Some(previous) => self
                .merge_patch_from(previous)
                .map(|patch| WorldStateChange {
                    full: false,
                    state: patch,
                }),
        }
    }
}

impl WorldStateChange {
    /// The baseline after this change: the snapshot itself when `full`, else `baseline` with the
    /// patch applied.
    ///
    /// # Errors
    ///
    /// [`WorldStateError::PatchWithoutBaseline`] for a patch when there is no baseline (Codex
    /// ignores such a line, with a warning), and the errors of [`WorldSnapshot::from_value`] and
    /// [`WorldSnapshot::apply_merge_patch`] for a state of the wrong shape. The baseline is not
    /// consumed: on an error the caller still has it.
    pub fn apply_to(
        &self,
        baseline: Option<&WorldSnapshot>,
    ) -> Result<WorldSnapshot, WorldStateError> {
        if self.full {
            return WorldSnapshot::from_value(self.state.clone());
        }
        let Some(baseline) = baseline else {
            return Err(WorldStateError::PatchWithoutBaseline);
        };
        let mut next = baseline.clone();
        next.apply_merge_patch(&self.state)?;
        Ok(next)
    }
}

impl<'de> Deserialize<'de> for WorldSnapshot {
    /// A snapshot from a JSON object, checked as [`WorldSnapshot::from_value`] does.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<WorldSnapshot, D::Error> {
        let value = Value::deserialize(deserializer)?;
        WorldSnapshot::from_value(value).map_err(serde::de::Error::custom)
    }
}

/// Removes every `null` field of every object in `value`, recursively through objects. Arrays
/// are left as they are, elements and all (`[{"value": null}]` keeps its `null`), as Codex does
/// when it takes a section's snapshot.
pub fn remove_null_fields(value: &mut Value) {
    if let Value::Object(map) = value {
        map.retain(|_, field| !field.is_null());
        for field in map.values_mut() {
            remove_null_fields(field);
        }
    }
}

/// The RFC 7386 merge patch that turns `previous` into `current`, or `None` when they are equal.
/// When both are objects: a key `previous` has and `current` lacks becomes `null`, a new key its
/// whole value, a changed key its own patch; otherwise the patch is `current` itself.
///
/// Written here because `json-patch` (used for applying) creates only RFC 6902 patches, not
/// RFC 7386 merge patches. A `null` inside `current` cannot be expressed by a merge patch (it
/// would delete): snapshots have none ([`remove_null_fields`]).
pub fn merge_patch(previous: &Value, current: &Value) -> Option<Value> {
    if previous == current {
        return None;
    }
    let (Value::Object(before), Value::Object(after)) = (previous, current) else {
        return Some(current.clone());
    };
    let mut patch = Map::new();
    for key in before.keys() {
        if !after.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    for (key, value) in after {
        match before.get(key) {
            None => {
                patch.insert(key.clone(), value.clone());
            }
            Some(old) => {
                if let Some(field_patch) = merge_patch(old, value) {
                    patch.insert(key.clone(), field_patch);
                }
            }
        }
    }
    // Objects that differ always differ in some key, so the patch is never empty here.
    Some(Value::Object(patch))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn snapshot(value: Value) -> WorldSnapshot {
        WorldSnapshot::from_value(value).expect("a valid snapshot")
    }

    /// Codex's `snapshot_merge_patch_changes_and_removes_nested_values`.
    #[test]
    fn a_merge_patch_changes_and_removes_nested_values() {
        let previous = snapshot(json!({
            "kept": {"same": true, "changed": "before", "removed": true},
            "removed_section": {"value": true},
        }));
        let current = snapshot(json!({"kept": {"same": true, "changed": "after"}}));
        let patch = current.merge_patch_from(&previous).expect("they differ");
        assert_eq!(
            patch,
            json!({"kept": {"changed": "after", "removed": null}, "removed_section": null})
        );
        let mut applied = previous.clone();
        applied.apply_merge_patch(&patch).unwrap();
        assert_eq!(applied, current);
        assert_eq!(current.merge_patch_from(&current), None);
    }

    /// Codex's `snapshot_uses_stable_section_ids_and_omits_null_fields`: object nulls go, array
    /// elements stay as they are; the ids come out sorted.
    #[test]
    fn a_snapshot_omits_object_nulls_and_sorts_its_ids() {
        let mut world = WorldSnapshot::new();
        world.insert("zeta", json!(1)).unwrap();
        world
            .insert(
                "test",
                json!({"value": "current", "optional": null, "array": [{"value": null}],
                       "nested": {"gone": null, "kept": 0}}),
            )
            .unwrap();
        assert_eq!(
            serde_json::to_string(&world).unwrap(),
            r#"{"test":{"value":"current","array":[{"value":null}],"nested":{"kept":0}},"zeta":1}"#
        );
        assert_eq!(
            world.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            ["test", "zeta"]
        );
    }

    #[test]
    fn a_null_section_or_a_non_object_is_refused_and_changes_nothing() {
        let mut world = snapshot(json!({"a": 1}));
        assert_eq!(
            world.insert("b", Value::Null),
            Err(WorldStateError::NullSection {
                section: "b".into()
            })
        );
        assert_eq!(
            WorldSnapshot::from_value(json!({"a": null})),
            Err(WorldStateError::NullSection {
                section: "a".into()
            })
        );
        assert_eq!(
            WorldSnapshot::from_value(json!([1])),
            Err(WorldStateError::SnapshotNotAnObject { found: "an array" })
        );
        assert_eq!(
            world.apply_merge_patch(&json!("text")),
            Err(WorldStateError::PatchNotAnObject { found: "a string" })
        );
        assert_eq!(world, snapshot(json!({"a": 1})));
        let err = serde_json::from_str::<WorldSnapshot>(r#"{"a":null}"#).unwrap_err();
        assert!(err.to_string().contains("section `a` is null"), "{err}");
    }

    #[test]
    fn a_patch_replaces_non_objects_and_adds_new_sections_whole() {
        let previous = snapshot(json!({"list": [1, 2], "scalar": "x", "obj": {"a": 1}}));
        let current = snapshot(json!({"list": [2], "scalar": {"now": "object"}, "obj": 3,
                                      "new": {"deep": {"x": 1}}}));
        let patch = current.merge_patch_from(&previous).unwrap();
        assert_eq!(
            patch,
            json!({"list": [2], "scalar": {"now": "object"}, "obj": 3, "new": {"deep": {"x": 1}}})
        );
        let mut applied = previous;
        applied.apply_merge_patch(&patch).unwrap();
        assert_eq!(applied, current);
    }

    #[test]
    fn a_change_is_full_without_a_baseline_a_patch_with_one_and_nothing_when_equal() {
        let before = snapshot(json!({"a": {"x": 1}, "b": 2}));
        let after = snapshot(json!({"a": {"x": 2}, "b": 2}));
        let full = after.change_from(None).unwrap();
        assert!(full.full);
        assert_eq!(full.state, json!({"a": {"x": 2}, "b": 2}));
        assert_eq!(full.apply_to(Some(&before)).unwrap(), after);
        let patch = after.change_from(Some(&before)).unwrap();
        assert_eq!(
            patch,
            WorldStateChange {
                full: false,
                state: json!({"a": {"x": 2}})
            }
        );
        assert_eq!(patch.apply_to(Some(&before)).unwrap(), after);
        assert_eq!(
            patch.apply_to(None),
            Err(WorldStateError::PatchWithoutBaseline)
        );
        assert_eq!(after.change_from(Some(&after)), None);
        assert_eq!(
            serde_json::to_string(&patch).unwrap(),
            r#"{"full":false,"state":{"a":{"x":2}}}"#
        );
    }

    #[test]
    fn merge_patch_of_equal_values_is_none_and_of_changed_fields_is_minimal() {
        assert_eq!(merge_patch(&json!({"a": 1}), &json!({"a": 1})), None);
        assert_eq!(
            merge_patch(
                &json!({"a": 1, "b": {"c": 1, "d": 2}}),
                &json!({"a": 1, "b": {"c": 1, "d": 3}})
            ),
            Some(json!({"b": {"d": 3}}))
        );
    }
}
