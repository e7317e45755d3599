//! [`Section`]: one part of a world state (instructions, environment, an application's own
//! context), as an application implements it, and [`JsonSection`], a ready-made one.

use std::borrow::Cow;

use serde_json::Value;

use super::fragment::{ContextualFragment, FragmentMarkers, FragmentMatcher};
use super::role::FragmentRole;
use super::snapshot::remove_null_fields;
use super::update::{ContextUpdate, Placement};

/// What is known of a section's previous state when it renders.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Previous<'a> {
    /// Nothing: the section was never shown, or what showed it has left the history. Render in
    /// full.
    Absent,
    /// The section was shown but its snapshot is not known: the history holds a fragment of it
    /// written before snapshots were kept (its legacy fragment), or the stored snapshot could
    /// not be read ([`Section::can_read_snapshot`]). Render in full; the model may already have
    /// seen an older version.
    Unknown,
    /// The section was shown with this snapshot (the stored one, nulls removed). Render what
    /// the model needs to learn about the change, or nothing.
    Known(&'a Value),
}

/// One section of a [`WorldState`](crate::WorldState): a part of what an agent shows the model
/// about its runtime, with a stable id. Applications implement it for their own sections.
///
/// A section has a *snapshot*, the JSON data a later state is compared with, and *renders*
/// against what is known of its previous state into [`ContextUpdate`]s. The world state keeps
/// every section's snapshot; the next update diffs against it, so a section that did not change
/// renders nothing, and the prompt keeps its prefix.
///
/// A section is not asked to render when its previous snapshot is known and equal to its
/// current one: unchanged sections cost one comparison.
///
/// # Examples
///
/// ```
/// use agent_history::{ContextUpdate, ContextualFragment, FragmentMarkers, FragmentRole, Previous, Section};
/// use serde_json::{Value, json};
///
/// struct Cwd(String);
///
/// impl Section for Cwd {
///     fn id(&self) -> &str {
///         "cwd"
///     }
///     fn snapshot(&self) -> Option<Value> {
///         Some(json!({"cwd": self.0}))
///     }
///     fn render(&self, _previous: Previous<'_>) -> Vec<ContextUpdate> {
///         vec![ContextUpdate::fragment(ContextualFragment::new(
///             FragmentRole::User,
///             "cwd.context",
///             FragmentMarkers::tag("cwd"),
///             self.0.clone(),
///         ))]
///     }
/// }
/// ```
pub trait Section: Send + Sync {
    /// The section's stable id: the key of its snapshot, unique in a world state. Keep it the
    /// same across versions of the application (a new id reads as a new section).
    fn id(&self) -> &str;

    /// The section's snapshot now: JSON comparison data, and only that (no timestamps or
    /// anything else that changes without the rendered text changing). Object `null` fields are
    /// removed before it is stored or compared.
    ///
    /// * `Some(Value::Null)`: the section has nothing to show; it is dropped from the snapshot
    ///   (a merge patch records its deletion).
    /// * `None`: no snapshot now; the stored one, if any, is kept as it is.
    fn snapshot(&self) -> Option<Value>;

    /// Whether the snapshot is written to the rollout (default `true`). A section that opts out
    /// is still compared within a process (the history's baseline holds it), but is left out of
    /// the changes to persist, so after a resume it renders again, in full.
    fn persisted(&self) -> bool {
        true
    }

    /// Whether a stored snapshot is one this section can read (default `true`). A section whose
    /// snapshot format changed returns `false` for the old format; it then renders as
    /// [`Previous::Unknown`] instead of being compared with a value it does not understand.
    fn can_read_snapshot(&self, stored: &Value) -> bool {
        let _ = stored;
        true
    }

    /// The updates that show the section to the model, given what is known of its previous
    /// state, in order.
    fn render(&self, previous: Previous<'_>) -> Vec<ContextUpdate>;

    /// A matcher for the fragment the section counts on staying in the history (default none).
    /// When the section has a stored snapshot but no message of the history matches, the
    /// fragment is gone (a rollback, a compaction the caller did without clearing the baseline,
    /// an edited history) and the section renders as [`Previous::Absent`] again.
    fn retained_fragment(&self) -> Option<FragmentMatcher> {
        None
    }

    /// A matcher for the fragment older versions of the application showed this section as,
    /// before snapshots were kept (default none). When there is no stored snapshot but the
    /// history holds such a fragment, the section renders as [`Previous::Unknown`].
    fn legacy_fragment(&self) -> Option<FragmentMatcher> {
        None
    }
}

/// A ready-made section: a JSON value, shown as one fragment `<id>…</id>` (by default in a
/// developer message, content kind `<id>.instructions`) and compared by that value.
///
/// The body is the value itself when it is a string, and its compact JSON text otherwise
/// (`null` fields of objects removed). A `null` value drops the section and renders nothing.
///
/// # Examples
///
/// ```
/// use agent_history::{JsonSection, WorldState};
/// use serde_json::json;
///
/// let mut state = WorldState::new();
/// state.add(JsonSection::new("repository_rules", json!("Run `cargo test` before committing.")))?;
/// let rendered = state.render_full();
/// assert_eq!(rendered.snapshot.get("repository_rules"), Some(&json!("Run `cargo test` before committing.")));
/// # Ok::<(), agent_history::WorldStateError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct JsonSection {
    id: String,
    value: Value,
    role: FragmentRole,
    placement: Placement,
    persisted: bool,
    retained: bool,
    legacy: Option<FragmentMarkers>,
}

