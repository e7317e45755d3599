//! Identity newtypes: thread, turn, call and item ids, and the deterministic ids of synthetic
//! outputs.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

// Each id is one `Arc<str>`: 16 bytes, and `Option` of it too. An entry opened from a snapshot
// copies its ids out of the map rather than keeping them as slices of it: a `ByteString` slice
// is 32 bytes (an enum of both, under `Option`, 40), and the pairing index keys its per-call
// state on `(Family, CallId)`, whose nodes every recorded call or output path-copies and every
// retained version keeps. The entry's body holds the ids, so an entry still has one pointer.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// Cloning is a reference-count increment; the text is shared.
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps a string. Any string is accepted, including the empty string.
            pub fn new(id: impl AsRef<str>) -> Self {
                Self(Arc::from(id.as_ref()))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// True for the empty string.
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self::new(id)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(Arc::from(id))
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                // `Cow` borrows when the JSON string has no escapes, so the only copy is the
                // one into the `Arc`.
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Ok(Self::new(text))
            }
        }
    };
}

string_id! {
    /// The `call_id` that pairs a tool call with its output.
    CallId
}

string_id! {
    /// The `id` of a response item (`msg_…`, `fc_…`, a server id, or any legacy string).
    ItemId
}

string_id! {
    /// The id of a turn, as turn events and `turn_context` lines of a rollout carry it.
    TurnId
}

/// The id of a thread (one conversation): a UUID, the `id` of a rollout's first `session_meta`
/// line. It reads and writes as the UUID's hyphenated lowercase text.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadId(Uuid);

impl ThreadId {
    /// A new random (version 4) thread id.
    pub fn random() -> ThreadId {
        ThreadId(Uuid::new_v4())
    }

    /// The UUID.
    pub fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl From<Uuid> for ThreadId {
    fn from(uuid: Uuid) -> Self {
        ThreadId(uuid)
    }
}

impl std::str::FromStr for ThreadId {
    type Err = uuid::Error;

    /// Parses a UUID in any of the forms `uuid` accepts (hyphenated, simple, braced, URN).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(text).map(ThreadId)
    }
}

impl fmt::Debug for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ThreadId({})", self.0.hyphenated())
    }
}

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl Serialize for ThreadId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0.hyphenated())
    }
}

impl<'de> Deserialize<'de> for ThreadId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(|error| {
            serde::de::Error::custom(format_args!("thread id {text:?} is not a UUID: {error}"))
        })
    }
}

/// Namespace of the UUIDv5 ids given to synthetic outputs.
///
/// Changing it changes the model-visible id of every synthetic output, so every prompt that
/// contains one stops hitting the provider's prompt cache. It is Codex's constant, so a history
/// projected here and one projected by Codex send the same ids.
pub const SYNTHETIC_ID_NAMESPACE: Uuid = Uuid::from_u128(0x90d38d3e_6a5b_4d52_bfe2_2f1e634bfac4);

/// The id of the synthetic output that repairs a call without an output.
///
/// The id is `"<prefix>_" + UUIDv5(SYNTHETIC_ID_NAMESPACE, "<prefix>:<call item id>")`, lowercase
/// and hyphenated. A call without an id, or with an empty one, gives an output without an id
/// (Codex's legacy behaviour), hence `None`.
///
/// # Examples
///
/// ```
/// use agent_history::{synthetic_output_id, ItemId};
///
/// let id = synthetic_output_id("fco", Some(&ItemId::new("fc_existing")));
/// assert_eq!(id.unwrap().as_str(), "fco_742749b0-3645-5d32-a172-676827826a07");
/// assert_eq!(synthetic_output_id("fco", None), None);
/// ```
pub fn synthetic_output_id(prefix: &str, call_item_id: Option<&ItemId>) -> Option<ItemId> {
    let source = call_item_id.filter(|id| !id.is_empty())?;
    let name = format!("{prefix}:{source}");
    let uuid = Uuid::new_v5(&SYNTHETIC_ID_NAMESPACE, name.as_bytes());
    Some(ItemId::from(format!("{prefix}_{}", uuid.hyphenated())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_id_vectors_from_the_reference() {
        let cases = [
            (
                "fco",
                "fc_existing",
                "fco_742749b0-3645-5d32-a172-676827826a07",
            ),
            ("tso", "tsc_abc", "tso_b63461f2-d7a3-5651-b7ba-74201b82b23b"),
            ("ctco", "ctc_1", "ctco_ffd2c872-81a7-5a00-b6f6-884096d1f522"),
        ];
        for (prefix, source, expected) in cases {
            let id = synthetic_output_id(prefix, Some(&ItemId::new(source)));
            assert_eq!(id.as_ref().map(ItemId::as_str), Some(expected));
        }
    }

    /// Every prefix the pairing table uses: the id is the prefix, `_`, and the lowercase
    /// hyphenated UUIDv5 of `<prefix>:<source>` (computed here with `uuid` directly).
    #[test]
    fn synthetic_ids_are_the_prefix_and_a_version_5_uuid() {
        for prefix in ["fco", "ctco", "tso"] {
            for source in ["fc_1", "ctc_1", "tsc_é", "X"] {
                let id = synthetic_output_id(prefix, Some(&ItemId::new(source))).expect("has id");
                let suffix = id
                    .as_str()
                    .strip_prefix(prefix)
                    .and_then(|rest| rest.strip_prefix('_'))
                    .unwrap_or_else(|| panic!("{id}: not {prefix}_"));
                let uuid = Uuid::parse_str(suffix).expect("uuid");
                assert_eq!(uuid.get_version_num(), 5);
                let expected = Uuid::new_v5(
                    &SYNTHETIC_ID_NAMESPACE,
                    format!("{prefix}:{source}").as_bytes(),
                );
                assert_eq!(suffix, expected.hyphenated().to_string(), "{id}");
            }
        }
    }

    #[test]
    fn no_id_for_missing_or_empty_source() {
        assert_eq!(synthetic_output_id("fco", None), None);
        assert_eq!(synthetic_output_id("fco", Some(&ItemId::new(""))), None);
    }

    #[test]
    fn thread_ids_are_uuids_in_hyphenated_form() {
        let id: ThreadId =
            serde_json::from_str(r#""5973B6C0-94B8-487B-A530-2AEB6098AE0C""#).expect("a UUID");
        assert_eq!(id.to_string(), "5973b6c0-94b8-487b-a530-2aeb6098ae0c");
        assert_eq!(
            serde_json::to_string(&id).expect("ser"),
            r#""5973b6c0-94b8-487b-a530-2aeb6098ae0c""#
        );
        let error = serde_json::from_str::<ThreadId>(r#""t-1""#).expect_err("not a UUID");
        assert!(
            error.to_string().contains("\"t-1\" is not a UUID"),
            "{error}"
        );
    }

    #[test]
    fn ids_round_trip_through_json_with_escapes() {
        let id: CallId = serde_json::from_str(r#""a\"b\u00e9""#).expect("parse");
        assert_eq!(id.as_str(), "a\"bé");
        assert_eq!(serde_json::to_string(&id).expect("ser"), r#""a\"bé""#);
    }
}
