//! Media stripping for models that take no images or no audio, as Codex strips them, and the
//! stripped forms of entries, computed once and shared by every clone of the entry.
//!
//! Works on the item's JSON as a `serde_json::Value`, so every field this library does not model
//! survives; only the media parts themselves are replaced.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::item::{Entry, ItemError, Payload, StripKey, StrippedForm};

use super::StripSet;
use super::error::ProjectionError;
use super::repair::RepairKind;

/// Replaces an image part for a model that takes no images.
pub const IMAGE_PLACEHOLDER: &str = "image content omitted because you do not support image input";
/// Replaces an audio part for a model that takes no audio.
pub const AUDIO_PLACEHOLDER: &str = "audio content omitted because you do not support audio input";

/// Which media to strip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Media {
    Image,
    Audio,
}

impl Media {
    fn part_type(self) -> &'static str {
        match self {
            Media::Image => "input_image",
            Media::Audio => "input_audio",
        }
    }

    fn placeholder(self) -> &'static str {
        match self {
            Media::Image => IMAGE_PLACEHOLDER,
            Media::Audio => AUDIO_PLACEHOLDER,
        }
    }
}

/// What stripping changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stripped {
    /// The rewritten item.
    pub(crate) json: String,
    /// Parts replaced by the placeholder.
    pub(crate) parts: usize,
    /// Whether an `image_generation_call` result was cleared.
    pub(crate) cleared_result: bool,
}

