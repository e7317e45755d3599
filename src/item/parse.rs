//! The hot-path item parser: one pass over an item's JSON when its `type` comes first.
//!
//! `ResponseItem` is an internally tagged enum, and serde's derived deserializer for such an
//! enum cannot know the variant before it has seen the tag, wherever it is: it buffers the whole
//! object into a private tree of values first and then deserializes the variant from that tree
//! — every key and value visited twice, a node allocated for each. Codex (and this library)
//! writes `type` first in every item, so this parser reads the first key, and when it is `type`
//! deserializes the variant's struct straight from the rest of the object. The message parts and
//! tool-output parts inside (also internally tagged) are read the same way.
//!
//! The fast path never decides anything on its own. It succeeds only on input where it builds the
//! value the derived deserializer builds, and it gives up (`None`) on everything else — `type` not
//! first, a second `type`, a part whose `type` is not first, any error — and the caller then runs
//! the derived deserializer, whose result (or error, with its message and position) is the
//! answer. So accepted and refused items, their values and their error messages are those of the
//! derived deserializer by construction; the tests below (a proptest over generated items) and the
//! `record_json` fuzz target compare the two.
//!
//! The structs of the variants are read by their derived `Deserialize` (same defaults, same
//! field names, same duplicate-field errors), except the three whose part lists are on the hot
//! path — `message`, `function_call_output`, `custom_tool_call_output` — which are read through
//! serde "remote" mirrors here: a mirror lists every field of its struct with the same serde
//! attributes (the compiler checks the names and types; the tests check the attributes), and
//! reads its parts with the fast part reader.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::ids::{CallId, ItemId};
use super::model::{
    ContentItem, CustomToolCallOutput, FunctionCallOutput, ImagePart, Message, MessagePhase,
    Metadata, OutputContentItem, OutputPayload, ResponseItem, Role,
};

/// Parses `json` (text that starts with `{`) in one pass when its `type` comes first and every
/// part's `type` comes first; `None` when it does not, or when the text is not a valid item: the
/// caller then parses it with the derived deserializer.
pub(crate) fn parse_type_first(json: &str) -> Option<ResponseItem> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let item = deserializer.deserialize_map(ItemVisitor).ok()?;
    deserializer.end().ok()?;
    Some(item)
}

/// A key of an object, borrowed from the input when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
            fn visit_string<E: de::Error>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// The rest of an object after its `type`: the same entries, refusing a second `type` (the
/// derived deserializer reports it as a duplicate field).
struct Rest<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Rest<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.0.next_key::<Key<'de>>()? {
            None => Ok(None),
            Some(Key(key)) if key == "type" => Err(de::Error::duplicate_field("type")),
            Some(Key(Cow::Borrowed(key))) => seed
                .deserialize(BorrowedStrDeserializer::new(key))
                .map(Some),
            Some(Key(Cow::Owned(key))) => seed.deserialize(StringDeserializer::new(key)).map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.0.next_value_seed(Strict(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// A value read with every string and number parsed, also where the reader ignores it.
///
/// The derived deserializer buffers the whole item before it reads a field, so every string in
/// it is decoded (a lone surrogate escape is an error), every number converted (`1e400` is out of
/// range) and every nesting level counted — ignored fields and unknown items included. serde_json
/// skips an ignored value more leniently, so the fast path never lets it skip: [`Strict`] wraps
/// each value of an object it reads, and turns the reader's "ignore this" into a full parse.
struct Validated;

impl<'de> Deserialize<'de> for Validated {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValidatedVisitor)
    }
}

struct ValidatedVisitor;

impl<'de> Visitor<'de> for ValidatedVisitor {
    type Value = Validated;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_none<E: de::Error>(self) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Validated, D::Error> {
        Validated::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Validated, A::Error> {
        while seq.next_element::<Validated>()?.is_some() {}
        Ok(Validated)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Validated, A::Error> {
        while map.next_entry::<Validated, Validated>()?.is_some() {}
        Ok(Validated)
    }
}

/// A seed whose deserializer parses what its reader would ignore (see [`Validated`]).
struct Strict<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Strict<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(StrictDeserializer(deserializer))
    }
}

/// A deserializer that forwards everything, except that an ignored value is parsed in full.
struct StrictDeserializer<D>(D);

