//! How much of a prompt two projections share from the start: the part a provider's prompt cache
//! can reuse when the second is sent after the first.
//!
//! Two versions of one history share the leaves of their vectors (an append copies only the
//! tail leaf, an edit only the leaf it touches). The walk compares leaves by pointer first: a run
//! of slots that starts at the same address in both is passed without reading an entry. Where
//! the pointers differ, entries are compared by their body's pointer, then by the bytes each slot
//! renders. imbl hands out leaves, not interior nodes, so a shared subtree is still walked leaf
//! by leaf (`docs/prompt-prefix.md`, "What it costs").

use std::sync::Arc;

use crate::item::{Entry, ItemKind, Pairing};

use super::slots::Runs;
use super::{Projection, StripSet, rendered};

/// How much two projections share from their first item: the result of
/// [`Projection::common_prefix`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommonPrefix {
    /// How many leading items both send with the same bytes.
    pub items: usize,
    /// How many leading bytes of the two JSON arrays ([`Projection::write_json_array`]) are
    /// equal: the shared items with their brackets and commas, and the leading bytes the first
    /// differing items have in common.
    pub bytes: u64,
    /// The first item that differs, or `None` when both send exactly the same items.
    pub first_difference: Option<FirstDifference>,
}

impl CommonPrefix {
    /// Whether both send exactly the same items.
    pub fn is_identical(&self) -> bool {
        self.first_difference.is_none()
    }

    /// Whether the second sends every item of the first, then more: all of the first is reusable.
    pub fn is_extension(&self) -> bool {
        matches!(
            &self.first_difference,
            Some(FirstDifference {
                left: None,
                right: Some(_),
                ..
            })
        )
    }
}

/// The first item at which two projections differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstDifference {
    /// Its index among the items sent (the same in both: the items before it are shared).
    pub item: usize,
    /// The first projection's item there (`self` of [`Projection::common_prefix`]), or `None`
    /// when it sends no more items.
    pub left: Option<DifferingItem>,
    /// The second projection's item there, or `None` when it sends no more items.
    pub right: Option<DifferingItem>,
}

/// One side of a [`FirstDifference`]: which item it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DifferingItem {
    /// Its position in the history the projection was made from (a synthetic output has the
    /// position of its call).
    pub position: usize,
    /// Its kind (for a synthetic output, the output kind of the call's family).
    pub kind: ItemKind,
    /// Whether it is a synthetic output the projection added after a call that had none.
    pub synthetic_output: bool,
    /// The length of its JSON text in bytes (as sent).
    pub bytes: usize,
}

/// One item a projection sends, with the slot it comes from.
#[derive(Clone, Copy)]
struct Sent<'a> {
    text: &'a str,
    slot: &'a Entry,
    position: usize,
    synthetic_output: bool,
}

impl Sent<'_> {
    fn describe(&self, text: &str) -> DifferingItem {
        let kind = match (self.synthetic_output, self.slot.kind().pairing()) {
            (true, Pairing::Call { family, .. }) => family.output_kind(),
            _ => self.slot.kind(),
        };
        DifferingItem {
            position: self.position,
            kind,
            synthetic_output: self.synthetic_output,
            bytes: text.len(),
        }
    }
}

/// The items a projection sends, in order, with the runs of slots still ahead visible so that the
/// walk can skip a run the other projection shares.
struct Cursor<'a> {
    runs: Runs<'a>,
    /// What is left of the current run of slots.
    run: &'a [Entry],
    /// The position of `run[0]` in the history.
    position: usize,
    /// The synthetic output of the slot just before `run[0]`, not sent yet.
    pending: Option<Sent<'a>>,
    strip: StripSet,
}

impl<'a> Cursor<'a> {
    fn new(projection: &'a Projection) -> Self {
        Cursor {
            runs: projection.slots.runs(),
            run: &[],
            position: 0,
            pending: None,
            strip: projection.strip,
        }
    }

    /// Moves to the next run when the current one is used up (none at the end).
    fn fill(&mut self) {
        while self.run.is_empty() {
            match self.runs.next() {
                Some(run) => self.run = run,
                None => return,
            }
        }
    }

    /// Passes `count` slots of the current run that each send one item.
    fn skip(&mut self, count: usize) {
        self.run = &self.run[count..];
        self.position += count;
    }

    /// The next item sent.
    fn next_item(&mut self) -> Option<Sent<'a>> {
        if let Some(output) = self.pending.take() {
            return Some(output);
        }
        loop {
            self.fill();
            let (slot, rest) = self.run.split_first()?;
            self.run = rest;
            let position = self.position;
            self.position += 1;
            count_slot_read();
            if let (Some(text), output) = rendered(slot, self.strip) {
                self.pending = output.map(|text| Sent {
                    text,
                    slot,
                    position,
                    synthetic_output: true,
                });
                return Some(Sent {
                    text,
                    slot,
                    position,
                    synthetic_output: false,
                });
            }
        }
    }
}

