//! The two parsers of an item's JSON on the hot path, each a faster way to the answer the derived
//! deserializer gives:
//!
//! * `typed.rs`, the type-first parser: the typed item ([`ResponseItem`](super::ResponseItem)),
//!   in one pass when its `type` comes first;
//! * `header.rs`, the header reader: only what an [`Entry`](super::Entry) needs of an item (its
//!   [`ItemHeader`]: kind, ids, role, turn, token estimate, tool-output body), without building
//!   the typed item; `scan.rs` is the reading of JSON text in place it is built on.
//!
//! Neither decides anything on its own: each answers only where its answer is the typed path's,
//! and gives up (`None`) everywhere else, where the caller takes the typed path. The tests
//! compare each with the derived deserializer (`test_support.rs`: the reference and generated
//! items).

mod header;
mod scan;
#[cfg(test)]
mod test_support;
mod typed;

pub(crate) use header::{ItemHeader, parse_header};
pub(crate) use typed::parse_type_first;
