//! The pairing index: which calls lack outputs, which outputs lack calls, which entries carry
//! media or are of unknown type.
//!
//! It lives in persistent maps so that cloning a history clones it in O(1), and it is updated as
//! each item is recorded, so that projection never scans the history.
//!
//! The index does not store positions, which every removal at the front would shift: it stores
//! **keys**. An entry's key is the number of entries pushed before it since the index was built,
//! so keys grow with positions and never change while the entry is held. [`Positions`] maps keys
//! to positions: the key of position 0 (`base`), the next key, and the keys of entries removed
//! from the middle (`holes`, usually none). Removing the first entry moves `base` on; removing an
//! entry in the middle records a hole; removing the last one moves the next key back. None of
//! them touches the keys of the other entries, so trimming the front of a long history costs
//! O(log n), not a rebuild.

use std::hash::BuildHasher;
use std::sync::Arc;

use imbl::{OrdMap, OrdSet, Vector};

use crate::item::{CallId, Entry, Family, ItemKind, Pairing};

/// An entry's key: its number in push order since the index was built (see the module docs).
type Key = u64;

/// The hasher of slots ([`slot_hash`]): fixed, so that the slot map is the same in every run.
const CALL_ID_HASHER: foldhash::fast::FixedState = foldhash::fast::FixedState::with_seed(0);

/// Maps keys to positions and back: the live keys are `base..next` without the `holes`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Positions {
    /// The key of the entry at position 0 (equal to `next` when there is none).
    base: Key,
    /// The key the next pushed entry gets.
    next: Key,
    /// Keys of entries removed from the middle, ascending; each lies strictly between the first
    /// and the last live key.
    holes: Holes,
}

/// The holes of [`Positions`]: a vector allocated only while there are some (usually there are
/// none), so that a history holds 8 bytes for them rather than an inline vector's 64.
#[derive(Debug, Clone, Default)]
struct Holes(Option<Arc<Vector<Key>>>);

/// What [`Holes`] reads as when there are none.
static NO_HOLES: std::sync::LazyLock<Vector<Key>> = std::sync::LazyLock::new(Vector::new);

impl std::ops::Deref for Holes {
    type Target = Vector<Key>;

    fn deref(&self) -> &Vector<Key> {
        self.0.as_deref().unwrap_or(&NO_HOLES)
    }
}

impl PartialEq for Holes {
    fn eq(&self, other: &Holes) -> bool {
        **self == **other
    }
}

impl Eq for Holes {}

impl Holes {
    /// Applies `change` to the holes (allocating them for it); none left frees them.
    fn change<R>(&mut self, change: impl FnOnce(&mut Vector<Key>) -> R) -> R {
        let holes = Arc::make_mut(self.0.get_or_insert_with(Arc::default));
        let result = change(holes);
        if holes.is_empty() {
            self.0 = None;
        }
        result
    }
}

impl Positions {
    /// Number of live keys.
    fn len(&self) -> usize {
        (self.next - self.base) as usize - self.holes.len()
    }

    /// Number of holes below `key`. Time: O(1) without holes, O(log² h) with h.
    fn holes_below(&self, key: Key) -> usize {
        if self.holes.is_empty() {
            return 0;
        }
        match self.holes.binary_search(&key) {
            Ok(index) | Err(index) => index,
        }
    }

    /// The position of the live entry whose key is `key`.
    fn position(&self, key: Key) -> usize {
        (key - self.base) as usize - self.holes_below(key)
    }

    /// The key of the entry at `position` (which must be below [`Positions::len`]).
    fn key(&self, position: usize) -> Key {
        let position = position as u64;
        if self.holes.is_empty() {
            return self.base + position;
        }
        // The live entries below the hole at index i number `hole_i - base - i`, which grows
        // with i; the holes below the wanted key are those with at most `position` below them.
        let (mut low, mut high) = (0, self.holes.len());
        while low < high {
            let mid = low + (high - low) / 2;
            if self.holes[mid] - self.base - mid as u64 <= position {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        self.base + position + low as u64
    }

    /// The key of a new last entry.
    fn push(&mut self) -> Key {
        let key = self.next;
        self.next += 1;
        key
    }

    /// Forgets the live key `key`. Time: O(1) at either end (amortized over the holes it passes),
    /// O(log h) for a hole in the middle.
    fn remove(&mut self, key: Key) {
        if key == self.base {
            self.base += 1;
            while self.holes.front() == Some(&self.base) {
                self.holes.change(|holes| holes.pop_front());
                self.base += 1;
            }
        } else if key + 1 == self.next {
            self.next -= 1;
            while self.holes.back().is_some_and(|&hole| hole + 1 == self.next) {
                self.holes.change(|holes| holes.pop_back());
                self.next -= 1;
            }
        } else if let Err(index) = self.holes.binary_search(&key) {
            self.holes.change(|holes| holes.insert(index, key));
        }
    }
}

/// The hash a slot is filed under: of its family and call id, with [`CALL_ID_HASHER`].
fn slot_hash(family: Family, call_id: &CallId) -> u64 {
    CALL_ID_HASHER.hash_one((family, call_id.as_str()))
}

/// The calls and outputs of one family and call id, with the other slots filed under the same
/// hash (almost never any), in family and id order.
///
/// The slot map holds a pointer to it rather than the slot itself, so that its nodes hold 16
/// bytes per slot: recording a call or an output path-copies those nodes, and every retained
/// version keeps the copies (`docs/performance.md`, "Memory of retained versions").
#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    family: Family,
    call_id: CallId,
    members: CallSlots,
    /// The next slot with the same hash: a larger family and id.
    next: Option<Arc<Slot>>,
}

impl Slot {
    /// The slot of `family` and `call_id` in the chain starting at `slot`.
    fn find<'a>(mut slot: &'a Slot, family: Family, call_id: &CallId) -> Option<&'a CallSlots> {
        loop {
            if slot.family == family && slot.call_id == *call_id {
                return Some(&slot.members);
            }
            slot = slot.next.as_deref()?;
        }
    }

    /// Applies `change` to the members of `family` and `call_id` in the chain starting at
    /// `link` (to empty members when the chain has no such slot, inserted in order unless they
    /// stay empty). Returns what `change` returned and whether the first slot of the chain is
    /// left empty, which the caller unlinks.
    fn update<R>(
        link: &mut Arc<Slot>,
        family: Family,
        call_id: &CallId,
        change: impl FnOnce(&mut CallSlots) -> R,
    ) -> (R, bool) {
        let slot = Arc::make_mut(link);
        match (slot.family, &slot.call_id).cmp(&(family, call_id)) {
            std::cmp::Ordering::Equal => {
                let result = change(&mut slot.members);
                (result, slot.members.is_empty())
            }
            std::cmp::Ordering::Greater => {
                let mut members = CallSlots::default();
                let result = change(&mut members);
                if !members.is_empty() {
                    let new = Slot {
                        family,
                        call_id: call_id.clone(),
                        members,
                        next: None,
                    };
                    let rest = std::mem::replace(slot, new);
                    slot.next = Some(Arc::new(rest));
                }
                (result, false)
            }
            std::cmp::Ordering::Less => {
                let Some(next) = &mut slot.next else {
                    let mut members = CallSlots::default();
                    let result = change(&mut members);
                    if !members.is_empty() {
                        slot.next = Some(Arc::new(Slot {
                            family,
                            call_id: call_id.clone(),
                            members,
                            next: None,
                        }));
                    }
                    return (result, false);
                };
                let (result, emptied) = Slot::update(next, family, call_id, change);
                if emptied {
                    let rest = next.next.clone();
                    slot.next = rest;
                }
                (result, false)
            }
        }
    }
}

