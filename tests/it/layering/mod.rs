//! The layers of the crate import downwards only: a module may name the modules below it, never
//! one above (`docs/architecture.md`, "Layers"). This test reads `src/` and fails on an import
//! against the direction; `.ci/run` runs it as its own step.
//!
//! What counts as naming a layer: `crate::<layer>` anywhere in a line (code or comment), and a
//! `super::` chain that climbs out of its layer to a sibling. In code, a root path such as
//! `crate::Error` hides the layer it comes from, and a grouped `crate::{…}` import spans layers,
//! so both are refused too: name the module.
//!
//! Within a layer, `files.rs` checks that the files of each folder import each other in one
//! order, lowest first, so that no two import each other.

use std::path::{Path, PathBuf};

mod files;
mod layout;

/// The layers, lowest first. A module may import from itself and from the layers before it.
/// `error` only aggregates the layers' errors, so everything but `session` lies below it.
const LAYERS: &[&str] = &[
    "item",
    "world",
    "history",
    "projection",
    "request",
    "provider",
    "stream",
    "snapshot",
    "rollout",
    "transcript",
    "error",
    "session",
    "testing",
];

/// Files outside the layers: the crate root, which re-exports every layer, and the command-line
/// tool (`main.rs` and its modules under `cli/`), a crate of its own that uses only the public
/// surface. An entry ending in `/` is a folder: every file under it.
const OUTSIDE: &[&str] = &["lib.rs", "main.rs", "cli/"];

/// Whether the file at `name` (relative to `src/`, with `/` separators) is outside the layers.
fn outside(name: &str) -> bool {
    OUTSIDE.iter().any(|entry| match entry.strip_suffix('/') {
        Some(folder) => name.starts_with(&format!("{folder}/")),
        None => name == *entry,
    })
}

/// A source file: its path under `src/` and its text.
struct Source {
    path: PathBuf,
    text: String,
}

fn sources(dir: &Path, root: &Path, out: &mut Vec<Source>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("src is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, root, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).expect("a UTF-8 source file");
            let path = path.strip_prefix(root).expect("under src").to_owned();
            out.push(Source { path, text });
        }
    }
}

/// The module path of a file: `rollout/resume/scan.rs` → `[rollout, resume, scan]`; a `mod.rs`
/// is its folder's module.
fn module_path(path: &Path) -> Vec<String> {
    let mut parts: Vec<String> = path
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().unwrap_or_default();
    if file != "mod.rs" {
        parts.push(file.trim_end_matches(".rs").to_owned());
    }
    parts
}

fn rank(layer: &str) -> Option<usize> {
    LAYERS.iter().position(|&name| name == layer)
}

/// The identifier at the start of `text`.
fn identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// One source line split by the lexer: the code (string and character literals blanked, so that
/// their text is never read as code) and the comments (doc comments included).
struct Line {
    code: String,
    comment: String,
}

