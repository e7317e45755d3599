//! `prefix`: how much of the prompt input two sessions share.

use std::io::{Read, Write as _};
use std::path::Path;
use std::process::ExitCode;

use agent_history::{
    ContentItem, Entry, FirstDifference, History, ProjectionOptions, ReadMode, ResponseItem,
    ResumeOptions, Role, RolloutText, SessionFormat, SnapshotOptions, SnapshotTrust, Transcript,
    is_contextual_developer_text, is_contextual_user_text, is_snapshot, is_summary_text,
    open_rollout, open_snapshot, resume_reader,
};
use anyhow::Context as _;

use super::Usage;
use super::args::PrefixArgs;
use super::input::{STDIN_LABEL, format_of, is_stdin, resume, source_of, stdin_rollout};
use super::output::{finish, stdout};

/// Runs `prefix`.
pub fn run(args: PrefixArgs) -> anyhow::Result<ExitCode> {
    let PrefixArgs {
        format: _,
        a,
        b,
        at_line,
        modalities,
        truncation,
        trusted,
    } = args;
    let options = super::input::resume_options(Some(truncation));
    if is_stdin(&a) && b.as_deref().is_some_and(is_stdin) {
        return Err(
            Usage("`-` (standard input) can be read only once: give it as A or B".into()).into(),
        );
    }
    let (left, right) = match (b, at_line.as_slice()) {
        (Some(b), []) => (
            Side::load(&a, None, &options, trusted)?,
            Side::load(&b, None, &options, trusted)?,
        ),
        (None, &[n]) => (
            Side::load(&a, Some(n), &options, trusted)?,
            Side::load(&a, None, &options, trusted)?,
        ),
        (None, &[n, m]) => (
            Side::load(&a, Some(n), &options, trusted)?,
            Side::load(&a, Some(m), &options, trusted)?,
        ),
        _ => {
            return Err(Usage(format!(
                "give a second rollout B, or --at-line once or twice (two points of {})",
                a.display()
            ))
            .into());
        }
    };
    let projection = ProjectionOptions::for_modalities(modalities);
    let text = prefix_report(&left, &right, &projection)?;
    let mut out = stdout();
    out.write_all(text.as_bytes())
        .context("cannot write to stdout")?;
    finish(out)
}
/// One side of `prefix`: a history and what names it.
struct Side {
    /// The path, with the lines it was resumed from.
    label: String,
    history: History,
    /// For a Claude Code transcript, the line of the compaction its conversation starts after.
    compacted_at: Option<u64>,
}

impl Side {
    /// The history of the rollout or snapshot at `path`; of a rollout's first `lines` lines when
    /// given.
    fn load(
        path: &Path,
        lines: Option<u64>,
        options: &ResumeOptions,
        trusted: bool,
    ) -> anyhow::Result<Side> {
        if is_snapshot(path) {
            if lines.is_some() {
                return Err(Usage(format!(
                    "--at-line needs a rollout, and {} is a snapshot",
                    path.display()
                ))
                .into());
            }
            let trust = if trusted {
                SnapshotTrust::Own
            } else {
                SnapshotTrust::Untrusted
            };
            let opened = open_snapshot(
                path,
                SnapshotOptions {
                    trust,
                    ..SnapshotOptions::default()
                },
            )?;
            return Ok(Side {
                label: format!("{} (snapshot)", path.display()),
                history: opened.into_history(),
                compacted_at: None,
            });
        }
        if format_of(&source_of(path)) == SessionFormat::ClaudeCode {
            return Side::transcript(path, lines);
        }
        let label = path.display().to_string();
        let Some(lines) = lines else {
            // Streamed: a file, standard input read once, or the copy of it another point of
            // it was read from.
            let history = match SPOOL.get().filter(|_| is_stdin(path)) {
                Some(spool) => resume_reader(open_rollout(spool)?, STDIN_LABEL, options)?,
                None => resume(path, options)?,
            };
            return Ok(Side {
                label,
                history: history.into_history(),
                compacted_at: None,
            });
        };
        // The first `lines` lines, streamed from the file (standard input is spooled to a
        // temporary file first, so that two points of it can be read).
        let spool = spooled_stdin(path)?;
        // Lines of the text, so of what a compressed file decompresses to.
        let mut first = FirstLines::new(
            RolloutText::new(open_rollout(spool.unwrap_or(path))?)?,
            lines,
        );
        // Errors name what was given (`<stdin>`), not the copy.
        let named = if spool.is_some() {
            Path::new(STDIN_LABEL)
        } else {
            path
        };
        let resumed = resume_reader(&mut first, named, options)?;
        if !first.complete() {
            anyhow::bail!(
                "--at-line {lines}: {label} has only {} line(s)",
                first.seen()
            );
        }
        Ok(Side {
            label: format!("{label} (first {lines} line(s))"),
            history: resumed.into_history(),
            compacted_at: None,
        })
    }

