//! [`WorldState`]: the sections an agent shows the model, in order, and how they render — in
//! full, or against a stored snapshot and the history that already shows them
//! ([`RenderedWorld`]).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::item::{Entry, ItemKind, ResponseItem};

use super::WorldStateError;
use super::fragment::FragmentMatcher;
use super::role::FragmentRole;
use super::section::{Previous, Section};
use super::snapshot::{WorldSnapshot, WorldStateChange, remove_null_fields};
use super::update::{ContextUpdate, merge_updates};

/// The sections of a world state, in the order they were added (which is the order they render
/// in). Ids are unique. Cloning is cheap: sections are shared.
///
/// # Examples
///
/// ```
/// use agent_history::{JsonSection, WorldState, WorldStateError};
/// use serde_json::json;
///
/// let mut state = WorldState::new();
/// state.add(JsonSection::new("environment", json!({"cwd": "/repo"})))?;
/// assert_eq!(
///     state.add(JsonSection::new("environment", json!({}))),
///     Err(WorldStateError::DuplicateSection { id: "environment".into() })
/// );
/// let rendered = state.render_full();
/// assert_eq!(rendered.items().len(), 1);
/// # Ok::<(), WorldStateError>(())
/// ```
#[derive(Clone, Default)]
pub struct WorldState {
    sections: Vec<Arc<dyn Section>>,
}

impl fmt::Debug for WorldState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.ids()).finish()
    }
}

impl WorldState {
    /// A world state without sections.
    pub fn new() -> WorldState {
        WorldState::default()
    }

    /// Adds a section after the others.
    ///
    /// # Errors
    ///
    /// [`WorldStateError::DuplicateSection`] when a section with the same id is already there;
    /// the state is then unchanged.
    pub fn add(&mut self, section: impl Section + 'static) -> Result<(), WorldStateError> {
        self.add_shared(Arc::new(section))
    }

    /// Adds a shared section after the others.
    ///
    /// # Errors
    ///
    /// As [`WorldState::add`].
    pub fn add_shared(&mut self, section: Arc<dyn Section>) -> Result<(), WorldStateError> {
        self.check_new(section.id())?;
        self.sections.push(section);
        Ok(())
    }

    /// Adds a section just before the section `before`, or after the others when there is no
    /// such section (an application's section that belongs before a known one).
    ///
    /// # Errors
    ///
    /// As [`WorldState::add`].
    pub fn insert_before(
        &mut self,
        before: &str,
        section: impl Section + 'static,
    ) -> Result<(), WorldStateError> {
        self.check_new(section.id())?;
        let position = self.position(before).unwrap_or(self.sections.len());
        self.sections.insert(position, Arc::new(section));
        Ok(())
    }

    /// Removes the section `id`; returns it.
    pub fn remove(&mut self, id: &str) -> Option<Arc<dyn Section>> {
        let position = self.position(id)?;
        Some(self.sections.remove(position))
    }

    /// The section `id`.
    pub fn get(&self, id: &str) -> Option<&dyn Section> {
        self.position(id).map(|position| &*self.sections[position])
    }

