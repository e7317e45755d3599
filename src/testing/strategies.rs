//! proptest strategies for generated histories, with knobs ([`HistoryConfig`]).
//!
//! Four shapes of the same generator: [`steps`] (the [`Step`] descriptions), [`operations`]
//! (the [`HistoryOp`] sequence — record, compact, roll back — to apply to a history of your
//! own), [`items`] (the item JSON texts only: no compaction or rollback) and [`history`] (a
//! [`History`] with the operations applied).
//!
//! And the operations of model tests on one history or on forks of it ([`history_op`],
//! [`fork_op`], [`fork_ops`], weighted by [`OpWeights`]), with the item generator of your
//! choice.

use proptest::prelude::*;
use proptest::strategy::Union;

use super::ops::{
    ForkOp, HistoryOp, MAX_FORKS, MAX_PICKS, Selection, apply_ops, references, summaries,
};
use super::steps::{CallFamily, Fault, Step, Text, build_ops};
use crate::history::History;
use crate::projection::ProjectionOptions;

/// Which broken pairings the generator makes (each tool round is broken by one of the enabled
/// faults, or not at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokenPairings {
    /// Calls whose output never comes.
    pub missing_outputs: bool,
    /// Outputs without a call.
    pub orphan_outputs: bool,
    /// Calls reusing an earlier call's id in the same family.
    pub duplicate_call_ids: bool,
    /// Calls with the empty call id.
    pub empty_call_ids: bool,
    /// Calls reusing an earlier call's id of another family.
    pub colliding_call_ids: bool,
    /// Outputs recorded before their calls.
    pub outputs_before_calls: bool,
    /// Calls answered by an output of another family.
    pub wrong_family_outputs: bool,
}

impl BrokenPairings {
    /// None: every call answered right after it by its output, every call id fresh.
    pub const NONE: BrokenPairings = BrokenPairings {
        missing_outputs: false,
        orphan_outputs: false,
        duplicate_call_ids: false,
        empty_call_ids: false,
        colliding_call_ids: false,
        outputs_before_calls: false,
        wrong_family_outputs: false,
    };
    /// Every kind of broken pairing.
    pub const ALL: BrokenPairings = BrokenPairings {
        missing_outputs: true,
        orphan_outputs: true,
        duplicate_call_ids: true,
        empty_call_ids: true,
        colliding_call_ids: true,
        outputs_before_calls: true,
        wrong_family_outputs: true,
    };

    /// The faults these knobs enable.
    pub fn faults(self) -> Vec<Fault> {
        let on = [
            self.missing_outputs,
            self.orphan_outputs,
            self.duplicate_call_ids,
            self.empty_call_ids,
            self.colliding_call_ids,
            self.outputs_before_calls,
            self.wrong_family_outputs,
        ];
        Fault::BROKEN
            .into_iter()
            .zip(on)
            .filter_map(|(fault, on)| on.then_some(fault))
            .collect()
    }
}

/// The knobs of the generator.
///
/// [`HistoryConfig::default`] turns everything on (what a test of a pipeline's robustness
/// wants); [`HistoryConfig::well_formed`] turns every fault off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryConfig {
    /// The most steps a history has (a tool round is one step of up to two items).
    pub max_steps: usize,
    /// Which broken pairings occur.
    pub broken_pairings: BrokenPairings,
    /// Images in user messages.
    pub images: bool,
    /// Images in tool outputs (`function_call_output` and `custom_tool_call_output` bodies).
    pub images_in_tool_outputs: bool,
    /// Items of a type this crate does not know.
    pub unknown_items: bool,
    /// `system` messages (which recording filters out).
    pub system_messages: bool,
    /// Local compactions ([`History::compact`]) between items, and compaction items.
    pub compactions: bool,
    /// Rollbacks ([`History::drop_last_n_user_turns`]) between items.
    pub rollbacks: bool,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            max_steps: 24,
            broken_pairings: BrokenPairings::ALL,
            images: true,
            images_in_tool_outputs: true,
            unknown_items: true,
            system_messages: true,
            compactions: true,
            rollbacks: true,
        }
    }
}

impl HistoryConfig {
    /// Every knob on ([`HistoryConfig::default`]).
    pub fn everything() -> Self {
        HistoryConfig::default()
    }

    /// Well-formed histories: every call answered right after it, fresh call ids, no unknown
    /// items, no `system` messages; images, compactions and rollbacks still on.
    pub fn well_formed() -> Self {
        HistoryConfig {
            broken_pairings: BrokenPairings::NONE,
            unknown_items: false,
            system_messages: false,
            ..HistoryConfig::default()
        }
    }

