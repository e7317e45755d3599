//! One incremental assembly for every target with positional pairing (Chat Completions,
//! Anthropic Messages). A Responses projection's slots are rendered item by item, ordered so
//! that each call batch is followed by its outputs, named, and built into the target's
//! messages. Checkpoints are kept, so that a projection of another version assembles only what
//! changed.
//!
//! A target plugs in through [`Format`]: how one item converts ([`Rendered`]), which call ids
//! need a new name and which names to try, and how its messages are built from the steps. The
//! rest is done here once: the rendering cache (`units.rs`), pairing and the rules for where an
//! assembly can be cut (`pairing.rs`), naming (`naming.rs`), the fragments the messages are
//! written from (`fragments.rs`), and the kept assemblies with their checkpoints (`memo.rs`).
//! `docs/providers.md` tells the story.

mod counters;
mod fragments;
mod memo;
mod naming;
mod pairing;
mod units;

use std::fmt::Debug;
use std::io::{self, Write};
use std::sync::Arc;

use imbl::Vector;

use crate::history::History;
use crate::projection::{Location, Projection};
use crate::request::{ModelRequest, RequestError};

use super::options::TargetOptions;
use super::report::{TargetProjectionError, TargetRepair, TargetRepairKind};
use super::tools::DroppedTool;

#[cfg(feature = "testing")]
pub use counters::{
    target_names_tried, target_older_versions_resumed, target_renderings, target_slots_assembled,
    target_texts_made,
};
pub(crate) use fragments::{Fragment, Lead, NO_LEAD};
pub(crate) use units::{PairRole, RENDERING_CELLS, Rendered, Unit};

use memo::Memo;

/// Where a target repair comes from, for the order of the repairs at one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The item's conversion ([`Rendered::notes`]).
    Notes,
    /// The message builder ([`Format::build`]).
    Building,
    /// A call sent under a new id.
    Naming,
    /// Pairing: an output moved, dropped or synthesized.
    Pairing,
}

/// A model API with positional pairing, as the assembly needs to know it.
pub(crate) trait Format: Sized + Send + Sync + 'static {
    /// One item converted for the target (cached per entry).
    type Item: Rendered + Debug;
    /// The message builder's state between two steps: what is still open.
    type State: Clone + Default + Debug + Send + Sync;
    /// What two projections must share to share an assembly (the options that change it).
    type Key: Copy + PartialEq + Debug + Send + Sync;
    /// The static texts a fragment's lead refers to; index 0 is the empty text.
    const PIECES: &'static [&'static str];
    /// The order of the repairs made at one position, by where they come from.
    const REPAIR_ORDER: [Source; 4];
    /// The number of the first name [`Format::candidate`] is asked for.
    const FIRST_CANDIDATE: u32;

    /// The key of `options`.
    fn key(options: &TargetOptions) -> Self::Key;
    /// Whether the `nth` call (from 1) whose own id is `id` is sent under another id.
    fn needs_new_id(id: &str, nth: u32) -> bool;
    /// For a search whose names the next call with this base continues (`None`: each search
    /// starts at [`Format::FIRST_CANDIDATE`]).
    fn resume_key(id: &str) -> Option<&str>;
    /// Name `k` to try for the `nth` call of `id`.
    fn candidate(id: &str, nth: u32, k: u32) -> String;
    /// Whether the item is sent apart from the messages (Anthropic's `system`), in order.
    fn hoisted(item: &Self::Item) -> bool;
    /// Builds the next step into `out`.
    fn build(
        key: &Self::Key,
        state: &mut Self::State,
        step: BuildStep<'_, Self::Item>,
        out: &mut Out<'_, Self::Item>,
    );
    /// What a projection writes around the fragments built so far, given the state after the
    /// last step (the open message closed, and any per-request touch).
    fn finish(key: &Self::Key, state: &Self::State) -> Finish<Self::Item>;

    /// Whether the request body sends the reasoning effort.
    const SENDS_REASONING_EFFORT: bool;
    /// Converts the request's Responses tool specs: the target's tools, and those left out.
    fn tools(specs: &[serde_json::Value]) -> (Vec<serde_json::Value>, Vec<DroppedTool>);
    /// Writes the request body of `request` with `messages` and `tools` (the converted tools'
    /// JSON array, empty when none is left).
    ///
    /// # Errors
    ///
    /// [`RequestError::Io`] from the writer.
    fn write_body<W: Write + ?Sized>(
        request: &ModelRequest,
        messages: &Messages<Self>,
        tools: &str,
        out: &mut W,
    ) -> Result<(), RequestError>;
}

/// One step for a target's message builder, in the order pairing chose.
#[derive(Debug)]
pub(crate) enum BuildStep<'a, R> {
    /// A unit that is neither a call nor an output.
    Other(&'a Unit<R>),
    /// A call, sent under `id` (`renamed` when that is not its own).
    Call {
        unit: &'a Unit<R>,
        id: &'a str,
        renamed: bool,
    },
    /// An output of the call sent under `id`.
    Output {
        unit: &'a Unit<R>,
        id: &'a str,
        renamed: bool,
    },
    /// An `aborted` output for a call, sent under `id`, that has no output left.
    Synthetic { id: &'a str },
}

/// Where a message builder writes: the fragments, their byte count, its repairs.
pub(crate) struct Out<'a, R> {
    pieces: &'static [&'static str],
    fragments: &'a mut Vector<Fragment<R>>,
    bytes: &'a mut u64,
    repairs: &'a mut Vec<TargetRepair>,
}

