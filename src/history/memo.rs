//! [`MediaMemo`]: what a history remembers of the media stripping its projections did, so that a
//! projection for a model without image or audio input can skip the per-item check when nothing
//! changed since the last one.
//!
//! The memo records, per set of stripped media, the index's media sets (`PositionSet`s) for
//! which every media entry's forms were computed. While the index holds the same sets (the same
//! tree of keys, `ptr_eq`), they hold the same entries, so a projection that finds its sets here
//! checks nothing. The memo is shared by every clone of a history; a clone that diverges
//! overwrites it, and the other checks again next time (never a second strip). It is never
//! compared, persisted or rebuilt (`docs/architecture.md`, "Projection").

use std::sync::{Mutex, PoisonError};

use super::PositionSet;

/// The image and audio position sets of an index.
type MediaSets = (PositionSet, PositionSet);

/// Per set of stripped media (an index below [`MediaMemo::SLOTS`]), the image and audio position
/// sets whose entries have every stripped form computed. See the module docs.
#[derive(Debug, Default)]
pub(crate) struct MediaMemo {
    covered: [Mutex<Option<MediaSets>>; MediaMemo::SLOTS],
}

impl MediaMemo {
    /// How many sets of stripped media the memo tells apart.
    pub(crate) const SLOTS: usize = 3;

    /// Whether the forms for `slot` were computed for every entry of exactly these sets. Time:
    /// O(1).
    pub(crate) fn covers(&self, slot: usize, images: &PositionSet, audio: &PositionSet) -> bool {
        let Some(cell) = self.covered.get(slot) else {
            return false;
        };
        let covered = cell.lock().unwrap_or_else(PoisonError::into_inner);
        covered
            .as_ref()
            .is_some_and(|(i, a)| i.ptr_eq(images) && a.ptr_eq(audio))
    }

    /// Notes that the forms for `slot` are computed for every entry of these sets. Time: O(1).
    pub(crate) fn cover(&self, slot: usize, images: &PositionSet, audio: &PositionSet) {
        if let Some(cell) = self.covered.get(slot) {
            *cell.lock().unwrap_or_else(PoisonError::into_inner) =
                Some((images.clone(), audio.clone()));
        }
    }
}