#[cfg(feature = "testing")]
thread_local! {
    static SLOTS_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many slots [`Projection::common_prefix`] (and the request bodies' check built on it) read
/// on this thread one by one, their payloads looked at (the `testing` feature): a run of slots
/// that both projections share by pointer is passed without reading any, which tests check by
/// counting.
#[cfg(feature = "testing")]
pub fn prefix_slots_read() -> u64 {
    SLOTS_READ.with(std::cell::Cell::get)
}

/// Counts one slot read (the `testing` feature; nothing otherwise).
fn count_slot_read() {
    #[cfg(feature = "testing")]
    SLOTS_READ.with(|count| count.set(count.get() + 1));
}

/// How each item's text is written where the prefix is measured.
#[derive(Clone, Copy)]
pub(crate) enum ItemText {
    /// As stored: a JSON array of the items.
    AsStored,
    /// Rewritten by the function (a request body writes each text without the white space around
    /// it).
    Rewritten(fn(&str) -> &str),
}

impl ItemText {
    fn of(self, text: &str) -> &str {
        match self {
            ItemText::AsStored => text,
            ItemText::Rewritten(rewrite) => rewrite(text),
        }
    }
}

/// What follows the input array's closing bracket in each of the two byte streams compared, asked
/// for only when a comparison reaches it (for a request body, its tail after the input).
pub(crate) type After<'x> = &'x mut dyn FnMut() -> Vec<u8>;

impl Projection {
    /// How many leading items and bytes this projection and `other` share, and the first item
    /// that differs: how much of the prompt a provider's prefix cache can reuse when `other` is
    /// sent after `self` (or the other way round: the result is symmetric but for the sides of
    /// [`FirstDifference`]).
    ///
    /// Shared leaves of the two vectors are passed with one pointer comparison each; only
    /// entries not shared by pointer are compared by their bytes, so two projections built
    /// independently from equal histories are still found equal. Nothing is allocated.
    ///
    /// Time, for `p` shared items of `n`: O(p / 64) pointer comparisons, plus the bytes of the
    /// items not shared by pointer and of the first differing items, plus O(min(p, n − p))
    /// lengths read to count the bytes (`docs/prompt-prefix.md`, "What it costs").
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::{History, ProjectionOptions};
    ///
    /// let mut history = History::new();
    /// history.record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#)?;
    /// let before = history.project(&ProjectionOptions::default())?;
    /// history.record_json(r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}"#)?;
    /// let after = history.project(&ProjectionOptions::default())?;
    ///
    /// let shared = before.common_prefix(&after);
    /// assert_eq!(shared.items, 1);
    /// assert!(shared.is_extension()); // all of `before` is reusable
    /// // Every byte of `before`'s array but its closing bracket.
    /// assert_eq!(shared.bytes, before.json_array_len() as u64 - 1);
    /// # Ok::<(), agent_history::Error>(())
    /// ```
    pub fn common_prefix(&self, other: &Projection) -> CommonPrefix {
        self.framed_prefix(other, ItemText::AsStored, &mut Vec::new, &mut Vec::new)
    }

    /// [`Projection::common_prefix`] over the byte streams `[` items `]` then `after_self` /
    /// `after_other`, each item's text written as `text` says. The byte total of a projection
    /// is known only for texts as stored, so with another `text` the bytes are counted forwards
    /// over the shared items.
    pub(crate) fn framed_prefix(
        &self,
        other: &Projection,
        text: ItemText,
        after_self: After<'_>,
        after_other: After<'_>,
    ) -> CommonPrefix {
        let same_strip = self.strip == other.strip;
        let mut left = Cursor::new(self);
        let mut right = Cursor::new(other);
        let mut items = 0usize;
        let (left_item, right_item) = loop {
            if same_strip && left.pending.is_none() && right.pending.is_none() {
                left.fill();
                right.fill();
                // Runs of two or more slots are pieces of the vector's leaves, whose slots each
                // send one item; starting at one address, they are the same entries.
                let count = left.run.len().min(right.run.len());
                if left.run.len().max(right.run.len()) >= 2
                    && count > 0
                    && std::ptr::eq(left.run.as_ptr(), right.run.as_ptr())
                {
                    left.skip(count);
                    right.skip(count);
                    items += count;
                    continue;
                }
            }
            match (left.next_item(), right.next_item()) {
                (Some(a), Some(b)) if same_item(&a, &b, same_strip, text) => items += 1,
                (a, b) => break (a, b),
            }
        };

        // The bytes: `[`, the shared items and the commas between them, then the common start
        // of what follows in each stream.
        let (tail, left_consumed) = {
            let mut left_stream = Stream::new(left_item, &mut left, items, text, after_self);
            let mut right_stream = Stream::new(right_item, &mut right, items, text, after_other);
            let common = common_stream_prefix(&mut left_stream, &mut right_stream);
            // The first differing item counts as handed out even when the comparison ended
            // before asking for it: the cursor is past it.
            let unasked = left_stream.first.map_or(0, |item| item.text.len() as u64);
            (common, left_stream.consumed + unasked)
        };
        let backwards = matches!(text, ItemText::AsStored) && items > self.len() - items;
        let shared_items_bytes = if backwards {
            // Backwards: the projection's byte total less what follows the shared items.
            let mut rest = left_consumed;
            while let Some(item) = left.next_item() {
                rest += item.text.len() as u64;
            }
            let total = (self.json_array_len() as u64)
                .saturating_sub(2 + self.len().saturating_sub(1) as u64);
            total.saturating_sub(rest)
        } else {
            self.leading_bytes(items, text)
        };
        let bytes = 1 + shared_items_bytes + items.saturating_sub(1) as u64 + tail;
        let first_difference = match (left_item, right_item) {
            (None, None) => None,
            (a, b) => Some(FirstDifference {
                item: items,
                left: a.map(|a| a.describe(text.of(a.text))),
                right: b.map(|b| b.describe(text.of(b.text))),
            }),
        };
        CommonPrefix {
            items,
            bytes,
            first_difference,
        }
    }
}

impl Projection {
    /// The bytes of the first `items` items sent, each written as `text` says: one pass over the
    /// slots, reading each one's length (and, rewritten, the ends of its text).
    fn leading_bytes(&self, items: usize, text: ItemText) -> u64 {
        let mut left = items;
        let mut bytes = 0u64;
        for run in self.slots.runs() {
            for slot in run {
                count_slot_read();
                let (Some(json), output) = rendered(slot, self.strip) else {
                    continue;
                };
                for sent in std::iter::once(json).chain(output) {
                    if left == 0 {
                        return bytes;
                    }
                    bytes += text.of(sent).len() as u64;
                    left -= 1;
                }
            }
        }
        bytes
    }
}

/// Whether two items send the same bytes: the same stored entry rendered the same way, or the
/// same text.
fn same_item(a: &Sent<'_>, b: &Sent<'_>, same_strip: bool, text: ItemText) -> bool {
    let media = a.slot.flags().has_image() || a.slot.flags().has_audio();
    if !a.synthetic_output
        && !b.synthetic_output
        && (same_strip || !media)
        && Arc::ptr_eq(a.slot.body(), b.slot.body())
    {
        return true;
    }
    let (a, b) = (text.of(a.text), text.of(b.text));
    std::ptr::eq(a, b) || a == b
}

/// The bytes of one side from its first differing item on: `,` (unless it is the first item)
/// and each item's text, then `]` and what follows the array. Counts the bytes of the items it
/// handed out (their texts as stored), so that the rest of the projection can be measured
/// without going over them again.
struct Stream<'s, 'a, 'x> {
    first: Option<Sent<'a>>,
    cursor: &'s mut Cursor<'a>,
    /// The index of the next item.
    index: usize,
    text: ItemText,
    after: Option<After<'x>>,
    /// The next piece: an item's text after its comma.
    queued: Option<&'a str>,
    /// No more items.
    ended: bool,
    /// The `]` was handed out.
    closed: bool,
    consumed: u64,
}

impl<'s, 'a, 'x> Stream<'s, 'a, 'x> {
    fn new(
        first: Option<Sent<'a>>,
        cursor: &'s mut Cursor<'a>,
        index: usize,
        text: ItemText,
        after: After<'x>,
    ) -> Self {
        Stream {
            first,
            cursor,
            index,
            text,
            after: Some(after),
            queued: None,
            ended: first.is_none(),
            closed: false,
            consumed: 0,
        }
    }

    /// The next piece of bytes, or `None` at the end.
    fn next_piece(&mut self) -> Option<Piece<'a>> {
        if let Some(text) = self.queued.take() {
            return Some(Piece::Borrowed(text.as_bytes()));
        }
        if !self.ended {
            let item = match self.first.take() {
                Some(item) => Some(item),
                None => self.cursor.next_item(),
            };
            match item {
                Some(item) => {
                    self.consumed += item.text.len() as u64;
                    let text = self.text.of(item.text);
                    self.index += 1;
                    if self.index > 1 {
                        self.queued = Some(text);
                        return Some(Piece::Borrowed(b","));
                    }
                    return Some(Piece::Borrowed(text.as_bytes()));
                }
                None => self.ended = true,
            }
        }
        if !self.closed {
            self.closed = true;
            return Some(Piece::Borrowed(b"]"));
        }
        let after = self.after.take()?;
        Some(Piece::Owned(after()))
    }
}

