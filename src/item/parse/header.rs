//! The header-only reader: what an entry needs of the items that carry most of a session's bytes
//! (tool calls and outputs, reasoning, tool-search outputs, user and assistant text messages),
//! without building the typed item.
//!
//! The typed item decodes every string into an owned `String` only for the entry to read a few
//! ids and lengths. This reader walks the item's object itself. Each string value is found and
//! measured in one pass, without a copy (`scan.rs`). Every other value is read from the cursor by
//! serde_json, with the model's type, or validated in full.
//!
//! Like the type-first parser it decides nothing on its own. It gives up (`None`) on anything
//! where the typed path might build another header, estimate or output body: `type` not first, a
//! key with escapes, a duplicate or missing field, a value of another type, trailing characters.
//! The caller then takes the typed path. [`fields_of`] lists every field of each item's struct by
//! its JSON name. Proptests compare the two paths (here) and the scanner with serde_json (in
//! `scan.rs`). Why and what it gained: `docs/performance.md`, "Parsing items once".

use crate::item::estimate::{encrypted_reasoning_len, tokens_for_bytes};
use crate::item::ids::{CallId, ItemId};
use crate::item::inter_agent::is_inter_agent_instruction;
use crate::item::kind::ItemKind;
use crate::item::model::{
    MessagePhase, Metadata as MetadataValue, ReasoningContent, ReasoningSummary, Role,
};
use crate::item::output::{OutputBody, PartsCost};
use crate::item::turn::{is_contextual_user_text, is_summary_text, kinds_mark_context};

use super::scan::{Cursor, RawStr, ValuesLen};
use super::typed::Validated;

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
    meta: Option<MetadataValue>,
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
            Field::Meta => self.meta = cursor.value::<Option<MetadataValue>>()?,
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
                Role::User => user_turn_of(&read.content, read.meta.as_ref()),
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

/// Whether a user message with these parts and host metadata starts a user turn (see
/// `turn_role_of`): not when a text is a contextual fragment or the content kinds mark it as
/// context, nor when its first text is a summary.
fn user_turn_of(parts: &[MessageText], meta: Option<&MetadataValue>) -> bool {
    !(kinds_mark_context(meta, parts.len())
        || parts
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::item::parse::test_support::{agree, generic, item};

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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_header_reader_and_the_typed_path_agree(json in item()) {
            if header_agrees(&json) {
                agree(&json);
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
}