    /// The sections' ids, in order.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.sections.iter().map(|section| section.id())
    }

    /// The sections, in order.
    pub fn sections(&self) -> impl ExactSizeIterator<Item = &dyn Section> + '_ {
        self.sections.iter().map(|section| &**section)
    }

    /// The number of sections.
    pub fn len(&self) -> usize {
        self.sections.len()
    }

    /// Whether there are no sections.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.sections.iter().position(|section| section.id() == id)
    }

    fn check_new(&self, id: &str) -> Result<(), WorldStateError> {
        match self.position(id) {
            Some(_) => Err(WorldStateError::DuplicateSection { id: id.to_owned() }),
            None => Ok(()),
        }
    }

    /// The snapshot of every section that has one now (a section with no snapshot, or a `null`
    /// one, is not in it).
    pub fn snapshot(&self) -> WorldSnapshot {
        let mut snapshot = WorldSnapshot::new();
        for section in &self.sections {
            if let Some(value) = current_snapshot(&**section) {
                put(&mut snapshot, section.id(), value);
            }
        }
        snapshot
    }

    /// Every section rendered as [`Previous::Absent`], in order: what a fresh context shows.
    /// The snapshot holds the sections that have one.
    pub fn render_full(&self) -> RenderedWorld {
        let mut rendered = RenderedWorld::new(self);
        for section in &self.sections {
            rendered.updates.extend(section.render(Previous::Absent));
            if let Some(value) = current_snapshot(&**section) {
                put(&mut rendered.snapshot, section.id(), value);
            }
        }
        rendered
    }

    /// Every section rendered against what is known of its previous state, in order: the
    /// updates that bring a history which already shows the `stored` snapshot (`None`: no
    /// snapshot is known) up to date. `history` is the history's items, oldest first.
    ///
    /// A section's previous state is [`Previous::Known`] from `stored`, [`Previous::Unknown`]
    /// or [`Previous::Absent`], by the rules of `docs/world-state.md`, "Rendering". A section
    /// whose known previous snapshot equals its current one is not asked to render.
    ///
    /// Time: at most one pass over the history's `user` and `developer` messages, only when a
    /// section needs a fragment matcher checked; then the sections' own work.
    ///
    /// # Errors
    ///
    /// [`WorldStateError::UnreadableItem`] when a message of the history that had to be read
    /// is not of a message's shape.
    pub fn render_history_diff<'a>(
        &self,
        stored: Option<&WorldSnapshot>,
        history: impl IntoIterator<Item = &'a Entry>,
    ) -> Result<RenderedWorld, WorldStateError> {
        // The matchers each section needs: the retained one when there is a stored value, the
        // legacy one when there is none.
        let needed: Vec<Option<FragmentMatcher>> = self
            .sections
            .iter()
            .map(|section| match stored.and_then(|s| s.get(section.id())) {
                Some(_) => section.retained_fragment(),
                None => section.legacy_fragment(),
            })
            .collect();
        let found = find_fragments(&needed, history)?;

        let mut rendered = RenderedWorld::new(self);
        for ((section, matcher), found) in self.sections.iter().zip(&needed).zip(found) {
            let id = section.id();
            let stored_value = stored.and_then(|s| s.get(id));
            let previous = match stored_value {
                Some(_) if matcher.is_some() && !found => Previous::Absent,
                Some(value) if !section.can_read_snapshot(value) => Previous::Unknown,
                Some(value) => Previous::Known(value),
                None if found => Previous::Unknown,
                None => Previous::Absent,
            };
            let current = current_snapshot(&**section);
            let unchanged = matches!(
                (&previous, &current),
                (Previous::Known(before), Some(now)) if *before == now
            );
            if !unchanged {
                rendered.updates.extend(section.render(previous));
            }
            match current {
                Some(value) => put(&mut rendered.snapshot, id, value),
                None => {
                    if let Some(value) = stored_value {
                        put(&mut rendered.snapshot, id, value.clone());
                    }
                }
            }
        }
        Ok(rendered)
    }
}

/// A section's current snapshot with its object `null` fields removed (`Some(Null)` when it is
/// `null`: dropped).
fn current_snapshot(section: &dyn Section) -> Option<Value> {
    section.snapshot().map(|mut value| {
        remove_null_fields(&mut value);
        value
    })
}

/// Puts a section's value into a snapshot; a `null` value is left out (the section is dropped).
fn put(snapshot: &mut WorldSnapshot, id: &str, value: Value) {
    if !value.is_null() {
        // Cannot fail: only `null` is refused.
        let _ = snapshot.insert(id, value);
    }
}

/// Which of `matchers` match an `input_text` part of a `user` or `developer` message of
/// `history`. Reads the messages only when there is a matcher, and stops once all matched.
fn find_fragments<'a>(
    matchers: &[Option<FragmentMatcher>],
    history: impl IntoIterator<Item = &'a Entry>,
) -> Result<Vec<bool>, WorldStateError> {
    let mut found = vec![false; matchers.len()];
    let mut left = matchers.iter().filter(|m| m.is_some()).count();
    if left == 0 {
        return Ok(found);
    }
    for (position, entry) in history.into_iter().enumerate() {
        if entry.kind() != ItemKind::Message {
            continue;
        }
        let Some(role) = entry.role().and_then(FragmentRole::from_role) else {
            continue;
        };
        let message: MessageParts<'_> = serde_json::from_str(entry.json())
            .map_err(|_| WorldStateError::UnreadableItem { position })?;
        for part in message
            .content
            .iter()
            .filter(|part| part.kind == "input_text")
        {
            let Some(text) = &part.text else { continue };
            for (matcher, found) in matchers.iter().zip(found.iter_mut()) {
                if !*found && matcher.as_ref().is_some_and(|m| m.matches(role, text)) {
                    *found = true;
                    left -= 1;
                }
            }
            if left == 0 {
                return Ok(found);
            }
        }
    }
    Ok(found)
}

