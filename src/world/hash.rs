//! [`WorldStateHash`]: SHA-1 digests of world-state values and fragments, in Codex's byte format,
//! so that a hash computed here equals the one Codex computes for the same value.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use sha1::{Digest, Sha1};

use super::role::FragmentRole;

/// The domain tag a fragment hash starts with (so that no JSON hash can equal a fragment hash).
const FRAGMENT_DOMAIN: &[u8] = b"codex-world-state-fragment-v1\0";

/// A lowercase hexadecimal SHA-1 digest (40 characters) of a world-state value
/// ([`WorldStateHash::of_json`]) or fragment ([`WorldStateHash::of_fragment`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorldStateHash(String);

impl WorldStateHash {
    /// The hash of a JSON value: SHA-1 of its compact JSON text with the keys of every object
    /// in sorted order, so that key order does not change it.
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::WorldStateHash;
    /// use serde_json::json;
    ///
    /// assert_eq!(
    ///     WorldStateHash::of_json(&json!({"b": 1, "a": [true]})),
    ///     WorldStateHash::of_json(&json!({"a": [true], "b": 1})),
    /// );
    /// ```
    pub fn of_json(value: &Value) -> WorldStateHash {
        let mut hasher = HashWriter(Sha1::new());
        // Writing to a hasher cannot fail, and a `Value` always serializes.
        serde_json::to_writer(&mut hasher, &SortedKeys(value))
            .expect("a JSON value serializes into a hasher");
        WorldStateHash::from_digest(hasher.0)
    }

    /// The hash of a fragment's rendered text in a message of `role`: SHA-1 over the domain tag
    /// `codex-world-state-fragment-v1\0`, then the role's wire name and the text, each preceded
    /// by its length in bytes as a big-endian `u64`. CRLF line endings in the text are hashed as
    /// LF, so a fragment read back from a file written on Windows hashes the same.
    pub fn of_fragment(role: FragmentRole, text: &str) -> WorldStateHash {
        let text = if text.contains("\r\n") {
            std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
        } else {
            std::borrow::Cow::Borrowed(text)
        };
        let role = role.as_str();
        let mut hasher = Sha1::new();
        hasher.update(FRAGMENT_DOMAIN);
        hasher.update((role.len() as u64).to_be_bytes());
        hasher.update(role.as_bytes());
        hasher.update((text.len() as u64).to_be_bytes());
        hasher.update(text.as_bytes());
        WorldStateHash::from_digest(hasher)
    }

    /// The 40 hexadecimal digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_digest(hasher: Sha1) -> WorldStateHash {
        use fmt::Write as _;
        let digest = hasher.finalize();
        let mut hex = String::with_capacity(2 * digest.len());
        for byte in digest.iter() {
            let _ = write!(hex, "{byte:02x}");
        }
        WorldStateHash(hex)
    }
}

impl fmt::Display for WorldStateHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Feeds the bytes `serde_json` writes into the hasher.
struct HashWriter(Sha1);

impl std::io::Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A JSON value serialized with the keys of every object in sorted order (the crate keeps
/// objects in insertion order).
struct SortedKeys<'a>(&'a Value);

impl Serialize for SortedKeys<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    out.serialize_entry(key, &SortedKeys(value))?;
                }
                out.end()
            }
            Value::Array(values) => serializer.collect_seq(values.iter().map(SortedKeys)),
            scalar => scalar.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Known answers, computed independently (Python's `hashlib` over the same bytes).
    #[test]
    fn hashes_match_known_answers() {
        assert_eq!(
            WorldStateHash::of_json(&json!({"b": [{"d": "x", "c": null}], "a": 1})).as_str(),
            "e296fe102c4ffa62d2bd8305cef6ae038be6441c"
        );
        assert_eq!(
            WorldStateHash::of_fragment(FragmentRole::Developer, "<a>\nb</a>").to_string(),
            "0696218749e94f4191493ee5fc5e0950036a3b2c"
        );
    }

    /// Codex's `world_state_json_hash_ignores_object_key_order`.
    #[test]
    fn the_json_hash_ignores_object_key_order_at_every_depth() {
        let one = json!({"a": {"x": 1, "y": [{"p": 1, "q": 2}]}, "b": null});
        let two = json!({"b": null, "a": {"y": [{"q": 2, "p": 1}], "x": 1}});
        assert_eq!(WorldStateHash::of_json(&one), WorldStateHash::of_json(&two));
        assert_ne!(
            WorldStateHash::of_json(&json!([1, 2])),
            WorldStateHash::of_json(&json!([2, 1])),
            "array order counts"
        );
    }

    /// Codex's `world_state_hash_normalizes_crlf_line_endings`.
    #[test]
    fn the_fragment_hash_normalizes_crlf_and_depends_on_the_role() {
        let lf = WorldStateHash::of_fragment(FragmentRole::User, "<a>\none\ntwo\n</a>");
        let crlf = WorldStateHash::of_fragment(FragmentRole::User, "<a>\r\none\r\ntwo\r\n</a>");
        assert_eq!(lf, crlf);
        assert_ne!(
            lf,
            WorldStateHash::of_fragment(FragmentRole::Developer, "<a>\none\ntwo\n</a>")
        );
        // A lone CR is not a line ending here.
        assert_ne!(
            WorldStateHash::of_fragment(FragmentRole::User, "a\rb"),
            WorldStateHash::of_fragment(FragmentRole::User, "a\nb")
        );
        assert_eq!(lf.as_str().len(), 40);
        assert!(
            lf.as_str()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
}