macro_rules! forward {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method(visitor)
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for StrictDeserializer<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_struct(name, fields, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        Validated::deserialize(self.0)?;
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// Reads the first key of an object; `true` when it is `type`.
fn first_key_is_type<'de, A: MapAccess<'de>>(map: &mut A) -> Result<bool, A::Error> {
    Ok(map
        .next_key::<Key<'de>>()?
        .is_some_and(|Key(key)| key == "type"))
}

/// Why the fast path gives up (never shown: the derived deserializer then speaks).
fn give_up<E: de::Error>() -> E {
    E::custom("not type-first")
}

/// The variant a `type` names, as the derived deserializer maps it (`compaction_summary` is an
/// alias of `compaction`; any other name is `Other`).
#[derive(Clone, Copy)]
enum Tag {
    Message,
    AgentMessage,
    Reasoning,
    LocalShellCall,
    FunctionCall,
    FunctionCallOutput,
    CustomToolCall,
    CustomToolCallOutput,
    ToolSearchCall,
    ToolSearchOutput,
    WebSearchCall,
    ImageGenerationCall,
    Compaction,
    ContextCompaction,
    AdditionalTools,
    CompactionTrigger,
    Other,
}

impl Tag {
    fn of(name: &str) -> Tag {
        match name {
            "message" => Tag::Message,
            "agent_message" => Tag::AgentMessage,
            "reasoning" => Tag::Reasoning,
            "local_shell_call" => Tag::LocalShellCall,
            "function_call" => Tag::FunctionCall,
            "function_call_output" => Tag::FunctionCallOutput,
            "custom_tool_call" => Tag::CustomToolCall,
            "custom_tool_call_output" => Tag::CustomToolCallOutput,
            "tool_search_call" => Tag::ToolSearchCall,
            "tool_search_output" => Tag::ToolSearchOutput,
            "web_search_call" => Tag::WebSearchCall,
            "image_generation_call" => Tag::ImageGenerationCall,
            "compaction" | "compaction_summary" => Tag::Compaction,
            "context_compaction" => Tag::ContextCompaction,
            "additional_tools" => Tag::AdditionalTools,
            "compaction_trigger" => Tag::CompactionTrigger,
            _ => Tag::Other,
        }
    }
}

/// The value of a `type` key: a string (anything else is left to the derived deserializer).
fn tag_value<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Key<'de>, A::Error> {
    map.next_value::<Key<'de>>()
}

struct ItemVisitor;

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = ResponseItem;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an item whose `type` comes first")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResponseItem, A::Error> {
        if !first_key_is_type(&mut map)? {
            return Err(give_up());
        }
        let Key(name) = tag_value(&mut map)?;
        let rest = || MapAccessDeserializer::new(Rest(map));
        Ok(match Tag::of(&name) {
            Tag::Message => ResponseItem::Message(MessageDef::deserialize(rest())?),
            Tag::AgentMessage => ResponseItem::AgentMessage(Deserialize::deserialize(rest())?),
            Tag::Reasoning => ResponseItem::Reasoning(Deserialize::deserialize(rest())?),
            Tag::LocalShellCall => ResponseItem::LocalShellCall(Deserialize::deserialize(rest())?),
            Tag::FunctionCall => ResponseItem::FunctionCall(Deserialize::deserialize(rest())?),
            Tag::FunctionCallOutput => {
                ResponseItem::FunctionCallOutput(FunctionCallOutputDef::deserialize(rest())?)
            }
            Tag::CustomToolCall => ResponseItem::CustomToolCall(Deserialize::deserialize(rest())?),
            Tag::CustomToolCallOutput => {
                ResponseItem::CustomToolCallOutput(CustomToolCallOutputDef::deserialize(rest())?)
            }
            Tag::ToolSearchCall => ResponseItem::ToolSearchCall(Deserialize::deserialize(rest())?),
            Tag::ToolSearchOutput => {
                ResponseItem::ToolSearchOutput(Deserialize::deserialize(rest())?)
            }
            Tag::WebSearchCall => ResponseItem::WebSearchCall(Deserialize::deserialize(rest())?),
            Tag::ImageGenerationCall => {
                ResponseItem::ImageGenerationCall(Deserialize::deserialize(rest())?)
            }
            Tag::Compaction => ResponseItem::Compaction(Deserialize::deserialize(rest())?),
            Tag::ContextCompaction => {
                ResponseItem::ContextCompaction(Deserialize::deserialize(rest())?)
            }
            Tag::AdditionalTools => {
                ResponseItem::AdditionalTools(Deserialize::deserialize(rest())?)
            }
            // A unit variant takes any other fields (a second `type` excepted).
            Tag::CompactionTrigger => {
                IgnoredAny::deserialize(rest())?;
                ResponseItem::CompactionTrigger
            }
            Tag::Other => {
                IgnoredAny::deserialize(rest())?;
                ResponseItem::Other
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Mirrors of the structs whose part lists are on the hot path: every field, with the serde
// attributes of `model.rs`, the parts read by the fast part readers below.

#[derive(Deserialize)]
#[serde(remote = "Message")]
struct MessageDef {
    #[serde(default)]
    id: Option<ItemId>,
    role: Role,
    #[serde(deserialize_with = "content_parts")]
    content: Vec<ContentItem>,
    #[serde(default)]
    phase: Option<MessagePhase>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    encrypted_content: Option<String>,
    #[serde(default, rename = "internal_chat_message_metadata_passthrough")]
    meta: Option<Metadata>,
}

#[derive(Deserialize)]
#[serde(remote = "FunctionCallOutput")]
struct FunctionCallOutputDef {
    #[serde(default)]
    id: Option<ItemId>,
    #[serde(default)]
    call_id: Option<CallId>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(deserialize_with = "output_payload")]
    output: OutputPayload,
    #[serde(default, rename = "internal_chat_message_metadata_passthrough")]
    meta: Option<Metadata>,
}

#[derive(Deserialize)]
#[serde(remote = "CustomToolCallOutput")]
struct CustomToolCallOutputDef {
    #[serde(default)]
    id: Option<ItemId>,
    call_id: CallId,
    #[serde(default)]
    name: Option<String>,
    #[serde(deserialize_with = "output_payload")]
    output: OutputPayload,
    #[serde(default, rename = "internal_chat_message_metadata_passthrough")]
    meta: Option<Metadata>,
}

/// A list of parts, each read by `P` (a part whose `type` is not first gives up).
struct Parts<P>(PhantomData<P>);

impl<'de, P: Part> Visitor<'de> for Parts<P> {
    type Value = Vec<P>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of parts")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<P>, A::Error> {
        // As serde's `Vec` does: a capped hint (JSON gives none).
        let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(part) = seq.next_element_seed(PartSeed::<P>(PhantomData))? {
            parts.push(part);
        }
        Ok(parts)
    }
}

struct PartSeed<P>(PhantomData<P>);

impl<'de, P: Part> DeserializeSeed<'de> for PartSeed<P> {
    type Value = P;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<P, D::Error> {
        deserializer.deserialize_map(PartVisitor::<P>(PhantomData))
    }
}

struct PartVisitor<P>(PhantomData<P>);

impl<'de, P: Part> Visitor<'de> for PartVisitor<P> {
    type Value = P;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a part whose `type` comes first")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<P, A::Error> {
        if !first_key_is_type(&mut map)? {
            return Err(give_up());
        }
        let Key(name) = tag_value(&mut map)?;
        P::read(&name, MapAccessDeserializer::new(Rest(map)))
    }
}

/// A part type the fast part reader reads: the rest of its object after `type`.
trait Part: Sized {
    fn read<'de, D: Deserializer<'de>>(name: &str, rest: D) -> Result<Self, D::Error>;
}

/// The one field of a one-field part variant, as the derived deserializer reads it.
macro_rules! one_field {
    ($name:ident, $field:literal) => {
        #[derive(Deserialize)]
        struct $name {
            #[serde(rename = $field)]
            value: String,
        }
    };
}

one_field!(TextField, "text");
one_field!(AudioField, "audio_url");
one_field!(EncryptedField, "encrypted_content");

/// `output_text`'s fields.
#[derive(Deserialize)]
struct OutputTextFields {
    text: String,
    #[serde(default)]
    annotations: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    logprobs: Option<Vec<serde_json::Value>>,
}

impl Part for ContentItem {
    fn read<'de, D: Deserializer<'de>>(name: &str, rest: D) -> Result<Self, D::Error> {
        Ok(match name {
            "input_text" => ContentItem::InputText {
                text: TextField::deserialize(rest)?.value,
            },
            "input_image" => ContentItem::InputImage(ImagePart::deserialize(rest)?),
            "input_audio" => ContentItem::InputAudio {
                audio_url: AudioField::deserialize(rest)?.value,
            },
            "output_text" => {
                let fields = OutputTextFields::deserialize(rest)?;
                ContentItem::OutputText {
                    text: fields.text,
                    annotations: fields.annotations,
                    logprobs: fields.logprobs,
                }
            }
            _ => {
                IgnoredAny::deserialize(rest)?;
                ContentItem::Other
            }
        })
    }
}

impl Part for OutputContentItem {
    fn read<'de, D: Deserializer<'de>>(name: &str, rest: D) -> Result<Self, D::Error> {
        Ok(match name {
            "input_text" => OutputContentItem::InputText {
                text: TextField::deserialize(rest)?.value,
            },
            "input_image" => OutputContentItem::InputImage(ImagePart::deserialize(rest)?),
            "input_audio" => OutputContentItem::InputAudio {
                audio_url: AudioField::deserialize(rest)?.value,
            },
            "encrypted_content" => OutputContentItem::EncryptedContent {
                encrypted_content: EncryptedField::deserialize(rest)?.value,
            },
            _ => {
                IgnoredAny::deserialize(rest)?;
                OutputContentItem::Other
            }
        })
    }
}

fn content_parts<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<ContentItem>, D::Error> {
    deserializer.deserialize_seq(Parts::<ContentItem>(PhantomData))
}

/// A tool output's body: a string or a list of parts (anything else gives up).
fn output_payload<'de, D: Deserializer<'de>>(deserializer: D) -> Result<OutputPayload, D::Error> {
    struct PayloadVisitor;
    impl<'de> Visitor<'de> for PayloadVisitor {
        type Value = OutputPayload;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string or a list of parts")
        }
        fn visit_str<E: de::Error>(self, text: &str) -> Result<OutputPayload, E> {
            Ok(OutputPayload::Text(text.to_owned()))
        }
        fn visit_string<E: de::Error>(self, text: String) -> Result<OutputPayload, E> {
            Ok(OutputPayload::Text(text))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<OutputPayload, A::Error> {
            Parts::<OutputContentItem>(PhantomData)
                .visit_seq(seq)
                .map(OutputPayload::ContentItems)
        }
    }
    deserializer.deserialize_any(PayloadVisitor)
}

// ---------------------------------------------------------------------------------------------
// The header-only reader: what an entry needs of the items that carry most of a session's bytes
// (tool calls and outputs, reasoning, tool-search outputs, user and assistant text messages),
// without building the typed item.
//
// The typed item holds every string decoded into an owned `String` — copied out of the input
// (through serde_json's scratch buffer when it has escapes), allocated and freed — only for the
// entry to read a few ids and the strings' lengths. This reader walks the item's object itself:
// each string value is found and measured in one pass over its bytes ([`scan_string`]: eight
// bytes at a time to the next quote, backslash or control character, each escape decoded in
// place to count its length, surrogate pairs checked as serde_json checks them), without a copy
// or an allocation; every other value (parts, tools, metadata, a field it does not know) is read
// from the cursor on by serde_json, with the model's type or validated in full as the type-first
// parser validates it. Letting serde_json skip strings as raw slices and measuring them after
// was tried first: the second pass cost what the copy had cost.
//
// Like the type-first parser it decides nothing on its own: it answers only for input where the
// typed path builds an item whose header, estimate and output body are the ones it gives, and
// gives up (`None`) on everything else — `type` not first, a key with escapes, a duplicate or
// missing field, a value of another type, a part it does not read, a string a `str` cannot hold,
// trailing characters — and the caller then takes the typed path. [`fields_of`] lists every
// field of each item's struct by its JSON name. Proptests compare the two paths and the scanner
// with serde_json.

use serde_json::value::RawValue;

use super::estimate::{encrypted_reasoning_len, escaped_len, tokens_for_bytes, value_len};
use super::inter_agent::is_inter_agent_instruction;
use super::kind::ItemKind;
use super::model::{Metadata as MetadataValue, ReasoningContent, ReasoningSummary};
use super::output::{OutputBody, PartsCost};
use super::turn::{is_contextual_user_text, is_summary_text};

/// What an entry needs of an item, read by [`parse_header`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ItemHeader {
    pub(crate) kind: ItemKind,
    pub(crate) call_id: Option<CallId>,
    pub(crate) item_id: Option<ItemId>,
    /// The role of a message.
    pub(crate) role: Option<Role>,
    /// A message that starts a user turn.
    pub(crate) user_turn: bool,
    /// A tool search executed by the server.
    pub(crate) server_executed: bool,
    /// The model-visible bytes the token estimate counts.
    pub(crate) bytes: usize,
    /// What record-time truncation needs of a tool output's body.
    pub(crate) output: OutputBody,
}

