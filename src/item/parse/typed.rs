//! The type-first item parser: an item's JSON into the typed model ([`ResponseItem`]) in one
//! pass, when its `type` comes first.
//!
//! `ResponseItem` is an internally tagged enum. serde's derived deserializer for it buffers the
//! whole object into a tree of values before it knows the variant, then reads the variant from
//! that tree. Codex and this library write `type` first in every item, so this parser reads the
//! first key and, when it is `type`, deserializes the variant's struct straight from the rest.
//! The message and tool-output parts inside are read the same way.
//!
//! The fast path decides nothing on its own. It gives up (`None`) on anything it cannot read as
//! the derived deserializer would (`type` not first, a second `type`, any error), and the caller
//! then runs the derived deserializer, whose value or error is the answer. A proptest below and
//! the `record_json` fuzz target compare the two.
//!
//! The variants' structs are read by their derived `Deserialize`, except the three whose part
//! lists are on the hot path (`message`, `function_call_output`, `custom_tool_call_output`).
//! Those are read through serde "remote" mirrors that list every field with the same attributes
//! (the compiler checks names and types, the tests the attributes).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::item::ids::{CallId, ItemId};
use crate::item::model::{
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
pub(super) struct Key<'de>(pub(super) Cow<'de, str>);

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
pub(super) struct Validated;

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
pub(super) fn give_up<E: de::Error>() -> E {
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::item::parse::test_support::{agree, generic, item};

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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_fast_path_and_the_derived_deserializer_agree(json in item()) {
            agree(&json);
        }
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
