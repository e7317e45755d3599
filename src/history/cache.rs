//! What later layers keep for a history and every version of it (a cache), and how far two
//! versions hold the same entries.
//!
//! [`Cache`] is what is shared by a history and everything made from it (clones, appends,
//! rollbacks, replaces): one value per type a later layer asks for (the provider layer keeps
//! its per-target assemblies there, and says how many targets it has). Nothing in it is a
//! promise about the entries: a user checks what it keeps against the version at hand, for
//! which [`shared_prefix`] tells in O(n / 64) how many leading entries two versions share.

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

use imbl::Vector;

use crate::item::Entry;

/// A value of any type a later layer keeps.
type Memo = Arc<dyn Any + Send + Sync>;

/// The cache a history and its versions share: one value per type (see the module docs).
#[derive(Default)]
pub(crate) struct Cache {
    cells: Mutex<Vec<Memo>>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cells = self.cells.lock().unwrap_or_else(PoisonError::into_inner);
        write!(f, "Cache({} kept)", cells.len())
    }
}

impl Cache {
    /// The value of type `T`, made with `T::default()` the first time it is asked for. Time:
    /// O(k) for the k types kept.
    pub(crate) fn get<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let mut cells = self.cells.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = cells
            .iter()
            .find_map(|cell| Arc::clone(cell).downcast::<T>().ok())
        {
            return found;
        }
        let made = Arc::new(T::default());
        cells.push(Arc::clone(&made) as Memo);
        made
    }
}

/// How many leading entries `a` and `b` share (the same entries: clones, see
/// [`Entry::is_same`]). Two versions of one history share the leaves of their persistent
/// vectors where neither was edited: a leaf both hold at the same place is passed by one pointer
/// comparison, and only where the leaves differ are entries compared one by one. Time: O(n / 64)
/// for versions that share their leaves, O(n) at most.
pub(crate) fn shared_prefix(a: &Vector<Entry>, b: &Vector<Entry>) -> usize {
    if a.ptr_eq(b) {
        return a.len();
    }
    let (mut left, mut right) = (a.leaves(), b.leaves());
    let (mut x, mut y): (&[Entry], &[Entry]) = (&[], &[]);
    let mut shared = 0;
    loop {
        if x.is_empty() {
            match left.next() {
                Some(leaf) => x = leaf,
                None => return shared,
            }
            continue;
        }
        if y.is_empty() {
            match right.next() {
                Some(leaf) => y = leaf,
                None => return shared,
            }
            continue;
        }
        let run = x.len().min(y.len());
        let same = if std::ptr::eq(x.as_ptr(), y.as_ptr()) {
            run
        } else {
            x.iter().zip(y).take_while(|(a, b)| a.is_same(b)).count()
        };
        shared += same;
        if same < run {
            return shared;
        }
        x = &x[run..];
        y = &y[run..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    fn history(texts: &[&str]) -> History {
        let mut history = History::new();
        for text in texts {
            history
                .record_json(format!(
                    r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
                ))
                .expect("valid");
        }
        history
    }

    #[test]
    fn versions_share_their_leading_entries_and_equal_texts_are_not_the_same_entries() {
        let texts: Vec<String> = (0..200).map(|n| format!("m{n}")).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let base = history(&texts);
        let mut fork = base.clone();
        fork.record_json(
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}"#,
        )
        .expect("valid");
        assert_eq!(shared_prefix(base.entries(), fork.entries()), 200);
        assert_eq!(shared_prefix(fork.entries(), base.entries()), 200);
        let mut other = base.clone();
        other.remove_first_item();
        assert_eq!(shared_prefix(base.entries(), other.entries()), 0);
        let mut cut = base.clone();
        cut.replace(base.iter().take(150).cloned());
        assert_eq!(shared_prefix(base.entries(), cut.entries()), 150);
        // The same texts recorded again are other entries.
        assert_eq!(shared_prefix(base.entries(), history(&texts).entries()), 0);
    }

    #[test]
    fn one_value_per_type() {
        #[derive(Default)]
        struct Counter(std::sync::atomic::AtomicUsize);
        let cache = Cache::default();
        cache
            .get::<Counter>()
            .0
            .store(7, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(
            cache
                .get::<Counter>()
                .0
                .load(std::sync::atomic::Ordering::Relaxed),
            7
        );
        assert_eq!(*cache.get::<String>(), "");
    }
}