/// A JSON string as it stands in the input, checked as serde_json checks a string it decodes into
/// a `String`, and measured without decoding it.
#[derive(Clone, Copy)]
struct RawStr<'a> {
    /// The string's JSON text, quotes included.
    raw: &'a str,
    /// The length of the decoded string in bytes.
    len: usize,
}

impl<'a> RawStr<'a> {
    /// The decoded string (copied only when it has escapes).
    fn decoded(&self) -> Option<Cow<'a, str>> {
        let inner = &self.raw[1..self.raw.len() - 1];
        if inner.len() == self.len {
            // Every escape is longer than what it decodes to: no escape, the text is the string.
            Some(Cow::Borrowed(inner))
        } else {
            serde_json::from_str::<String>(self.raw)
                .ok()
                .map(Cow::Owned)
        }
    }

    fn call_id(&self) -> Option<CallId> {
        self.decoded().map(CallId::new)
    }

    fn item_id(&self) -> Option<ItemId> {
        self.decoded().map(ItemId::new)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: &'a str = <&'de RawValue>::deserialize(deserializer)?.get();
        let measured = raw
            .strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
            .and_then(decoded_len);
        match measured {
            Some(len) => Ok(RawStr { raw, len }),
            None => Err(give_up()),
        }
    }
}

/// The length of the string whose JSON text between the quotes is `inner` — a text serde_json's
/// skip accepted: no unescaped quote or control character, every escape one of `\" \\ \/ \b \f
/// \n \r \t \uXXXX` — once decoded; `None` where decoding it into a `str` fails (a surrogate
/// escape not in a leading-trailing pair) or the text is not what the skip accepts.
pub(crate) fn decoded_len(inner: &str) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES * 0x80;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    let bytes = inner.as_bytes();
    // What the escapes remove: each is longer than what it decodes to.
    let mut removed = 0usize;
    let mut at = 0;
    loop {
        // Eight bytes at a time to the next backslash (one call per string, not per escape: an
        // escape every few dozen bytes is common in tool output). The lowest flagged byte of
        // the zero-byte test is exact.
        while let Some(chunk) = bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(chunk.try_into().ok()?) ^ BACKSLASHES;
            let found = word.wrapping_sub(ONES) & !word & HIGHS;
            if found != 0 {
                at += (found.trailing_zeros() / 8) as usize;
                break;
            }
            at += 8;
        }
        match bytes[at..].iter().position(|&byte| byte == b'\\') {
            Some(offset) => at += offset + 1,
            None => return Some(bytes.len() - removed),
        }
        let (next, shorter) = escape(bytes, at)?;
        at = next;
        removed += shorter;
    }
}

/// Four hex digits, either case.
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, &digit| {
        Some(value * 16 + char::from(digit).to_digit(16)?)
    })
}

/// The header reader's position in an item's text.
///
/// The reader walks the item's object itself, so that each string value is found and measured
/// in one pass ([`scan_string`]) rather than skipped by serde_json and measured again; every
/// other value (parts, tools, metadata, unknown fields) is read by serde_json from the cursor on,
/// with the model's type or fully validated, exactly as the type-first parser reads it.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

/// More opening brackets than this in a value read by serde_json from the cursor and the reader
/// gives up: serde_json counts its nesting limit from where it starts, one level below where
/// the typed path counts it from, so deep nesting is left to the typed path.
const MAX_BRACKETS: usize = 64;

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Skips JSON white space.
    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The next byte after white space, consumed.
    fn next_byte(&mut self) -> Option<u8> {
        self.skip_space();
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    /// A string value.
    fn string(&mut self) -> Option<RawStr<'a>> {
        self.skip_space();
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at;
        let (end, len) = scan_string(self.text.as_bytes(), start + 1)?;
        self.at = end;
        Some(RawStr {
            raw: self.text.get(start..end)?,
            len,
        })
    }

    /// `null` or a string.
    fn nullable_string(&mut self) -> Option<Option<RawStr<'a>>> {
        self.skip_space();
        if self.peek()? == b'n' {
            let rest = self.text.get(self.at..)?;
            if !rest.starts_with("null") {
                return None;
            }
            self.at += 4;
            return Some(None);
        }
        self.string().map(Some)
    }

    /// A key without escapes (one with escapes gives up: the typed path reads it) and its colon.
    fn key(&mut self) -> Option<&'a str> {
        let key = self.string()?;
        let inner = &key.raw[1..key.raw.len() - 1];
        // Every escape is longer than what it decodes to.
        if inner.len() != key.len || self.next_byte()? != b':' {
            return None;
        }
        Some(inner)
    }

    /// A value read by serde_json as a `T`, from the cursor on.
    fn value<T: Deserialize<'a>>(&mut self) -> Option<T> {
        self.skip_space();
        let rest = self.text.get(self.at..)?;
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        let value = values.next()?.ok()?;
        let used = values.byte_offset();
        if memchr::memchr2_iter(b'[', b'{', rest.get(..used)?.as_bytes())
            .nth(MAX_BRACKETS)
            .is_some()
        {
            return None;
        }
        self.at += used;
        Some(value)
    }
}

impl<'a> Cursor<'a> {
    /// An array of text parts, each an object whose `type` comes first: `input_text`, and
    /// `output_text` when `output_text` is set (a message's parts); any other part gives up.
    /// `each` is given each part's text. The fields are those of the model's part variants
    /// (`text`; `annotations` and `logprobs` for `output_text`); any other field is validated in
    /// full, as the derived deserializer, which buffers it, validates it.
    fn text_parts(
        &mut self,
        output_text: bool,
        mut each: impl FnMut(RawStr<'a>) -> Option<()>,
    ) -> Option<()> {
        if self.next_byte()? != b'[' {
            return None;
        }
        self.skip_space();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            if self.next_byte()? != b'{' || self.key()? != "type" {
                return None;
            }
            let is_output_text = match self.string()?.decoded()?.as_ref() {
                "input_text" => false,
                "output_text" if output_text => true,
                _ => return None,
            };
            let mut text = None;
            let (mut annotations, mut logprobs) = (false, false);
            loop {
                match self.next_byte()? {
                    b',' => {}
                    b'}' => break,
                    _ => return None,
                }
                match self.key()? {
                    "text" if text.is_none() => text = Some(self.string()?),
                    "annotations" if is_output_text && !annotations => {
                        annotations = true;
                        self.value::<Option<Vec<serde_json::Value>>>()?;
                    }
                    "logprobs" if is_output_text && !logprobs => {
                        logprobs = true;
                        self.value::<Option<Vec<serde_json::Value>>>()?;
                    }
                    // A second `type`, or a field of the part twice.
                    "type" | "text" | "annotations" | "logprobs" if is_output_text => return None,
                    "type" | "text" => return None,
                    _ => {
                        self.value::<Validated>()?;
                    }
                }
            }
            each(text?)?;
            match self.next_byte()? {
                b',' => {}
                b']' => return Some(()),
                _ => return None,
            }
        }
    }
}

/// Finds the end of the JSON string whose text starts at `at` (after its opening quote) and the
/// length of the string decoded, in one pass: the position after its closing quote and that
/// length. `None` where serde_json would refuse to decode it into a `str`: a control character,
/// an unknown escape, a surrogate escape not in a leading-trailing pair, no closing quote.
fn scan_string(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES * 0x80;
    let start = at;
    // What the escapes remove: each is longer than what it decodes to.
    let mut removed = 0usize;
    loop {
        // Eight bytes at a time to the next quote, backslash or control character (serde_json's
        // skip does the same). The lowest flagged byte of each zero-byte test is exact.
        while let Some(chunk) = bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(chunk.try_into().ok()?);
            let quote = word ^ (ONES * u64::from(b'"'));
            let backslash = word ^ (ONES * u64::from(b'\\'));
            let found = ((quote.wrapping_sub(ONES) & !quote)
                | (backslash.wrapping_sub(ONES) & !backslash)
                | (word.wrapping_sub(ONES * 0x20) & !word))
                & HIGHS;
            if found != 0 {
                at += (found.trailing_zeros() / 8) as usize;
                break;
            }
            at += 8;
        }
        let special = loop {
            let byte = *bytes.get(at)?;
            if byte == b'"' || byte == b'\\' || byte < 0x20 {
                break byte;
            }
            at += 1;
        };
        match special {
            b'"' => return Some((at + 1, at - start - removed)),
            b'\\' => at += 1,
            _ => return None,
        }
        let (next, shorter) = escape(bytes, at)?;
        at = next;
        removed += shorter;
    }
}

