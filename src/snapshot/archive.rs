//! The rkyv payload of a snapshot (docs/snapshot-format.md, "Payload").

use rkyv::{Archive, Deserialize, Serialize};

use crate::item::{EntryFlags, ItemKind, Role};

/// The root of the payload (`docs/snapshot-format.md`, "Payload"): the open turn, then the
/// world-state baseline and the history with its resume state, nested in that order. The nesting
/// is part of the format: rkyv lays out each struct as a whole (`repr(C)`, aligned to its widest
/// field), so flattening the three would move bytes.
#[derive(Archive, Serialize, Deserialize, Debug)]
pub(crate) struct Payload {
    /// The turn the covered prefix ends inside (`None` when it does not).
    pub(crate) open_turn: Option<StoredOpenTurn>,
    pub(crate) world: PayloadWorld,
}

/// The history's world-state baseline as JSON text (`None` when it has none), and the rest.
#[derive(Archive, Serialize, Deserialize, Debug)]
pub(crate) struct PayloadWorld {
    pub(crate) world_state: Option<String>,
    pub(crate) core: PayloadCore,
}

/// The history, its earlier states, the resume state and the scan facts of the covered prefix.
#[derive(Archive, Serialize, Deserialize, Debug)]
pub(crate) struct PayloadCore {
    pub(crate) thread_id: Option<String>,
    pub(crate) resume_flags: u8,
    pub(crate) truncation_mode: u8,
    pub(crate) truncation_limit: u64,
    pub(crate) reference_context_item: Option<String>,
    pub(crate) previous_turn_settings: Option<String>,
    /// The session's base instructions (`{text, provenance?}`) from the covered prefix.
    pub(crate) base_instructions: Option<String>,
    /// The load report of the covered prefix (JSON of the rollout layer's own stored form).
    pub(crate) load_report: Option<String>,
    /// For a Claude Code transcript's snapshot, what reading it found (JSON of the transcript
    /// layer's own stored form); `None` for a rollout's.
    pub(crate) transcript: Option<String>,
    /// The entry table: the current state's entries first, in order (as many as the header's
    /// entry count), then the entries only earlier states hold.
    pub(crate) entries: Vec<StoredEntry>,
    /// The current state's `turns_from`.
    pub(crate) turns_from: u64,
    /// The earlier states, oldest first.
    pub(crate) earlier: Vec<EarlierState>,
    /// The scan facts of the covered prefix, in line order.
    pub(crate) facts: Vec<StoredFact>,
}

/// The open turn of a payload.
#[derive(Archive, Serialize, Deserialize, Debug)]
pub(crate) struct StoredOpenTurn {
    /// The turn id of its `task_started` event, if it had one.
    pub(crate) turn_id: Option<String>,
    /// The 1-based line number of that event.
    pub(crate) started_line: u64,
    /// The history position of its first item.
    pub(crate) start: u64,
}

/// A state of the history before a compaction: indices into the entry table, and the first
/// position whose user turns are its own.
#[derive(Archive, Serialize, Deserialize, Debug)]
pub(crate) struct EarlierState {
    pub(crate) entries: Vec<u32>,
    pub(crate) turns_from: u64,
}

/// One scan fact of the covered prefix (`kind` numbered by [`fact_code`]).
#[derive(Archive, Serialize, Deserialize, Debug)]
pub(crate) struct StoredFact {
    pub(crate) kind: u8,
    /// Turn events and `turn_context`: the turn id, if the line had one. `None` for the others.
    pub(crate) turn_id: Option<String>,
    /// `thread_rolled_back`: the number of turns. 0 for the others.
    pub(crate) num_turns: u64,
    /// `turn_context`: its payload's JSON text, byte for byte. `None` for the others.
    pub(crate) payload: Option<String>,
}

