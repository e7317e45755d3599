//! Properties of a projection, as functions a test can call on any history and any pipeline:
//! each returns `Ok(())` or a [`PropertyFailure`] naming the property, the target or adapter,
//! the history position and the difference.
//!
//! The `*_by` forms take the projection as a closure, so that a provider adapter of your own
//! is checked the same way as this crate's projections.

use std::fmt;

use serde_json::Value;

use crate::history::History;
use crate::provider::{Target, TargetOptions, validate};

/// Which property failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Property {
    /// Projecting a history leaves its items, length, version, bytes and token estimate as they
    /// were.
    HistoryUnchanged,
    /// Two projections of the same history, and one of its clone, write the same bytes.
    Repeatable,
    /// The projection for a target passes that target's validator.
    PassesValidator,
    /// The projection could be made at all (a built-in projection returned an error).
    Projects,
}

impl Property {
    /// The property in words.
    pub fn describe(self) -> &'static str {
        match self {
            Property::HistoryUnchanged => "projection never changes the history",
            Property::Repeatable => "repeated projections are byte-identical",
            Property::PassesValidator => "the projection passes the target's validator",
            Property::Projects => "the history can be projected",
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// A property that does not hold: which one, for which projection, where, and what differs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("property `{property}` failed for {subject}{}: {detail}", at(*.position))]
pub struct PropertyFailure {
    /// The property.
    pub property: Property,
    /// The projection checked: a target's name, or the label given for an adapter.
    pub subject: String,
    /// The history position (or, for [`Property::Repeatable`], the byte offset in the output)
    /// where the difference starts, when there is one.
    pub position: Option<usize>,
    /// What differs, in words.
    pub detail: String,
}

fn at(position: Option<usize>) -> String {
    position.map_or_else(String::new, |position| format!(" at {position}"))
}

impl PropertyFailure {
    fn new(property: Property, subject: &str, position: Option<usize>, detail: String) -> Self {
        PropertyFailure {
            property,
            subject: subject.to_owned(),
            position,
            detail,
        }
    }
}

/// What a projection must leave unchanged in a history.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    items: Vec<String>,
    version: u64,
    json_bytes: u64,
    tokens: u64,
    user_turns: usize,
}

impl Fingerprint {
    fn of(history: &History) -> Fingerprint {
        Fingerprint {
            items: history
                .iter()
                .map(|entry| entry.json().to_owned())
                .collect(),
            version: history.version(),
            json_bytes: history.json_bytes(),
            tokens: history.estimated_tokens(),
            user_turns: history.user_turn_count(),
        }
    }