/// A piece of a byte stream.
enum Piece<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl Piece<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Borrowed(bytes) => bytes,
            Piece::Owned(bytes) => bytes,
        }
    }
}

/// How many leading bytes two streams share.
fn common_stream_prefix(a: &mut Stream<'_, '_, '_>, b: &mut Stream<'_, '_, '_>) -> u64 {
    let mut total = 0u64;
    let (mut piece_a, mut at_a) = (Piece::Borrowed(&[]), 0);
    let (mut piece_b, mut at_b) = (Piece::Borrowed(&[]), 0);
    loop {
        while at_a == piece_a.bytes().len() {
            let Some(next) = a.next_piece() else {
                return total;
            };
            (piece_a, at_a) = (next, 0);
        }
        while at_b == piece_b.bytes().len() {
            let Some(next) = b.next_piece() else {
                return total;
            };
            (piece_b, at_b) = (next, 0);
        }
        let (left, right) = (&piece_a.bytes()[at_a..], &piece_b.bytes()[at_b..]);
        let length = left.len().min(right.len());
        let common = common_bytes(&left[..length], &right[..length]);
        total += common as u64;
        if common < length {
            return total;
        }
        at_a += common;
        at_b += common;
    }
}

/// How many leading bytes two slices of one length share: compared a block at a time (a
/// `memcmp` each), then byte by byte in the first block that differs.
pub(crate) fn common_bytes(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let length = a.len().min(b.len());
    let mut start = 0;
    while start + BLOCK <= length && a[start..start + BLOCK] == b[start..start + BLOCK] {
        start += BLOCK;
    }
    start
        + a[start..length]
            .iter()
            .zip(&b[start..length])
            .take_while(|(x, y)| x == y)
            .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user message whose text is `text`.
    fn user(text: &str) -> String {
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        )
    }

    /// A new history of `items`, recorded in order (no pointer shared with any other).
    fn history_of(items: &[String]) -> crate::history::History {
        let mut history = crate::history::History::new();
        for item in items {
            history.record_json(item.as_str()).expect("valid item");
        }
        history
    }

    /// How many leading bytes two byte strings share: the oracle.
    fn shared_bytes(a: &[u8], b: &[u8]) -> u64 {
        a.iter().zip(b).take_while(|(x, y)| x == y).count() as u64
    }

    /// The oracle of `common_prefix`: the leading items two projections send with the same
    /// text, and the leading bytes their JSON arrays share, counted one by one.
    fn naive(a: &Projection, b: &Projection) -> (usize, u64) {
        let items = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
        let (a, b) = (a.to_json_array(), b.to_json_array());
        (items, shared_bytes(a.as_bytes(), b.as_bytes()))
    }

    /// `a.common_prefix(b)`, checked against the oracle both ways round, and identical exactly
    /// when the two arrays are.
    fn checked(a: &Projection, b: &Projection) -> CommonPrefix {
        let expected = naive(a, b);
        let (array_a, array_b) = (a.to_json_array(), b.to_json_array());
        let prefix = a.common_prefix(b);
        assert_eq!(
            (prefix.items, prefix.bytes),
            expected,
            "{array_a}\n{array_b}"
        );
        let back = b.common_prefix(a);
        assert_eq!((back.items, back.bytes), expected, "{array_b}\n{array_a}");
        assert_eq!(prefix.is_identical(), array_a == array_b);
        prefix
    }

    /// The byte stream `framed_prefix` compares for one side, written out: `[`, each item's
    /// text as `rewrite` writes it, commas between them, `]`, then `after`.
    fn stream(projection: &Projection, rewrite: fn(&str) -> &str, after: &[u8]) -> Vec<u8> {
        let texts: Vec<&str> = projection.iter().map(rewrite).collect();
        let mut bytes = format!("[{}]", texts.join(",")).into_bytes();
        bytes.extend_from_slice(after);
        bytes
    }

    /// Tests of the promises `Projection::common_prefix` makes (its rustdoc, the module's docs and
    /// docs/prompt-prefix.md), written for the mutation run of the file's first 299 lines.
    mod mut_pfx_a {
        use super::*;
        use crate::history::History;
        use crate::item::ItemKind;
        use crate::projection::{Modalities, ProjectionOptions};

        fn call(call_id: &str) -> String {
            format!(
                r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"{call_id}"}}"#
            )
        }

        fn output(call_id: &str) -> String {
            format!(r#"{{"type":"function_call_output","call_id":"{call_id}","output":"ok"}}"#)
        }

        /// `n` user messages, each text its own.
        fn messages(n: usize) -> Vec<String> {
            (0..n).map(|i| user(&format!("message {i}"))).collect()
        }

        fn project(history: &History) -> Projection {
            history
                .project(&ProjectionOptions::default())
                .expect("lenient")
        }

        /// What a differing item is: (position, kind, synthetic output, bytes).
        fn side(item: Option<DifferingItem>) -> Option<(usize, ItemKind, bool, usize)> {
            item.map(|item| (item.position, item.kind, item.synthetic_output, item.bytes))
        }

        /// The length of the `index`th item `projection` sends.
        fn sent_len(projection: &Projection, index: usize) -> usize {
            projection.iter().nth(index).expect("sent").len()
        }

        #[test]
        fn a_clone_of_the_history_is_identical_and_passed_without_reading_a_slot() {
            let history = history_of(&messages(150));
            let (a, b) = (project(&history), project(&history.clone()));
            let read = prefix_slots_read();
            let prefix = a.common_prefix(&b);
            // Every slot shared by pointer, leaf by leaf: none read one by one.
            assert_eq!(prefix_slots_read(), read);
            assert_eq!(
                prefix,
                CommonPrefix {
                    items: 150,
                    bytes: a.json_array_len() as u64,
                    first_difference: None,
                }
            );
            assert!(prefix.is_identical());
            assert!(!prefix.is_extension());
            assert_eq!(checked(&a, &b), prefix);
        }

        #[test]
        fn independent_equal_histories_are_identical_and_read_slot_by_slot() {
            let items = messages(150);
            let (a, b) = (project(&history_of(&items)), project(&history_of(&items)));
            let read = prefix_slots_read();
            let prefix = a.common_prefix(&b);
            // No pointer shared: each side's 150 slots read once, and the shared bytes counted
            // back from the byte total without reading them again.
            assert_eq!(prefix_slots_read(), read + 300);
            assert_eq!(prefix.items, 150);
            assert_eq!(prefix.bytes, a.json_array_len() as u64);
            assert!(prefix.is_identical());
            assert!(!prefix.is_extension());
            checked(&a, &b);
        }

        #[test]
        fn a_projection_with_repairs_is_identical_to_itself_and_its_clone() {
            // A slot left out (the orphan output) and a slot that sends two items (the call and
            // its synthetic output): runs of one replaced slot, the same slot in both.
            let mut items = messages(70);
            items.insert(3, output("gone"));
            items.insert(10, call("open"));
            items.insert(66, call("late"));
            let history = history_of(&items);
            let projection = project(&history);
            assert_eq!(projection.len(), 74); // 73 slots, one left out, two outputs added
            for other in [&projection, &projection.clone()] {
                let prefix = projection.common_prefix(other);
                assert_eq!(prefix.items, 74);
                assert_eq!(prefix.bytes, projection.json_array_len() as u64);
                assert!(prefix.is_identical());
            }
            // Projected again, the overlay is another allocation: still identical.
            let again = project(&history);
            assert!(checked(&projection, &again).is_identical());
        }

        #[test]
        fn an_append_shares_every_item_before_it_with_its_position() {
            let before = history_of(&messages(100));
            let mut history = before.clone();
            history.record_json(user("one more")).expect("valid");
            let (a, b) = (project(&before), project(&history));
            let prefix = checked(&a, &b);
            assert_eq!(prefix.items, 100);
            // Every byte of the shorter array but its closing bracket.
            assert_eq!(prefix.bytes, a.json_array_len() as u64 - 1);
            assert!(prefix.is_extension());
            assert!(!prefix.is_identical());
            let difference = prefix.first_difference.expect("differs");
            assert_eq!(difference.item, 100);
            assert_eq!(side(difference.left), None);
            assert_eq!(
                side(difference.right),
                Some((100, ItemKind::Message, false, user("one more").len()))
            );
            // The other way round: the first sends more, which is no extension.
            let back = b.common_prefix(&a);
            assert!(!back.is_extension());
            assert!(!back.is_identical());
            let difference = back.first_difference.expect("differs");
            assert_eq!(
                side(difference.left),
                Some((100, ItemKind::Message, false, user("one more").len()))
            );
            assert_eq!(side(difference.right), None);
        }

        #[test]
        fn an_edit_shares_the_items_before_it_and_the_bytes_up_to_its_first_differing_byte() {
            let old = history_of(&messages(150));
            for p in [0, 1, 63, 64, 70, 149] {
                let mut entries = old.entries().clone();
                entries.set(
                    p,
                    Entry::from_json(user(&format!("edited {p}"))).expect("valid"),
                );
                let mut new = old.clone();
                new.replace(entries);
                let (a, b) = (project(&old), project(&new));
                let prefix = checked(&a, &b);
                assert_eq!(prefix.items, p, "edit at {p}");
                // `[`, the p items and their commas, the comma before the edited item (unless it
                // is the first), and the start its text shares with the old one: up to `"text":"`.
                let shared_text = user("").len() - 4;
                let items_bytes: usize = a.iter().take(p).map(str::len).sum();
                let commas = p.min(1) + p.saturating_sub(1);
                assert_eq!(
                    prefix.bytes,
                    (1 + items_bytes + commas + shared_text) as u64,
                    "edit at {p}"
                );
                assert!(!prefix.is_identical());
                assert!(!prefix.is_extension());
                let difference = prefix.first_difference.expect("differs");
                assert_eq!(difference.item, p);
                assert_eq!(
                    side(difference.left),
                    Some((
                        p,
                        ItemKind::Message,
                        false,
                        user(&format!("message {p}")).len()
                    ))
                );
                assert_eq!(
                    side(difference.right),
                    Some((
                        p,
                        ItemKind::Message,
                        false,
                        user(&format!("edited {p}")).len()
                    ))
                );
            }
        }

        #[test]
        fn a_synthetic_output_breaks_the_run_even_where_the_leaf_after_it_is_shared() {
            // The call at position 63 closes the first leaf of 64 entries and has no output: the
            // projection sends a synthetic one after it. The same history with the output
            // appended sends the call and then the next leaf, shared by pointer.
            let mut items = messages(130);
            items[63] = call("late");
            let unanswered = history_of(&items);
            let mut answered = unanswered.clone();
            answered.record_json(output("late")).expect("valid");
            let (a, b) = (project(&unanswered), project(&answered));
            let synthetic = sent_len(&a, 64);
            for (prefix, synthetic_side, real_side) in
                [(a.common_prefix(&b), 0, 1), (b.common_prefix(&a), 1, 0)]
            {
                assert_eq!((prefix.items, prefix.bytes), naive(&a, &b));
                // The items up to the call are shared; the synthetic output and the message
                // after the call differ.
                assert_eq!(prefix.items, 64);
                assert!(!prefix.is_extension());
                let difference = prefix.first_difference.expect("differs");
                assert_eq!(difference.item, 64);
                let sides = [side(difference.left), side(difference.right)];
                assert_eq!(
                    sides[synthetic_side],
                    // A synthetic output has its call's position and the output kind.
                    Some((63, ItemKind::FunctionCallOutput, true, synthetic))
                );
                assert_eq!(
                    sides[real_side],
                    Some((64, ItemKind::Message, false, user("message 64").len()))
                );
            }
        }

        #[test]
        fn media_stripped_on_one_side_only_differs_at_the_media_item() {
            let mut items = messages(100);
            items.push(
                r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#
                    .to_owned(),
            );
            items.push(user("seen"));
            let history = history_of(&items);
            let with_images = project(&history);
            let text_only = |history: &History| {
                history
                    .project(&ProjectionOptions::for_modalities(Modalities::TEXT))
                    .expect("lenient")
            };
            let stripped = text_only(&history);
            // The two share the history's vector, every leaf by pointer, but send the image
            // item in two forms.
            let prefix = checked(&with_images, &stripped);
            assert_eq!(prefix.items, 100);
            let difference = prefix.first_difference.expect("differs");
            assert_eq!(
                side(difference.left),
                Some((100, ItemKind::Message, false, items[100].len()))
            );
            assert_eq!(
                side(difference.right),
                Some((100, ItemKind::Message, false, sent_len(&stripped, 100)))
            );
            assert_ne!(sent_len(&stripped, 100), items[100].len());
            // The same stripping on both sides: shared.
            let again = text_only(&history.clone());
            assert!(checked(&stripped, &again).is_identical());
            assert!(checked(&with_images, &project(&history)).is_identical());
        }
    }

    /// The bytes counted after the shared items (`Stream`, `Piece`, `common_stream_prefix`),
    /// checked against what `common_prefix` promises: `bytes` is how many leading bytes the two
    /// byte streams share, `[`, the items (as written) with their commas, `]` and what follows,
    /// compared here byte by byte.
    mod mut_pfx_c {
        use super::*;
        use crate::projection::ProjectionOptions;

        /// A projection of a new history of `items` (no pointer shared with any other).
        fn projection_of(items: &[String]) -> Projection {
            history_of(items)
                .project(&ProjectionOptions::default())
                .expect("lenient")
        }

        #[test]
        fn equal_projections_share_every_byte_of_their_arrays() {
            for n in [0, 1, 2, 5] {
                let items: Vec<String> = (0..n).map(|i| user(&format!("item {i}"))).collect();
                let (a, b) = (projection_of(&items), projection_of(&items));
                let prefix = checked(&a, &b);
                assert!(prefix.is_identical(), "{n} items");
                assert_eq!(prefix.items, n);
                assert_eq!(prefix.bytes, a.json_array_len() as u64, "{n} items");
            }
        }

        #[test]
        fn an_extension_shares_all_of_the_shorter_array_but_its_bracket() {
            for n in [0, 1, 2, 5] {
                let items: Vec<String> = (0..=n).map(|i| user(&format!("item {i}"))).collect();
                let (a, b) = (projection_of(&items[..n]), projection_of(&items));
                let prefix = checked(&a, &b);
                assert!(prefix.is_extension(), "{n} items");
                assert_eq!(prefix.items, n);
                assert_eq!(prefix.bytes, a.json_array_len() as u64 - 1, "{n} items");
            }
        }

        #[test]
        fn a_differing_item_adds_its_comma_and_the_common_start_of_both_texts() {
            // The difference at every index, with up to two more items after it on the left:
            // the shared items' bytes are counted forwards, or backwards from the left's total
            // when they are more than the rest (over the differing item the comparison read).
            for at in 0..6 {
                for more in 0..3 {
                    let head: Vec<String> = (0..at).map(|i| user(&format!("item {i}"))).collect();
                    let mut left = head.clone();
                    left.push(user("hello there"));
                    left.extend((0..more).map(|i| user(&format!("later {i}"))));
                    let mut right = head;
                    right.push(user("hello world"));
                    let (a, b) = (projection_of(&left), projection_of(&right));
                    let prefix = checked(&a, &b);
                    assert_eq!(prefix.items, at);
                    let difference = prefix.first_difference.expect("differs");
                    assert_eq!(difference.item, at);
                    // `[`, the shared items and their commas, then the comma before the
                    // differing item (none before the first) and the texts' common start.
                    let before: u64 = a.iter().take(at).map(|text| text.len() as u64 + 1).sum();
                    let common = shared_bytes(
                        user("hello there").as_bytes(),
                        user("hello world").as_bytes(),
                    );
                    assert_eq!(prefix.bytes, 1 + before + common, "at {at}, {more} more");
                }
            }
        }

        fn unchanged(text: &str) -> &str {
            text
        }

        fn trimmed(text: &str) -> &str {
            text.trim()
        }

        #[test]
        fn what_follows_the_array_is_compared_and_asked_for_only_when_reached() {
            let items = [format!("  {} ", user("padded")), user("plain")];
            let (a, b) = (projection_of(&items), projection_of(&items));
            for (rewrite, text) in [
                (unchanged as fn(&str) -> &str, ItemText::AsStored),
                (trimmed, ItemText::Rewritten(trimmed)),
            ] {
                for (after_a, after_b) in [
                    (&b"tail one"[..], &b"tail two"[..]),
                    (b"same", b"same"),
                    (b"", b"more"),
                ] {
                    let (mut asked_a, mut asked_b) = (0, 0);
                    let prefix = a.framed_prefix(
                        &b,
                        text,
                        &mut || {
                            asked_a += 1;
                            after_a.to_vec()
                        },
                        &mut || {
                            asked_b += 1;
                            after_b.to_vec()
                        },
                    );
                    let expected =
                        shared_bytes(&stream(&a, rewrite, after_a), &stream(&b, rewrite, after_b));
                    assert_eq!(prefix.bytes, expected);
                    assert!(prefix.is_identical());
                    // Each asked once at most; both when the comparison goes past both `]`.
                    assert!(asked_a <= 1 && asked_b <= 1);
                    if !after_a.is_empty() {
                        assert_eq!((asked_a, asked_b), (1, 1));
                    }
                }
            }
            // Where the items differ, the comparison ends before the arrays do.
            let longer = projection_of(&[items[0].clone(), items[1].clone(), user("more")]);
            let (mut asked_a, mut asked_b) = (0, 0);
            let prefix = a.framed_prefix(
                &longer,
                ItemText::Rewritten(trimmed),
                &mut || {
                    asked_a += 1;
                    b"x".to_vec()
                },
                &mut || {
                    asked_b += 1;
                    b"x".to_vec()
                },
            );
            assert!(prefix.is_extension());
            assert_eq!(
                prefix.bytes,
                shared_bytes(&stream(&a, trimmed, b"x"), &stream(&longer, trimmed, b"x"))
            );
            assert_eq!((asked_a, asked_b), (0, 0));
        }
    }

    #[test]
    fn common_bytes_finds_the_first_difference_in_and_across_blocks() {
        let a = vec![7u8; 300];
        for at in [0, 1, 63, 64, 65, 200, 299] {
            let mut b = a.clone();
            b[at] = 8;
            assert_eq!(common_bytes(&a, &b), at);
        }
        assert_eq!(common_bytes(&a, &a), 300);
        assert_eq!(common_bytes(&a[..10], &a), 10);
    }

    /// The byte count of `framed_prefix` (forwards and backwards), `leading_bytes` and
    /// `same_item`, from the promise of `common_prefix`: the items and bytes two projections share
    /// are those their JSON arrays share when compared one by one, counted over the shorter side
    /// of the first difference.
    mod mut_pfx_b {
        use super::*;
        use crate::history::History;
        use crate::projection::{Modalities, ProjectionOptions};

        /// The `i`th item of the test histories: user messages of different lengths (a wrong sum
        /// of lengths shows), a call that has no output (sent with a synthetic output) and an
        /// output of no call (not sent).
        fn item(i: usize) -> String {
            match i % 6 {
                3 => format!(
                    r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"c{i}"}}"#
                ),
                4 => {
                    format!(r#"{{"type":"function_call_output","call_id":"gone{i}","output":"x"}}"#)
                }
                _ => user(&format!("m{i}{}", "x".repeat(i % 5))),
            }
        }

        fn project(history: &History, options: ProjectionOptions) -> Projection {
            history.project(&options).expect("lenient")
        }

        #[test]
        fn the_bytes_shared_are_those_the_arrays_share_whichever_side_is_counted() {
            let options = ProjectionOptions::default();
            for n in [1, 2, 3, 4, 5, 7, 12, 40] {
                let items: Vec<String> = (0..n).map(item).collect();
                let history = history_of(&items);
                let a = project(&history, options);
                // Recorded again: equal texts in other allocations, no pointer shared.
                let same = checked(&a, &project(&history_of(&items), options));
                assert!(same.is_identical());
                assert_eq!(same.bytes, a.json_array_len() as u64);
                for p in 0..n {
                    // An edit at `p`, in a clone (leaves shared by pointer) and recorded anew.
                    let mut edited = items.clone();
                    edited[p] = user(&format!("m{p}edited"));
                    let mut clone = history.clone();
                    let mut entries = history.entries().clone();
                    entries.set(p, Entry::from_json(edited[p].as_str()).expect("valid"));
                    clone.replace(entries);
                    for other in [clone, history_of(&edited)] {
                        // (An edit of the output of no call, which is not sent, sends one
                        // item more.)
                        assert!(!checked(&a, &project(&other, options)).is_identical());
                    }
                    // The first `p` items, then the rest: the first is all reusable.
                    let shorter = project(&history_of(&items[..p]), options);
                    checked(&shorter, &a);
                    let mut longer = history.clone();
                    longer.record_json(user("more")).expect("valid");
                    assert!(checked(&a, &project(&longer, options)).is_extension());
                }
            }
        }

        fn trim(text: &str) -> &str {
            text.trim_matches([' ', '\n'])
        }

        #[test]
        fn rewritten_items_count_their_rewritten_bytes_and_what_follows_the_array() {
            let options = ProjectionOptions::default();
            // White space around every stored text: the stored lengths are not the lengths sent.
            let padded = |i: usize| format!("  {}\n", item(i));
            for n in [1, 2, 3, 6, 13] {
                let items: Vec<String> = (0..n).map(padded).collect();
                let a = project(&history_of(&items), options);
                let mut cases = vec![(
                    project(&history_of(&items), options),
                    b"tail one".as_slice(),
                    b"tail two".as_slice(),
                )];
                for p in 0..n {
                    let mut edited = items.clone();
                    edited[p] = format!("  {}\n", user(&format!("m{p}edited")));
                    let b = project(&history_of(&edited), options);
                    cases.push((b, b"same tail", b"same tail"));
                }
                for (b, after_a, after_b) in cases {
                    let expected =
                        shared_bytes(&stream(&a, trim, after_a), &stream(&b, trim, after_b));
                    let prefix = a.framed_prefix(
                        &b,
                        ItemText::Rewritten(trim),
                        &mut || after_a.to_vec(),
                        &mut || after_b.to_vec(),
                    );
                    assert_eq!(prefix.items, naive(&a, &b).0, "n = {n}");
                    assert_eq!(prefix.bytes, expected, "n = {n}");
                }
            }
        }

        /// The slots `common_prefix` reads one by one while `f` runs.
        fn slots_read(f: impl FnOnce()) -> u64 {
            let before = prefix_slots_read();
            f();
            prefix_slots_read() - before
        }

        #[test]
        fn the_shared_bytes_are_counted_over_the_shorter_side_of_the_first_difference() {
            // No pointer shared: the walk reads the first `p + 1` slots of each side, then the
            // bytes are counted over the `p` shared items or over the `n - p - 1` after the
            // difference, whichever is fewer (messages only: one item per slot).
            let n = 100;
            let options = ProjectionOptions::default();
            let items: Vec<String> = (0..n).map(|i| user(&format!("m{i}"))).collect();
            let a = project(&history_of(&items), options);
            for p in [0, 1, 10, 30, 49, 50, 51, 70, 90, 98, 99, n] {
                let mut edited = items.clone();
                if p < n {
                    edited[p] = user("edited");
                }
                let b = project(&history_of(&edited), options);
                let read = slots_read(|| {
                    assert_eq!(a.common_prefix(&b).items, p);
                });
                let walk = 2 * (p + 1).min(n);
                let counted = p.min(n - p) + 1;
                assert!(
                    read as usize <= walk + counted,
                    "{read} slots read, p = {p}"
                );
                checked(&a, &b);
            }
        }

        const IMAGE: &str = r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#;
        const AUDIO: &str = r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hear"},{"type":"input_audio","audio_url":"data:audio/wav;base64,AA"}]}"#;

        #[test]
        fn an_entry_whose_media_one_side_strips_is_not_shared_though_its_body_is() {
            let all = ProjectionOptions::for_modalities(Modalities::ALL);
            for (media, strips) in [
                (IMAGE, Modalities::TEXT),
                (AUDIO, Modalities::TEXT),
                (AUDIO, Modalities::TEXT_IMAGE),
            ] {
                let items = [
                    user("first"),
                    user("second"),
                    media.to_owned(),
                    user("last"),
                ];
                let history = history_of(&items);
                let kept = project(&history, all);
                let stripped = project(&history, ProjectionOptions::for_modalities(strips));
                let prefix = checked(&kept, &stripped);
                assert_eq!(prefix.items, 2);
                let difference = prefix.first_difference.expect("differs");
                assert_eq!(difference.left.expect("left").position, 2);
                // The same stripping on both sides: the same entry sends the same bytes.
                let again = project(&history, ProjectionOptions::for_modalities(strips));
                assert!(checked(&stripped, &again).is_identical());
                assert!(checked(&kept, &project(&history, all)).is_identical());
            }
        }

        #[test]
        fn a_synthetic_output_is_shared_only_with_the_same_output() {
            let options = ProjectionOptions::default();
            let call = item(3);
            let base = [user("first"), call.clone(), user("after")];
            let unanswered = project(&history_of(&base), options);
            // The same call unanswered elsewhere: the same synthetic output, other allocations.
            assert!(checked(&unanswered, &project(&history_of(&base), options)).is_identical());
            assert!(checked(&unanswered, &unanswered.clone()).is_identical());
            // Answered: the call is shared, its real output is not the synthetic one.
            let answered = [
                user("first"),
                call,
                r#"{"type":"function_call_output","call_id":"c3","output":"done"}"#.to_owned(),
                user("after"),
            ];
            let prefix = checked(&unanswered, &project(&history_of(&answered), options));
            assert_eq!(prefix.items, 2);
            let difference = prefix.first_difference.expect("differs");
            assert!(difference.left.expect("left").synthetic_output);
            assert!(!difference.right.expect("right").synthetic_output);
        }
    }
}