/// The kinds of scan facts, numbered as in the format.
pub(crate) mod fact_code {
    pub(crate) const TURN_STARTED: u8 = 0;
    pub(crate) const TURN_ENDED: u8 = 1;
    pub(crate) const USER_MESSAGE: u8 = 2;
    pub(crate) const USER_TURN_ITEM: u8 = 3;
    pub(crate) const INTER_AGENT: u8 = 4;
    pub(crate) const ROLLED_BACK: u8 = 5;
    pub(crate) const TURN_CONTEXT: u8 = 6;
    pub(crate) const COMPACTED: u8 = 7;
    pub(crate) const AFTER_ROLLBACK: u8 = 8;
}

/// One entry of the entry table.
#[derive(Archive, Serialize, Deserialize, Debug)]
pub(crate) struct StoredEntry {
    pub(crate) kind: u8,
    pub(crate) role: u8,
    pub(crate) flags: u8,
    pub(crate) tokens: u64,
    pub(crate) call_id: Option<String>,
    pub(crate) item_id: Option<String>,
    pub(crate) json: String,
}

/// The numbering of item kinds in the format. Exhaustive both ways: a new kind does not compile
/// until it has a number (which is a format change).
pub(crate) fn kind_code(kind: ItemKind) -> u8 {
    match kind {
        ItemKind::Message => 0,
        ItemKind::AgentMessage => 1,
        ItemKind::Reasoning => 2,
        ItemKind::LocalShellCall => 3,
        ItemKind::FunctionCall => 4,
        ItemKind::FunctionCallOutput => 5,
        ItemKind::CustomToolCall => 6,
        ItemKind::CustomToolCallOutput => 7,
        ItemKind::ToolSearchCall => 8,
        ItemKind::ToolSearchOutput => 9,
        ItemKind::WebSearchCall => 10,
        ItemKind::ImageGenerationCall => 11,
        ItemKind::Compaction => 12,
        ItemKind::ContextCompaction => 13,
        ItemKind::AdditionalTools => 14,
        ItemKind::Unknown => 15,
    }
}

/// The kind a code stands for; `None` for a code the format does not define.
pub(crate) fn kind_from_code(code: u8) -> Option<ItemKind> {
    Some(match code {
        0 => ItemKind::Message,
        1 => ItemKind::AgentMessage,
        2 => ItemKind::Reasoning,
        3 => ItemKind::LocalShellCall,
        4 => ItemKind::FunctionCall,
        5 => ItemKind::FunctionCallOutput,
        6 => ItemKind::CustomToolCall,
        7 => ItemKind::CustomToolCallOutput,
        8 => ItemKind::ToolSearchCall,
        9 => ItemKind::ToolSearchOutput,
        10 => ItemKind::WebSearchCall,
        11 => ItemKind::ImageGenerationCall,
        12 => ItemKind::Compaction,
        13 => ItemKind::ContextCompaction,
        14 => ItemKind::AdditionalTools,
        15 => ItemKind::Unknown,
        _ => return None,
    })
}

/// The numbering of roles in the format (0 = none).
pub(crate) fn role_code(role: Option<Role>) -> u8 {
    match role {
        None => 0,
        Some(Role::User) => 1,
        Some(Role::Assistant) => 2,
        Some(Role::Developer) => 3,
        Some(Role::System) => 4,
    }
}

/// The role a code stands for; the outer `None` for a code the format does not define.
pub(crate) fn role_from_code(code: u8) -> Option<Option<Role>> {
    Some(match code {
        0 => None,
        1 => Some(Role::User),
        2 => Some(Role::Assistant),
        3 => Some(Role::Developer),
        4 => Some(Role::System),
        _ => return None,
    })
}

/// Flags from their stored bits; `None` when an undefined bit is set.
pub(crate) fn flags_from_bits(bits: u8) -> Option<EntryFlags> {
    EntryFlags::from_bits(bits)
}

/// Borrowed forms of the payload structs, for writing: they archive exactly as the owned types
/// above (`#[rkyv(as = …)]`) but borrow each entry's text and ids from the history, so that
/// writing a snapshot does not first copy every item into an owned `StoredEntry`.
pub(crate) mod borrowed {
    use rkyv::rancor::{Fallible, Source};
    use rkyv::ser::{Allocator, Writer};
    use rkyv::string::{ArchivedString, StringResolver};
    use rkyv::{Archive, Place, Serialize, SerializeUnsized};