/// Splits Rust source into lines of code and comment. Knows what hides code from a line-by-line
/// reading: `//` and nested `/* */` comments, string literals with escapes, raw strings
/// (`r#"…"#`), and character literals (`'{'`, `'\''`) as opposed to lifetimes (`'a`).
fn lex(text: &str) -> Vec<Line> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        LineComment,
        BlockComment(usize),
        Str,
        RawStr(usize),
    }
    let chars: Vec<char> = text.chars().collect();
    let mut lines = vec![Line {
        code: String::new(),
        comment: String::new(),
    }];
    let mut state = State::Code;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let line = lines.last_mut().expect("one line at least");
        if c == '\n' {
            if state == State::LineComment {
                state = State::Code;
            }
            lines.push(Line {
                code: String::new(),
                comment: String::new(),
            });
            i += 1;
            continue;
        }
        match state {
            State::Code => {
                if c == '/' && next == Some('/') {
                    state = State::LineComment;
                    line.comment.push_str("//");
                    i += 2;
                    continue;
                }
                if c == '/' && next == Some('*') {
                    state = State::BlockComment(1);
                    i += 2;
                    continue;
                }
                if c == '"' {
                    state = State::Str;
                    line.code.push('"');
                } else if c == 'r'
                    && matches!(next, Some('#' | '"'))
                    && !i
                        .checked_sub(1)
                        .is_some_and(|p| chars[p].is_alphanumeric() || chars[p] == '_')
                {
                    let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
                    if chars.get(i + 1 + hashes) == Some(&'"') {
                        state = State::RawStr(hashes);
                        line.code.push('"');
                        i += 2 + hashes;
                        continue;
                    }
                    line.code.push(c); // a raw identifier, `r#type`
                } else if c == '\'' {
                    // A character literal ends two or more characters on ('x', '\n', '\u{7b}');
                    // a lifetime or a label does not.
                    let end = if next == Some('\\') {
                        chars[i + 2..]
                            .iter()
                            .position(|&q| q == '\'')
                            .map(|p| i + 2 + p)
                    } else if chars.get(i + 2) == Some(&'\'') {
                        Some(i + 2)
                    } else {
                        None
                    };
                    match end {
                        Some(end) => {
                            line.code.push_str("' '");
                            i = end + 1;
                            continue;
                        }
                        None => line.code.push(c),
                    }
                } else {
                    line.code.push(c);
                }
            }
            State::LineComment => line.comment.push(c),
            State::BlockComment(depth) => {
                if c == '*' && next == Some('/') {
                    state = if depth == 1 {
                        State::Code
                    } else {
                        State::BlockComment(depth - 1)
                    };
                    i += 2;
                    continue;
                }
                if c == '/' && next == Some('*') {
                    state = State::BlockComment(depth + 1);
                    i += 2;
                    continue;
                }
                line.comment.push(c);
            }
            State::Str => {
                if c == '\\' {
                    line.code.push(' ');
                    if next.is_some_and(|escaped| escaped != '\n') {
                        line.code.push(' ');
                        i += 2;
                        continue;
                    }
                } else if c == '"' {
                    state = State::Code;
                    line.code.push('"');
                } else {
                    line.code.push(' ');
                }
            }
            State::RawStr(hashes) => {
                let closes = c == '"'
                    && chars[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes;
                if closes {
                    state = State::Code;
                    line.code.push('"');
                    i += 1 + hashes;
                    continue;
                }
                line.code.push(' ');
            }
        }
        i += 1;
    }
    lines
}

/// The files in the layers, each with its name (under `src/`, `/`-separated) and module path.
fn layered(files: &[Source]) -> impl Iterator<Item = (&Source, String, Vec<String>)> {
    files.iter().filter_map(|file| {
        let name = file.path.to_string_lossy().replace('\\', "/");
        (!outside(&name)).then(|| (file, name, module_path(&file.path)))
    })
}

/// Every import against the direction in `files`, as `path:line: what`.
fn violations(files: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for (file, name, module) in layered(files) {
        let Some(own) = module.first().and_then(|layer| rank(layer)) else {
            found.push(format!(
                "{name}: module `{}` is in no layer; add it to LAYERS and to docs/architecture.md",
                module.first().map_or("", String::as_str)
            ));
            continue;
        };
        // Inline modules (`mod tests { … }`) deepen the module path for `super::`: the brace
        // depth at which each one opened.
        let mut inline: Vec<usize> = Vec::new();
        let mut braces = 0usize;
        for (number, Line { code, comment }) in lex(&file.text).iter().enumerate() {
            let at = format!("{name}:{}", number + 1);
            let trimmed = code.trim_start();
            let declaration = trimmed
                .strip_prefix("pub(crate) ")
                .or_else(|| trimmed.strip_prefix("pub "))
                .unwrap_or(trimmed);
            if declaration.starts_with("mod ") && declaration.trim_end().ends_with('{') {
                inline.push(braces);
            }
            braces += code.matches('{').count();
            braces = braces.saturating_sub(code.matches('}').count());
            while inline.last().is_some_and(|&opened| braces <= opened) {
                inline.pop();
            }
            if code.contains("#[path") {
                found.push(format!(
                    "{at}: `#[path]` puts a module where the layout does not show it"
                ));
            }
            for (text, in_code) in [(code.as_str(), true), (comment.as_str(), false)] {
                for (start, _) in text.match_indices("crate::") {
                    let rest = &text[start + "crate::".len()..];
                    let target = identifier(rest);
                    if target.is_empty() {
                        if in_code && rest.starts_with('{') {
                            found.push(format!(
                                "{at}: a grouped `crate::{{…}}` import; write one `use crate::<layer>::…` per layer"
                            ));
                        }
                        continue;
                    }
                    if target.starts_with(|c: char| c.is_ascii_uppercase()) {
                        if in_code {
                            found.push(format!(
                                "{at}: `crate::{target}` hides its layer; name the module that defines it"
                            ));
                        }
                        continue;
                    }
                    match rank(target) {
                        Some(theirs) if theirs <= own => {}
                        Some(_) => found.push(format!(
                            "{at}: `{}` names `{target}`, a layer above it",
                            module[0]
                        )),
                        None => found.push(format!("{at}: `crate::{target}` is not a layer")),
                    }
                }
            }
            // `super::super::x` climbs the module path; leaving the layer reaches another one.
            for (start, _) in code.match_indices("super::") {
                if start >= "super::".len() && code[..start].ends_with("super::") {
                    continue; // counted from the first `super` of the chain
                }
                let mut rest = &code[start..];
                let mut depth = module.len() + inline.len();
                while let Some(tail) = rest.strip_prefix("super::") {
                    depth = depth.saturating_sub(1);
                    rest = tail;
                }
                if depth == 0 {
                    let target = identifier(rest);
                    match rank(target) {
                        Some(theirs) if theirs <= own => {}
                        _ => found.push(format!(
                            "{at}: `super::` leaves `{}` for `{target}`; use `crate::{target}` (and only downwards)",
                            module[0]
                        )),
                    }
                }
            }
        }
    }
    found
}

