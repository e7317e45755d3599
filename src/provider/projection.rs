//! [`History::project_for`]: the Responses projection, and for the targets with positional
//! pairing their messages, assembled by the engine of `assembly/`.

use std::io::{self, Write};

use imbl::Vector;

use crate::history::History;
use crate::projection::Projection;

use super::Target;
use super::anthropic::{self, Anthropic};
use super::assembly::{self, Messages};
use super::chat::Chat;
use super::options::TargetOptions;
use super::report::{TargetProjectionError, TargetReport};

/// A projected input for one target: a persistent value independent of later edits of the
/// history, its report, and its JSON.
#[derive(Debug, Clone)]
pub struct TargetProjection {
    projection: Projection,
    inner: Inner,
    report: TargetReport,
}

/// The written form of each target.
#[derive(Debug, Clone)]
pub(crate) enum Inner {
    /// The Responses projection is the input itself.
    Responses,
    /// The Chat Completions messages.
    Chat(Messages<Chat>),
    /// The Anthropic `messages` (and the hoisted `system` texts).
    Anthropic(Messages<Anthropic>),
}

impl TargetProjection {
    /// The target.
    pub fn target(&self) -> Target {
        self.report.target()
    }

    /// The Responses projection this was made from (repaired; what `--target responses` sends).
    pub fn projection(&self) -> &Projection {
        &self.projection
    }

    /// What was repaired, by the Responses projection and by the target.
    pub fn report(&self) -> &TargetReport {
        &self.report
    }

    /// The written form (crate-internal: the request bodies write it).
    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Writes the input as one JSON array: for Responses exactly the bytes of
    /// [`Projection::write_json_array`]; for Chat Completions and Anthropic Messages the
    /// `messages` array (Anthropic's `system` texts are [`TargetProjection::system_texts`]).
    /// Copies the items' (or their renderings') bytes; parses nothing.
    ///
    /// # Errors
    ///
    /// Whatever the writer returns.
    pub fn write_json<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        match &self.inner {
            Inner::Responses => self.projection.write_json_array(out),
            Inner::Chat(messages) => messages.write_json(out),
            Inner::Anthropic(messages) => messages.write_json(out),
        }
    }

    /// The length in bytes of what [`TargetProjection::write_json`] writes.
    pub fn json_len(&self) -> usize {
        match &self.inner {
            Inner::Responses => self.projection.json_array_len(),
            Inner::Chat(messages) => messages.json_len(),
            Inner::Anthropic(messages) => messages.json_len(),
        }
    }

    /// The JSON array [`TargetProjection::write_json`] writes, as a string.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(self.json_len());
        // Writing to a vector cannot fail.
        let _ = self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// Number of messages (Chat Completions, Anthropic Messages) or items (Responses) sent.
    pub fn len(&self) -> usize {
        match &self.inner {
            Inner::Responses => self.projection.len(),
            Inner::Chat(messages) => messages.len(),
            Inner::Anthropic(messages) => messages.len(),
        }
    }

    /// Whether nothing is sent.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// For [`Target::AnthropicMessages`], the texts hoisted into the request's top-level
    /// `system`: every non-empty `system` and `developer` message, in history order (their
    /// place in the conversation is lost; the request puts the base instructions first). None
    /// for the other targets.
    pub fn system_texts(&self) -> impl Iterator<Item = &str> + '_ {
        let messages = match &self.inner {
            Inner::Anthropic(messages) => Some(messages),
            _ => None,
        };
        messages.into_iter().flat_map(anthropic::system_texts)
    }
}

impl History {
    /// Projects the history into the input of `options.target`: the Responses projection with
    /// its repairs, converted item by item for the target, each call batch followed by its
    /// outputs. Every conversion and every loss is reported with its position.
    ///
    /// Each entry's conversion is computed once and shared by every version that holds it. The
    /// history keeps its assemblies for all its versions. A projection of another version (the
    /// next step, a fork, a reader behind the writer, a rollback) resumes one near the first
    /// slot that differs; one of an unchanged version reuses it as it is. Writing copies the
    /// renderings' bytes. For
    /// [`Target::Responses`] the result writes exactly what [`History::project`] does.
    /// `docs/providers.md` tells what each target does and what it costs.
    ///
    /// # Errors
    ///
    /// [`TargetProjectionError::Projection`] when the Responses projection fails (strict mode);
    /// [`TargetProjectionError::UnreadableItem`] when an item does not parse.
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::{History, Target, TargetOptions};
    ///
    /// let mut history = History::new();
    /// history.record_json(r#"{"type":"function_call","name":"shell","arguments":"","call_id":"c1"}"#)?;
    /// let chat = history.project_for(&TargetOptions::new(Target::ChatCompletions))?;
    /// assert_eq!(
    ///     chat.to_json(),
    ///     r#"[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"aborted"}]"#
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn project_for(
        &self,
        options: &TargetOptions,
    ) -> Result<TargetProjection, TargetProjectionError> {
        let projection = self.project(&options.projection)?;
        let (inner, repairs) = match options.target {
            Target::Responses => (Inner::Responses, Vector::new()),
            Target::ChatCompletions => {
                let messages = assembly::project::<Chat>(self, &projection, options)?;
                let repairs = messages.repairs().clone();
                (Inner::Chat(messages), repairs)
            }
            Target::AnthropicMessages => {
                let messages = assembly::project::<Anthropic>(self, &projection, options)?;
                let repairs = messages.repairs().clone();
                (Inner::Anthropic(messages), repairs)
            }
        };
        let report = TargetReport::new(options.target, projection.report().clone(), repairs);
        Ok(TargetProjection {
            projection,
            inner,
            report,
        })
    }
}