    use super::{
        ArchivedPayload, ArchivedPayloadCore, ArchivedPayloadWorld, ArchivedStoredEntry,
        EarlierState, StoredFact, StoredOpenTurn,
    };

    // `omit_bounds` on the fields that borrow: the derive's `Field: Archive` bounds would
    // otherwise hide the impls, and the fields' archived types would not be known to be the
    // owned types' (which `as` needs).

    /// A borrowed string that archives as a `String` does. rkyv has no ready wrapper that
    /// archives a `&str` as an `ArchivedString` (its `InlineAsBox` makes an `ArchivedBox<str>`,
    /// another layout), so these two impls do what rkyv's own impls for `String` do, through
    /// the same public functions.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct StrRef<'a>(pub(crate) &'a str);

    impl Archive for StrRef<'_> {
        type Archived = ArchivedString;
        type Resolver = StringResolver;

        fn resolve(&self, resolver: StringResolver, out: Place<ArchivedString>) {
            ArchivedString::resolve_from_str(self.0, resolver, out);
        }
    }

    impl<S: Fallible + ?Sized> Serialize<S> for StrRef<'_>
    where
        S::Error: Source,
        str: SerializeUnsized<S>,
    {
        fn serialize(&self, serializer: &mut S) -> Result<StringResolver, S::Error> {
            ArchivedString::serialize_from_str(self.0, serializer)
        }
    }

    /// [`StoredEntry`](super::StoredEntry), borrowing its strings.
    #[derive(Archive, Serialize)]
    #[rkyv(as = ArchivedStoredEntry, serialize_bounds(__S: Writer + Allocator, <__S as Fallible>::Error: Source))]
    pub(crate) struct EntryRef<'a> {
        pub(crate) kind: u8,
        pub(crate) role: u8,
        pub(crate) flags: u8,
        pub(crate) tokens: u64,
        #[rkyv(omit_bounds)]
        pub(crate) call_id: Option<StrRef<'a>>,
        #[rkyv(omit_bounds)]
        pub(crate) item_id: Option<StrRef<'a>>,
        #[rkyv(omit_bounds)]
        pub(crate) json: StrRef<'a>,
    }

    /// [`PayloadCore`](super::PayloadCore) with borrowed entries.
    #[derive(Archive, Serialize)]
    #[rkyv(as = ArchivedPayloadCore, serialize_bounds(__S: Writer + Allocator, <__S as Fallible>::Error: Source))]
    pub(crate) struct PayloadCoreRef<'a> {
        pub(crate) thread_id: Option<String>,
        pub(crate) resume_flags: u8,
        pub(crate) truncation_mode: u8,
        pub(crate) truncation_limit: u64,
        pub(crate) reference_context_item: Option<String>,
        pub(crate) previous_turn_settings: Option<String>,
        pub(crate) base_instructions: Option<String>,
        pub(crate) load_report: Option<String>,
        pub(crate) transcript: Option<String>,
        #[rkyv(omit_bounds)]
        pub(crate) entries: Vec<EntryRef<'a>>,
        pub(crate) turns_from: u64,
        pub(crate) earlier: Vec<EarlierState>,
        pub(crate) facts: Vec<StoredFact>,
    }

    /// [`PayloadWorld`](super::PayloadWorld) with borrowed entries.
    #[derive(Archive, Serialize)]
    #[rkyv(as = ArchivedPayloadWorld, serialize_bounds(__S: Writer + Allocator, <__S as Fallible>::Error: Source))]
    pub(crate) struct PayloadWorldRef<'a> {
        pub(crate) world_state: Option<String>,
        #[rkyv(omit_bounds)]
        pub(crate) core: PayloadCoreRef<'a>,
    }

    /// [`Payload`](super::Payload) with borrowed entries.
    #[derive(Archive, Serialize)]
    #[rkyv(as = ArchivedPayload, serialize_bounds(__S: Writer + Allocator, <__S as Fallible>::Error: Source))]
    pub(crate) struct PayloadRef<'a> {
        pub(crate) open_turn: Option<StoredOpenTurn>,
        #[rkyv(omit_bounds)]
        pub(crate) world: PayloadWorldRef<'a>,
    }
}

