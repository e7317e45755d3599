//! World-state updates of a [`History`]: the world state rendered against the history's
//! baseline and items, giving the items to record and the change to persist
//! (`docs/world-state.md`).

use crate::item::ResponseItem;
use crate::world::{ContextUpdate, WorldSnapshot, WorldState, WorldStateChange, WorldStateError};

use super::History;

/// What a world-state update gives: the items to record (the rendered updates merged into
/// messages), the change to write to the rollout, and the new baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldStateUpdate {
    /// The items that show the change to the model, in order (none when nothing changed). From
    /// [`History::update_world_state`] they are still to record, after the items already in the
    /// history; from [`Session::update_world_state`](crate::Session::update_world_state) they
    /// are the copies it recorded.
    pub items: Vec<ResponseItem>,
    /// The updates the items were merged from, in section order (a caller assembling a fresh
    /// initial context puts the prefix ones first: [`split_prefix_updates`](crate::world::split_prefix_updates)).
    pub updates: Vec<ContextUpdate>,
    /// The rollout's `world_state` line: the whole snapshot when there was no baseline, else the
    /// merge patch from the baseline; `None` when nothing persisted changed.
    pub change: Option<WorldStateChange>,
    /// The snapshot the history shows once the items are recorded: the new baseline.
    pub snapshot: WorldSnapshot,
}

impl WorldStateUpdate {
    /// Whether the update has nothing to record and nothing to persist.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.change.is_none()
    }
}

impl History {
    /// Renders `state` against this history's world-state baseline and items
    /// ([`WorldState::render_history_diff`]) and makes the new snapshot the baseline. Without a
    /// baseline (the first update, or after a replace, a compaction or a rollback) every section
    /// renders in full and the change is the whole snapshot; with one, only what changed renders
    /// and the change is a merge patch, or nothing.
    ///
    /// The items are returned, not recorded: the caller records them (with
    /// [`History::record`]) where its turn puts them, writes them and the change to its rollout
    /// in the order it chooses, and gives them the host metadata (a turn id) only it knows. The
    /// baseline is set now; a caller that must not move it before the change is durable uses
    /// [`History::diff_world_state`] and sets it after persisting.
    ///
    /// # Errors
    ///
    /// As [`WorldState::render_history_diff`]; the baseline is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::{History, JsonSection, WorldState};
    /// use serde_json::json;
    ///
    /// let mut state = WorldState::new();
    /// state.add(JsonSection::new("rules", json!("Be brief.")))?;
    /// let mut history = History::new();
    /// let first = history.update_world_state(&state)?;
    /// assert!(first.change.as_ref().is_some_and(|change| change.full));
    /// for item in &first.items {
    ///     history.record(item)?;
    /// }
    /// assert!(history.update_world_state(&state)?.is_empty(), "nothing changed");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update_world_state(
        &mut self,
        state: &WorldState,
    ) -> Result<WorldStateUpdate, WorldStateError> {
        let update = self.diff_world_state(state)?;
        if self.world_state_baseline() != Some(&update.snapshot) {
            self.set_world_state_baseline(Some(update.snapshot.clone()));
        }
        Ok(update)
    }

    /// What [`History::update_world_state`] gives, without changing the history: set
    /// `update.snapshot` as the baseline ([`History::set_world_state_baseline`]) once the items
    /// are recorded and the change persisted.
    ///
    /// # Errors
    ///
    /// As [`WorldState::render_history_diff`].
    pub fn diff_world_state(
        &self,
        state: &WorldState,
    ) -> Result<WorldStateUpdate, WorldStateError> {
        let baseline = self.world_state_baseline();
        let rendered = state.render_history_diff(baseline, self.iter())?;
        Ok(WorldStateUpdate {
            items: rendered.items(),
            change: rendered.change_from(baseline),
            updates: rendered.updates,
            snapshot: rendered.snapshot,
        })
    }
}