/// The slots of a history: a persistent map from [`slot_hash`] to the chain of slots with that
/// hash. Nothing reads it in hash order: it is only probed by family and call id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Slots(OrdMap<u64, Arc<Slot>>);

impl Slots {
    /// The members of `family` and `call_id`, if any.
    fn get(&self, family: Family, call_id: &CallId) -> Option<&CallSlots> {
        Slot::find(self.0.get(&slot_hash(family, call_id))?, family, call_id)
    }

    /// Applies `change` to the members of `family` and `call_id` (empty ones when there is no
    /// such slot); a slot left empty is removed, one created empty is not kept.
    fn update<R>(
        &mut self,
        family: Family,
        call_id: &CallId,
        change: impl FnOnce(&mut CallSlots) -> R,
    ) -> R {
        let hash = slot_hash(family, call_id);
        let Some(head) = self.0.get_mut(&hash) else {
            let mut members = CallSlots::default();
            let result = change(&mut members);
            if !members.is_empty() {
                self.insert_new(hash, family, call_id.clone(), members);
            }
            return result;
        };
        let (result, emptied) = Slot::update(head, family, call_id, change);
        if emptied {
            match head.next.clone() {
                Some(rest) => *head = rest,
                None => {
                    self.0.remove(&hash);
                }
            }
        }
        result
    }

    /// Files a slot under `hash`, where there is none yet.
    fn insert_new(&mut self, hash: u64, family: Family, call_id: CallId, members: CallSlots) {
        let slot = Slot {
            family,
            call_id,
            members,
            next: None,
        };
        self.0.insert(hash, Arc::new(slot));
    }

    /// Every slot as (family, call id, members), in no particular order.
    #[cfg(any(test, feature = "testing"))]
    fn all(&self) -> Vec<(Family, &CallId, &CallSlots)> {
        let mut all = Vec::new();
        for head in self.0.values() {
            let mut slot = Some(&**head);
            while let Some(current) = slot {
                all.push((current.family, &current.call_id, &current.members));
                slot = current.next.as_deref();
            }
        }
        all
    }
}

/// A call or output of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Member {
    key: Key,
    kind: ItemKind,
    /// For an output: whether it is an orphan when no call exists (client-executed ones are).
    removable: bool,
}

/// The calls or the outputs of a slot, in key order. One member, the common case, needs no
/// allocation of its own.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Members {
    #[default]
    None,
    One(Member),
    /// Two or more.
    Many(Arc<Vec<Member>>),
}

impl Members {
    fn as_slice(&self) -> &[Member] {
        match self {
            Members::None => &[],
            Members::One(member) => std::slice::from_ref(member),
            Members::Many(members) => members,
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Members::None)
    }

    /// Appends `member`, whose key is larger than every member's.
    fn push(&mut self, member: Member) {
        *self = match std::mem::take(self) {
            Members::None => Members::One(member),
            Members::One(first) => Members::Many(Arc::new(vec![first, member])),
            Members::Many(mut members) => {
                Arc::make_mut(&mut members).push(member);
                Members::Many(members)
            }
        };
    }

    /// Removes the member with `key`, if there is one.
    fn remove(&mut self, key: Key) {
        *self = match std::mem::take(self) {
            Members::One(member) if member.key == key => Members::None,
            Members::Many(mut members) => {
                let list = Arc::make_mut(&mut members);
                list.retain(|member| member.key != key);
                match list.as_slice() {
                    [] => Members::None,
                    [one] => Members::One(*one),
                    _ => Members::Many(members),
                }
            }
            other => other,
        };
    }
}

/// Calls and outputs sharing one call id within one family.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct CallSlots {
    /// The calls.
    calls: Members,
    /// The outputs of any execution, for Codex's global-presence rule: a server tool-search
    /// output answers a call just as a client one does. Only the removable ones are orphans
    /// when no call exists.
    outputs: Members,
}

impl CallSlots {
    fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.outputs.is_empty()
    }
}

/// The derived pairing and media state of a history. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PairingIndex {
    positions: Positions,
    slots: Slots,
    /// Calls with no output of their family anywhere in the history.
    calls_without_output: FewKeys,
    /// The sets that few records change, behind one shared pointer (copied on write), so
    /// that a version holds 8 bytes of them rather than 96.
    uncommon: Arc<Uncommon>,
    /// Entries that start a user turn.
    user_turns: OrdSet<Key>,
}

/// The sets of a [`PairingIndex`] that few records change.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Uncommon {
    /// Outputs with no call of their family anywhere in the history.
    orphan_outputs: OrdSet<Key>,
    /// Entries carrying image content.
    images: OrdSet<Key>,
    /// Entries carrying audio content.
    audio: OrdSet<Key>,
    /// Entries of a type this library does not know.
    unknown: OrdSet<Key>,
}

impl Uncommon {
    /// Removes `key` from every set holding it, copying the sets only when one does.
    fn remove(this: &mut Arc<Uncommon>, key: Key) {
        let sets = |sets: &Uncommon| {
            [
                sets.orphan_outputs.contains(&key),
                sets.images.contains(&key),
                sets.audio.contains(&key),
                sets.unknown.contains(&key),
            ]
        };
        if sets(this).contains(&true) {
            let sets = Arc::make_mut(this);
            sets.orphan_outputs.remove(&key);
            sets.images.remove(&key);
            sets.audio.remove(&key);
            sets.unknown.remove(&key);
        }
    }
}

/// A set of keys that is usually tiny (the calls waiting for their output: most are answered
/// by the next item): up to two keys inline, a persistent set beyond. Recording a call and then
/// its output then changes 16 bytes in the history value instead of path-copying a set's node
/// twice, which every retained version would keep.
#[derive(Debug, Clone)]
enum FewKeys {
    /// `len` keys (at most two), ascending, in `keys[..len]`.
    Few { len: u8, keys: [Key; 2] },
    /// More than two keys (behind a pointer, so that the inline case sets the size: 24 bytes).
    Many(Arc<OrdSet<Key>>),
}

impl Default for FewKeys {
    fn default() -> FewKeys {
        FewKeys::Few {
            len: 0,
            keys: [0; 2],
        }
    }
}