impl<R: Rendered> Out<'_, R> {
    /// Appends a fragment.
    pub(crate) fn push(&mut self, fragment: Fragment<R>) {
        *self.bytes += fragment.len(self.pieces) as u64;
        self.fragments.push_back(fragment);
    }

    /// Reports a repair of the item at `at`.
    pub(crate) fn repair(&mut self, kind: TargetRepairKind, at: &Location) {
        self.repairs.push(TargetRepair {
            kind,
            at: at.clone(),
        });
    }
}

/// What one projection writes around an assembly's fragments: computed per projection from the
/// state after the last step, never kept in the assembly.
#[derive(Debug)]
pub(crate) struct Finish<R> {
    /// Written before the fragments.
    pub(crate) before: Vec<Fragment<R>>,
    /// Written instead of the last fragment.
    pub(crate) last: Option<Fragment<R>>,
    /// Written after them.
    pub(crate) after: Vec<Fragment<R>>,
    /// How many messages are written in all.
    pub(crate) messages: usize,
    /// Repairs made here, each placed after the assembly's repairs at its position.
    pub(crate) repairs: Vec<TargetRepair>,
}

impl<R> Default for Finish<R> {
    fn default() -> Self {
        Finish {
            before: Vec::new(),
            last: None,
            after: Vec::new(),
            messages: 0,
            repairs: Vec::new(),
        }
    }
}

/// A projection's messages for a target: the kept assembly it was made from (shared), and what
/// this projection writes around it. Cloning copies two pointers and the repairs' root.
#[derive(Debug)]
pub(crate) struct Messages<F: Format> {
    memo: Arc<Memo<F>>,
    finish: Arc<Finish<F::Item>>,
    repairs: Vector<TargetRepair>,
}

impl<F: Format> Clone for Messages<F> {
    fn clone(&self) -> Self {
        Messages {
            memo: Arc::clone(&self.memo),
            finish: Arc::clone(&self.finish),
            repairs: self.repairs.clone(),
        }
    }
}

impl<F: Format> Messages<F> {
    /// Number of messages.
    pub(crate) fn len(&self) -> usize {
        self.finish.messages
    }

    /// The target's repairs, in position order.
    pub(crate) fn repairs(&self) -> &Vector<TargetRepair> {
        &self.repairs
    }

    /// The items sent apart from the messages, in order.
    pub(crate) fn hoisted(&self) -> impl Iterator<Item = &F::Item> + '_ {
        self.memo.hoisted.iter().map(|item| &**item)
    }

    /// The length in bytes of the array [`Messages::write_json`] writes. Time: O(1).
    pub(crate) fn json_len(&self) -> usize {
        let sum = |fragments: &[Fragment<F::Item>]| -> u64 {
            fragments.iter().map(|f| f.len(F::PIECES) as u64).sum()
        };
        let mut bytes = 2 + self.memo.bytes + sum(&self.finish.before) + sum(&self.finish.after);
        if let (Some(last), Some(stored)) = (&self.finish.last, self.memo.fragments.last()) {
            bytes = bytes + last.len(F::PIECES) as u64 - stored.len(F::PIECES) as u64;
        }
        usize::try_from(bytes).unwrap_or(usize::MAX)
    }

    /// Writes the messages array, copying the fragments' texts.
    ///
    /// # Errors
    ///
    /// Whatever the writer returns.
    pub(crate) fn write_json<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.write_all(b"[")?;
        self.write_elements(out)?;
        out.write_all(b"]")
    }

    /// Writes the messages without the array's brackets.
    ///
    /// # Errors
    ///
    /// Whatever the writer returns.
    pub(crate) fn write_elements<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        for fragment in &self.finish.before {
            fragment.write(F::PIECES, out)?;
        }
        fragments::write_all(
            F::PIECES,
            &self.memo.fragments,
            self.finish.last.as_ref(),
            out,
        )?;
        for fragment in &self.finish.after {
            fragment.write(F::PIECES, out)?;
        }
        Ok(())
    }
}

/// Projects `projection` (of `history`) for the target `F`: the assembly of the kept version
/// that shares the most with this one, resumed at its last usable checkpoint, or in full.
///
/// # Errors
///
/// [`TargetProjectionError::UnreadableItem`] when an item does not parse.
pub(crate) fn project<F: Format>(
    history: &History,
    projection: &Projection,
    options: &TargetOptions,
) -> Result<Messages<F>, TargetProjectionError> {
    let key = F::key(options);
    let memo = memo::assembly::<F>(history, projection, key)?;
    let finish = F::finish(&key, &memo.end().state);
    let mut repairs = memo.repairs.clone();
    for repair in &finish.repairs {
        // After every repair at its position.
        let at = partition_point(&repairs, |other| other.at.position <= repair.at.position);
        repairs.insert(at, repair.clone());
    }
    Ok(Messages {
        memo,
        finish: Arc::new(finish),
        repairs,
    })
}

/// The index of the first repair for which `before` is false (they are in position order).
pub(super) fn partition_point(
    repairs: &Vector<TargetRepair>,
    before: impl Fn(&TargetRepair) -> bool,
) -> usize {
    let (mut low, mut high) = (0, repairs.len());
    while low < high {
        let mid = low + (high - low) / 2;
        if repairs.get(mid).is_some_and(&before) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    low
}