/// The numberings of `docs/snapshot-format.md` ("Payload": item kinds, roles, entry flag bits) in
/// both directions, and that the borrowed payload archives byte for byte as the owned one.
#[cfg(test)]
mod tests {
    use rkyv::rancor::BoxedError;

    use super::borrowed::{EntryRef, PayloadCoreRef, PayloadRef, PayloadWorldRef, StrRef};
    use super::*;

    /// The kinds by their wire names, in the format's order (code = index).
    const KINDS: [&str; 16] = [
        "message",
        "agent_message",
        "reasoning",
        "local_shell_call",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "tool_search_call",
        "tool_search_output",
        "web_search_call",
        "image_generation_call",
        "compaction",
        "context_compaction",
        "additional_tools",
        "unknown",
    ];

    #[test]
    fn every_item_kind_has_the_formats_number_both_ways() {
        for (code, name) in (0u8..).zip(KINDS) {
            let kind = kind_from_code(code).unwrap_or_else(|| panic!("code {code} undefined"));
            assert_eq!(kind.as_str(), name, "code {code}");
            assert_eq!(kind_code(kind), code, "{name}");
        }
        for code in 16..=u8::MAX {
            assert_eq!(kind_from_code(code), None, "code {code}");
        }
    }

    #[test]
    fn every_role_has_the_formats_number_both_ways() {
        let roles = [
            None,
            Some(Role::User),
            Some(Role::Assistant),
            Some(Role::Developer),
            Some(Role::System),
        ];
        let names = [
            None,
            Some("user"),
            Some("assistant"),
            Some("developer"),
            Some("system"),
        ];
        for ((code, role), name) in (0u8..).zip(roles).zip(names) {
            assert_eq!(role.map(Role::as_str), name);
            assert_eq!(role_from_code(code), Some(role), "code {code}");
            assert_eq!(role_code(role), code, "{name:?}");
        }
        for code in 5..=u8::MAX {
            assert_eq!(role_from_code(code), None, "code {code}");
        }
    }

    /// Bit 0 image, 1 audio, 2 server execution, 3 user turn; any other bit set is refused.
    #[test]
    fn entry_flags_are_the_four_low_bits_and_no_other() {
        for bits in 0..16u8 {
            let flags = flags_from_bits(bits).unwrap_or_else(|| panic!("bits {bits:#b} refused"));
            assert_eq!(flags.has_image(), bits & 1 != 0, "{bits:#b}");
            assert_eq!(flags.has_audio(), bits & 2 != 0, "{bits:#b}");
            assert_eq!(flags.is_server_executed(), bits & 4 != 0, "{bits:#b}");
            assert_eq!(flags.is_user_turn_boundary(), bits & 8 != 0, "{bits:#b}");
            assert_eq!(flags.bits(), bits);
        }
        for bits in 16..=u8::MAX {
            assert!(flags_from_bits(bits).is_none(), "bits {bits:#b}");
        }
    }

    fn owned_entry(n: u8) -> StoredEntry {
        StoredEntry {
            kind: n % 16,
            role: n % 5,
            flags: n % 16,
            tokens: u64::from(n) * 1000 + 7,
            call_id: n.is_multiple_of(2).then(|| format!("call_{n}")),
            item_id: n
                .is_multiple_of(3)
                .then(|| format!("item-{n}-with-a-longer-id")),
            json: format!(
                "{{\"type\":\"message\",\"n\":{n},\"text\":\"{}\"}}",
                "x".repeat(n.into())
            ),
        }
    }