#[cfg(feature = "testing")]
thread_local! {
    static STRIPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many times this thread stripped media from an item's JSON (the `testing` feature): a
/// stripped form is computed once per entry and then shared, which tests check by counting.
#[cfg(feature = "testing")]
pub fn media_strips() -> u64 {
    STRIPS.with(std::cell::Cell::get)
}

#[cfg(feature = "testing")]
thread_local! {
    static CHECKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many media entries projections on this thread checked for their stripped forms (the
/// `testing` feature): a projection whose history's media sets were all checked before (by it or
/// a clone) checks none, which tests check by counting.
#[cfg(feature = "testing")]
pub fn media_checks() -> u64 {
    CHECKS.with(std::cell::Cell::get)
}

/// Counts one media entry checked by a projection (the `testing` feature; nothing otherwise).
pub(crate) fn count_check() {
    #[cfg(feature = "testing")]
    CHECKS.with(|count| count.set(count.get() + 1));
}

/// Strips `media` from one item's JSON. `None` when nothing changed.
///
/// # Errors
///
/// When the text is not a JSON object (which an entry's text always is, unless it comes from a
/// crafted snapshot).
pub(crate) fn strip(json: &str, media: Media) -> Result<Option<Stripped>, serde_json::Error> {
    #[cfg(feature = "testing")]
    STRIPS.with(|count| count.set(count.get() + 1));
    let mut item: Map<String, Value> = serde_json::from_str(json)?;
    let mut parts = 0;
    let mut cleared_result = false;
    match item.get("type").and_then(Value::as_str) {
        Some("message") => parts = replace_parts(item.get_mut("content"), media),
        Some("function_call_output" | "custom_tool_call_output") => {
            parts = replace_parts(item.get_mut("output"), media);
        }
        Some("image_generation_call") if media == Media::Image => {
            if let Some(result) = item.get_mut("result")
                && result.as_str().is_some_and(|text| !text.is_empty())
            {
                *result = Value::String(String::new());
                cleared_result = true;
            }
        }
        _ => {}
    }
    if parts == 0 && !cleared_result {
        return Ok(None);
    }
    Ok(Some(Stripped {
        // A `Value`'s text is written by `Display`, which cannot fail.
        json: Value::Object(item).to_string(),
        parts,
        cleared_result,
    }))
}

/// Replaces every part of the media's type in an array with the placeholder text part. Text
/// bodies (a JSON string) are left alone.
fn replace_parts(parts: Option<&mut Value>, media: Media) -> usize {
    let Some(Value::Array(parts)) = parts else {
        return 0;
    };
    let mut replaced = 0;
    for part in parts.iter_mut() {
        if part.get("type").and_then(Value::as_str) == Some(media.part_type()) {
            let mut text = Map::new();
            text.insert("type".into(), Value::String("input_text".into()));
            text.insert("text".into(), Value::String(media.placeholder().into()));
            *part = Value::Object(text);
            replaced += 1;
        }
    }
    replaced
}

/// The form of `entry` (at `position`) without `media`, computed the first time any clone of the
/// entry asks and then shared; `None` when stripping changes nothing. Audio is stripped from the
/// images-stripped form when the projection strips images too.
///
/// # Errors
///
/// [`ProjectionError::UnreadableItem`] when the item does not parse.
pub(super) fn stripped_form(
    entry: &Entry,
    position: usize,
    media: Media,
    strip: StripSet,
) -> Result<Option<StrippedForm>, ProjectionError> {
    let form = |json: &str| strip_uncached_text(entry, position, json, media);
    match media {
        Media::Image => entry.stripped(StripKey::Images, || form(entry.json())),
        Media::Audio => match entry.cached_stripped(StripKey::Images) {
            Some(images) if strip.images => {
                let images = images.payload.original_json();
                entry.stripped(StripKey::AudioAfterImages, || form(images))
            }
            _ => entry.stripped(StripKey::Audio, || form(entry.json())),
        },
    }
}

/// `slot`'s text without `media`, not cached.
pub(super) fn strip_uncached(
    slot: &Entry,
    position: usize,
    media: Media,
) -> Result<Option<StrippedForm>, ProjectionError> {
    strip_uncached_text(slot, position, slot.payload().original_json(), media)
}

/// `json`, the text of `entry` at `position` or its images-stripped form, without `media`.
fn strip_uncached_text(
    entry: &Entry,
    position: usize,
    json: &str,
    media: Media,
) -> Result<Option<StrippedForm>, ProjectionError> {
    let stripped = strip(json, media).map_err(|source| ProjectionError::UnreadableItem {
        position,
        source: ItemError::InvalidJson {
            item_type: Some(entry.kind().as_str().to_owned()),
            source,
        },
    })?;
    Ok(stripped.map(|stripped| StrippedForm {
        payload: Arc::new(Payload::Owned(stripped.json.into_boxed_str())),
        parts: stripped.parts,
        cleared_result: stripped.cleared_result,
    }))
}

/// What stripping `media` changed, as repairs: the parts replaced, then a cleared generated
/// image.
pub(super) fn stripped_kinds(
    media: Media,
    stripped: &StrippedForm,
) -> impl Iterator<Item = RepairKind> + use<> {
    let parts = (stripped.parts > 0).then_some(match media {
        Media::Image => RepairKind::StrippedImages {
            parts: stripped.parts,
        },
        Media::Audio => RepairKind::StrippedAudio {
            parts: stripped.parts,
        },
    });
    let cleared = stripped
        .cleared_result
        .then_some(RepairKind::ClearedImageGenerationResult);
    parts.into_iter().chain(cleared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_is_not_an_object_is_an_error_not_a_silent_pass() {
        assert!(strip(r#"["message"]"#, Media::Image).is_err());
    }

    #[test]
    fn message_images_become_placeholders_and_other_fields_survive() {
        let json = r#"{"type":"message","role":"user","x-extra":1,"content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"high"}]}"#;
        let stripped = strip(json, Media::Image)
            .expect("an object")
            .expect("changed");
        assert_eq!(stripped.parts, 1);
        assert_eq!(
            stripped.json,
            r#"{"type":"message","role":"user","x-extra":1,"content":[{"type":"input_text","text":"look"},{"type":"input_text","text":"image content omitted because you do not support image input"}]}"#
        );
        assert_eq!(strip(json, Media::Audio).expect("an object"), None);
    }

    #[test]
    fn text_output_bodies_are_untouched() {
        let json = r#"{"type":"function_call_output","call_id":"c","output":"input_image"}"#;
        assert_eq!(strip(json, Media::Image).expect("an object"), None);
    }

    #[test]
    fn image_generation_result_is_cleared() {
        let json = r#"{"type":"image_generation_call","id":"ig_123","status":"completed","revised_prompt":"A small blue square","result":"Zm9v"}"#;
        let stripped = strip(json, Media::Image)
            .expect("an object")
            .expect("changed");
        assert!(stripped.cleared_result);
        assert_eq!(
            stripped.json,
            r#"{"type":"image_generation_call","id":"ig_123","status":"completed","revised_prompt":"A small blue square","result":""}"#
        );
    }

    // The rule as `docs/codex-compatibility.md` ("Media") states it: for a model without image
    // input, `input_image` parts of messages and of array tool outputs become a text part with
    // the image placeholder, and an `image_generation_call`'s `result` becomes `""`; without audio
    // input, `input_audio` parts become the audio placeholder. Everything else is left as it is.

    fn placeholder(text: &str) -> String {
        format!(r#"{{"type":"input_text","text":"{text}"}}"#)
    }

    const IMAGE: &str = r#"{"type":"input_image","image_url":"data:image/png;base64,AAAA"}"#;
    const AUDIO: &str = r#"{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}"#;
    const TEXT: &str = r#"{"type":"input_text","text":"look"}"#;

    /// Every part of the media's type is replaced, in place, and counted; the other media and
    /// text parts stay.
    #[test]
    fn every_part_of_the_media_becomes_its_placeholder_in_messages_and_array_outputs() {
        let image_text = placeholder(IMAGE_PLACEHOLDER);
        let audio_text = placeholder(AUDIO_PLACEHOLDER);
        for (start, end) in [
            (r#"{"type":"message","role":"user","content":["#, "]}"),
            (
                r#"{"type":"function_call_output","call_id":"c","output":["#,
                "]}",
            ),
            (
                r#"{"type":"custom_tool_call_output","call_id":"c","output":["#,
                r#"],"extra":true}"#,
            ),
        ] {
            let item = |parts: &[&str]| format!("{start}{}{end}", parts.join(","));
            let json = item(&[IMAGE, TEXT, AUDIO, IMAGE]);
            let stripped = strip(&json, Media::Image)
                .expect("an object")
                .expect("changed");
            assert_eq!(
                stripped,
                Stripped {
                    json: item(&[&image_text, TEXT, AUDIO, &image_text]),
                    parts: 2,
                    cleared_result: false,
                }
            );
            let stripped = strip(&json, Media::Audio)
                .expect("an object")
                .expect("changed");
            assert_eq!(
                stripped,
                Stripped {
                    json: item(&[IMAGE, TEXT, &audio_text, IMAGE]),
                    parts: 1,
                    cleared_result: false,
                }
            );
            // Nothing of the media: nothing changed.
            for media in [Media::Image, Media::Audio] {
                assert_eq!(strip(&item(&[TEXT]), media).expect("an object"), None);
                assert_eq!(strip(&item(&[]), media).expect("an object"), None);
            }
        }
    }

    /// Only messages and the two array tool outputs have parts replaced: a media part elsewhere
    /// (another item type, a field other than the content or output) is left alone.
    #[test]
    fn media_parts_outside_a_message_or_tool_output_are_left_alone() {
        for json in [
            format!(r#"{{"type":"function_call","call_id":"c","content":[{IMAGE}]}}"#),
            format!(r#"{{"type":"message","role":"user","output":[{IMAGE}],"content":[]}}"#),
            format!(
                r#"{{"type":"function_call_output","call_id":"c","content":[{IMAGE}],"output":"x"}}"#
            ),
            format!(r#"{{"type":"reasoning","content":[{IMAGE}]}}"#),
            format!(r#"{{"content":[{IMAGE}]}}"#),
        ] {
            assert_eq!(
                strip(&json, Media::Image).expect("an object"),
                None,
                "{json}"
            );
        }
    }

    /// Only for a model without image input, and only a non-empty `result` string, is cleared.
    #[test]
    fn an_image_generation_result_is_cleared_only_without_image_input() {
        let call = |result: &str| {
            format!(
                r#"{{"type":"image_generation_call","id":"ig_1","status":"completed"{result}}}"#
            )
        };
        assert_eq!(
            strip(&call(r#","result":"Zm9v""#), Media::Audio).expect("an object"),
            None
        );
        for unchanged in ["", r#","result":"""#, r#","result":null"#, r#","result":7"#] {
            assert_eq!(
                strip(&call(unchanged), Media::Image).expect("an object"),
                None,
                "{unchanged}"
            );
        }
        assert_eq!(
            strip(&call(r#","result":"Zm9v""#), Media::Image).expect("an object"),
            Some(Stripped {
                json: call(r#","result":"""#),
                parts: 0,
                cleared_result: true,
            })
        );
    }

    /// The `testing` counters count exactly: one strip a call (whatever it finds), one check a
    /// `count_check`.
    #[cfg(feature = "testing")]
    #[test]
    fn the_counters_count_each_strip_and_each_check_once() {
        let (strips, checks) = (media_strips(), media_checks());
        let json = format!(r#"{{"type":"message","role":"user","content":[{IMAGE}]}}"#);
        strip(&json, Media::Image).expect("an object");
        strip(&json, Media::Audio).expect("an object");
        assert_eq!(media_strips(), strips + 2);
        assert_eq!(media_checks(), checks);
        count_check();
        count_check();
        assert_eq!(media_checks(), checks + 2);
        assert_eq!(media_strips(), strips + 2);
    }
}