impl PartialEq for FewKeys {
    fn eq(&self, other: &FewKeys) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for FewKeys {}

impl FewKeys {
    fn iter(&self) -> KeysIter<'_> {
        match self {
            FewKeys::Few { len, keys } => KeysIter::Few(keys[..usize::from(*len)].iter()),
            FewKeys::Many(set) => KeysIter::Many(set.iter()),
        }
    }

    fn insert(&mut self, key: Key) {
        match self {
            FewKeys::Few { len, keys } => {
                let held = &keys[..usize::from(*len)];
                if held.contains(&key) {
                    return;
                }
                if held.len() < keys.len() {
                    keys[held.len()] = key;
                    *len += 1;
                    keys[..usize::from(*len)].sort_unstable();
                } else {
                    let mut set: OrdSet<Key> = held.iter().copied().collect();
                    set.insert(key);
                    *self = FewKeys::Many(Arc::new(set));
                }
            }
            FewKeys::Many(set) => {
                if !set.contains(&key) {
                    Arc::make_mut(set).insert(key);
                }
            }
        }
    }

    fn remove(&mut self, key: Key) {
        match self {
            FewKeys::Few { len, keys } => {
                let held = usize::from(*len);
                if let Some(at) = keys[..held].iter().position(|&k| k == key) {
                    keys.copy_within(at + 1..held, at);
                    keys[held - 1] = 0;
                    *len -= 1;
                }
            }
            FewKeys::Many(set) => {
                if !set.contains(&key) {
                    return;
                }
                Arc::make_mut(set).remove(&key);
                if set.len() <= 2 {
                    let mut few = FewKeys::default();
                    for &key in set.iter() {
                        few.insert(key);
                    }
                    *self = few;
                }
            }
        }
    }
}

impl Extend<Key> for FewKeys {
    fn extend<I: IntoIterator<Item = Key>>(&mut self, keys: I) {
        for key in keys {
            self.insert(key);
        }
    }
}

impl FromIterator<Key> for FewKeys {
    fn from_iter<I: IntoIterator<Item = Key>>(keys: I) -> FewKeys {
        let mut set = FewKeys::default();
        for key in keys {
            set.insert(key);
        }
        set
    }
}

/// The keys of a set, ascending.
#[derive(Clone)]
enum KeysIter<'a> {
    Few(std::slice::Iter<'a, Key>),
    Many(imbl::ordset::Iter<'a, Key, imbl::shared_ptr::DefaultSharedPtr>),
}

impl<'a> Iterator for KeysIter<'a> {
    type Item = &'a Key;

    fn next(&mut self) -> Option<&'a Key> {
        match self {
            KeysIter::Few(keys) => keys.next(),
            KeysIter::Many(keys) => keys.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            KeysIter::Few(keys) => keys.size_hint(),
            KeysIter::Many(keys) => keys.size_hint(),
        }
    }
}

impl DoubleEndedIterator for KeysIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            KeysIter::Few(keys) => keys.next_back(),
            KeysIter::Many(keys) => keys.next_back(),
        }
    }
}

/// Positions of a set of entries, ascending: their keys mapped to positions as they are read.
/// O(1) per entry when no entry was removed from the middle.
pub(crate) struct PositionsOf<'a> {
    keys: KeysIter<'a>,
    positions: &'a Positions,
}

impl Iterator for PositionsOf<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        self.keys.next().map(|&key| self.positions.position(key))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.keys.size_hint()
    }
}

impl DoubleEndedIterator for PositionsOf<'_> {
    fn next_back(&mut self) -> Option<usize> {
        self.keys
            .next_back()
            .map(|&key| self.positions.position(key))
    }
}

impl ExactSizeIterator for PositionsOf<'_> {}

/// A set of entries of an index, read as positions: the keys and the key-to-position map of the
/// index it was taken from, both shared (a clone is O(1)). A projection keeps the media sets of
/// the history it was made from this way.
#[derive(Debug, Clone)]
pub(crate) struct PositionSet {
    keys: OrdSet<Key>,
    positions: Positions,
}

impl PositionSet {
    /// The positions, ascending.
    pub(crate) fn iter(&self) -> PositionsOf<'_> {
        PositionsOf {
            keys: KeysIter::Many(self.keys.iter()),
            positions: &self.positions,
        }
    }

    /// Whether the entry at `position` is in the set. Time: O(log n).
    pub(crate) fn contains(&self, position: usize) -> bool {
        position < self.positions.len() && self.keys.contains(&self.positions.key(position))
    }

    /// Whether both are the same set of the same entries: the same tree of keys. A key names
    /// one entry for as long as it is held (an index built anew has new trees), so while the
    /// tree is shared the entries are the same, wherever removals moved them. Time: O(1).
    pub(crate) fn ptr_eq(&self, other: &PositionSet) -> bool {
        self.keys.ptr_eq(&other.keys)
    }
}

/// The slot member `entry` is, with its slot's family, if it pairs at all.
fn member_of(entry: &Entry, key: Key) -> Option<(Family, &CallId, Member, bool)> {
    // Calls and outputs without a call id never pair: a local shell or tool-search call without
    // one needs no output, and an output without one is an external tool event.
    let call_id = entry.call_id()?;
    let kind = entry.kind();
    match kind.pairing() {
        Pairing::Call { family, .. } => Some((
            family,
            call_id,
            Member {
                key,
                kind,
                removable: false,
            },
            true,
        )),
        Pairing::Output { family } => Some((
            family,
            call_id,
            Member {
                key,
                kind,
                removable: !(family == Family::ToolSearch && entry.flags().is_server_executed()),
            },
            false,
        )),
        Pairing::Unpaired => None,
    }
}