    fn borrowed_entry(entry: &StoredEntry) -> EntryRef<'_> {
        EntryRef {
            kind: entry.kind,
            role: entry.role,
            flags: entry.flags,
            tokens: entry.tokens,
            call_id: entry.call_id.as_deref().map(StrRef),
            item_id: entry.item_id.as_deref().map(StrRef),
            json: StrRef(&entry.json),
        }
    }

    fn facts() -> Vec<StoredFact> {
        vec![StoredFact {
            kind: fact_code::TURN_CONTEXT,
            turn_id: Some("turn-1".into()),
            num_turns: 0,
            payload: Some("{\"model\":\"m\"}".into()),
        }]
    }

    fn earlier() -> Vec<EarlierState> {
        vec![EarlierState {
            entries: vec![2, 0],
            turns_from: 0,
        }]
    }

    fn open_turn() -> Option<StoredOpenTurn> {
        Some(StoredOpenTurn {
            turn_id: Some("turn-2".into()),
            started_line: 9,
            start: 3,
        })
    }

    /// Writing borrows each entry's strings instead of copying them into a [`StoredEntry`]; the
    /// bytes must be those of the owned payload (the reader reads them as it), strings included
    /// (short ones, stored inline, and longer ones, stored out of line).
    #[test]
    fn the_borrowed_payload_archives_byte_for_byte_as_the_owned_one() {
        let entries: Vec<StoredEntry> = (0..40).map(owned_entry).collect();
        let owned = Payload {
            open_turn: open_turn(),
            world: PayloadWorld {
                world_state: Some("{\"cwd\":\"/\"}".into()),
                core: PayloadCore {
                    thread_id: Some("thread".into()),
                    resume_flags: 5,
                    truncation_mode: 1,
                    truncation_limit: 10_000,
                    reference_context_item: Some("{}".into()),
                    previous_turn_settings: Some("{\"model\":\"m\"}".into()),
                    base_instructions: Some("{\"text\":\"be brief\"}".into()),
                    load_report: None,
                    transcript: Some("{\"records\":1}".into()),
                    entries: (0..40).map(owned_entry).collect(),
                    turns_from: 1,
                    earlier: earlier(),
                    facts: facts(),
                },
            },
        };
        let borrowed = PayloadRef {
            open_turn: open_turn(),
            world: PayloadWorldRef {
                world_state: Some("{\"cwd\":\"/\"}".into()),
                core: PayloadCoreRef {
                    thread_id: Some("thread".into()),
                    resume_flags: 5,
                    truncation_mode: 1,
                    truncation_limit: 10_000,
                    reference_context_item: Some("{}".into()),
                    previous_turn_settings: Some("{\"model\":\"m\"}".into()),
                    base_instructions: Some("{\"text\":\"be brief\"}".into()),
                    load_report: None,
                    transcript: Some("{\"records\":1}".into()),
                    entries: entries.iter().map(borrowed_entry).collect(),
                    turns_from: 1,
                    earlier: earlier(),
                    facts: facts(),
                },
            },
        };
        let owned = rkyv::to_bytes::<BoxedError>(&owned).expect("archived");
        let borrowed = rkyv::to_bytes::<BoxedError>(&borrowed).expect("archived");
        assert_eq!(owned.as_slice(), borrowed.as_slice());
        let read = rkyv::access::<ArchivedPayload, BoxedError>(&borrowed).expect("valid");
        let stored = &read.world.core.entries;
        assert_eq!(stored.len(), 40);
        for (stored, entry) in stored.iter().zip(&entries) {
            assert_eq!(stored.json.as_str(), entry.json);
            assert_eq!(
                stored.call_id.as_ref().map(|id| id.as_str()),
                entry.call_id.as_deref()
            );
            assert_eq!(
                stored.item_id.as_ref().map(|id| id.as_str()),
                entry.item_id.as_deref()
            );
            assert_eq!(stored.tokens.to_native(), entry.tokens);
        }
    }
}