/// The crate's source files.
fn crate_sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    files
}

#[test]
fn imports_go_down_the_layers() {
    let files = crate_sources();
    assert!(files.len() > 20, "read the source tree");
    let found = violations(&files);
    assert!(
        found.is_empty(),
        "imports against the layers ({}):\n{}",
        LAYERS.join(" < "),
        found.join("\n")
    );
}

fn file(path: &str, text: &str) -> Source {
    Source {
        path: PathBuf::from(path),
        text: text.to_owned(),
    }
}

#[test]
fn the_check_finds_each_kind_of_upward_import() {
    let files = [
        file("item/entry.rs", "use crate::history::turns::turn_role_of;"),
        file("item/entry.rs", "    Mapped(crate::snapshot::MappedText),"),
        file(
            "history/mod.rs",
            "/// See [`Projection`](crate::projection::Projection).",
        ),
        file("error.rs", "use crate::session::Session;"),
        file("history/compact.rs", "use super::super::rollout::Rollout;"),
        file(
            "snapshot.rs",
            "mod tests {\n    fn f() {}\n}\nuse super::rollout::Rollout;",
        ),
        file(
            "projection/mod.rs",
            "use crate::{history::History, request::Prompt};",
        ),
        file("rollout/reader.rs", "fn f() -> crate::Error { todo!() }"),
        file("world_state/mod.rs", "use crate::item::Entry;"),
        file("rollout/mod.rs", "use crate::nowhere::Thing;"),
        // Braces and `//` inside literals do not hide what follows them.
        file(
            "history/mod.rs",
            "fn f() { let _ = '{'; }\nmod tests {\n    use super::super::session::Session;\n}",
        ),
        file(
            "item/kind.rs",
            "const URL: &str = \"http://x\"; type T = crate::Error;",
        ),
        file(
            "item/kind.rs",
            "const S: &str = r#\"{\"#; fn f() {}\nuse super::super::history::History;",
        ),
        file("item/mod.rs", "#[path = \"../history/x.rs\"]\nmod x;"),
    ];
    let found = violations(&files);
    assert_eq!(found.len(), files.len(), "{found:#?}");
}

#[test]
fn the_check_allows_imports_down_and_within_a_layer() {
    let files = [
        file(
            "session.rs",
            "use crate::error::Error;\nuse crate::item::Entry;",
        ),
        file("error.rs", "use crate::rollout::RolloutError;"),
        file(
            "rollout/resume/snapshot.rs",
            "use super::super::line::Facts;\nuse crate::snapshot::open_snapshot;",
        ),
        file("item/model.rs", "/// See [`Entry`](crate::Entry)."),
        file("lib.rs", "pub use session::Session; use crate::session::x;"),
        file(
            "history/mod.rs",
            "use crate::history::Recorded; // crate::Error is fine here",
        ),
        file(
            "error.rs",
            "#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::item::Entry;\n}",
        ),
        file(
            "history/mod.rs",
            "fn f<'a>(x: &'a str) -> char { let _ = \"crate::session\"; '\\'' }",
        ),
        file(
            "item/model.rs",
            "/* nested /* crate::Entry */ */ use super::ids::CallId;",
        ),
    ];
    let found = violations(&files);
    assert!(found.is_empty(), "{found:#?}");
}