/// The escape whose text starts at `at` (just after its backslash), as serde_json decodes it
/// into a `str`: the position after it and how many bytes shorter it is decoded (`\uXXXX` is
/// six bytes and stands for a character of one to three, a surrogate pair of twelve for one of
/// four). `None` for an unknown escape or a surrogate escape not in a leading-trailing pair.
fn escape(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    match *bytes.get(at)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some((at + 1, 1)),
        b'u' => {
            let unit = hex4(bytes.get(at + 1..at + 5)?)?;
            let at = at + 5;
            match unit {
                0..=0x7f => Some((at, 5)),
                0x80..=0x7ff => Some((at, 4)),
                0xd800..=0xdbff => {
                    let next = bytes.get(at..at + 6)?;
                    let trailing =
                        next.starts_with(b"\\u") && (0xdc00..=0xdfff).contains(&hex4(&next[2..])?);
                    trailing.then_some((at + 6, 8))
                }
                0xdc00..=0xdfff => None,
                _ => Some((at, 3)),
            }
        }
        _ => None,
    }
}

/// A field of an item the header reader knows (see [`fields_of`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    // Strings, or `null` where the model's field is an `Option`; the index into `Read::strings`.
    Id = 0,
    CallId = 1,
    Name = 2,
    Namespace = 3,
    Arguments = 4,
    Input = 5,
    Status = 6,
    Execution = 7,
    EncryptedContent = 8,
    // Other values.
    Output = 9,
    Tools = 10,
    Role = 11,
    MessageContent = 12,
    Phase = 13,
    Summary = 14,
    ReasoningContent = 15,
    EncryptedFunctionArgs = 16,
    Meta = 17,
}

const STRINGS: usize = 9;
const META: &str = "internal_chat_message_metadata_passthrough";

/// The fields of each item type the header reader reads: every field of its struct in
/// `model.rs`, by its JSON name.
fn fields_of(kind: ItemKind) -> &'static [(&'static str, Field)] {
    use Field::*;
    match kind {
        ItemKind::Message => &[
            ("id", Id),
            ("role", Role),
            ("content", MessageContent),
            ("phase", Phase),
            ("status", Status),
            ("encrypted_content", EncryptedContent),
            (META, Meta),
        ],
        ItemKind::Reasoning => &[
            ("id", Id),
            ("summary", Summary),
            ("content", ReasoningContent),
            ("encrypted_content", EncryptedContent),
            (META, Meta),
        ],
        ItemKind::FunctionCall => &[
            ("id", Id),
            ("name", Name),
            ("namespace", Namespace),
            ("arguments", Arguments),
            ("call_id", CallId),
            ("status", Status),
            ("encrypted_content", EncryptedContent),
            ("encrypted_function_args", EncryptedFunctionArgs),
            (META, Meta),
        ],
        ItemKind::CustomToolCall => &[
            ("id", Id),
            ("status", Status),
            ("call_id", CallId),
            ("name", Name),
            ("namespace", Namespace),
            ("input", Input),
            ("encrypted_content", EncryptedContent),
            (META, Meta),
        ],
        ItemKind::FunctionCallOutput => &[
            ("id", Id),
            ("call_id", CallId),
            ("name", Name),
            ("namespace", Namespace),
            ("output", Output),
            (META, Meta),
        ],
        ItemKind::CustomToolCallOutput => &[
            ("id", Id),
            ("call_id", CallId),
            ("name", Name),
            ("output", Output),
            (META, Meta),
        ],
        ItemKind::ToolSearchOutput => &[
            ("id", Id),
            ("call_id", CallId),
            ("status", Status),
            ("execution", Execution),
            ("tools", Tools),
            (META, Meta),
        ],
        _ => &[],
    }
}

/// The fields read so far.
#[derive(Default)]
struct Read<'a> {
    /// The fields present, by `Field as u32` bit.
    seen: u32,
    strings: [Option<RawStr<'a>>; STRINGS],
    output: Option<OutputHeader>,
    tools: usize,
    role: Option<Role>,
    content: Vec<MessageText>,
}

impl<'a> Read<'a> {
    fn has(&self, field: Field) -> bool {
        self.seen & (1 << field as u32) != 0
    }

    /// Reads the value of `field` at the cursor (the same field twice gives up: the derived
    /// deserializer refuses a duplicate field).
    fn field(&mut self, field: Field, cursor: &mut Cursor<'a>) -> Option<()> {
        if self.has(field) {
            return None;
        }
        self.seen |= 1 << field as u32;
        match field {
            Field::Output => {
                cursor.skip_space();
                self.output = Some(if cursor.peek()? == b'"' {
                    OutputHeader::text(cursor.string()?.len)
                } else {
                    let mut lens = Vec::new();
                    cursor.text_parts(false, |text| {
                        lens.push(text.len);
                        Some(())
                    })?;
                    OutputHeader::parts(lens)
                });
            }
            Field::Tools => self.tools = cursor.value::<ValuesLen>()?.0,
            Field::Role => self.role = Some(cursor.value::<Role>()?),
            Field::MessageContent => {
                let content = &mut self.content;
                cursor.text_parts(true, |text| {
                    content.push(MessageText::of(text)?);
                    Some(())
                })?;
            }
            Field::Phase => {
                cursor.value::<Option<MessagePhase>>()?;
            }
            Field::Summary => {
                cursor.value::<Vec<ReasoningSummary>>()?;
            }
            Field::ReasoningContent => {
                cursor.value::<Option<Vec<ReasoningContent>>>()?;
            }
            Field::EncryptedFunctionArgs => {
                cursor.value::<Option<Vec<RawStr<'a>>>>()?;
            }
            Field::Meta => {
                cursor.value::<Option<MetadataValue>>()?;
            }
            string => self.strings[string as usize] = cursor.nullable_string()?,
        }
        Some(())
    }

    /// A string field: `None` when absent or `null`.
    fn string(&self, field: Field) -> Option<RawStr<'a>> {
        self.strings.get(field as usize).copied().flatten()
    }

    /// A string field the model requires (present, not `null`).
    fn required(&self, field: Field) -> Option<RawStr<'a>> {
        self.string(field)
    }

    fn len(&self, field: Field) -> usize {
        self.string(field).map_or(0, |text| text.len)
    }
}

/// Reads the header of `json` (text that starts with `{`) when it is a `message` (user or
/// assistant, text parts only), `reasoning`, `function_call`, `custom_tool_call`,
/// `function_call_output`, `custom_tool_call_output` (a string body, or `input_text` parts) or
/// `tool_search_output` item whose `type` comes first; `None` otherwise, and whenever the typed
/// path must decide.
pub(crate) fn parse_header(json: &str) -> Option<ItemHeader> {
    let mut cursor = Cursor { text: json, at: 0 };
    if cursor.next_byte()? != b'{' || cursor.key()? != "type" {
        return None;
    }
    let kind = match cursor.string()?.decoded()?.as_ref() {
        "message" => ItemKind::Message,
        "reasoning" => ItemKind::Reasoning,
        "function_call" => ItemKind::FunctionCall,
        "custom_tool_call" => ItemKind::CustomToolCall,
        "function_call_output" => ItemKind::FunctionCallOutput,
        "custom_tool_call_output" => ItemKind::CustomToolCallOutput,
        "tool_search_output" => ItemKind::ToolSearchOutput,
        _ => return None,
    };
    let fields = fields_of(kind);
    let mut read = Read::default();
    loop {
        match cursor.next_byte()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
        let key = cursor.key()?;
        match fields.iter().find(|(name, _)| *name == key) {
            Some(&(_, field)) => read.field(field, &mut cursor)?,
            // A second `type` is a duplicate field; any other key is ignored, and validated as
            // the derived deserializer, which buffers it, validates it.
            None if key == "type" => return None,
            None => {
                cursor.value::<Validated>()?;
            }
        }
    }
    cursor.skip_space();
    if cursor.at != json.len() {
        return None;
    }
    header_of(kind, &read)
}