impl JsonSection {
    /// A section `id` showing `value` (object `null` fields removed) in a developer message.
    pub fn new(id: impl Into<String>, mut value: Value) -> JsonSection {
        remove_null_fields(&mut value);
        JsonSection {
            id: id.into(),
            value,
            role: FragmentRole::Developer,
            placement: Placement::Mergeable,
            persisted: true,
            retained: false,
            legacy: None,
        }
    }

    /// The same section, shown in a message of `role`.
    pub fn with_role(mut self, role: FragmentRole) -> JsonSection {
        self.role = role;
        self
    }

    /// The same section, with placement `placement`.
    pub fn with_placement(mut self, placement: Placement) -> JsonSection {
        self.placement = placement;
        self
    }

    /// The same section, left out of the changes written to the rollout
    /// ([`Section::persisted`]).
    pub fn not_persisted(mut self) -> JsonSection {
        self.persisted = false;
        self
    }

    /// The same section, rendered again when its fragment is no longer in the history
    /// ([`Section::retained_fragment`]).
    pub fn retained(mut self) -> JsonSection {
        self.retained = true;
        self
    }

    /// The same section, recognising a fragment enclosed in `markers` (of its role) as its
    /// legacy form ([`Section::legacy_fragment`]).
    pub fn with_legacy_markers(mut self, markers: FragmentMarkers) -> JsonSection {
        self.legacy = Some(markers);
        self
    }

    /// The value shown.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The fragment the section renders as, or `None` for a `null` value.
    pub fn fragment(&self) -> Option<ContextualFragment> {
        let body = match &self.value {
            Value::Null => return None,
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        Some(ContextualFragment::new(
            self.role,
            Cow::Owned(format!("{}.instructions", self.id)),
            self.markers(),
            body,
        ))
    }

    fn markers(&self) -> FragmentMarkers {
        FragmentMarkers::tag(&self.id)
    }
}

impl Section for JsonSection {
    fn id(&self) -> &str {
        &self.id
    }

    fn snapshot(&self) -> Option<Value> {
        Some(self.value.clone())
    }

    fn persisted(&self) -> bool {
        self.persisted
    }

    /// The fragment, whatever the previous state: the model reads the new value whole.
    fn render(&self, _previous: Previous<'_>) -> Vec<ContextUpdate> {
        self.fragment()
            .map(|fragment| ContextUpdate::fragment(fragment).with_placement(self.placement))
            .into_iter()
            .collect()
    }

    fn retained_fragment(&self) -> Option<FragmentMatcher> {
        self.retained
            .then(|| FragmentMatcher::new(self.role, self.markers()))
    }

    fn legacy_fragment(&self) -> Option<FragmentMatcher> {
        self.legacy
            .as_ref()
            .map(|markers| FragmentMatcher::new(self.role, markers.clone()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::world::update::UpdateContent;

    fn body(section: &JsonSection) -> String {
        match &section.render(Previous::Absent)[0].content {
            UpdateContent::Fragment(fragment) => fragment.render(),
            UpdateContent::Item(_) => panic!("a fragment"),
        }
    }

    #[test]
    fn a_json_section_renders_strings_as_they_are_and_other_values_as_json() {
        assert_eq!(body(&JsonSection::new("s", json!("text"))), "<s>text</s>");
        assert_eq!(
            body(&JsonSection::new("s", json!({"a": 1, "gone": null}))),
            r#"<s>{"a":1}</s>"#
        );
        assert_eq!(body(&JsonSection::new("s", json!(3))), "<s>3</s>");
        assert!(
            JsonSection::new("s", Value::Null)
                .render(Previous::Absent)
                .is_empty()
        );
    }

    #[test]
    fn a_json_section_has_its_id_as_content_kind_feature_and_its_options() {
        let section = JsonSection::new("ext", json!("x"))
            .with_role(FragmentRole::User)
            .with_placement(Placement::Prefix)
            .not_persisted()
            .retained()
            .with_legacy_markers(FragmentMarkers::tag("old_ext"));
        let fragment = section.fragment().unwrap();
        assert_eq!(fragment.content_kind, "ext.instructions");
        assert_eq!(fragment.role, FragmentRole::User);
        assert_eq!(
            section.render(Previous::Unknown)[0].placement,
            Placement::Prefix
        );
        assert!(!section.persisted());
        assert_eq!(
            section.retained_fragment(),
            Some(FragmentMatcher::new(
                FragmentRole::User,
                FragmentMarkers::tag("ext")
            ))
        );
        assert_eq!(
            section.legacy_fragment(),
            Some(FragmentMatcher::new(
                FragmentRole::User,
                FragmentMarkers::tag("old_ext")
            ))
        );
        let plain = JsonSection::new("p", json!(1));
        assert!(plain.persisted());
        assert_eq!(plain.retained_fragment(), None);
        assert_eq!(plain.legacy_fragment(), None);
    }
}
