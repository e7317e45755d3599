//! The ids a target sends its calls under, and what an assembly knows of the call ids before a
//! place (which the place's usability is decided by).
//!
//! A target says which calls need another id (an empty or invalid id, a call id used by an
//! earlier call) and which names to try for one, in order ([`Format`](super::Format)). A name is
//! free when no call of the request has it as its own id and no call was sent under it before.
//! The first free name is taken. So a call's name depends on the calls after it too: a later
//! call may have the name the search would take as its own id. [`Ids::hold_for`] tells whether
//! the names chosen before a place still hold for a new tail.

use std::collections::HashMap;
use std::sync::Arc;

use super::Format;
use super::counters;
use super::units::{PairRole, Unit};

/// What is known of one call id (or name) before a place.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Known {
    /// How many calls have it as their own id.
    calls: u32,
    /// Whether a call or an output has it.
    used: bool,
    /// Whether an output of it answers no call (dropped).
    loose: bool,
    /// Whether a call was sent under it as a new name.
    minted: bool,
    /// Where the search for names made from it resumes (0: at the target's first candidate).
    next: u32,
}

/// A name that a search before a place passed over because a call at or after the place has it
/// as its own id: if the call goes, the search would take the name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Passed {
    name: Arc<str>,
    /// The position of the first call with that own id.
    call: usize,
}

/// What an assembly knows of the call ids before a place: one persistent map (cloned in O(1)
/// into each place kept), and the names passed over for later calls (almost always none).
#[derive(Debug, Clone, Default)]
pub(crate) struct Ids {
    known: imbl::HashMap<Arc<str>, Known>,
    passed: Vec<Passed>,
}

impl Ids {
    fn get(&self, id: &str) -> Known {
        self.known.get(id).copied().unwrap_or_default()
    }

    /// How many calls before the place have `id` as their own id.
    pub(crate) fn calls(&self, id: &str) -> u32 {
        self.get(id).calls
    }

    /// Whether a call or an output before the place has `id`.
    pub(crate) fn used(&self, id: &str) -> bool {
        self.get(id).used
    }

    /// Whether an output of `id` before the place answers no call.
    pub(crate) fn loose(&self, id: &str) -> bool {
        self.get(id).loose
    }

    /// Whether the names chosen before the place are the ones an assembly of the whole request
    /// chooses, when `units` follow it: no call of theirs has a name minted before as its own
    /// id, and every name passed over for a later call is still a call's own id.
    pub(crate) fn hold_for<R: super::Rendered>(&self, units: &[Unit<R>]) -> bool {
        let own: std::collections::HashSet<&str> = units
            .iter()
            .filter_map(|unit| match unit.pairing() {
                PairRole::Call(id) => Some(id),
                _ => None,
            })
            .collect();
        own.iter().all(|id| !self.get(id).minted)
            && self.passed.iter().all(|passed| own.contains(&*passed.name))
    }

    /// The knowledge kept for a place at `position`: the names passed over for calls before it
    /// are no longer at risk.
    pub(crate) fn at(&self, position: usize) -> Ids {
        Ids {
            known: self.known.clone(),
            passed: self
                .passed
                .iter()
                .filter(|passed| passed.call >= position)
                .cloned()
                .collect(),
        }
    }

    /// The key of `id` in the map: the map's own when it has it (a call id reused every turn is
    /// then one string, not one per turn).
    fn key(&self, id: &str) -> Arc<str> {
        self.known
            .get_key_value(id)
            .map_or_else(|| Arc::from(id), |(key, _)| Arc::clone(key))
    }

    fn update(&mut self, id: &str, change: impl FnOnce(&mut Known)) {
        let key = self.key(id);
        let mut known = self.get(id);
        change(&mut known);
        self.known.insert(key, known);
    }
}

/// Names the calls of a tail of units, after the places before it (`ids`).
pub(crate) struct Naming<'a, F> {
    ids: &'a mut Ids,
    /// The own ids of the tail's calls, each with the position of its first call.
    own: HashMap<Arc<str>, usize>,
    target: std::marker::PhantomData<F>,
}

impl<'a, F: Format> Naming<'a, F> {
    /// Starts naming `units` (the tail) after what `ids` knows.
    pub(crate) fn new(ids: &'a mut Ids, units: &[Unit<F::Item>]) -> Self {
        let mut own = HashMap::new();
        for unit in units {
            if let PairRole::Call(id) = unit.pairing() {
                own.entry(Arc::from(id)).or_insert(unit.at.position);
            }
        }
        Naming {
            ids,
            own,
            target: std::marker::PhantomData,
        }
    }

    /// What is known so far.
    pub(crate) fn ids(&self) -> &Ids {
        self.ids
    }

    /// Records a unit of the tail, in order: the name a call is sent under when it is not its
    /// own id, `None` otherwise. `answered` says whether an output takes it (for an output:
    /// whether it answers a call).
    pub(crate) fn record(&mut self, unit: &Unit<F::Item>, answered: bool) -> Option<Arc<str>> {
        match unit.pairing() {
            PairRole::Call(id) => {
                let mut nth = 0;
                self.ids.update(id, |known| {
                    known.calls += 1;
                    known.used = true;
                    nth = known.calls;
                });
                F::needs_new_id(id, nth).then(|| self.mint(id, nth))
            }
            PairRole::Output(id) => {
                self.ids.update(id, |known| {
                    known.used = true;
                    known.loose |= !answered;
                });
                None
            }
            PairRole::Other | PairRole::Nothing => None,
        }
    }

    /// The first free name for the `nth` call of `id`.
    fn mint(&mut self, id: &str, nth: u32) -> Arc<str> {
        let resume = F::resume_key(id);
        let mut k = resume
            .map(|key| self.ids.get(key).next)
            .filter(|&next| next > 0)
            .unwrap_or(F::FIRST_CANDIDATE);
        loop {
            counters::name_tried();
            let name = F::candidate(id, nth, k);
            let known = self.ids.get(&name);
            let later_call = self.own.get(name.as_str()).copied();
            let taken = known.calls > 0 || known.minted || later_call.is_some();
            if !taken {
                let name: Arc<str> = Arc::from(name);
                self.ids.update(&name, |known| known.minted = true);
                if let Some(key) = resume {
                    self.ids.update(key, |known| known.next = k + 1);
                }
                return name;
            }
            if let Some(call) = later_call.filter(|_| known.calls == 0 && !known.minted) {
                // Only a call after this one has it: if that call goes, this name is free.
                self.ids.passed.push(Passed {
                    name: Arc::from(name),
                    call,
                });
            }
            k += 1;
        }
    }
}
