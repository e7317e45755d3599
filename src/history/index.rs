//! The pairing index: which calls lack outputs, which outputs lack calls, which entries carry
//! media or are of unknown type.
//!
//! It lives in persistent maps so that cloning a history clones it in O(1), and it is updated as
//! each item is recorded, so that projection never scans the history. Positions are indices into
//! the history's vector; operations that shift them (remove-first, replace, rollback) rebuild the
//! index.

use imbl::{OrdMap, OrdSet};

use crate::item::{CallId, Entry, Family, ItemKind, Pairing};

/// Calls and outputs sharing one call id within one family.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct CallSlots {
    /// Positions of the calls.
    calls: OrdSet<usize>,
    /// Outputs of any execution, for Codex's global-presence rule: a server tool-search output
    /// answers a call just as a client one does.
    outputs: usize,
    /// Positions of outputs that are orphans when no call exists (client-executed ones).
    removable_outputs: OrdSet<usize>,
}

/// The derived pairing and media state of a history. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PairingIndex {
    slots: OrdMap<(Family, CallId), CallSlots>,
    /// Calls with no output of their family anywhere in the history.
    calls_without_output: OrdSet<usize>,
    /// Outputs with no call of their family anywhere in the history.
    orphan_outputs: OrdSet<usize>,
    /// Entries carrying image content.
    images: OrdSet<usize>,
    /// Entries carrying audio content.
    audio: OrdSet<usize>,
    /// Entries of a type this library does not know.
    unknown: OrdSet<usize>,
    /// Entries that start a user turn.
    user_turns: OrdSet<usize>,
}

impl PairingIndex {
    /// Builds the index of `entries` from scratch. Time: O(n log n).
    pub(crate) fn build<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> PairingIndex {
        let mut index = PairingIndex::default();
        for (position, entry) in entries.into_iter().enumerate() {
            index.push(position, entry);
        }
        index
    }

    /// Accounts for `entry` appended at `position`. Time: O(log n), plus O(d) when d earlier items
    /// share the call id.
    pub(crate) fn push(&mut self, position: usize, entry: &Entry) {
        let flags = entry.flags();
        if flags.has_image() {
            self.images.insert(position);
        }
        if flags.has_audio() {
            self.audio.insert(position);
        }
        if entry.kind() == ItemKind::Unknown {
            self.unknown.insert(position);
        }
        if flags.is_user_turn_boundary() {
            self.user_turns.insert(position);
        }
        let Some(call_id) = entry.call_id() else {
            // Calls and outputs without a call id never pair: a local shell or tool-search call
            // without one needs no output, and an output without one is an external tool event.
            return;
        };
        match entry.kind().pairing() {
            Pairing::Call { family, .. } => {
                let slots = self.slots.entry((family, call_id.clone())).or_default();
                if slots.calls.is_empty() {
                    for output in &slots.removable_outputs {
                        self.orphan_outputs.remove(output);
                    }
                }
                slots.calls.insert(position);
                if slots.outputs == 0 {
                    self.calls_without_output.insert(position);
                }
            }
            Pairing::Output { family } => {
                let removable = !(family == Family::ToolSearch && flags.is_server_executed());
                let slots = self.slots.entry((family, call_id.clone())).or_default();
                if slots.outputs == 0 {
                    for call in &slots.calls {
                        self.calls_without_output.remove(call);
                    }
                }
                slots.outputs += 1;
                if removable {
                    slots.removable_outputs.insert(position);
                    if slots.calls.is_empty() {
                        self.orphan_outputs.insert(position);
                    }
                }
            }
            Pairing::Unpaired => {}
        }
    }