/// The header of an item of `kind` whose fields are `read`; `None` when a field the model
/// requires is missing (or `null`), or an id does not decode.
fn header_of(kind: ItemKind, read: &Read<'_>) -> Option<ItemHeader> {
    let mut header = ItemHeader {
        kind,
        call_id: None,
        item_id: match read.string(Field::Id) {
            Some(id) => Some(id.item_id()?),
            None => None,
        },
        role: None,
        user_turn: false,
        server_executed: false,
        bytes: 0,
        output: OutputBody::None,
    };
    let call_id = |required: bool| match read.string(Field::CallId) {
        Some(id) => id.call_id().map(Some),
        None if required => None,
        None => Some(None),
    };
    match kind {
        ItemKind::Message => {
            let role = read.role?;
            if !read.has(Field::MessageContent) {
                return None;
            }
            header.user_turn = match role {
                Role::User => user_turn_of(&read.content),
                Role::Assistant => instruction_turn_of(&read.content),
                // Developer context and system messages (which the record filter drops) are
                // left to the typed path.
                Role::Developer | Role::System => return None,
            };
            header.role = Some(role);
            header.bytes = read
                .content
                .iter()
                .fold(0, |bytes: usize, part| bytes.saturating_add(part.len));
        }
        ItemKind::Reasoning => {
            header.bytes = read
                .string(Field::EncryptedContent)
                .map_or(0, |text| encrypted_reasoning_len(text.len));
        }
        ItemKind::FunctionCall => {
            header.call_id = call_id(true)?;
            header.bytes = read.required(Field::Name)?.len
                + read.len(Field::Namespace)
                + read.required(Field::Arguments)?.len;
        }
        ItemKind::CustomToolCall => {
            header.call_id = call_id(true)?;
            header.bytes = read.required(Field::Name)?.len
                + read.len(Field::Namespace)
                + read.required(Field::Input)?.len;
        }
        ItemKind::FunctionCallOutput | ItemKind::CustomToolCallOutput => {
            let custom = kind == ItemKind::CustomToolCallOutput;
            header.call_id = call_id(custom)?;
            let output = read.output.as_ref()?;
            header.bytes = output
                .bytes
                .saturating_add(read.len(Field::CallId))
                .saturating_add(read.len(Field::Name))
                .saturating_add(read.len(Field::Namespace));
            header.output = output.body;
        }
        ItemKind::ToolSearchOutput => {
            header.call_id = call_id(false)?;
            read.required(Field::Status)?;
            header.server_executed = read.required(Field::Execution)?.decoded()? == "server";
            if !read.has(Field::Tools) {
                return None;
            }
            header.bytes = read.tools;
        }
        _ => return None,
    }
    Some(header)
}

/// An `input_text` or `output_text` part of a message (any other part gives up): its length,
/// and its text when it may be what turn counting looks for.
struct MessageText {
    len: usize,
    /// The decoded text, unless its first character rules out every text turn counting looks
    /// for (contextual fragments, summaries, inter-agent instructions).
    text: Option<String>,
}

impl MessageText {
    fn of(text: RawStr<'_>) -> Option<MessageText> {
        // Trimmed, a contextual fragment starts with `<` or `#` (or `W`: legacy warnings), a
        // summary with `A` (untrimmed), an inter-agent instruction is JSON (`{`, or `[` as
        // serde reads a struct from an array). A text that starts with any other ASCII
        // character, neither white space nor an escape, is none of them.
        let first = text.raw.as_bytes().get(1).copied().unwrap_or(b'"');
        let ruled_out = first.is_ascii()
            && !first.is_ascii_whitespace()
            && !matches!(
                first,
                b'\\' | b'"' | b'<' | b'#' | b'W' | b'A' | b'{' | b'['
            );
        Some(MessageText {
            len: text.len,
            text: if ruled_out {
                None
            } else {
                Some(text.decoded()?.into_owned())
            },
        })
    }

    fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

/// Whether a user message with these parts starts a user turn (see `turn_role_of`): not when a
/// text is a contextual fragment, nor when its first text is a summary.
fn user_turn_of(parts: &[MessageText]) -> bool {
    !(parts
        .iter()
        .any(|part| part.text().is_some_and(is_contextual_user_text))
        || parts
            .first()
            .is_some_and(|part| part.text().is_some_and(is_summary_text)))
}

/// Whether an assistant message with these parts is an inter-agent instruction (see
/// `turn_role_of`): exactly one text, holding a communication's JSON.
fn instruction_turn_of(parts: &[MessageText]) -> bool {
    match parts {
        [part] => part.text().is_some_and(is_inter_agent_instruction),
        _ => false,
    }
}

/// A tool output's body as the header needs it: its model-visible bytes and what truncation
/// needs of it.
struct OutputHeader {
    bytes: usize,
    body: OutputBody,
}

impl OutputHeader {
    fn text(bytes: usize) -> OutputHeader {
        OutputHeader {
            bytes,
            body: OutputBody::Text { bytes },
        }
    }

    /// An array body of `input_text` parts of these lengths.
    fn parts(lens: Vec<usize>) -> OutputHeader {
        let mut cost = PartsCost::default();
        let mut bytes = 0usize;
        for len in lens {
            bytes = bytes.saturating_add(len);
            if len == 0 {
                cost.empty_text = true;
            } else {
                cost.text_bytes = cost.text_bytes.saturating_add(len);
                cost.text_tokens = cost.text_tokens.saturating_add(tokens_for_bytes(len));
            }
        }
        OutputHeader {
            bytes,
            body: OutputBody::Parts(cost),
        }
    }
}

/// The length of a list of JSON values' compact text, as `values_len` counts it for the
/// `serde_json::Value`s the typed item holds, read without building them.
struct ValuesLen(usize);

impl<'de> Deserialize<'de> for ValuesLen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_seq(CompactLenVisitor)
            .map(ValuesLen)
    }
}

/// The length of one JSON value's compact text, as `value_len` counts it for the
/// `serde_json::Value` the same input deserializes into.
struct CompactLen(usize);

impl<'de> Deserialize<'de> for CompactLen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(CompactLenVisitor)
            .map(CompactLen)
    }
}

/// The key serde_json's `Value` reads as a raw value rather than an object (its `raw_value`
/// feature): such an object is left to the typed path.
const RAW_VALUE_KEY: &str = "$serde_json::private::RawValue";

/// Objects with more keys than this are left to the typed path (duplicate keys are looked for
/// pairwise).
const MAX_KEYS: usize = 64;

struct CompactLenVisitor;

impl CompactLenVisitor {
    fn number<E: de::Error>(value: serde_json::Value) -> Result<usize, E> {
        value_len(&value).map_err(|_| give_up())
    }
}