    /// The first difference: a position (for an item) and what differs.
    fn difference(&self, after: &Fingerprint) -> Option<(Option<usize>, String)> {
        if self.items.len() != after.items.len() {
            return Some((
                None,
                format!(
                    "the history had {} items before and {} after",
                    self.items.len(),
                    after.items.len()
                ),
            ));
        }
        if let Some(position) = (0..self.items.len()).find(|&i| self.items[i] != after.items[i]) {
            return Some((
                Some(position),
                format!(
                    "item {position} was `{}` before and `{}` after",
                    self.items[position], after.items[position]
                ),
            ));
        }
        let fields = [
            ("version", self.version, after.version),
            ("JSON bytes", self.json_bytes, after.json_bytes),
            ("estimated tokens", self.tokens, after.tokens),
            (
                "user turns",
                self.user_turns as u64,
                after.user_turns as u64,
            ),
        ];
        fields
            .into_iter()
            .find(|(_, before, after)| before != after)
            .map(|(name, before, after)| {
                (None, format!("its {name} went from {before} to {after}"))
            })
    }
}

/// "Projection never changes the history", for any projection: runs `project` on `history`
/// and checks that the history's items (text by text), length, version, JSON bytes, token
/// estimate and user-turn count are what they were. Returns what `project` returned.
///
/// # Errors
///
/// [`Property::HistoryUnchanged`], naming the first item that changed (or the field).
pub fn history_unchanged_by<R>(
    history: &History,
    subject: &str,
    project: impl FnOnce(&History) -> R,
) -> Result<R, PropertyFailure> {
    let before = Fingerprint::of(history);
    let result = project(history);
    let after = Fingerprint::of(history);
    match before.difference(&after) {
        None => Ok(result),
        Some((position, detail)) => Err(PropertyFailure::new(
            Property::HistoryUnchanged,
            subject,
            position,
            detail,
        )),
    }
}

/// "The history is unchanged", between two histories: `actual` has `expected`'s items (text by
/// text), length, version, JSON bytes, token estimate and user-turn count. For a check around a
/// step of your own that must leave a history as it was (a save and load, an adapter that takes
/// the history by reference and keeps a clone).
///
/// # Errors
///
/// [`Property::HistoryUnchanged`], naming the first item that differs (or the field).
pub fn same_history(
    subject: &str,
    expected: &History,
    actual: &History,
) -> Result<(), PropertyFailure> {
    match Fingerprint::of(expected).difference(&Fingerprint::of(actual)) {
        None => Ok(()),
        Some((position, detail)) => Err(PropertyFailure::new(
            Property::HistoryUnchanged,
            subject,
            position,
            detail,
        )),
    }
}

/// The first byte where two outputs differ, with a few bytes of context from each.
fn first_difference(a: &str, b: &str) -> Option<(usize, String)> {
    if a == b {
        return None;
    }
    let offset = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or_else(|| a.len().min(b.len()));
    let excerpt = |text: &str| {
        let start = floor_char_boundary(text, offset.saturating_sub(20));
        let end = floor_char_boundary(text, (offset + 40).min(text.len()));
        text[start..end].to_owned()
    };
    Some((
        offset,
        format!(
            "the outputs ({} and {} bytes) differ from byte {offset}: `{}` vs `{}`",
            a.len(),
            b.len(),
            excerpt(a),
            excerpt(b)
        ),
    ))
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// "Repeated projections are byte-identical", for any projection: `project` writes the history
/// twice, and once more for a clone of it, and the three outputs must be the same bytes.
///
/// # Errors
///
/// [`Property::Repeatable`] with the byte offset of the first difference;
/// [`Property::Projects`] when `project` fails.
pub fn repeatable_by<E: fmt::Display>(
    history: &History,
    subject: &str,
    project: impl Fn(&History) -> Result<String, E>,
) -> Result<(), PropertyFailure> {
    let run = |history: &History| {
        project(history).map_err(|error| {
            PropertyFailure::new(Property::Projects, subject, None, error.to_string())
        })
    };
    let first = run(history)?;
    let second = run(history)?;
    let clone = history.clone();
    let third = run(&clone)?;
    for (which, other) in [
        ("a second projection", &second),
        ("a clone's projection", &third),
    ] {
        if let Some((offset, detail)) = first_difference(&first, other) {
            return Err(PropertyFailure::new(
                Property::Repeatable,
                subject,
                Some(offset),
                format!("{which} is not the first one's bytes: {detail}"),
            ));
        }
    }
    Ok(())
}

/// The targets this crate projects and validates, which the target-taking properties accept.
pub fn available_targets() -> &'static [Target] {
    &Target::ALL
}

/// This crate's projection of `history` for `target` ([`History::project_for`] with
/// [`TargetOptions::new`]: lenient, text and images, unknown items held back), as the JSON array
/// a request carries: Responses' `input`, Chat Completions' `messages`, Anthropic Messages'
/// `messages` (its `system` texts, kept apart, are not part of it).
///
/// # Errors
///
/// [`Property::Projects`] when the projection fails, or when `target` has no projection in this
/// build.
pub fn project_for(target: Target, history: &History) -> Result<String, PropertyFailure> {
    history
        .project_for(&TargetOptions::new(target))
        .map(|projection| projection.to_json())
        .map_err(|error| {
            PropertyFailure::new(Property::Projects, target.name(), None, error.to_string())
        })
}

/// "Projection never changes the history" for this crate's projection for `target`.
///
/// # Errors
///
/// As [`history_unchanged_by`] and [`project_for`].
pub fn projection_never_changes_history(
    history: &History,
    target: Target,
) -> Result<(), PropertyFailure> {
    history_unchanged_by(history, target.name(), |history| {
        project_for(target, history)
    })?
    .map(drop)
}

/// "Repeated projections are byte-identical" for this crate's projection for `target`.
///
/// # Errors
///
/// As [`repeatable_by`] and [`project_for`].
pub fn projections_are_repeatable(
    history: &History,
    target: Target,
) -> Result<(), PropertyFailure> {
    repeatable_by(history, target.name(), |history| {
        project_for(target, history).map_err(|failure| failure.detail)
    })
}

/// "The output passes validator T", for any producer of a request input: `project` turns the
/// history into JSON (a whole request body, or a bare `input` / `messages` array) and
/// [`validate`] checks it for `target`. Warnings are allowed; every error finding is listed.
///
/// # Errors
///
/// [`Property::PassesValidator`], positioned at the first rejected item or message of the
/// output, with every error finding (its position, rule and the provider's error text).
pub fn passes_validator_by(
    history: &History,
    target: Target,
    subject: &str,
    project: impl FnOnce(&History) -> Value,
) -> Result<(), PropertyFailure> {
    let input = project(history);
    let validation = validate(target, &input);
    if validation.is_valid() {
        return Ok(());
    }
    let errors: Vec<String> = validation.errors().map(ToString::to_string).collect();
    let position = validation.errors().find_map(|finding| finding.item);
    Err(PropertyFailure::new(
        Property::PassesValidator,
        subject,
        position,
        format!(
            "{} rejects it with {} error(s): {}",
            target,
            errors.len(),
            errors.join("; ")
        ),
    ))
}

/// "The projection for target T passes validator T", for this crate's projection.
///
/// A projection that sends nothing (an empty history, or one whose items all have no
/// equivalent in the target) is not checked: Chat Completions and Anthropic Messages reject a
/// request without messages whatever the history, so the caller must add one.
///
/// # Errors
///
/// As [`passes_validator_by`] and [`project_for`]; [`Property::Projects`] also when the
/// projection is not JSON.
pub fn projection_passes_validator(
    history: &History,
    target: Target,
) -> Result<(), PropertyFailure> {
    let json = project_for(target, history)?;
    let input: Value = serde_json::from_str(&json).map_err(|error| {
        PropertyFailure::new(
            Property::Projects,
            target.name(),
            None,
            format!("the projection is not JSON: {error}"),
        )
    })?;
    if input.as_array().is_some_and(Vec::is_empty) {
        return Ok(());
    }
    passes_validator_by(history, target, target.name(), |_| input)
}

/// Every property, for every target of [`available_targets`]: the first failure.
///
/// # Errors
///
/// The first [`PropertyFailure`].
pub fn check_all(history: &History) -> Result<(), PropertyFailure> {
    for &target in available_targets() {
        projection_never_changes_history(history, target)?;
        projections_are_repeatable(history, target)?;
        projection_passes_validator(history, target)?;
    }
    Ok(())
}