    /// The conversation of the Claude Code transcript at `path` (of its first `lines` lines
    /// when given) as a history, its items keeping their blocks.
    fn transcript(path: &Path, lines: Option<u64>) -> anyhow::Result<Side> {
        // Standard input is spooled, as for a rollout, so that two points of it can be read.
        let spool = spooled_stdin(path)?;
        let file = open_rollout(spool.unwrap_or(path))?;
        let named = if spool.is_some() {
            Path::new(STDIN_LABEL)
        } else {
            path
        };
        let label = named.display().to_string();
        let (transcript, label) = match lines {
            None => (Transcript::read(file, named, ReadMode::Lenient)?, label),
            Some(lines) => {
                let mut first = FirstLines::new(RolloutText::new(file)?, lines);
                let transcript = Transcript::read(&mut first, named, ReadMode::Lenient)?;
                if !first.complete() {
                    anyhow::bail!(
                        "--at-line {lines}: {label} has only {} line(s)",
                        first.seen()
                    );
                }
                (transcript, format!("{label} (first {lines} line(s))"))
            }
        };
        let conversation = transcript.conversation();
        Ok(Side {
            label,
            history: conversation.history()?,
            compacted_at: conversation.report.cut.map(|cut| cut.line),
        })
    }
}

/// The copy of standard input (see [`spooled_stdin`]).
static SPOOL: std::sync::OnceLock<tempfile::TempPath> = std::sync::OnceLock::new();

/// Standard input, copied once to a temporary file (on disk, not in memory) that lives as long
/// as the process, when `path` is `-`: `prefix - --at-line N` reads two points of it.
fn spooled_stdin(path: &Path) -> anyhow::Result<Option<&'static Path>> {
    if !is_stdin(path) {
        return Ok(None);
    }
    if SPOOL.get().is_none() {
        let mut file = tempfile::NamedTempFile::new().context("cannot spool standard input")?;
        let mut stdin = stdin_rollout()?;
        std::io::copy(&mut stdin, &mut file).context("cannot spool standard input")?;
        let _ = SPOOL.set(file.into_temp_path());
    }
    Ok(SPOOL.get().map(|spool| &**spool))
}

/// A reader of the first `lines` lines of `inner` (up to and including the last one's
/// newline, or to the end of a last line without one).
struct FirstLines<R> {
    inner: R,
    lines: u64,
    seen: u64,
    /// The last byte passed on, to count a last line without its newline.
    last: Option<u8>,
    done: bool,
}

impl<R: Read> FirstLines<R> {
    fn new(inner: R, lines: u64) -> Self {
        FirstLines {
            inner,
            lines,
            seen: 0,
            last: None,
            done: lines == 0,
        }
    }

    /// Lines passed on (a last line without its newline counts).
    fn seen(&self) -> u64 {
        self.seen + u64::from(self.last.is_some_and(|byte| byte != b'\n'))
    }

    /// Whether all `lines` lines were there.
    fn complete(&self) -> bool {
        self.seen() >= self.lines
    }
}

impl<R: Read> Read for FirstLines<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        let read = self.inner.read(buffer)?;
        let mut end = read;
        for at in memchr::memchr_iter(b'\n', &buffer[..read]) {
            self.seen += 1;
            if self.seen == self.lines {
                end = at + 1;
                self.done = true;
                break;
            }
        }
        if end > 0 {
            self.last = Some(buffer[end - 1]);
        }
        Ok(end)
    }
}

/// The report of `prefix`.
fn prefix_report(left: &Side, right: &Side, options: &ProjectionOptions) -> anyhow::Result<String> {
    let a = left
        .history
        .project(options)
        .with_context(|| format!("cannot project {}", left.label))?;
    let b = right
        .history
        .project(options)
        .with_context(|| format!("cannot project {}", right.label))?;
    let shared = a.common_prefix(&b);
    let mut out = String::new();
    let a_bytes = a.json_array_len() as u64;
    out.push_str(&format!(
        "A  {}: {} item(s), {} byte(s)\n",
        left.label,
        a.len(),
        a_bytes
    ));
    out.push_str(&format!(
        "B  {}: {} item(s), {} byte(s)\n",
        right.label,
        b.len(),
        b.json_array_len()
    ));
    let share = if a_bytes == 0 {
        0.0
    } else {
        shared.bytes as f64 * 100.0 / a_bytes as f64
    };
    out.push_str(&format!(
        "shared: {} item(s), {} byte(s) of the input array ({share:.1}% of A)\n",
        shared.items, shared.bytes
    ));
    let Some(difference) = &shared.first_difference else {
        out.push_str("why: identical: the whole input is reusable\n");
        return Ok(out);
    };
    out.push_str(&format!("first difference: item {}\n", difference.item));
    for (name, item) in [("A", &difference.left), ("B", &difference.right)] {
        match item {
            Some(item) => out.push_str(&format!(
                "  {name}: position {}, {}{}, {} byte(s)\n",
                item.position,
                item.kind,
                if item.synthetic_output {
                    " (synthetic output)"
                } else {
                    ""
                },
                item.bytes
            )),
            None => out.push_str(&format!("  {name}: no more items\n")),
        }
    }
    out.push_str(&format!("why: {}\n", why(left, right, difference)));
    Ok(out)
}