    /// Only items: no compaction and no rollback (what [`items`] generates).
    pub fn items_only(self) -> Self {
        HistoryConfig {
            compactions: false,
            rollbacks: false,
            ..self
        }
    }
}

fn text() -> impl Strategy<Value = Text> {
    any::<u8>().prop_map(Text)
}

fn family() -> impl Strategy<Value = CallFamily> {
    prop::sample::select(&CallFamily::ALL[..])
}

/// One step, as the knobs allow.
pub fn step(config: HistoryConfig) -> BoxedStrategy<Step> {
    let mut arms: Vec<(u32, BoxedStrategy<Step>)> = Vec::new();
    let images = config.images;
    arms.push((
        4,
        (text(), any::<bool>())
            .prop_map(move |(text, image)| Step::User {
                text,
                image: image && images,
            })
            .boxed(),
    ));
    arms.push((3, text().prop_map(|text| Step::Assistant { text }).boxed()));
    arms.push((1, text().prop_map(|text| Step::Developer { text }).boxed()));
    arms.push((
        2,
        any::<bool>()
            .prop_map(|encrypted| Step::Reasoning { encrypted })
            .boxed(),
    ));
    arms.push((1, Just(Step::AgentMessage).boxed()));
    arms.push((1, Just(Step::WebSearch).boxed()));
    arms.push((1, Just(Step::ImageGeneration).boxed()));
    let mut faults = vec![Fault::None, Fault::None, Fault::None];
    faults.extend(config.broken_pairings.faults());
    let output_images = config.images_in_tool_outputs;
    arms.push((
        8,
        (family(), any::<bool>(), prop::sample::select(faults))
            .prop_map(move |(family, image, fault)| Step::Tool {
                family,
                output_image: image && output_images,
                fault,
            })
            .boxed(),
    ));
    if config.system_messages {
        arms.push((1, Just(Step::System).boxed()));
    }
    if config.unknown_items {
        arms.push((
            1,
            any::<bool>()
                .prop_map(|call_id| Step::Unknown { call_id })
                .boxed(),
        ));
    }
    if config.compactions {
        arms.push((
            1,
            any::<bool>()
                .prop_map(|context| Step::CompactionItem { context })
                .boxed(),
        ));
        arms.push((
            1,
            text().prop_map(|summary| Step::Compact { summary }).boxed(),
        ));
    }
    if config.rollbacks {
        arms.push((
            1,
            (1u8..4).prop_map(|turns| Step::Rollback { turns }).boxed(),
        ));
    }
    Union::new_weighted(arms).boxed()
}

/// Sequences of up to `config.max_steps` steps.
pub fn steps(config: HistoryConfig) -> BoxedStrategy<Vec<Step>> {
    prop::collection::vec(step(config), 0..=config.max_steps).boxed()
}

/// Operation sequences (record, compact, roll back) to apply to a history
/// ([`apply_ops_to`](super::apply_ops_to)).
pub fn operations(config: HistoryConfig) -> BoxedStrategy<Vec<HistoryOp>> {
    steps(config).prop_map(|steps| build_ops(&steps)).boxed()
}

/// Item JSON sequences (the knobs' compactions and rollbacks are left out: only compaction
/// items remain), to record with [`History::record_json`] or to feed a pipeline of your own.
pub fn items(config: HistoryConfig) -> BoxedStrategy<Vec<String>> {
    operations(config.items_only())
        .prop_map(|ops| super::ops::recorded_items(&ops))
        .boxed()
}

/// Histories with the generated operations applied (generated items are valid, so applying
/// them does not fail; a history on which it did would be left out, and the kit's own tests
/// check that it never happens).
pub fn history(config: HistoryConfig) -> BoxedStrategy<History> {
    operations(config)
        .prop_filter_map("the generated operations apply", |ops| apply_ops(&ops).ok())
        .boxed()
}

/// How often each operation comes in [`history_op`] and [`fork_op`] (relative weights; 0 never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpWeights {
    /// [`HistoryOp::Record`].
    pub record: u32,
    /// [`HistoryOp::Project`].
    pub project: u32,
    /// [`HistoryOp::RemoveFirst`].
    pub remove_first: u32,
    /// [`HistoryOp::Rollback`].
    pub rollback: u32,
    /// [`HistoryOp::Replace`].
    pub replace: u32,
    /// [`HistoryOp::Compact`].
    pub compact: u32,
    /// [`HistoryOp::SetReferenceContext`].
    pub set_reference_context: u32,
    /// [`ForkOp::Fork`] without a turn: a clone.
    pub fork: u32,
    /// [`ForkOp::Fork`] before a user turn.
    pub fork_before_turn: u32,
}

