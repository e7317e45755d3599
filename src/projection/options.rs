//! What a projection is asked to produce.

use std::fmt;
use std::str::FromStr;

/// The input modalities a model accepts. Text is always accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Modalities {
    /// The model takes images.
    pub image: bool,
    /// The model takes audio.
    pub audio: bool,
}

impl Modalities {
    /// Text only.
    pub const TEXT: Modalities = Modalities {
        image: false,
        audio: false,
    };
    /// Text and images: the default, as for Codex's models.
    pub const TEXT_IMAGE: Modalities = Modalities {
        image: true,
        audio: false,
    };
    /// Text, images and audio.
    pub const ALL: Modalities = Modalities {
        image: true,
        audio: true,
    };
}

impl Default for Modalities {
    fn default() -> Self {
        Modalities::TEXT_IMAGE
    }
}

impl fmt::Display for Modalities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("text")?;
        if self.image {
            f.write_str(",image")?;
        }
        if self.audio {
            f.write_str(",audio")?;
        }
        Ok(())
    }
}

/// A modality list that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown input modality `{0}` (expected a comma-separated list of text, image, audio)")]
pub struct ParseModalitiesError(pub String);

impl FromStr for Modalities {
    type Err = ParseModalitiesError;

    /// Parses a comma-separated list such as `text,image`. `text` may be omitted; it is always
    /// on.
    fn from_str(list: &str) -> Result<Self, Self::Err> {
        let mut modalities = Modalities::TEXT;
        for name in list
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
        {
            match name.to_ascii_lowercase().as_str() {
                "text" => {}
                "image" => modalities.image = true,
                "audio" => modalities.audio = true,
                _ => return Err(ParseModalitiesError(name.to_owned())),
            }
        }
        Ok(modalities)
    }
}

/// What to do with protocol violations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepairMode {
    /// Repair every violation in the projection and report it (Codex's release behaviour).
    #[default]
    Lenient,
    /// Fail with every violation that Codex treats as a bug (`error_or_panic`): a custom
    /// tool or local shell call without output, and any orphan output. A `function_call` or
    /// `tool_search_call` without output is normal after an interruption and is still repaired.
    Strict,
}

/// Whether items of a type this library does not know are sent. Serializes as `"hold_back"` or
/// `"send"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownItems {
    /// Keep them out of the projection and report each one.
    #[default]
    HoldBack,
    /// Send them verbatim.
    Send,
}

/// Options of [`History::project`](crate::History::project).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProjectionOptions {
    /// Input modalities of the model.
    pub modalities: Modalities,
    /// Lenient (repair and report) or strict (error).
    pub repair: RepairMode,
    /// Whether unknown items are sent.
    pub unknown_items: UnknownItems,
}

impl ProjectionOptions {
    /// Options for a model with these modalities; lenient; unknown items held back.
    pub fn for_modalities(modalities: Modalities) -> Self {
        ProjectionOptions {
            modalities,
            ..ProjectionOptions::default()
        }
    }

    /// The same options in strict mode.
    pub fn strict(self) -> Self {
        ProjectionOptions {
            repair: RepairMode::Strict,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modalities_parse_and_print() {
        assert_eq!("text,image".parse(), Ok(Modalities::TEXT_IMAGE));
        assert_eq!("text".parse(), Ok(Modalities::TEXT));
        assert_eq!(" audio , IMAGE ".parse(), Ok(Modalities::ALL));
        assert_eq!(
            "text,video".parse::<Modalities>(),
            Err(ParseModalitiesError("video".into()))
        );
        assert_eq!(Modalities::ALL.to_string(), "text,image,audio");
    }

    /// Each set of modalities prints as the list that parses back to it; `text` may be left
    /// out, and empty names are skipped.
    #[test]
    fn every_modality_set_prints_as_the_list_that_parses_back() {
        for (modalities, list) in [
            (Modalities::TEXT, "text"),
            (Modalities::TEXT_IMAGE, "text,image"),
            (
                Modalities {
                    image: false,
                    audio: true,
                },
                "text,audio",
            ),
            (Modalities::ALL, "text,image,audio"),
        ] {
            assert_eq!(modalities.to_string(), list);
            assert_eq!(list.parse(), Ok(modalities), "{list}");
        }
        assert_eq!("image".parse(), Ok(Modalities::TEXT_IMAGE));
        assert_eq!(
            "audio,,".parse(),
            Ok(Modalities {
                image: false,
                audio: true
            })
        );
        assert_eq!("".parse(), Ok(Modalities::TEXT));
        assert_eq!(
            "Image, video".parse::<Modalities>(),
            Err(ParseModalitiesError("video".into()))
        );
        assert_eq!(Modalities::default(), Modalities::TEXT_IMAGE);
    }

    /// `for_modalities` sets the modalities and keeps the defaults (lenient, unknown items held
    /// back); `strict` changes the repair mode only.
    #[test]
    fn the_option_builders_set_their_field_only() {
        let options = ProjectionOptions::for_modalities(Modalities::TEXT);
        assert_eq!(
            options,
            ProjectionOptions {
                modalities: Modalities::TEXT,
                repair: RepairMode::Lenient,
                unknown_items: UnknownItems::HoldBack,
            }
        );
        let sending = ProjectionOptions {
            unknown_items: UnknownItems::Send,
            ..ProjectionOptions::for_modalities(Modalities::ALL)
        };
        assert_eq!(
            sending.strict(),
            ProjectionOptions {
                modalities: Modalities::ALL,
                repair: RepairMode::Strict,
                unknown_items: UnknownItems::Send,
            }
        );
        assert_eq!(
            ProjectionOptions::default().strict().repair,
            RepairMode::Strict
        );
    }
}