impl<'de> Visitor<'de> for CompactLenVisitor {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<usize, E> {
        Ok(if value { 4 } else { 5 })
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<usize, E> {
        Self::number(value.into())
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<usize, E> {
        Self::number(value.into())
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<usize, E> {
        Self::number(value.into())
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<usize, E> {
        Ok(escaped_len(value))
    }
    fn visit_unit<E: de::Error>(self) -> Result<usize, E> {
        Ok(4)
    }
    fn visit_none<E: de::Error>(self) -> Result<usize, E> {
        Ok(4)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_any(CompactLenVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let (mut total, mut count) = (2usize, 0usize);
        while let Some(CompactLen(len)) = seq.next_element()? {
            total = total.saturating_add(len);
            count += 1;
        }
        Ok(total.saturating_add(count.saturating_sub(1)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        let mut total = 2usize;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            // A repeated key is one entry of a `Value` (the last value in the first place), and
            // the raw-value key is not an object at all: the typed path decides.
            if key == RAW_VALUE_KEY || keys.len() >= MAX_KEYS || keys.contains(&key) {
                return Err(give_up());
            }
            let CompactLen(len) = map.next_value()?;
            total = total
                .saturating_add(escaped_len(&key))
                .saturating_add(1)
                .saturating_add(len);
            keys.push(key);
        }
        Ok(total.saturating_add(keys.len().saturating_sub(1)))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::item::entry::parse_item;

    /// The derived deserializer, the reference.
    fn generic(json: &str) -> Result<ResponseItem, String> {
        serde_json::from_str::<ResponseItem>(json).map_err(|error| error.to_string())
    }

    /// The fast path agrees with the derived deserializer wherever it answers, and `parse_item`
    /// (fast path, then the derived deserializer) gives what the derived deserializer gives:
    /// the same item, or an error with the same message.
    fn agree(json: &str) {
        let reference = generic(json);
        if let Some(fast) = parse_type_first(json) {
            assert_eq!(Ok(&fast), reference.as_ref(), "fast path on {json}");
        }
        let parsed = parse_item(json).map_err(|error| match error {
            crate::item::ItemError::InvalidJson { source, .. } => source.to_string(),
            other => other.to_string(),
        });
        assert_eq!(parsed, reference, "parse_item on {json}");
    }

    /// Whether the fast path takes `json` at all (the hot path must not fall back).
    fn fast(json: &str) -> bool {
        parse_type_first(json).is_some()
    }

    #[test]
    fn every_known_type_written_type_first_takes_the_fast_path() {
        let items = [
            r#"{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"hi \"there\"\n\u00e9"},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"high"},{"type":"input_audio","audio_url":"data:audio/wav;base64,AA"}]}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[],"logprobs":[{"x":1.5}]}],"phase":"final_answer","status":"completed","internal_chat_message_metadata_passthrough":{"k":[1,2]}}"#,
            r#"{"type":"agent_message","author":"/root","recipient":"/root/a","content":[{"type":"input_text","text":"go"},{"type":"encrypted_content","encrypted_content":"xyz"}]}"#,
            r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"content":null,"encrypted_content":"abc"}"#,
            r#"{"type":"local_shell_call","call_id":"c","status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":5,"working_directory":null,"env":{"A":"b"},"user":null}}"#,
            r#"{"type":"function_call","name":"f","namespace":"n","arguments":"{}","call_id":"c","encrypted_function_args":["a"]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":"text"}"#,
            r#"{"type":"function_call_output","name":"event","output":[{"type":"input_text","text":"t"},{"type":"input_image","file_id":"f","detail":"original"},{"type":"encrypted_content","encrypted_content":"e"},{"type":"zzz","q":1}]}"#,
            r#"{"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":"*** Begin"}"#,
            r#"{"type":"custom_tool_call_output","call_id":"c","name":"x","output":[{"type":"input_audio","audio_url":"u"}]}"#,
            r#"{"type":"tool_search_call","call_id":null,"execution":"client","arguments":{"query":"q","limit":2}}"#,
            r#"{"type":"tool_search_output","call_id":"c","status":"completed","execution":"server","tools":[{"a":1}]}"#,
            r#"{"type":"web_search_call","status":"completed","action":{"type":"search","query":"q"}}"#,
            r#"{"type":"image_generation_call","status":"completed","revised_prompt":"p","result":"AAAA"}"#,
            r#"{"type":"compaction","encrypted_content":"e"}"#,
            r#"{"type":"compaction_summary","encrypted_content":"e"}"#,
            r#"{"type":"context_compaction"}"#,
            r#"{"type":"additional_tools","role":"developer","tools":[]}"#,
            r#"{"type":"compaction_trigger","anything":[1,{"a":null}]}"#,
            r#"{"type":"ghost_snapshot","ghost_commit":{"id":"x"}}"#,
            r#"{"type":"other"}"#,
        ];
        for json in items {
            assert!(fast(json), "{json}");
            agree(json);
        }
    }

    #[test]
    fn the_fast_path_gives_up_where_the_derived_deserializer_decides() {
        let items = [
            // `type` not first: buffered, still read.
            r#"{"role":"user","type":"message","content":[]}"#,
            // A part whose `type` is not first.
            r#"{"type":"message","role":"user","content":[{"text":"a","type":"input_text"}]}"#,
            // A second `type`: refused by both.
            r#"{"type":"message","role":"user","content":[],"type":"message"}"#,
            r#"{"type":"zzz","type":"yyy"}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","type":"input_text","text":"a"}]}"#,
            // Duplicate fields, wrong types, missing fields, trailing characters.
            r#"{"type":"message","role":"user","role":"user","content":[]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":5}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text"}]}"#,
            r#"{"type":"function_call","name":"f","arguments":"{}"}"#,
            r#"{"type":"message","role":"user","content":[]} x"#,
            r#"{"type":7,"role":"user","content":[]}"#,
            r#"{"type":"message","role":"user","content":{}}"#,
            r#"{}"#,
            // What serde_json skips leniently but the derived deserializer (which buffers
            // everything) parses: a lone surrogate, a number out of range, in an ignored field,
            // an unknown item, an unknown part.
            r#"{"type":"future_item","x":"\udc00"}"#,
            r#"{"type":"future_item","x":[1e400]}"#,
            r#"{"type":"compaction_trigger","x":{"y":"\ud800"}}"#,
            r#"{"type":"message","role":"user","content":[],"x":"\ud800"}"#,
            r#"{"type":"message","role":"user","content":[{"type":"zzz","x":-1e999}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"a","x":"\udfff"}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","x":"\ud800"}]}"#,
        ];
        for json in items {
            assert!(!fast(json), "{json}");
            agree(json);
        }
        // Nesting beyond serde_json's limit, where nothing reads it.
        let deep = format!(
            r#"{{"type":"zzz","x":{}1{}}}"#,
            "[".repeat(130),
            "]".repeat(130)
        );
        assert!(!fast(&deep));
        agree(&deep);
        let deep_field = format!(
            r#"{{"type":"message","role":"user","content":[],"x":{}1{}}}"#,
            "[".repeat(130),
            "]".repeat(130)
        );
        agree(&deep_field);
        // Escapes in keys and in the tag decode as the derived deserializer decodes them.
        let escaped = r#"{"typ\u0065":"mess\u0061ge","r\u006fle":"user","content":[{"type":"input_text","t\u0065xt":"a"}]}"#;
        assert!(fast(escaped));
        agree(escaped);
    }

    // ------------------------------------------------------------------------------------------
    // Generated items: every known type (and unknown ones), fields in any order with `type`
    // usually first, now and then a field of the wrong type, a missing or duplicated field,
    // text with escapes.

    fn string() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-z ]{0,8}",
            1 => "[a-z\"\\\\\n\t\u{e9}\u{1F600}/]{0,8}",
        ]
        .prop_map(|text| serde_json::to_string(&text).expect("a string"))
    }

    fn wrong() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_owned()),
            Just("5".to_owned()),
            Just("-1.5e3".to_owned()),
            Just("true".to_owned()),
            Just("{}".to_owned()),
            Just("[]".to_owned()),
            // Valid only to a lenient skip.
            Just(r#""\ud800x""#.to_owned()),
            Just("1e400".to_owned()),
            string(),
        ]
    }