/// Why two sessions' inputs differ at `difference`.
fn why(left: &Side, right: &Side, difference: &FirstDifference) -> String {
    let (a, b) = (&left.history, &right.history);
    let fewer_turns = b.user_turn_count() < a.user_turn_count();
    match (&difference.left, &difference.right) {
        (None, None) => "identical: the whole input is reusable".to_owned(),
        // A transcript's conversation starts after its last compaction: a later one replaces
        // everything before it.
        (_, Some(_)) if right.compacted_at > left.compacted_at => {
            "compaction: B's conversation starts after a later compaction, with its summary"
                .to_owned()
        }
        // Nothing in common is no rollback or edit of one session: say so rather than guess.
        (Some(_), Some(_)) if difference.item == 0 => {
            "nothing shared: the inputs differ from their first item (two unrelated sessions, \
             or one rewritten from its start)"
                .to_owned()
        }
        (None, Some(_)) => "appended: B extends A, all of A is reusable".to_owned(),
        (Some(_), None) if fewer_turns => format!(
            "rollback: B has fewer user turns ({} < {}), the items after B's end were removed",
            b.user_turn_count(),
            a.user_turn_count()
        ),
        (Some(_), None) => "removed at the end: B ends where A goes on".to_owned(),
        (Some(x), Some(y)) => {
            let item_a = (!x.synthetic_output).then(|| a.get(x.position)).flatten();
            let item_b = (!y.synthetic_output).then(|| b.get(y.position)).flatten();
            let fragment = item_b
                .and_then(contextual_fragment)
                .or_else(|| item_a.and_then(contextual_fragment));
            if b.compactions_reachable() > a.compactions_reachable()
                || item_b.is_some_and(is_summary)
            {
                "compaction: B's history was replaced by a summary and a replacement history"
                    .to_owned()
            } else if fewer_turns {
                format!(
                    "rollback: B has fewer user turns ({} < {}) and goes on differently",
                    b.user_turn_count(),
                    a.user_turn_count()
                )
            } else if x.position + 1 == a.len()
                && let (Some(item_a), Some(item_b)) = (item_a, item_b)
                && goes_on(item_a, item_b)
            {
                "grown: B's message at A's end holds A's parts and more (a transcript's records \
                 merged into one message), A up to that message is reusable"
                    .to_owned()
            } else if let Some(role) = fragment {
                format!(
                    "world-state update rendered in full: a contextual {role} message (injected \
                     context, not a user turn) is sent in full where the other sends something else"
                )
            } else {
                "edit: the same position holds different content".to_owned()
            }
        }
    }
}

/// Whether `b` is the message `a` with more parts after its own.
fn goes_on(a: &Entry, b: &Entry) -> bool {
    let parts = |entry: &Entry| match entry.to_item() {
        Ok(ResponseItem::Message(message)) => Some((message.role, message.content)),
        _ => None,
    };
    match (parts(a), parts(b)) {
        (Some((role_a, parts_a)), Some((role_b, parts_b))) => {
            role_a == role_b && parts_b.len() > parts_a.len() && parts_b.starts_with(&parts_a)
        }
        _ => false,
    }
}

/// The texts of a message, with its role; `None` for other items and unreadable ones.
fn message_texts(entry: &Entry) -> Option<(Role, Vec<String>)> {
    let Ok(ResponseItem::Message(message)) = entry.to_item() else {
        return None;
    };
    let texts = message
        .content
        .into_iter()
        .filter_map(|part| match part {
            ContentItem::InputText { text } | ContentItem::OutputText { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    Some((message.role, texts))
}

/// `"user"` or `"developer"` when the entry is a message of that role carrying a contextual
/// fragment (injected context such as AGENTS.md instructions or the environment).
fn contextual_fragment(entry: &Entry) -> Option<&'static str> {
    let (role, texts) = message_texts(entry)?;
    match role {
        Role::User if texts.iter().any(|text| is_contextual_user_text(text)) => Some("user"),
        Role::Developer if texts.iter().any(|text| is_contextual_developer_text(text)) => {
            Some("developer")
        }
        _ => None,
    }
}

/// Whether the entry is a local-compaction summary message.
fn is_summary(entry: &Entry) -> bool {
    message_texts(entry).is_some_and(|(role, texts)| {
        role == Role::User && texts.iter().any(|text| is_summary_text(text))
    })
}
