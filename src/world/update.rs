//! [`ContextUpdate`]: what a section renders (a fragment or a whole item, with a placement), and
//! how a sequence of updates becomes the items recorded into a history ([`merge_updates`]).

use serde_json::{Value, json};

use crate::item::{ContentItem, Message, ResponseItem};

use super::fragment::ContextualFragment;
use super::role::FragmentRole;

/// Where an update may go relative to its neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Placement {
    /// The default: a fragment shares a message with the mergeable fragments of the same role
    /// next to it.
    #[default]
    Mergeable,
    /// A message (or item) of its own.
    Standalone,
    /// A message (or item) of its own that also goes before everything else when a fresh
    /// initial context is assembled ([`split_prefix_updates`]).
    Prefix,
}

/// What an update shows: a fragment (which becomes a part of a `user` or `developer` message) or
/// an item recorded as it is (tool declarations as `additional_tools`, for example).
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateContent {
    /// A fragment of text.
    Fragment(ContextualFragment),
    /// A whole item.
    Item(ResponseItem),
}

/// One thing a world-state section renders: its content and its placement.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextUpdate {
    /// Where it may go relative to its neighbours.
    pub placement: Placement,
    /// What it shows.
    pub content: UpdateContent,
}

impl ContextUpdate {
    /// A mergeable fragment.
    pub fn fragment(fragment: ContextualFragment) -> Self {
        ContextUpdate {
            placement: Placement::Mergeable,
            content: UpdateContent::Fragment(fragment),
        }
    }

    /// An item recorded as it is (an item always breaks a run of fragments, whatever its
    /// placement).
    pub fn item(item: ResponseItem) -> Self {
        ContextUpdate {
            placement: Placement::Mergeable,
            content: UpdateContent::Item(item),
        }
    }

    /// The same update with placement `placement`.
    pub fn with_placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// Whether it is placed first in a fresh initial context.
    pub fn is_prefix(&self) -> bool {
        self.placement == Placement::Prefix
    }
}

/// The items a sequence of updates becomes, in order:
///
/// * an item update flushes the pending fragments (as one message) and is emitted unchanged;
/// * a fragment that may not share a message ([`Placement::Standalone`], [`Placement::Prefix`],
///   or [`ContextualFragment::requires_separate_message`]) flushes the pending fragments and is
///   emitted as a message of its own;
/// * a mergeable fragment flushes the pending fragments when their role differs from its own,
///   then joins them.
///
/// A message is `{"type": "message", "role": …, "content": [one input_text per fragment],
/// "internal_chat_message_metadata_passthrough": {"content_item_kinds": [one kind per
/// fragment]}}`: the host metadata lists each part's content kind, aligned with the parts.
///
/// # Examples
///
/// ```
/// use agent_history::{ContextUpdate, ContextualFragment, FragmentMarkers, FragmentRole, merge_updates};
///
/// let dev = |body: &str| ContextUpdate::fragment(ContextualFragment::new(
///     FragmentRole::Developer, "test.note", FragmentMarkers::tag("note"), body));
/// let items = merge_updates(&[dev("one"), dev("two")]);
/// assert_eq!(items.len(), 1, "adjacent developer fragments share a message");
/// ```
pub fn merge_updates(updates: &[ContextUpdate]) -> Vec<ResponseItem> {
    let mut items = Vec::new();
    let mut pending: Vec<&ContextualFragment> = Vec::new();
    for update in updates {
        match &update.content {
            UpdateContent::Item(item) => {
                flush(&mut pending, &mut items);
                items.push(item.clone());
            }
            UpdateContent::Fragment(fragment)
                if update.placement != Placement::Mergeable
                    || fragment.requires_separate_message =>
            {
                flush(&mut pending, &mut items);
                items.push(message(fragment.role, &[fragment]));
            }
            UpdateContent::Fragment(fragment) => {
                if pending
                    .first()
                    .is_some_and(|first| first.role != fragment.role)
                {
                    flush(&mut pending, &mut items);
                }
                pending.push(fragment);
            }
        }
    }
    flush(&mut pending, &mut items);
    items
}

/// The prefix updates (placement [`Placement::Prefix`]) and the others, each in their order:
/// assembling a fresh initial context puts the first group before everything else.
pub fn split_prefix_updates(
    updates: impl IntoIterator<Item = ContextUpdate>,
) -> (Vec<ContextUpdate>, Vec<ContextUpdate>) {
    updates.into_iter().partition(ContextUpdate::is_prefix)
}

/// Emits the pending fragments as one message, if there are any.
fn flush(pending: &mut Vec<&ContextualFragment>, items: &mut Vec<ResponseItem>) {
    if let Some(first) = pending.first() {
        items.push(message(first.role, pending));
        pending.clear();
    }
}

/// One message holding `fragments` (all of role `role`), its host metadata listing their kinds.
fn message(role: FragmentRole, fragments: &[&ContextualFragment]) -> ResponseItem {
    let kinds: Vec<Value> = fragments
        .iter()
        .map(|fragment| Value::from(fragment.content_kind.as_ref()))
        .collect();
    ResponseItem::Message(Message {
        id: None,
        role: role.role(),
        content: fragments
            .iter()
            .map(|fragment| ContentItem::InputText {
                text: fragment.render(),
            })
            .collect(),
        phase: None,
        status: None,
        encrypted_content: None,
        meta: Some(json!({ "content_item_kinds": kinds })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::fragment::FragmentMarkers;

    fn fragment(role: FragmentRole, body: &str) -> ContextualFragment {
        ContextualFragment::new(role, "test.fragment", FragmentMarkers::none(), body)
    }

    #[test]
    fn a_fragment_that_requires_a_separate_message_breaks_the_run() {
        let dev = |body| ContextUpdate::fragment(fragment(FragmentRole::Developer, body));
        let separate =
            ContextUpdate::fragment(fragment(FragmentRole::Developer, "alone").separate());
        let items = merge_updates(&[dev("a"), separate, dev("b")]);
        assert_eq!(items.len(), 3);
    }

    #[test]
    fn no_updates_no_items() {
        assert!(merge_updates(&[]).is_empty());
    }

    #[test]
    fn a_message_lists_the_kinds_of_its_parts() {
        let mut one = fragment(FragmentRole::User, "one");
        one.content_kind = "user.one".into();
        let mut two = fragment(FragmentRole::User, "two");
        two.content_kind = "user.two".into();
        let items = merge_updates(&[ContextUpdate::fragment(one), ContextUpdate::fragment(two)]);
        assert_eq!(
            serde_json::to_value(&items[0]).unwrap(),
            json!({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": "one"},
                               {"type": "input_text", "text": "two"}],
                   "internal_chat_message_metadata_passthrough":
                       {"content_item_kinds": ["user.one", "user.two"]}})
        );
    }
}
