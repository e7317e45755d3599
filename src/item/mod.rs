//! The item model: typed Responses API items, the stored [`Entry`], ids and kinds.

mod entry;
mod estimate;
mod ids;
mod kind;
mod model;

pub use entry::{Entry, EntryFlags};
pub(crate) use entry::{Payload, parse_item};
pub use estimate::{BYTES_PER_TOKEN, IMAGE_ESTIMATE_BYTES, ORIGINAL_FILE_IMAGE_ESTIMATE_BYTES};
pub use ids::{CallId, ItemId, SYNTHETIC_ID_NAMESPACE, synthetic_output_id};
pub use kind::{Family, ItemKind, MissingOutput, Pairing};
pub use model::*;