    /// Undoes [`PairingIndex::push`] for the last entry, `entry` at `position`. Time: O(log n),
    /// plus O(d) when d other items share the call id.
    pub(crate) fn pop(&mut self, position: usize, entry: &Entry) {
        self.images.remove(&position);
        self.audio.remove(&position);
        self.unknown.remove(&position);
        self.user_turns.remove(&position);
        let Some(call_id) = entry.call_id() else {
            return;
        };
        match entry.kind().pairing() {
            Pairing::Call { family, .. } => {
                let key = (family, call_id.clone());
                let Some(slots) = self.slots.get_mut(&key) else {
                    return;
                };
                slots.calls.remove(&position);
                self.calls_without_output.remove(&position);
                if slots.calls.is_empty() {
                    for output in &slots.removable_outputs {
                        self.orphan_outputs.insert(*output);
                    }
                }
                if slots.calls.is_empty() && slots.outputs == 0 {
                    self.slots.remove(&key);
                }
            }
            Pairing::Output { family } => {
                let key = (family, call_id.clone());
                let Some(slots) = self.slots.get_mut(&key) else {
                    return;
                };
                slots.outputs = slots.outputs.saturating_sub(1);
                slots.removable_outputs.remove(&position);
                self.orphan_outputs.remove(&position);
                if slots.outputs == 0 {
                    for call in &slots.calls {
                        self.calls_without_output.insert(*call);
                    }
                }
                if slots.calls.is_empty() && slots.outputs == 0 {
                    self.slots.remove(&key);
                }
            }
            Pairing::Unpaired => {}
        }
    }

    /// Positions of the entries that start a user turn, ascending.
    pub(crate) fn user_turns(&self) -> &OrdSet<usize> {
        &self.user_turns
    }

    /// Recomputes the index from scratch with a different algorithm than [`PairingIndex::push`]
    /// (two passes over the entries: collect every family's calls and outputs, then derive the
    /// sets), so that comparing the two checks the incremental updates. For
    /// `History::assert_invariants`. Time: O(n log n).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn recompute(entries: &[&Entry]) -> PairingIndex {
        use std::collections::BTreeMap;

        #[derive(Default)]
        struct Group {
            calls: Vec<usize>,
            outputs: usize,
            removable: Vec<usize>,
        }
        let mut groups: BTreeMap<(Family, CallId), Group> = BTreeMap::new();
        let mut index = PairingIndex::default();
        for (position, entry) in entries.iter().enumerate() {
            let flags = entry.flags();
            if flags.has_image() {
                index.images.insert(position);
            }
            if flags.has_audio() {
                index.audio.insert(position);
            }
            if entry.kind() == ItemKind::Unknown {
                index.unknown.insert(position);
            }
            if flags.is_user_turn_boundary() {
                index.user_turns.insert(position);
            }
            let (Some(call_id), pairing) = (entry.call_id(), entry.kind().pairing()) else {
                continue;
            };
            match pairing {
                Pairing::Call { family, .. } => {
                    let group = groups.entry((family, call_id.clone())).or_default();
                    group.calls.push(position);
                }
                Pairing::Output { family } => {
                    let group = groups.entry((family, call_id.clone())).or_default();
                    group.outputs += 1;
                    if !(family == Family::ToolSearch && flags.is_server_executed()) {
                        group.removable.push(position);
                    }
                }
                Pairing::Unpaired => {}
            }
        }
        for (key, group) in groups {
            let Group {
                calls,
                outputs,
                removable,
            } = group;
            if outputs == 0 {
                index.calls_without_output.extend(calls.iter().copied());
            }
            if calls.is_empty() {
                index.orphan_outputs.extend(removable.iter().copied());
            }
            index.slots.insert(
                key,
                CallSlots {
                    calls: calls.into_iter().collect(),
                    outputs,
                    removable_outputs: removable.into_iter().collect(),
                },
            );
        }
        index
    }

    /// Positions of calls with no output, ascending.
    pub(crate) fn calls_without_output(&self) -> &OrdSet<usize> {
        &self.calls_without_output
    }

    /// Positions of outputs with no call, ascending.
    pub(crate) fn orphan_outputs(&self) -> &OrdSet<usize> {
        &self.orphan_outputs
    }

    /// Positions of entries with image content, ascending.
    pub(crate) fn images(&self) -> &OrdSet<usize> {
        &self.images
    }

    /// Positions of entries with audio content, ascending.
    pub(crate) fn audio(&self) -> &OrdSet<usize> {
        &self.audio
    }

    /// Positions of entries of unknown type, ascending.
    pub(crate) fn unknown(&self) -> &OrdSet<usize> {
        &self.unknown
    }
}