/// The parts of a message, as much as finding fragments needs.
#[derive(Deserialize)]
struct MessageParts<'a> {
    #[serde(borrow, default)]
    content: Vec<Part<'a>>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// What rendering a world state gave: the new snapshot (the baseline once the items are in the
/// history) and the updates, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedWorld {
    /// The snapshot of the world state the updates bring the history to.
    pub snapshot: WorldSnapshot,
    /// What the sections rendered, in section order.
    pub updates: Vec<ContextUpdate>,
    /// The ids of the sections that opted out of persistence.
    transient: Vec<String>,
}

impl RenderedWorld {
    fn new(state: &WorldState) -> RenderedWorld {
        RenderedWorld {
            snapshot: WorldSnapshot::new(),
            updates: Vec::new(),
            transient: state
                .sections
                .iter()
                .filter(|section| !section.persisted())
                .map(|section| section.id().to_owned())
                .collect(),
        }
    }

    /// The items the updates become ([`merge_updates`]).
    pub fn items(&self) -> Vec<ResponseItem> {
        merge_updates(&self.updates)
    }

    /// The snapshot without the sections that opted out of persistence: what a rollout records.
    pub fn persisted_snapshot(&self) -> Cow<'_, WorldSnapshot> {
        persisted(&self.snapshot, &self.transient)
    }

    /// The change to write to the rollout when the baseline was `baseline`: the persisted
    /// snapshot whole when there was none, its merge patch from the baseline's persisted part
    /// when there was, `None` when that part did not change ([`WorldSnapshot::change_from`]).
    pub fn change_from(&self, baseline: Option<&WorldSnapshot>) -> Option<WorldStateChange> {
        let baseline = baseline.map(|baseline| persisted(baseline, &self.transient));
        self.persisted_snapshot().change_from(baseline.as_deref())
    }
}

/// `snapshot` without the sections `transient`.
fn persisted<'a>(snapshot: &'a WorldSnapshot, transient: &[String]) -> Cow<'a, WorldSnapshot> {
    if !transient.iter().any(|id| snapshot.contains(id)) {
        return Cow::Borrowed(snapshot);
    }
    let mut kept = snapshot.clone();
    for id in transient {
        kept.remove(id);
    }
    Cow::Owned(kept)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::world::section::JsonSection;

    #[test]
    fn sections_keep_their_order_and_insert_before_places_one() {
        let mut state = WorldState::new();
        state.add(JsonSection::new("a", json!(1))).unwrap();
        state
            .add(JsonSection::new("permissions", json!(2)))
            .unwrap();
        state
            .insert_before("permissions", JsonSection::new("host_skills", json!(3)))
            .unwrap();
        state
            .insert_before("missing", JsonSection::new("last", json!(4)))
            .unwrap();
        assert_eq!(
            state.ids().collect::<Vec<_>>(),
            ["a", "host_skills", "permissions", "last"]
        );
        assert_eq!(
            state.insert_before("a", JsonSection::new("last", json!(5))),
            Err(WorldStateError::DuplicateSection { id: "last".into() })
        );
        assert_eq!(state.len(), 4);
        assert!(state.remove("a").is_some());
        assert!(state.get("a").is_none());
        assert_eq!(state.get("last").map(|s| s.id()), Some("last"));
        assert_eq!(
            format!("{state:?}"),
            r#"["host_skills", "permissions", "last"]"#
        );
    }

    #[test]
    fn a_transient_section_is_compared_but_not_persisted() {
        let mut state = WorldState::new();
        state.add(JsonSection::new("kept", json!(1))).unwrap();
        state
            .add(JsonSection::new("transient", json!(2)).not_persisted())
            .unwrap();
        let rendered = state.render_full();
        assert_eq!(rendered.snapshot.len(), 2);
        assert_eq!(
            rendered.change_from(None).unwrap().state,
            json!({"kept": 1})
        );
        // A baseline that had the transient section at another value: nothing to persist.
        let baseline = WorldSnapshot::from_value(json!({"kept": 1, "transient": 0})).unwrap();
        assert_eq!(rendered.change_from(Some(&baseline)), None);
    }
}