impl Default for OpWeights {
    /// Every operation: records most often, then removals from the front and rollbacks.
    fn default() -> Self {
        OpWeights {
            record: 8,
            project: 2,
            remove_first: 4,
            rollback: 4,
            replace: 1,
            compact: 1,
            set_reference_context: 2,
            fork: 1,
            fork_before_turn: 1,
        }
    }
}

/// Projection options: every combination of image and audio input, strict or lenient repair,
/// unknown items held back or sent.
pub fn projection_options() -> impl Strategy<Value = ProjectionOptions> {
    (0..16u8).prop_map(super::ops::projection_options)
}

/// A fork: the first one two times in three (so that it grows long), else any of
/// [`MAX_FORKS`].
pub fn fork_index() -> impl Strategy<Value = usize> {
    prop_oneof![2 => Just(0usize), 1 => 0..MAX_FORKS]
}

/// A rollback's turns: 0 to 4, and now and then `usize::MAX` (every turn).
pub fn rollback_turns() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0..5usize, 1 => Just(usize::MAX)]
}

/// What a replacement keeps: any mask, or up to [`MAX_PICKS`] positions in any order.
pub fn selection() -> impl Strategy<Value = Selection> {
    prop_oneof![
        any::<u64>().prop_map(Selection::Mask),
        prop::collection::vec(any::<u8>(), 0..=MAX_PICKS).prop_map(Selection::Picks),
    ]
}

/// One operation on a history, recording items from `item`, with the fork weights of `weights`
/// left out.
pub fn history_op<I: Clone + std::fmt::Debug + 'static>(
    item: BoxedStrategy<I>,
    weights: OpWeights,
) -> BoxedStrategy<HistoryOp<I>> {
    let arms: Vec<(u32, BoxedStrategy<HistoryOp<I>>)> = vec![
        (
            weights.record,
            item.clone().prop_map(HistoryOp::Record).boxed(),
        ),
        (
            weights.project,
            projection_options().prop_map(HistoryOp::Project).boxed(),
        ),
        (weights.remove_first, Just(HistoryOp::RemoveFirst).boxed()),
        (
            weights.rollback,
            rollback_turns().prop_map(HistoryOp::Rollback).boxed(),
        ),
        (
            weights.replace,
            (selection(), prop::option::weighted(0.25, item))
                .prop_map(|(keep, new)| HistoryOp::Replace { keep, new })
                .boxed(),
        ),
        (
            weights.compact,
            prop::sample::select(summaries())
                .prop_map(HistoryOp::Compact)
                .boxed(),
        ),
        (
            weights.set_reference_context,
            prop::sample::select(references())
                .prop_map(HistoryOp::SetReferenceContext)
                .boxed(),
        ),
    ];
    Union::new_weighted(arms.into_iter().filter(|(weight, _)| *weight > 0).collect()).boxed()
}

/// One operation on a set of forks: an operation on a fork ([`fork_index`]) as [`history_op`]
/// makes them, or a new fork, as `weights` say.
pub fn fork_op<I: Clone + std::fmt::Debug + 'static>(
    item: BoxedStrategy<I>,
    weights: OpWeights,
) -> BoxedStrategy<ForkOp<I>> {
    let on_fork = weights.record
        + weights.project
        + weights.remove_first
        + weights.rollback
        + weights.replace
        + weights.compact
        + weights.set_reference_context;
    let arms: Vec<(u32, BoxedStrategy<ForkOp<I>>)> = vec![
        (
            on_fork,
            (fork_index(), history_op(item, weights))
                .prop_map(|(fork, op)| ForkOp::On { fork, op })
                .boxed(),
        ),
        (
            weights.fork,
            fork_index()
                .prop_map(|from| ForkOp::Fork {
                    from,
                    before_turn: None,
                })
                .boxed(),
        ),
        (
            weights.fork_before_turn,
            (fork_index(), 0..5usize)
                .prop_map(|(from, turn)| ForkOp::Fork {
                    from,
                    before_turn: Some(turn),
                })
                .boxed(),
        ),
    ];
    Union::new_weighted(arms.into_iter().filter(|(weight, _)| *weight > 0).collect()).boxed()
}

/// Sequences of `len` operations on forks ([`fork_op`]).
pub fn fork_ops<I: Clone + std::fmt::Debug + 'static>(
    item: BoxedStrategy<I>,
    weights: OpWeights,
    len: std::ops::Range<usize>,
) -> BoxedStrategy<Vec<ForkOp<I>>> {
    prop::collection::vec(fork_op(item, weights), len).boxed()
}
