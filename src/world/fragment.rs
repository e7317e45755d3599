//! Contextual fragments: one piece of world state as the model reads it (a tagged block of text in
//! a `user` or `developer` message), how it is rendered and how it is recognised in a history.

use std::borrow::Cow;

use crate::item::{ends_with_ignore_case, starts_with_ignore_case};

use super::hash::WorldStateHash;
use super::role::FragmentRole;

/// The start and end markers that enclose a fragment's body (`<environment_context>` and
/// `</environment_context>`), or none (both empty: the fragment is its bare body).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FragmentMarkers {
    /// Written before the body.
    pub start: Cow<'static, str>,
    /// Written after the body.
    pub end: Cow<'static, str>,
}

impl FragmentMarkers {
    /// Markers `start` and `end`.
    pub fn new(start: impl Into<Cow<'static, str>>, end: impl Into<Cow<'static, str>>) -> Self {
        FragmentMarkers {
            start: start.into(),
            end: end.into(),
        }
    }

    /// The XML-like pair `<name>` and `</name>`.
    pub fn tag(name: &str) -> Self {
        FragmentMarkers::new(format!("<{name}>"), format!("</{name}>"))
    }

    /// No markers: a fragment that is its bare body (and that is never recognised in a history).
    pub fn none() -> Self {
        FragmentMarkers::default()
    }

    /// Whether both markers are empty.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty() && self.end.is_empty()
    }

    /// Whether `text` is a fragment with these markers: trimmed, it starts with the start marker
    /// and ends with the end marker, both compared ASCII case-insensitively. Markers that are
    /// both empty never match (a bare body cannot be told from any other text).
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::FragmentMarkers;
    ///
    /// let markers = FragmentMarkers::tag("environment_context");
    /// assert!(markers.matches_text("\n<ENVIRONMENT_CONTEXT>cwd</environment_context>\n"));
    /// assert!(!markers.matches_text("<environment_context>cwd"));
    /// assert!(!FragmentMarkers::none().matches_text("anything"));
    /// ```
    pub fn matches_text(&self, text: &str) -> bool {
        if self.is_empty() {
            return false;
        }
        let text = text.trim();
        starts_with_ignore_case(text, &self.start) && ends_with_ignore_case(text, &self.end)
    }
}

/// What finds a section's fragment among a history's messages: the role of the message and the
/// markers of the text. It matches an `input_text` part of a message of that role.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FragmentMatcher {
    /// The role of the message the fragment is in.
    pub role: FragmentRole,
    /// The markers the fragment's text is enclosed in.
    pub markers: FragmentMarkers,
}

impl FragmentMatcher {
    /// A matcher for fragments of `role` enclosed in `markers`.
    pub fn new(role: FragmentRole, markers: FragmentMarkers) -> Self {
        FragmentMatcher { role, markers }
    }

    /// Whether a message part of role `role` with text `text` is such a fragment.
    pub fn matches(&self, role: FragmentRole, text: &str) -> bool {
        self.role == role && self.markers.matches_text(text)
    }
}

/// One piece of world state as the model reads it: a body between two markers, in a `user` or
/// `developer` message, with a content kind that names what it is.
///
/// Rendering is `start + body + end` with nothing added between them (a body carries its own
/// newlines). Several fragments can share one message ([`merge_updates`](super::update::merge_updates));
/// the message's host metadata then lists each part's content kind.
///
/// # Examples
///
/// ```
/// use agent_history::{ContextualFragment, FragmentMarkers, FragmentRole};
///
/// let fragment = ContextualFragment::new(
///     FragmentRole::Developer,
///     "generic.developer_instructions",
///     FragmentMarkers::tag("instructions"),
///     "\nBe brief.\n",
/// );
/// assert_eq!(fragment.render(), "<instructions>\nBe brief.\n</instructions>");
/// assert!(fragment.matches_text(&fragment.render()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContextualFragment {
    /// The role of the message it goes in.
    pub role: FragmentRole,
    /// A stable `<feature>.<name>` string naming what the fragment is
    /// (`generic.developer_instructions`); written to the message's `content_item_kinds`.
    pub content_kind: Cow<'static, str>,
    /// The markers around the body.
    pub markers: FragmentMarkers,
    /// The text between the markers.
    pub body: String,
    /// Whether the fragment must be a message of its own rather than share one with its
    /// neighbours (the same as a [`Placement::Standalone`](crate::Placement::Standalone) update).
    pub requires_separate_message: bool,
}