    fn value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("18446744073709551615".to_owned()),
            Just("-7".to_owned()),
            Just("0.1".to_owned()),
            Just("false".to_owned()),
            Just(r#""\udc00""#.to_owned()),
            Just("-2e308".to_owned()),
            string(),
        ];
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3)
                    .prop_map(|values| format!("[{}]", values.join(","))),
                prop::collection::vec(("[a-c]", inner), 0..3).prop_map(|fields| {
                    let fields: Vec<String> = fields
                        .into_iter()
                        .map(|(key, value)| format!("\"{key}\":{value}"))
                        .collect();
                    format!("{{{}}}", fields.join(","))
                }),
            ]
        })
    }

    /// An object from its fields: `type` first unless `shuffle` moves it, now and then a field
    /// dropped or duplicated.
    fn object(tag: String, fields: Vec<(&'static str, String)>) -> impl Strategy<Value = String> {
        let count = fields.len() + 1;
        (
            prop::sample::subsequence((0..count).collect::<Vec<_>>(), count),
            any::<prop::sample::Index>(),
            0..20u8,
            any::<prop::sample::Index>(),
        )
            .prop_map(move |(_, swap, mode, pick)| {
                let mut all: Vec<(String, String)> = vec![("type".to_owned(), tag.clone())];
                all.extend(fields.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
                match mode {
                    // `type` somewhere else.
                    0 | 1 => {
                        let at = swap.index(all.len());
                        all.swap(0, at);
                    }
                    // A field dropped.
                    2 if all.len() > 1 => {
                        all.remove(1 + pick.index(all.len() - 1));
                    }
                    // A field duplicated (maybe `type`).
                    3 => {
                        let field = all[pick.index(all.len())].clone();
                        all.push(field);
                    }
                    // Other fields reordered.
                    4..=6 if all.len() > 2 => {
                        let at = 1 + swap.index(all.len() - 1);
                        all[1..].rotate_left(at - 1);
                    }
                    _ => {}
                }
                let fields: Vec<String> = all
                    .into_iter()
                    .map(|(key, value)| format!("\"{key}\":{value}"))
                    .collect();
                format!("{{{}}}", fields.join(","))
            })
    }

    /// A field value: usually `good`, now and then of a wrong type.
    fn field(good: impl Strategy<Value = String> + 'static) -> BoxedStrategy<String> {
        prop_oneof![12 => good, 1 => wrong()].boxed()
    }

    fn opt(good: impl Strategy<Value = String> + 'static) -> BoxedStrategy<String> {
        prop_oneof![3 => good, 1 => Just("null".to_owned())].boxed()
    }

    fn list(part: BoxedStrategy<String>) -> BoxedStrategy<String> {
        prop::collection::vec(part, 0..4)
            .prop_map(|parts| format!("[{}]", parts.join(",")))
            .boxed()
    }

    fn tag(names: &'static [&'static str]) -> BoxedStrategy<String> {
        prop::sample::select(names)
            .prop_map(|name| format!("\"{name}\""))
            .boxed()
    }

    /// A part of any list: any part type, with the fields of every part type to pick from.
    fn part() -> BoxedStrategy<String> {
        const TYPES: &[&str] = &[
            "input_text",
            "output_text",
            "input_image",
            "input_audio",
            "encrypted_content",
            "summary_text",
            "reasoning_text",
            "text",
            "zzz",
        ];
        (
            tag(TYPES),
            prop::sample::subsequence(
                vec![
                    "text",
                    "image_url",
                    "file_id",
                    "detail",
                    "audio_url",
                    "encrypted_content",
                    "annotations",
                    "logprobs",
                ],
                0..4,
            ),
            prop::collection::vec(field(string()), 8),
            prop_oneof![
                Just("\"high\"".to_owned()),
                Just("\"original\"".to_owned()),
                Just("\"huge\"".to_owned())
            ],
            opt(list(value().boxed())),
        )
            .prop_flat_map(|(tag, keys, strings, detail, array)| {
                let fields = keys
                    .into_iter()
                    .zip(strings)
                    .map(|(key, text)| {
                        let value = match key {
                            "detail" => detail.clone(),
                            "annotations" | "logprobs" => array.clone(),
                            _ => text,
                        };
                        (key, value)
                    })
                    .collect();
                object(tag, fields)
            })
            .boxed()
    }

    fn item() -> impl Strategy<Value = String> {
        const TYPES: &[&str] = &[
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
            "compaction_summary",
            "context_compaction",
            "additional_tools",
            "compaction_trigger",
            "ghost_snapshot",
            "other",
        ];
        let role = prop_oneof![
            Just("\"user\"".to_owned()),
            Just("\"assistant\"".to_owned()),
            Just("\"developer\"".to_owned()),
            Just("\"system\"".to_owned()),
            Just("\"robot\"".to_owned()),
        ];
        let output = prop_oneof![string(), list(part())];
        let action = prop_oneof![
            Just(r#"{"type":"exec","command":["ls","-l"],"timeout_ms":null,"working_directory":"/","env":null,"user":null}"#.to_owned()),
            Just(r#"{"command":["ls"],"type":"exec"}"#.to_owned()),
            Just(r#"{"type":"search","query":"q"}"#.to_owned()),
            Just(r#"{"type":"open_page"}"#.to_owned()),
            value(),
        ];
        (
            tag(TYPES),
            prop::collection::vec(field(string()), 12),
            field(role),
            field(list(part())),
            field(output),
            field(action),
            opt(value()),
            field(list(value().boxed())),
        )
            .prop_flat_map(|(tag, strings, role, parts, output, action, meta, tools)| {
                let s = |i: usize| strings[i].clone();
                let execution = if strings[0].len() % 2 == 0 {
                    "\"server\"".to_owned()
                } else {
                    s(1)
                };
                let fields: Vec<(&'static str, String)> = match tag.trim_matches('"') {
                    "message" => vec![
                        ("id", s(0)),
                        ("role", role),
                        ("content", parts),
                        ("status", s(2)),
                        ("internal_chat_message_metadata_passthrough", meta),
                    ],
                    "agent_message" => {
                        vec![("author", s(0)), ("recipient", s(1)), ("content", parts)]
                    }
                    "reasoning" => vec![
                        ("id", s(0)),
                        ("summary", parts.clone()),
                        ("content", parts),
                        ("encrypted_content", s(3)),
                    ],
                    "local_shell_call" => vec![
                        ("call_id", s(0)),
                        ("status", "\"completed\"".to_owned()),
                        ("action", action),
                    ],
                    "function_call" => vec![
                        ("name", s(0)),
                        ("arguments", s(1)),
                        ("call_id", s(2)),
                        ("namespace", s(3)),
                    ],
                    "function_call_output" | "custom_tool_call_output" => vec![
                        ("id", s(4)),
                        ("call_id", s(0)),
                        ("name", s(1)),
                        ("namespace", s(5)),
                        ("output", output),
                        ("internal_chat_message_metadata_passthrough", meta),
                    ],
                    "custom_tool_call" => vec![("call_id", s(0)), ("name", s(1)), ("input", s(2))],
                    "tool_search_call" => vec![
                        ("call_id", s(0)),
                        ("execution", execution),
                        ("arguments", meta),
                    ],
                    "tool_search_output" => vec![
                        ("call_id", s(0)),
                        ("status", s(1)),
                        ("execution", execution),
                        ("tools", tools),
                    ],
                    "web_search_call" => vec![("status", s(0)), ("action", action)],
                    "image_generation_call" => {
                        vec![("status", s(0)), ("result", s(1)), ("revised_prompt", s(2))]
                    }
                    "compaction" | "compaction_summary" | "context_compaction" => {
                        vec![("encrypted_content", s(0))]
                    }
                    "additional_tools" => vec![("role", role), ("tools", tools)],
                    _ => vec![("x", s(0)), ("content", parts)],
                };
                object(tag, fields)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_fast_path_and_the_derived_deserializer_agree(json in item()) {
            agree(&json);
        }
    }

    // ------------------------------------------------------------------------------------------
    // The header-only reader against the typed path.

    /// Where the header reader answers, the typed path accepts the item and builds the entry it
    /// describes: same kind, ids, flags, token estimate and tool-output body.
    fn header_agrees(json: &str) -> bool {
        use crate::item::entry::Entry;
        let Some(header) = parse_header(json) else {
            return false;
        };
        let item = generic(json).unwrap_or_else(|error| panic!("{error}: {json}"));
        let expected = Entry::from_parts(Box::from(json), &item).expect("an entry");
        let (entry, output) = Entry::from_header(Box::from(json), header).expect("an entry");
        assert_eq!(entry, expected, "header of {json}");
        assert_eq!(entry.body().payload, expected.body().payload);
        assert_eq!(output, OutputBody::of(&item), "output body of {json}");
        true
    }

    #[test]
    fn the_header_reader_reads_calls_outputs_and_reasoning() {
        let items = [
            r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c\u00e9"}"#,
            r#"{"type":"function_call","name":"f","namespace":"n","arguments":"{}","call_id":"c","encrypted_function_args":["a"],"internal_chat_message_metadata_passthrough":{"k":[1,2.5,null]}}"#,
            r#"{"type":"custom_tool_call","id":"ctc","status":"completed","call_id":"c","name":"apply_patch","input":"*** Begin\n\ud83d\ude00"}"#,
            r#"{"type":"function_call_output","id":"fco","call_id":"c","output":"a\n\"b\" \\ \/ \u0001 \u00e9 \u20ac \ud83d\ude00 é 😀"}"#,
            r#"{"type":"function_call_output","name":"event","output":""}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"t\n"},{"type":"input_text","text":""}]}"#,
            r#"{"type":"custom_tool_call_output","call_id":"c","name":"x","output":[]}"#,
            r#"{"type":"custom_tool_call_output","call_id":"c","output":"ok","zzz":{"deep":[1,{"a":"\u00e9"}]}}"#,
            r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"content":null,"encrypted_content":"abc"}"#,
            r#"{"type":"reasoning","summary":[],"encrypted_content":null}"#,
            r#"{"type":"tool_search_output","call_id":"c","status":"completed","execution":"server","tools":[{"a":1,"b":[true,false,null,-7,0.5,1e3,"x\u0001\n\"é"],"c":{}}]}"#,
            r#"{"type":"tool_search_output","call_id":null,"status":"s","execution":"cli\u0065nt","tools":[]}"#,
            "{ \"type\" : \"function_call_output\" , \"call_id\" : \"c\" , \"output\" : \"x\" } ",
            // Messages: a user turn or not, by what their texts hold.
            r#"{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"cargo test"}]}"#,
            r#"{"type":"message","role":"user","content":[]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":""}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"  <environment_context>\n</environment_context>"}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_text","text":"\u003cskill>x</SKILL>"}]}"#,
            r##"{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /r\n</INSTRUCTIONS>"}]}"##,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"Warning: The maximum number of unified exec processes you can keep open is 3"}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"\u00a0<turn_aborted></turn_aborted>"}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"output_text","text":"x","annotations":[],"logprobs":null}],"phase":"final_answer","status":"completed"}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"{\"author\":\"/root\"}"}]}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"},{"type":"output_text","text":"b"}]}"#,
            // Parts with white space, fields in any order after `type`, fields it does not know.
            "{\"type\":\"message\",\"role\":\"user\",\"content\":[ { \"type\" : \"input_text\" , \"x\" : [1, {\"y\": null}] , \"text\" : \"a\" } , {\"type\":\"output_text\",\"logprobs\":[{\"p\":-0.5}],\"text\":\"\\u00e9\",\"annotations\":null} ] }",
            r#"{"type":"function_call_output","call_id":"c","output":[ ]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"a","extra":{"k":"v"}},{"type":"input_text","text":"bb"}]}"#,
        ];
        for json in items {
            assert!(header_agrees(json), "{json}");
        }
        let summary = format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{}\nthe summary"}}]}}"#,
            crate::item::SUMMARY_PREFIX
        );
        assert!(header_agrees(&summary));
        // An inter-agent instruction starts a turn.
        let instruction = serde_json::json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": serde_json::json!({
                "author": "/root", "recipient": "/root/worker", "other_recipients": [],
                "content": "go", "trigger_turn": true
            }).to_string()}],
        })
        .to_string();
        header_agrees(&instruction);
    }

    #[test]
    fn the_header_reader_leaves_the_rest_to_the_typed_path() {
        let items = [
            // Types it does not read; messages with media, unknown parts, developer or system.
            r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"u"}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"zzz"}]}"#,
            r#"{"type":"message","role":"developer","content":[{"type":"input_text","text":"<model_switch>"}]}"#,
            r#"{"type":"message","role":"system","content":[]}"#,
            r#"{"type":"message","role":"robot","content":[]}"#,
            r#"{"type":"tool_search_call","call_id":"c","execution":"client","arguments":{}}"#,
            r#"{"type":"zzz"}"#,
            // `type` not first, a second `type`, duplicates, missing or mistyped fields.
            r#"{"call_id":"c","type":"function_call_output","output":"x"}"#,
            r#"{"type":"function_call_output","call_id":"c","output":"x","type":"x"}"#,
            r#"{"type":"function_call_output","call_id":"c","call_id":"d","output":"x"}"#,
            r#"{"type":"function_call","name":"f","arguments":"{}"}"#,
            r#"{"type":"function_call","name":"f","arguments":{},"call_id":"c"}"#,
            r#"{"type":"function_call_output","call_id":5,"output":"x"}"#,
            r#"{"type":"function_call_output","output":5}"#,
            // Strings a `str` cannot hold, where the skip accepts them.
            r#"{"type":"function_call_output","call_id":"c","output":"\ud800"}"#,
            r#"{"type":"function_call_output","call_id":"c","output":"\udc00\ud800"}"#,
            r#"{"type":"function_call_output","call_id":"c","output":"\ud800\u0041"}"#,
            r#"{"type":"function_call_output","call_id":"c","output":"\ud800x"}"#,
            r#"{"type":"reasoning","summary":[],"encrypted_content":"\udfff"}"#,
            r#"{"type":"custom_tool_call_output","call_id":"c","output":"x","zzz":"\ud800"}"#,
            r#"{"type":"custom_tool_call_output","call_id":"c","output":"x","zzz":1e400}"#,
            // Parts other than text, a part whose `type` is not first.
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"u"}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"text":"a","type":"input_text"}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"\ud800"}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"a","x":"\udc00"}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"a","type":"input_text"}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"a","text":"b"}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":null}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text"}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"output_text","text":"a"}]}"#,
            r#"{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"a"},]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"output_text","text":"a","annotations":[],"annotations":[]}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"output_text","text":"a","logprobs":5}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}"#,
            // What a `Value` reads differently: a repeated key, the raw-value key.
            r#"{"type":"tool_search_output","status":"s","execution":"server","tools":[{"a":1,"a":22}]}"#,
            r#"{"type":"tool_search_output","status":"s","execution":"server","tools":[{"$serde_json::private::RawValue":"1"}]}"#,
            // Trailing characters, not an object.
            r#"{"type":"function_call_output","call_id":"c","output":"x"} x"#,
        ];
        for json in items {
            assert!(!header_agrees(json), "{json}");
            agree(json);
        }
        assert!(parse_header(r#"["type","function_call_output"]"#).is_none());
        // Nesting beyond serde_json's limit, in an output array.
        let deep = format!(
            r#"{{"type":"function_call_output","call_id":"c","output":[{{"type":"input_text","text":"a","x":{}1{}}}]}}"#,
            "[".repeat(126),
            "]".repeat(126)
        );
        assert!(!header_agrees(&deep));
        agree(&deep);
    }

    /// A string written as JSON with each character escaped or not at random: `\uXXXX` (a
    /// surrogate pair above the BMP), the short escapes, or as it is.
    fn escaped(text: &str, choices: &[u8]) -> String {
        let mut json = String::from("\"");
        for (index, c) in text.chars().enumerate() {
            let choice = choices
                .get(index % choices.len().max(1))
                .copied()
                .unwrap_or(0);
            let short = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                '\u{8}' => Some("\\b"),
                '\u{c}' => Some("\\f"),
                '/' if choice % 2 == 0 => Some("\\/"),
                _ => None,
            };
            if choice % 3 == 0 || (short.is_none() && (c < ' ')) {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    if choice % 4 == 0 {
                        json.push_str(&format!("\\u{unit:04X}"));
                    } else {
                        json.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            } else if let Some(short) = short {
                json.push_str(short);
            } else {
                json.push(c);
            }
        }
        json.push('"');
        json
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_header_reader_and_the_typed_path_agree(json in item()) {
            if header_agrees(&json) {
                agree(&json);
            }
        }

        #[test]
        fn the_measured_length_is_the_decoded_length(
            text in any::<String>(),
            choices in prop::collection::vec(any::<u8>(), 1..8),
        ) {
            let json = escaped(&text, &choices);
            prop_assert_eq!(serde_json::from_str::<String>(&json).expect("JSON"), text.clone());
            prop_assert_eq!(decoded_len(&json[1..json.len() - 1]), Some(text.len()));
            // Found and measured in one pass, followed by anything.
            let followed = format!("{json},\"x\"");
            prop_assert_eq!(scan_string(followed.as_bytes(), 1), Some((json.len(), text.len())));
        }

        #[test]
        fn surrogate_escapes_measure_only_in_pairs(
            units in prop::collection::vec(prop_oneof![0xd7f0..0xe010u32, 0..0x80u32], 0..6),
            tail in "[a-z\\\\]{0,2}",
        ) {
            let mut json = String::from("\"");
            for unit in &units {
                json.push_str(&format!("\\u{unit:04x}"));
            }
            json.push_str(&tail.replace('\\', "\\\\"));
            json.push('"');
            let decoded = serde_json::from_str::<String>(&json);
            let measured = decoded_len(&json[1..json.len() - 1]);
            prop_assert_eq!(measured, decoded.as_ref().ok().map(String::len), "{}", json);
            let scanned = scan_string(json.as_bytes(), 1).map(|(_, len)| len);
            prop_assert_eq!(scanned, decoded.as_ref().ok().map(String::len), "{}", json);
        }

        #[test]
        fn the_scanner_refuses_what_serde_json_refuses(
            body in prop::collection::vec(prop_oneof![
                Just("a".to_owned()), Just("\\".to_owned()), Just("\"".to_owned()),
                Just("\u{1}".to_owned()), Just("\n".to_owned()), Just("é".to_owned()),
                Just("\\u00".to_owned()), Just("\\x".to_owned()), Just("\\ud83d".to_owned()),
                Just("\\ude00".to_owned()), Just("\\\\".to_owned()), Just("\\\"".to_owned()),
            ], 0..24),
        ) {
            // Any bytes after an opening quote: the scanner finds the string serde_json reads
            // (or refuses it where serde_json does), whatever follows it.
            let json = format!("\"{}", body.concat());
            let decoded = serde_json::Deserializer::from_str(&json)
                .into_iter::<String>()
                .next()
                .and_then(Result::ok);
            match scan_string(json.as_bytes(), 1) {
                Some((end, len)) => {
                    let string = serde_json::from_str::<String>(&json[..end]).expect("a string");
                    prop_assert_eq!(string.len(), len, "{}", json);
                }
                None => prop_assert!(
                    serde_json::from_str::<String>(&json).is_err()
                        && decoded.is_none_or(|text| !json.starts_with(&serde_json::to_string(&text).unwrap_or_default())),
                    "{}", json
                ),
            }
        }
    }

    #[test]
    fn generated_items_often_take_the_header_reader() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strategy = item();
        let read = (0..1000)
            .filter(|_| {
                let json = strategy.new_tree(&mut runner).expect("an item").current();
                header_agrees(&json)
            })
            .count();
        assert!(read > 50, "{read} of 1000 read by the header reader");
    }

    #[test]
    fn generated_items_mostly_take_the_fast_path() {
        // The generator must exercise the fast path, not only the fallback.
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strategy = item();
        let (mut fast_items, mut accepted) = (0, 0);
        for _ in 0..500 {
            let json = strategy.new_tree(&mut runner).expect("an item").current();
            fast_items += usize::from(fast(&json));
            accepted += usize::from(generic(&json).is_ok());
        }
        assert!(fast_items > 150, "{fast_items} of 500 took the fast path");
        assert!(
            accepted > fast_items,
            "{accepted} accepted, {fast_items} fast"
        );
    }
}
