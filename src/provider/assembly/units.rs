//! The slots of a projection as a target sees them: each item rendered once per entry (the
//! rendering cache), and the units an assembly pairs and builds messages from.

use std::sync::{Arc, OnceLock};

use crate::item::{Body, ItemError, ItemKind, Pairing};
use crate::projection::{Location, Projection, SentSlot};

use super::super::Target;
use super::super::report::{TargetProjectionError, TargetRepairKind};
use super::counters;

/// How many targets cache a rendering in an entry: one cell each, numbered by
/// [`Rendered::CELL`]. The item layer keeps as many cells as this layer asks for.
pub(crate) const RENDERING_CELLS: usize = 2;

/// How many texts of one entry a target can render: the stored text and its three stripped
/// forms (images, audio, both), as [`SentSlot::Item`] numbers them.
const FORMS: usize = 4;

/// How a unit takes part in pairing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PairRole<'a> {
    /// A call with this call id.
    Call(&'a str),
    /// An output answering this call id.
    Output(&'a str),
    /// Anything else that is sent.
    Other,
    /// Nothing is sent in the conversation (the item has no equivalent, or goes elsewhere).
    Nothing,
}

/// What one Responses item becomes for a target: computed from the item's JSON as the
/// Responses projection sends it (media already stripped), independent of every per-request
/// option, so that it is cached per entry and shared by every version that holds the entry.
pub(crate) trait Rendered: Send + Sync + Sized + 'static {
    /// The entry's cache cell this target owns (below [`RENDERING_CELLS`]).
    const CELL: usize;
    /// The target, for errors.
    const TARGET: Target;
    /// Converts one item.
    ///
    /// # Errors
    ///
    /// When the JSON does not parse.
    fn render(json: &str) -> Result<Self, ItemError>;
    /// How it pairs.
    fn pairing(&self) -> PairRole<'_>;
    /// What the conversion lost or changed, reported at the item's position.
    fn notes(&self) -> &[TargetRepairKind];
    /// Text `index` of the rendering, as the target's message builder numbers its texts (a
    /// fragment of the messages refers to it instead of copying it).
    fn part(&self, index: u32) -> &str;
}

/// One sent item for a target: its rendering and where it is in the live history.
#[derive(Debug)]
pub(crate) struct Unit<R> {
    /// The rendering (shared with the entry's cache).
    pub(crate) rendered: Arc<R>,
    /// Where the item is (a synthetic output is at its call's position).
    pub(crate) at: Location,
    /// Whether it is the synthetic output the Responses projection added after a call.
    pub(crate) synthetic: bool,
}

// Not derived: the rendering is shared, so `R` need not be `Clone`.
impl<R> Clone for Unit<R> {
    fn clone(&self) -> Self {
        Unit {
            rendered: Arc::clone(&self.rendered),
            at: self.at.clone(),
            synthetic: self.synthetic,
        }
    }
}

impl<R: Rendered> Unit<R> {
    /// How it pairs.
    pub(crate) fn pairing(&self) -> PairRole<'_> {
        self.rendered.pairing()
    }

    /// The call id it pairs by, for a call or an output.
    pub(crate) fn pairing_id(&self) -> Option<&str> {
        match self.pairing() {
            PairRole::Call(id) | PairRole::Output(id) => Some(id),
            PairRole::Other | PairRole::Nothing => None,
        }
    }
}

/// The units of the slots of `projection` from position `start` up to `end` (the end when
/// `None`), each rendered through its entry's cache; a synthetic output is rendered here (per
/// projection). Counted per slot by `testing::target_slots_assembled`.
///
/// # Errors
///
/// [`TargetProjectionError::UnreadableItem`] when an item does not parse.
pub(crate) fn collect<R: Rendered>(
    projection: &Projection,
    start: usize,
    end: Option<usize>,
) -> Result<Vec<Unit<R>>, TargetProjectionError> {
    let mut units = Vec::new();
    let unreadable = |position: usize| {
        move |source: ItemError| TargetProjectionError::UnreadableItem {
            position,
            target: R::TARGET,
            source,
        }
    };
    let slots = projection
        .sent_slots_from(start)
        .take_while(|(position, _, _)| end.is_none_or(|end| *position < end));
    for (position, slot, sent) in slots {
        counters::slot_assembled();
        let at = Location {
            position,
            item_kind: slot.kind(),
            call_id: slot.call_id().cloned(),
        };
        match sent {
            SentSlot::Item { body, json, form } => {
                let rendered = cached::<R>(body, form, json).map_err(unreadable(position))?;
                units.push(Unit {
                    rendered,
                    at,
                    synthetic: false,
                });
            }
            SentSlot::CallWithSyntheticOutput { call, output } => {
                let rendered = cached::<R>(call, 0, call.payload.original_json())
                    .map_err(unreadable(position))?;
                let output = render_counted::<R>(output).map_err(unreadable(position))?;
                let output_at = Location {
                    item_kind: synthetic_kind(at.item_kind),
                    ..at.clone()
                };
                units.push(Unit {
                    rendered,
                    at,
                    synthetic: false,
                });
                units.push(Unit {
                    rendered: Arc::new(output),
                    at: output_at,
                    synthetic: true,
                });
            }
        }
    }
    Ok(units)
}

/// The kind of the synthetic output that answers a call of `kind`.
fn synthetic_kind(kind: ItemKind) -> ItemKind {
    match kind.pairing() {
        Pairing::Call { family, .. } => family.output_kind(),
        _ => kind,
    }
}

/// The renderings of one entry for one target, one per text form.
struct Forms<R>([OnceLock<Arc<R>>; FORMS]);

/// Converts `json`, counting the conversion.
fn render_counted<R: Rendered>(json: &str) -> Result<R, ItemError> {
    counters::rendered();
    R::render(json)
}

/// The rendering of `json`, form `form` of the entry whose body is `body`: computed the first
/// time any clone of the entry asks, then shared. An error is not cached.
fn cached<R: Rendered>(body: &Body, form: usize, json: &str) -> Result<Arc<R>, ItemError> {
    let Some(cell) = body.rendering_cell(R::CELL, RENDERING_CELLS) else {
        return render_counted(json).map(Arc::new);
    };
    let forms = cell.get_or_init(|| Box::new(Forms::<R>(Default::default())));
    let Some(slot) = forms
        .downcast_ref::<Forms<R>>()
        .and_then(|forms| forms.0.get(form))
    else {
        // Another type in this target's cell, or a form out of range: not cached.
        return render_counted(json).map(Arc::new);
    };
    if let Some(rendered) = slot.get() {
        return Ok(Arc::clone(rendered));
    }
    let rendered = Arc::new(render_counted(json)?);
    // Two threads may render at once; the first to store wins and both return its rendering.
    let _ = slot.set(Arc::clone(&rendered));
    Ok(slot.get().map_or(rendered, Arc::clone))
}