impl PairingIndex {
    /// Builds the index of `entries` from scratch, in one pass: each entry's key is appended to
    /// the sets its flags name (at the end, no search) and its call or output to its slot; the
    /// calls without output and the orphan outputs are derived from the slots at the end, so
    /// that a call answered later is not inserted and then removed. A slot with one call and one
    /// output allocates nothing beyond its map node. Time: O(n log s) for n entries and s call
    /// ids, with integer comparisons.
    /// `len` is the number of entries (the grouping map is allocated once at that size).
    pub(crate) fn build<'a>(
        entries: impl IntoIterator<Item = &'a Entry>,
        len: usize,
    ) -> PairingIndex {
        // The slots are grouped in an ordinary hash map first (borrowed ids, one probe per
        // member), then inserted into the persistent map in key order, one descent per slot
        // along nodes that stay in cache.
        let mut groups: std::collections::HashMap<
            (Family, &CallId),
            (u64, CallSlots),
            foldhash::fast::FixedState,
        > = std::collections::HashMap::with_capacity_and_hasher(len / 2, CALL_ID_HASHER);
        let mut index = PairingIndex::default();
        for entry in entries {
            let key = index.positions.push();
            index.push_flags(key, entry);
            if let Some((family, call_id, member, is_call)) = member_of(entry, key) {
                let (_, slots) = groups
                    .entry((family, call_id))
                    .or_insert_with(|| (slot_hash(family, call_id), CallSlots::default()));
                if is_call {
                    slots.calls.push(member);
                } else {
                    slots.outputs.push(member);
                }
            }
        }
        let mut groups: Vec<(u64, Family, &CallId, CallSlots)> = groups
            .into_iter()
            .map(|((family, call_id), (hash, slots))| (hash, family, call_id, slots))
            .collect();
        groups.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        let mut calls_without_output = Vec::new();
        let mut orphan_outputs = Vec::new();
        let mut last_hash = None;
        for (hash, family, call_id, slots) in groups {
            if slots.outputs.is_empty() {
                calls_without_output.extend(slots.calls.as_slice().iter().map(|call| call.key));
            }
            if slots.calls.is_empty() {
                orphan_outputs.extend(
                    slots
                        .outputs
                        .as_slice()
                        .iter()
                        .filter(|output| output.removable)
                        .map(|output| output.key),
                );
            }
            if last_hash == Some(hash) {
                // Another id with the same hash: chained behind the first.
                index
                    .slots
                    .update(family, call_id, |members| *members = slots);
            } else {
                index.slots.insert_new(hash, family, call_id.clone(), slots);
            }
            last_hash = Some(hash);
        }
        calls_without_output.sort_unstable();
        orphan_outputs.sort_unstable();
        index.calls_without_output = calls_without_output.into_iter().collect();
        Arc::make_mut(&mut index.uncommon).orphan_outputs = orphan_outputs.into_iter().collect();
        index
    }

    /// Adds `key` to the sets `entry`'s flags and kind name.
    fn push_flags(&mut self, key: Key, entry: &Entry) {
        let flags = entry.flags();
        if flags.has_image() {
            Arc::make_mut(&mut self.uncommon).images.insert(key);
        }
        if flags.has_audio() {
            Arc::make_mut(&mut self.uncommon).audio.insert(key);
        }
        if entry.kind() == ItemKind::Unknown {
            Arc::make_mut(&mut self.uncommon).unknown.insert(key);
        }
        if flags.is_user_turn_boundary() {
            self.user_turns.insert(key);
        }
    }

    /// Accounts for `entry` appended after the last entry. Time: O(log n), plus O(d) when d
    /// earlier items share the call id.
    pub(crate) fn push(&mut self, entry: &Entry) {
        let key = self.positions.push();
        self.push_flags(key, entry);
        let Some((family, call_id, member, is_call)) = member_of(entry, key) else {
            return;
        };
        let calls_without_output = &mut self.calls_without_output;
        let uncommon = &mut self.uncommon;
        self.slots.update(family, call_id, |slots| {
            if is_call {
                if slots.calls.is_empty() {
                    for output in slots.outputs.as_slice() {
                        if uncommon.orphan_outputs.contains(&output.key) {
                            Arc::make_mut(uncommon).orphan_outputs.remove(&output.key);
                        }
                    }
                }
                slots.calls.push(member);
                if slots.outputs.is_empty() {
                    calls_without_output.insert(key);
                }
            } else {
                if slots.outputs.is_empty() {
                    for call in slots.calls.as_slice() {
                        calls_without_output.remove(call.key);
                    }
                }
                slots.outputs.push(member);
                if member.removable && slots.calls.is_empty() {
                    Arc::make_mut(uncommon).orphan_outputs.insert(key);
                }
            }
        });
    }

    /// Forgets `entry`, the entry at `position`, wherever it is: the first (trimming the
    /// front), the last (a rollback) or any other (the counterpart of a trimmed entry). The
    /// positions of the entries after it move down by one, without any of their index entries
    /// changing. Time: O(log n), plus O(d) when d other items share the call id, plus O(log h)
    /// for a removal in the middle when h entries were removed from the middle before.
    pub(crate) fn remove(&mut self, position: usize, entry: &Entry) {
        if position >= self.positions.len() {
            return;
        }
        let key = self.positions.key(position);
        Uncommon::remove(&mut self.uncommon, key);
        self.user_turns.remove(&key);
        if let Some((family, call_id, _, is_call)) = member_of(entry, key) {
            let calls_without_output = &mut self.calls_without_output;
            let uncommon = &mut self.uncommon;
            self.slots.update(family, call_id, |slots| {
                if slots.is_empty() {
                    // No slot: nothing of this entry is indexed.
                    return;
                }
                if is_call {
                    slots.calls.remove(key);
                    calls_without_output.remove(key);
                    if slots.calls.is_empty() {
                        for output in slots.outputs.as_slice() {
                            if output.removable {
                                Arc::make_mut(uncommon).orphan_outputs.insert(output.key);
                            }
                        }
                    }
                } else {
                    slots.outputs.remove(key);
                    Uncommon::remove(uncommon, key);
                    if slots.outputs.is_empty() {
                        for call in slots.calls.as_slice() {
                            calls_without_output.insert(call.key);
                        }
                    }
                }
            });
        }
        self.positions.remove(key);
    }

    /// The position of the first item that pairs with `entry` (which is no longer in the
    /// index): a call's first output, an output's first call, where a `function_call_output`
    /// looks for a `function_call` first and then for a `local_shell_call`. Time: O(log n), plus
    /// O(d) when d items share the call id.
    pub(crate) fn counterpart(&self, entry: &Entry) -> Option<usize> {
        let call_id = entry.call_id()?;
        let (family, wanted): (Family, &[ItemKind]) = match entry.kind().pairing() {
            Pairing::Call { family, .. } => (family, &[]),
            Pairing::Output { family } => (family, family.call_kinds()),
            Pairing::Unpaired => return None,
        };
        let slots = self.slots.get(family, call_id)?;
        let key = if wanted.is_empty() {
            slots.outputs.as_slice().first()?.key
        } else {
            wanted.iter().find_map(|kind| {
                slots
                    .calls
                    .as_slice()
                    .iter()
                    .find(|call| call.kind == *kind)
                    .map(|call| call.key)
            })?
        };
        Some(self.positions.position(key))
    }

    /// Positions of the entries in `keys`, ascending.
    fn positions_of<'a>(&'a self, keys: &'a OrdSet<Key>) -> PositionsOf<'a> {
        PositionsOf {
            keys: KeysIter::Many(keys.iter()),
            positions: &self.positions,
        }
    }

    /// Whether this index and `other` share their rarely changed sets (one allocation).
    #[cfg(test)]
    pub(crate) fn shares_rare_sets(&self, other: &PairingIndex) -> bool {
        Arc::ptr_eq(&self.uncommon, &other.uncommon)
            && matches!(self.calls_without_output, FewKeys::Few { .. })
    }

    /// Number of entries that start a user turn. Time: O(1).
    pub(crate) fn user_turn_count(&self) -> usize {
        self.user_turns.len()
    }

    /// Positions of the entries that start a user turn, ascending.
    pub(crate) fn user_turns(&self) -> PositionsOf<'_> {
        self.positions_of(&self.user_turns)
    }

    /// Number of entries at `position` or after it that start a user turn. Time: O(b) for the b
    /// that start one before `position` (counted instead: after a compaction, `position` is the
    /// end of its replacement history, which holds few of them, while the state's own turns
    /// can be many).
    pub(crate) fn user_turns_from(&self, position: usize) -> usize {
        if position >= self.positions.len() {
            return 0;
        }
        if position == 0 {
            return self.user_turns.len();
        }
        let key = self.positions.key(position);
        let before = self.user_turns.range(..key).count();
        crate::item::count_turn_steps(before + 1);
        self.user_turns.len() - before
    }

    /// Positions of calls with no output, ascending.
    pub(crate) fn calls_without_output(&self) -> PositionsOf<'_> {
        PositionsOf {
            keys: self.calls_without_output.iter(),
            positions: &self.positions,
        }
    }

    /// Positions of outputs with no call, ascending.
    pub(crate) fn orphan_outputs(&self) -> PositionsOf<'_> {
        self.positions_of(&self.uncommon.orphan_outputs)
    }

    /// The entries with image content, as a value that outlives the index (O(1)).
    pub(crate) fn images(&self) -> PositionSet {
        PositionSet {
            keys: self.uncommon.images.clone(),
            positions: self.positions.clone(),
        }
    }

    /// The entries with audio content, as a value that outlives the index (O(1)).
    pub(crate) fn audio(&self) -> PositionSet {
        PositionSet {
            keys: self.uncommon.audio.clone(),
            positions: self.positions.clone(),
        }
    }

    /// Positions of entries of unknown type, ascending.
    pub(crate) fn unknown(&self) -> PositionsOf<'_> {
        self.positions_of(&self.uncommon.unknown)
    }

    /// Number of entries the index accounts for.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn len(&self) -> usize {
        self.positions.len()
    }

    /// The index with every key replaced by its position, so that it compares equal to a
    /// [`PairingIndex::recompute`] of the same entries however many were removed before. Panics
    /// when the key bookkeeping is broken (holes outside the live range, out of order).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn by_position(&self) -> PairingIndex {
        let positions = &self.positions;
        assert!(positions.base <= positions.next, "base past the next key");
        let mut previous = positions.base;
        for &hole in positions.holes.iter() {
            assert!(
                hole > previous && hole + 1 < positions.next,
                "hole {hole} out of order or outside the live keys {}..{}",
                positions.base,
                positions.next
            );
            previous = hole;
        }
        let live = |key: &Key| {
            assert!(
                *key >= positions.base
                    && *key < positions.next
                    && positions.holes.binary_search(key).is_err(),
                "key {key} is not a live entry's"
            );
            positions.position(*key) as Key
        };
        let map = |set: &OrdSet<Key>| set.iter().map(live).collect::<OrdSet<Key>>();
        let members = |members: &Members| {
            let mut mapped = Members::None;
            for member in members.as_slice() {
                mapped.push(Member {
                    key: live(&member.key),
                    ..*member
                });
            }
            mapped
        };
        PairingIndex {
            positions: Positions {
                base: 0,
                next: positions.len() as Key,
                holes: Holes::default(),
            },
            slots: {
                let mut slots = Slots::default();
                for (family, call_id, members_of) in self.slots.all() {
                    assert!(!members_of.is_empty(), "an empty slot is kept");
                    slots.update(family, call_id, |mapped| {
                        *mapped = CallSlots {
                            calls: members(&members_of.calls),
                            outputs: members(&members_of.outputs),
                        }
                    });
                }
                slots
            },
            calls_without_output: self.calls_without_output.iter().map(live).collect(),
            uncommon: Arc::new(Uncommon {
                orphan_outputs: map(&self.uncommon.orphan_outputs),
                images: map(&self.uncommon.images),
                audio: map(&self.uncommon.audio),
                unknown: map(&self.uncommon.unknown),
            }),
            user_turns: map(&self.user_turns),
        }
    }

    /// Recomputes the index from scratch with a different algorithm than [`PairingIndex::push`]
    /// and [`PairingIndex::build`] (two passes over the entries: collect every family's calls
    /// and outputs in an ordinary map, then derive the sets), with each entry's position as its
    /// key, so that comparing it with [`PairingIndex::by_position`] checks the incremental
    /// updates. For `History::assert_invariants`. Time: O(n log n).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn recompute(entries: &[&Entry]) -> PairingIndex {
        use std::collections::BTreeMap;

        #[derive(Default)]
        struct Group {
            calls: Vec<(usize, ItemKind)>,
            outputs: Vec<(usize, ItemKind, bool)>,
        }
        let mut groups: BTreeMap<(Family, CallId), Group> = BTreeMap::new();
        let mut index = PairingIndex {
            positions: Positions {
                base: 0,
                next: entries.len() as Key,
                holes: Holes::default(),
            },
            ..PairingIndex::default()
        };
        for (position, entry) in entries.iter().enumerate() {
            let key = position as Key;
            let flags = entry.flags();
            if flags.has_image() {
                Arc::make_mut(&mut index.uncommon).images.insert(key);
            }
            if flags.has_audio() {
                Arc::make_mut(&mut index.uncommon).audio.insert(key);
            }
            if entry.kind() == ItemKind::Unknown {
                Arc::make_mut(&mut index.uncommon).unknown.insert(key);
            }
            if flags.is_user_turn_boundary() {
                index.user_turns.insert(key);
            }
            let (Some(call_id), pairing) = (entry.call_id(), entry.kind().pairing()) else {
                continue;
            };
            match pairing {
                Pairing::Call { family, .. } => {
                    let group = groups.entry((family, call_id.clone())).or_default();
                    group.calls.push((position, entry.kind()));
                }
                Pairing::Output { family } => {
                    let group = groups.entry((family, call_id.clone())).or_default();
                    let server = family == Family::ToolSearch && flags.is_server_executed();
                    group.outputs.push((position, entry.kind(), !server));
                }
                Pairing::Unpaired => {}
            }
        }
        for ((family, call_id), group) in groups {
            let Group { calls, outputs } = group;
            if outputs.is_empty() {
                index
                    .calls_without_output
                    .extend(calls.iter().map(|&(position, _)| position as Key));
            }
            if calls.is_empty() {
                Arc::make_mut(&mut index.uncommon).orphan_outputs.extend(
                    outputs
                        .iter()
                        .filter(|&&(_, _, removable)| removable)
                        .map(|&(position, _, _)| position as Key),
                );
            }
            let mut slots = CallSlots::default();
            for (position, kind) in calls {
                slots.calls.push(Member {
                    key: position as Key,
                    kind,
                    removable: false,
                });
            }
            for (position, kind, removable) in outputs {
                slots.outputs.push(Member {
                    key: position as Key,
                    kind,
                    removable,
                });
            }
            index
                .slots
                .update(family, &call_id, |members| *members = slots);
        }
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_map_keys_across_holes_and_ends() {
        let mut positions = Positions::default();
        for _ in 0..10 {
            positions.push();
        }
        // Live keys 0..10; remove 0 (front), 4 and 6 (middle), 9 (back).
        positions.remove(0);
        let without_holes = positions.clone();
        positions.remove(4);
        assert_ne!(positions, without_holes, "only the holes differ");
        assert_eq!(positions.clone(), positions);
        positions.remove(6);
        positions.remove(9);
        let live = [1, 2, 3, 5, 7, 8];
        assert_eq!(positions.len(), live.len());
        for (position, &key) in live.iter().enumerate() {
            assert_eq!(positions.key(position), key, "key of position {position}");
            assert_eq!(positions.position(key), position, "position of key {key}");
        }
        // Removing the front up to a hole passes it; removing the back down to one too.
        positions.remove(1);
        positions.remove(2);
        positions.remove(3);
        assert_eq!(positions.base, 5);
        assert_eq!(positions.holes.iter().copied().collect::<Vec<_>>(), vec![6]);
        positions.remove(8);
        positions.remove(7);
        assert_eq!(positions.next, 6);
        assert!(positions.holes.is_empty());
        assert_eq!(positions.len(), 1);
        assert_eq!(positions.key(0), 5);
    }

    /// An entry of the item `json`.
    fn entry(json: serde_json::Value) -> Entry {
        Entry::from_json(json.to_string()).expect("a valid item")
    }

    /// A user message with an image.
    fn image() -> Entry {
        entry(
            serde_json::json!({"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}),
        )
    }

    /// An assistant message (no media, no pairing, no user turn).
    fn text() -> Entry {
        entry(
            serde_json::json!({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "a"}]}),
        )
    }

    /// A media set taken from the index contains exactly the positions it lists, after removals
    /// at the front and in the middle, and no position at or past the end.
    #[test]
    fn a_position_set_contains_exactly_the_positions_it_lists() {
        let mut entries: Vec<Entry> = (0..12)
            .map(|i| if i % 3 == 1 { image() } else { text() })
            .collect();
        let mut index = PairingIndex::default();
        for entry in &entries {
            index.push(entry);
        }
        // The front (a text), one in the middle (a text), the new front (an image).
        for position in [0, 4, 0] {
            let entry = entries.remove(position);
            index.remove(position, &entry);
        }
        let images = index.images();
        let expected: Vec<usize> = (0..entries.len())
            .filter(|&position| entries[position].flags().has_image())
            .collect();
        assert_eq!(expected, [2, 4, 7]);
        assert_eq!(images.iter().collect::<Vec<_>>(), expected);
        for position in 0..entries.len() + 3 {
            assert_eq!(
                images.contains(position),
                expected.contains(&position),
                "position {position}"
            );
        }
    }

    /// Two media sets are the same set (`ptr_eq`) while no entry with that medium is recorded or
    /// removed, whatever else changes, and not once one is.
    #[test]
    fn a_position_set_is_the_same_until_its_medium_changes() {
        let mut index = PairingIndex::default();
        index.push(&image());
        index.push(&text());
        let before = index.images();
        assert!(before.ptr_eq(&index.images()));
        index.push(&text());
        index.remove(1, &text());
        assert!(
            before.ptr_eq(&index.images()),
            "no image recorded or removed"
        );
        index.push(&image());
        assert!(!before.ptr_eq(&index.images()), "an image recorded");
        let after = index.images();
        index.remove(0, &image());
        assert!(!after.ptr_eq(&index.images()), "an image removed");
    }

    /// The positions an index lists, by set.
    fn listed(index: &PairingIndex) -> [Vec<usize>; 6] {
        [
            index.calls_without_output().collect(),
            index.orphan_outputs().collect(),
            index.unknown().collect(),
            index.images().iter().collect(),
            index.audio().iter().collect(),
            index.user_turns().collect(),
        ]
    }

    /// What the index lists (calls without output, orphan outputs, unknown items, media, user
    /// turns) and where it finds an entry's counterpart, written out by hand for a small history,
    /// through records and removals at the front, the back and in the middle; each state also
    /// equals a recomputation.
    #[test]
    fn the_index_lists_what_pairs_and_what_does_not() {
        use serde_json::json;
        let call = |id: &str| {
            entry(json!({"type": "function_call", "name": "f", "arguments": "{}", "call_id": id}))
        };
        let output = |id: &str| {
            entry(json!({"type": "function_call_output", "call_id": id, "output": "ok"}))
        };
        let shell = |id: &str| {
            entry(
                json!({"type": "local_shell_call", "call_id": id, "status": "completed",
            "action": {"type": "exec", "command": ["ls"]}}),
            )
        };
        let search_output = |id: &str, execution: &str| {
            entry(json!({"type": "tool_search_output", "call_id": id,
            "execution": execution, "status": "completed", "tools": []}))
        };
        let user = entry(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}),
        );
        let both = entry(json!({"type": "message", "role": "user", "content": [
            {"type": "input_audio", "audio_url": "data:audio/wav;base64,AAAA"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}));
        let custom =
            entry(json!({"type": "custom_tool_call", "name": "p", "input": "x", "call_id": "c5"}));
        let unknown = entry(json!({"type": "some_future_item", "x": 1}));
        let mut entries = vec![
            user.clone(),                  // 0: a user turn
            call("c1"),                    // 1: answered by 2
            output("c1"),                  // 2
            output("c2"),                  // 3: an orphan
            search_output("c3", "server"), // 4: no call, but a server's output is no orphan
            search_output("c4", "client"), // 5: an orphan
            custom,                        // 6: a call without output
            unknown,                       // 7
            both,                          // 8: a user turn with audio and an image
            shell("c6"),                   // 9: answered by 11, as is 10
            call("c6"),                    // 10
            output("c6"),                  // 11
        ];
        let mut index = PairingIndex::default();
        for entry in &entries {
            index.push(entry);
        }
        let check = |index: &PairingIndex, entries: &[Entry], expected: [&[usize]; 6]| {
            assert_eq!(index.len(), entries.len());
            assert_eq!(listed(index), expected.map(<[usize]>::to_vec));
            assert_eq!(index.user_turn_count(), expected[5].len());
            for position in 0..entries.len() + 2 {
                let from = expected[5].iter().filter(|&&turn| turn >= position).count();
                assert_eq!(
                    index.user_turns_from(position),
                    from,
                    "user turns from {position}"
                );
            }
            let entries: Vec<&Entry> = entries.iter().collect();
            assert_eq!(index.by_position(), PairingIndex::recompute(&entries));
            assert_eq!(
                PairingIndex::build(entries.iter().copied(), entries.len()).by_position(),
                index.by_position()
            );
        };
        check(&index, &entries, [&[6], &[3, 5], &[7], &[8], &[8], &[0, 8]]);
        // A call's first output; an output's first call, a function call before a shell call.
        let counterparts: Vec<Option<usize>> = entries
            .iter()
            .map(|entry| index.counterpart(entry))
            .collect();
        assert_eq!(
            counterparts,
            [
                None,
                Some(2),
                Some(1),
                None,
                None,
                None,
                None,
                None,
                None,
                Some(11),
                Some(11),
                Some(10)
            ]
        );
        // A call for the orphan output: it is answered, and no call waits.
        entries.push(call("c2"));
        index.push(&entries[12]);
        check(&index, &entries, [&[6], &[5], &[7], &[8], &[8], &[0, 8]]);
        assert_eq!(index.counterpart(&entries[3]), Some(12));
        assert_eq!(index.counterpart(&entries[12]), Some(3));
        // A second call of the same id waits for nothing either.
        entries.push(call("c2"));
        index.push(&entries[13]);
        check(&index, &entries, [&[6], &[5], &[7], &[8], &[8], &[0, 8]]);
        // Rolled back: the output is an orphan again.
        for _ in 0..2 {
            let last = entries.pop().expect("an entry");
            index.remove(entries.len(), &last);
        }
        check(&index, &entries, [&[6], &[3, 5], &[7], &[8], &[8], &[0, 8]]);
        // Removing past the end changes nothing.
        index.remove(entries.len(), &user);
        check(&index, &entries, [&[6], &[3, 5], &[7], &[8], &[8], &[0, 8]]);
        // The front, twice: the second time a call, whose output is then an orphan.
        let first = entries.remove(0);
        index.remove(0, &first);
        check(&index, &entries, [&[5], &[2, 4], &[6], &[7], &[7], &[7]]);
        let removed = entries.remove(0);
        index.remove(0, &removed);
        check(&index, &entries, [&[4], &[0, 1, 3], &[5], &[6], &[6], &[6]]);
        // An output in the middle: both calls of its id wait again; its first call is the
        // function call, not the earlier shell call.
        let removed = entries.remove(9);
        index.remove(9, &removed);
        check(
            &index,
            &entries,
            [&[4, 7, 8], &[0, 1, 3], &[5], &[6], &[6], &[6]],
        );
        assert_eq!(index.counterpart(&removed), Some(8));
        // The media and the user turn in the middle.
        let removed = entries.remove(6);
        index.remove(6, &removed);
        check(
            &index,
            &entries,
            [&[4, 6, 7], &[0, 1, 3], &[5], &[], &[], &[]],
        );
    }

    /// Every positions iterator says exactly how many positions it has left (`size_hint` and
    /// `ExactSizeIterator::len`, which `History::stats` counts with), read from the front, from
    /// the back and from both ends, and the back gives the same positions reversed (what a
    /// rollback reads its cut with). Sets of none, one, two (calls without output held inline)
    /// and more, after a removal in the middle.
    #[test]
    fn the_positions_iterators_know_how_many_are_left() {
        use serde_json::json;
        let call = |id: &str| {
            entry(json!({"type": "function_call", "name": "f", "arguments": "{}", "call_id": id}))
        };
        let output = |id: &str| {
            entry(json!({"type": "function_call_output", "call_id": id, "output": "ok"}))
        };
        let user = || {
            entry(json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "q"}]}))
        };
        let unknown = || entry(json!({"type": "some_future_item", "x": 1}));
        fn check<'a>(name: &str, positions: impl Fn() -> PositionsOf<'a>, expected: &[usize]) {
            // From the front (0), from the back (1) and alternately (2), what is left each time.
            for order in 0..3 {
                let mut iter = positions();
                let (mut front, mut back) = (0, expected.len());
                loop {
                    let left = back - front;
                    assert_eq!(
                        iter.size_hint(),
                        (left, Some(left)),
                        "{name}, order {order}"
                    );
                    assert_eq!(iter.len(), left, "{name}, order {order}");
                    let taken = expected.len() - left;
                    let from_back = order == 1 || (order == 2 && taken % 2 == 1);
                    let next = if from_back {
                        iter.next_back()
                    } else {
                        iter.next()
                    };
                    if left == 0 {
                        assert_eq!(next, None, "{name}, order {order}");
                        break;
                    }
                    if from_back {
                        back -= 1;
                        assert_eq!(next, Some(expected[back]), "{name}, order {order}");
                    } else {
                        assert_eq!(next, Some(expected[front]), "{name}, order {order}");
                        front += 1;
                    }
                }
            }
            // Whole, after the bounded reads above (an iterator that never ends fails them
            // rather than filling the memory here).
            assert_eq!(positions().collect::<Vec<_>>(), expected, "{name}");
            let mut reversed: Vec<usize> = positions().rev().collect();
            reversed.reverse();
            assert_eq!(reversed, expected, "{name} from the back");
        }
        let mut entries: Vec<Entry> = Vec::new();
        let mut index = PairingIndex::default();
        let push = |entries: &mut Vec<Entry>, index: &mut PairingIndex, entry: Entry| {
            index.push(&entry);
            entries.push(entry);
        };
        check("none waits", || index.calls_without_output(), &[]);
        check("no user turn", || index.user_turns(), &[]);
        push(&mut entries, &mut index, user()); // 0
        push(&mut entries, &mut index, call("a")); // 1
        check("one waits", || index.calls_without_output(), &[1]);
        push(&mut entries, &mut index, call("b")); // 2
        check("two wait", || index.calls_without_output(), &[1, 2]);
        push(&mut entries, &mut index, output("x")); // 3: an orphan
        push(&mut entries, &mut index, unknown()); // 4
        push(&mut entries, &mut index, user()); // 5
        push(&mut entries, &mut index, call("c")); // 6
        push(&mut entries, &mut index, output("y")); // 7: an orphan
        push(&mut entries, &mut index, unknown()); // 8
        push(&mut entries, &mut index, call("d")); // 9
        push(&mut entries, &mut index, output("z")); // 10: an orphan
        push(&mut entries, &mut index, user()); // 11
        push(&mut entries, &mut index, image()); // 12: a user turn with an image
        assert!(matches!(index.calls_without_output, FewKeys::Many(_)));
        check("four wait", || index.calls_without_output(), &[1, 2, 6, 9]);
        check("orphans", || index.orphan_outputs(), &[3, 7, 10]);
        check("unknown", || index.unknown(), &[4, 8]);
        check("user turns", || index.user_turns(), &[0, 5, 11, 12]);
        let images = index.images();
        check("images", || images.iter(), &[12]);
        // Past a hole in the middle (entry 5, a user turn).
        let removed = entries.remove(5);
        index.remove(5, &removed);
        check(
            "four wait, past a hole",
            || index.calls_without_output(),
            &[1, 2, 5, 8],
        );
        check(
            "orphans, past a hole",
            || index.orphan_outputs(),
            &[3, 6, 9],
        );
        check(
            "user turns, past a hole",
            || index.user_turns(),
            &[0, 10, 11],
        );
        let images = index.images();
        check("images, past a hole", || images.iter(), &[11]);
    }

    /// One member is held inline and two or more behind a pointer, whichever way the count
    /// moves (a removal that leaves one gives it back inline).
    #[test]
    fn members_hold_one_inline_and_more_behind_a_pointer() {
        let member = |key| Member {
            key,
            kind: ItemKind::FunctionCall,
            removable: false,
        };
        let mut members = Members::default();
        assert!(members.is_empty());
        members.push(member(1));
        assert_eq!(members, Members::One(member(1)));
        members.push(member(2));
        members.push(member(3));
        assert!(matches!(&members, Members::Many(list) if list.len() == 3));
        members.remove(2);
        assert!(matches!(&members, Members::Many(list) if list.len() == 2));
        members.remove(1);
        assert_eq!(members, Members::One(member(3)));
        assert_eq!(members.as_slice(), &[member(3)]);
        members.remove(7);
        assert_eq!(members, Members::One(member(3)), "no member with that key");
        members.remove(3);
        assert!(members.is_empty());
    }

    /// Slots whose hashes collide (which 64-bit hashes of real ids never do, so the chain is
    /// driven directly): kept in family and id order whatever the order they come in, found,
    /// changed and unlinked one by one.
    #[test]
    fn colliding_slots_chain_in_order() {
        let call = |key| Member {
            key,
            kind: ItemKind::FunctionCall,
            removable: false,
        };
        let add = |key| move |members: &mut CallSlots| members.calls.push(call(key));
        let id = CallId::new;
        let mut head = Arc::new(Slot {
            family: Family::Function,
            call_id: id("b"),
            members: CallSlots::default(),
            next: None,
        });
        Arc::make_mut(&mut head).members.calls.push(call(0));
        let before = head.clone();
        assert_eq!(
            Slot::update(&mut head, Family::Function, &id("c"), add(1)),
            ((), false)
        );
        assert_eq!(
            Slot::update(&mut head, Family::Function, &id("a"), add(2)),
            ((), false)
        );
        assert_eq!(
            Slot::update(&mut head, Family::Custom, &id("a"), add(3)),
            ((), false)
        );
        assert_eq!(
            Slot::update(&mut head, Family::Function, &id("c"), add(4)),
            ((), false)
        );
        let mut order = Vec::new();
        let mut slot = Some(&*head);
        while let Some(current) = slot {
            order.push((
                current.family,
                current.call_id.as_str(),
                current.members.calls.as_slice().len(),
            ));
            slot = current.next.as_deref();
        }
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted, "chain out of order");
        assert_eq!(order.len(), 4);
        assert_eq!(
            Slot::find(&head, Family::Function, &id("c")).map(|m| m.calls.as_slice().len()),
            Some(2)
        );
        assert_eq!(
            Slot::find(&head, Family::Custom, &id("a")).map(|m| m.calls.as_slice()[0].key),
            Some(3)
        );
        assert_eq!(Slot::find(&head, Family::Custom, &id("b")), None);
        // The earlier version is untouched.
        assert_eq!(before.next, None);
        assert_eq!(before.members.calls.as_slice(), &[call(0)]);
        // Emptying a slot in the middle unlinks it; emptying the first one is reported.
        let (_, emptied) = Slot::update(&mut head, Family::Function, &id("b"), |members| {
            members.calls.remove(0);
        });
        assert!(!emptied);
        assert_eq!(Slot::find(&head, Family::Function, &id("b")), None);
        assert_eq!(
            Slot::find(&head, Family::Function, &id("c")).map(|m| m.calls.as_slice().len()),
            Some(2)
        );
        let first = (head.family, head.call_id.clone());
        let (_, emptied) = Slot::update(&mut head, first.0, &first.1, |members| {
            *members = CallSlots::default();
        });
        assert!(emptied, "the emptied first slot is reported");
        // A change that leaves a new slot empty inserts nothing.
        let (_, emptied) = Slot::update(&mut head, Family::Function, &id("z"), |_| {});
        assert!(!emptied);
        assert_eq!(Slot::find(&head, Family::Function, &id("z")), None);
    }

    /// The slot map finds, changes and drops slots by family and id.
    #[test]
    fn slots_update_and_drop() {
        let member = |key| Member {
            key,
            kind: ItemKind::FunctionCallOutput,
            removable: true,
        };
        let mut slots = Slots::default();
        for i in 0..100u64 {
            slots.update(
                Family::Function,
                &CallId::new(format!("call_{i}")),
                |members| members.outputs.push(member(i)),
            );
        }
        let snapshot = slots.clone();
        // Each id is filed under a hash of its own, so that a lookup is one descent of the map,
        // not a walk along a chain.
        assert_eq!(slots.0.len(), 100, "ids share hashes");
        for i in (0..100u64).step_by(2) {
            slots.update(
                Family::Function,
                &CallId::new(format!("call_{i}")),
                |members| members.outputs.remove(i),
            );
        }
        assert_eq!(slots.all().len(), 50);
        assert_eq!(snapshot.all().len(), 100);
        for i in 0..100u64 {
            let id = CallId::new(format!("call_{i}"));
            let found = slots
                .get(Family::Function, &id)
                .map(|m| m.outputs.as_slice()[0].key);
            assert_eq!(found, (i % 2 == 1).then_some(i), "call_{i}");
            assert_eq!(slots.get(Family::Custom, &id), None);
            assert!(snapshot.get(Family::Function, &id).is_some());
        }
    }

    /// The inline-or-persistent set holds what an ordinary set holds through inserts and
    /// removals that cross the inline size both ways, and a clone keeps its keys.
    #[test]
    fn few_keys_behave_as_a_set() {
        let mut set = FewKeys::default();
        let mut model = std::collections::BTreeSet::new();
        let mut clones = Vec::new();
        let mut state: u64 = 7;
        for step in 0..2000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = (state >> 33) % 6;
            if (state >> 20).is_multiple_of(3) {
                set.remove(key);
                model.remove(&key);
            } else {
                set.insert(key);
                model.insert(key);
            }
            let keys: Vec<Key> = set.iter().copied().collect();
            assert_eq!(
                keys,
                model.iter().copied().collect::<Vec<_>>(),
                "step {step}"
            );
            assert_eq!(set.iter().rev().count(), model.len());
            assert_eq!(
                matches!(set, FewKeys::Few { .. }),
                model.len() <= 2,
                "inline exactly when small, step {step}"
            );
            assert_eq!(set, model.iter().copied().collect::<FewKeys>());
            if step % 100 == 0 {
                clones.push((set.clone(), keys));
            }
        }
        for (clone, keys) in clones {
            assert_eq!(clone.iter().copied().collect::<Vec<_>>(), keys);
        }
        // Equal exactly when the keys are, held inline or not.
        let set = |keys: &[Key]| keys.iter().copied().collect::<FewKeys>();
        assert_ne!(set(&[1]), set(&[2]));
        assert_ne!(set(&[1, 2]), set(&[1, 2, 3]));
        assert_ne!(set(&[]), set(&[0]));
        let mut shrunk = set(&[1, 2, 3]);
        shrunk.remove(3);
        assert_eq!(shrunk, set(&[1, 2]));
    }
}