impl ContextualFragment {
    /// A fragment that may share a message with its neighbours.
    pub fn new(
        role: FragmentRole,
        content_kind: impl Into<Cow<'static, str>>,
        markers: FragmentMarkers,
        body: impl Into<String>,
    ) -> Self {
        ContextualFragment {
            role,
            content_kind: content_kind.into(),
            markers,
            body: body.into(),
            requires_separate_message: false,
        }
    }

    /// The same fragment, marked as needing a message of its own.
    pub fn separate(mut self) -> Self {
        self.requires_separate_message = true;
        self
    }

    /// The text the model reads: `start + body + end`.
    pub fn render(&self) -> String {
        let FragmentMarkers { start, end } = &self.markers;
        let mut text = String::with_capacity(start.len() + self.body.len() + end.len());
        text.push_str(start);
        text.push_str(&self.body);
        text.push_str(end);
        text
    }

    /// Whether `text` is a fragment with this one's markers ([`FragmentMarkers::matches_text`]).
    pub fn matches_text(&self, text: &str) -> bool {
        self.markers.matches_text(text)
    }

    /// A matcher for fragments of this one's role and markers.
    pub fn matcher(&self) -> FragmentMatcher {
        FragmentMatcher::new(self.role, self.markers.clone())
    }

    /// The fragment's hash ([`WorldStateHash::of_fragment`]).
    pub fn hash(&self) -> WorldStateHash {
        WorldStateHash::of_fragment(self.role, &self.render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::Role;

    fn fragment(start: &'static str, body: &str, end: &'static str) -> ContextualFragment {
        ContextualFragment::new(
            FragmentRole::User,
            "test.kind",
            FragmentMarkers::new(start, end),
            body,
        )
    }

    #[test]
    fn rendering_adds_no_separators() {
        assert_eq!(fragment("<a>", "body", "</a>").render(), "<a>body</a>");
        assert_eq!(fragment("<a>\n", "x\n", "</a>").render(), "<a>\nx\n</a>");
        assert_eq!(fragment("", "bare", "").render(), "bare");
    }

    #[test]
    fn recognition_trims_and_ignores_ascii_case_and_needs_both_markers() {
        let markers = FragmentMarkers::tag("env");
        assert!(markers.matches_text("<env>x</env>"));
        assert!(markers.matches_text("  \n<ENV>x</Env>\n"));
        assert!(markers.matches_text("<env></env>"));
        assert!(!markers.matches_text("<env>x"));
        assert!(!markers.matches_text("x</env>"));
        assert!(!markers.matches_text("before <env>x</env>"));
        // The two checks are independent, as Codex makes them: the markers may overlap.
        assert!(FragmentMarkers::new("<a>", "a>").matches_text("<a>"));
        // A marker length that falls inside a multi-byte character is not a match (no panic).
        assert!(!FragmentMarkers::new("ab", "").matches_text("é"));
    }

    #[test]
    fn empty_markers_never_match() {
        assert!(!FragmentMarkers::none().matches_text(""));
        assert!(!FragmentMarkers::none().matches_text("text"));
        assert!(!fragment("", "bare", "").matches_text("bare"));
    }

    #[test]
    fn a_matcher_checks_the_role_too() {
        let matcher = fragment("<a>", "", "</a>").matcher();
        assert!(matcher.matches(FragmentRole::User, "<a>x</a>"));
        assert!(!matcher.matches(FragmentRole::Developer, "<a>x</a>"));
        assert_eq!(FragmentRole::from_role(Role::Assistant), None);
        assert_eq!(Role::from(FragmentRole::Developer), Role::Developer);
        assert_eq!(FragmentRole::User.as_str(), "user");
    }
}
