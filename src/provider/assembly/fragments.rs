//! The written form of an assembly: a persistent vector of fragments whose concatenation is the
//! target's messages array (between its brackets). A fragment is a few of the target's static
//! texts and then one text of a rendering (or one the assembly made), so writing the messages
//! copies the renderings' bytes; it parses and formats nothing.

use std::io::{self, Write};
use std::sync::Arc;

use imbl::Vector;

use super::units::Rendered;

/// Up to three of the target's static texts (indices into [`Format::PIECES`](super::Format),
/// 0 for none), written before a fragment's text.
pub(crate) type Lead = [u8; 3];

/// No static text.
pub(crate) const NO_LEAD: Lead = [0; 3];

/// One fragment of a target's messages (16 bytes: an assembly holds about one per item).
#[derive(Debug)]
pub(crate) enum Fragment<R> {
    /// Only the static texts.
    Lead(Lead),
    /// The static texts, then text `index` of a rendering ([`Rendered::part`]).
    Part(Lead, u32, Arc<R>),
    /// The static texts, then a text the assembly made (a mapped id, a synthetic output).
    Made(Lead, Arc<String>),
}

// Not derived: the rendering is shared, so `R` need not be `Clone`.
impl<R> Clone for Fragment<R> {
    fn clone(&self) -> Self {
        match self {
            Fragment::Lead(lead) => Fragment::Lead(*lead),
            Fragment::Part(lead, index, item) => Fragment::Part(*lead, *index, Arc::clone(item)),
            Fragment::Made(lead, text) => Fragment::Made(*lead, Arc::clone(text)),
        }
    }
}

impl<R: Rendered> Fragment<R> {
    /// Text `index` of `item`, after `lead`.
    pub(crate) fn part(lead: Lead, index: u32, item: &Arc<R>) -> Self {
        Fragment::Part(lead, index, Arc::clone(item))
    }

    /// A text the assembly made, after `lead`.
    pub(crate) fn made(lead: Lead, text: String) -> Self {
        super::counters::text_made();
        Fragment::Made(lead, Arc::new(text))
    }

    /// Its static texts.
    pub(crate) fn lead(&self) -> Lead {
        match self {
            Fragment::Lead(lead) | Fragment::Part(lead, ..) | Fragment::Made(lead, _) => *lead,
        }
    }

    /// The same text after `lead` instead.
    pub(crate) fn with_lead(self, lead: Lead) -> Self {
        match self {
            Fragment::Lead(_) => Fragment::Lead(lead),
            Fragment::Part(_, index, item) => Fragment::Part(lead, index, item),
            Fragment::Made(_, text) => Fragment::Made(lead, text),
        }
    }

    /// Its text (without the static ones).
    pub(crate) fn text(&self) -> &str {
        match self {
            Fragment::Lead(_) => "",
            Fragment::Part(_, index, item) => item.part(*index),
            Fragment::Made(_, text) => text,
        }
    }

    /// Its length in bytes, static texts included.
    pub(crate) fn len(&self, pieces: &[&str]) -> usize {
        lead_len(self.lead(), pieces) + self.text().len()
    }

    /// Writes it.
    pub(crate) fn write<W: Write + ?Sized>(&self, pieces: &[&str], out: &mut W) -> io::Result<()> {
        for piece in self.lead() {
            if piece != 0 {
                out.write_all(pieces[usize::from(piece)].as_bytes())?;
            }
        }
        out.write_all(self.text().as_bytes())
    }
}

/// The length of `lead`'s static texts.
fn lead_len(lead: Lead, pieces: &[&str]) -> usize {
    lead.iter()
        .filter(|&&piece| piece != 0)
        .map(|&piece| pieces[usize::from(piece)].len())
        .sum()
}

/// Writes `fragments` (with `last` instead of the last one, when given), walking the persistent
/// vector leaf by leaf.
pub(crate) fn write_all<R: Rendered, W: Write + ?Sized>(
    pieces: &[&str],
    fragments: &Vector<Fragment<R>>,
    last: Option<&Fragment<R>>,
    out: &mut W,
) -> io::Result<()> {
    let mut left = fragments.len();
    for leaf in fragments.leaves() {
        for fragment in leaf {
            left -= 1;
            match last {
                Some(last) if left == 0 => last.write(pieces, out)?,
                _ => fragment.write(pieces, out)?,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An assembly holds about one fragment per item: the memory figures of
    /// docs/performance.md count on their 16 bytes.
    #[test]
    fn a_fragment_takes_16_bytes() {
        struct Item;
        assert_eq!(std::mem::size_of::<Fragment<Item>>(), 16);
    }
}
