//! Within a layer, the files of each folder import each other in one direction only: each folder
//! has an order of its files, lowest first, and a file names only files before it (by a
//! `super::…` or `crate::<layer>::…` path, in code). So no two files import each other, directly
//! or through others: a new cycle fails here, and the order says where a new file goes.
//!
//! * A folder's `mod.rs` is its front, in no order: it declares the folder's files and may use
//!   each, and they may use what it defines.
//! * A sub-folder is one file of its folder (`resume/`), with an order of its own.
//! * A path is followed through the `use` declarations of the module it names (a re-export in a
//!   `mod.rs`, `pub use header::ItemHeader`) to the file that defines the item.
//! * Test code is not read (`#[cfg(test)]` modules, items and files): a test may use any file.

use super::{Source, crate_sources, file, identifier, layered, lex};
use std::collections::{BTreeMap, BTreeSet};

/// The files of each folder, lowest first (`a < b`): a file may import only the files before it.
const FILE_ORDER: &[(&str, &str)] = &[
    (
        "item",
        "error < ids < model < estimate < inter_agent < kind < output < turn < parse/ < work < \
         entry",
    ),
    ("item/parse", "typed < scan < header"),
    (
        "world",
        "error < role < hash < fragment < snapshot < update < section < state",
    ),
    (
        "history",
        "cache < canonical < index < memo < rollback < shared < stats < truncate < compact < world",
    ),
    (
        "projection",
        "options < repair < error < media < slots < prefix < report < builder < passes",
    ),
    ("request", "plan < prefix < tools"),
    (
        "provider",
        "options < report < tools < assembly/ < anthropic/ < chat/ < projection < request < \
         validate/",
    ),
    (
        "provider/assembly",
        "counters < units < fragments < naming < pairing < memo",
    ),
    ("provider/anthropic", "render < request < messages"),
    ("provider/chat", "convert < request < messages"),
    ("provider/validate", "anthropic < chat < responses"),
    (
        "stream",
        "error < report < sse < work < core < accumulator < anthropic < chat < responses",
    ),
    (
        "rollout",
        "paginated < line < report < stored_report < error < compressed < lines < sink < \
         writer_lock < validate < reader < lineage < resume/ < writer",
    ),
    (
        "transcript",
        "record < report < error < format < chain < messages < reader < usage < repair < snapshot",
    ),
    ("rollout/resume", "scan < turn < replay < world < snapshot"),
    ("snapshot", "archive < header < error < map < write"),
    ("session", "turns < paginated"),
    (
        "testing",
        "codex_rollout < crash < properties < ops < steps < fuzzing < strategies",
    ),
];

/// Folders (and the folders under them) whose files still import each other in a cycle, with
/// the work of issue 28 that removes it; they have no order yet. An entry fails once nothing
/// under it is a cycle: remove it then and give its folders an order above.
const CYCLES_LEFT: &[(&str, &str)] = &[];

/// A path in code that names a file of the same layer: where it is written and the file it
/// leads to.
struct Import {
    /// The importing file, under `src/` (`item/entry.rs`).
    from: String,
    line: usize,
    /// The file that defines what the path names.
    to: String,
}

/// A `use` declaration's path (one leaf of its tree): the absolute module path it is written
/// in, the path as written, and the name it brings in (its alias, or its last segment).
struct Use {
    module: Vec<String>,
    path: Vec<String>,
    name: String,
}

/// What the check reads of one file: its code lines outside test code (number, module path at
/// that line, text), and its `use` declarations.
struct Read {
    lines: Vec<(usize, Vec<String>, String)>,
    uses: Vec<(usize, Use)>,
    /// The child modules declared `#[cfg(test)] mod name;`.
    test_children: Vec<String>,
}

/// Reads `text`, the source of the module at `module`.
fn read(module: &[String], text: &str) -> Read {
    let mut read = Read {
        lines: Vec::new(),
        uses: Vec::new(),
        test_children: Vec::new(),
    };
    // Inline modules: the brace depth at which each opened, and its name.
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut braces = 0usize;
    // Test code: set by `#[cfg(test)]`, then the brace depth the test item ends at.
    let mut test_attribute = false;
    let mut test_item: Option<usize> = None;
    // A `use` declaration not ended yet: its first line, module and text so far.
    let mut statement: Option<(usize, Vec<String>, String)> = None;
    for (index, line) in lex(text).iter().enumerate() {
        let number = index + 1;
        let code = line.code.as_str();
        let trimmed = code.trim();
        let opened = code.matches('{').count();
        let closed = code.matches('}').count();
        if let Some(depth) = test_item {
            braces = (braces + opened).saturating_sub(closed);
            if braces <= depth && (closed > 0 || trimmed.ends_with(';')) {
                test_item = None;
            }
            continue;
        }
        let trimmed = match trimmed.strip_prefix("#[cfg(test)]") {
            Some(rest) => {
                test_attribute = true;
                rest.trim_start()
            }
            None => trimmed,
        };
        if test_attribute && !trimmed.is_empty() {
            if trimmed.starts_with("#[") {
                continue; // another attribute of the same item
            }
            test_attribute = false;
            let declaration = strip_visibility(trimmed);
            if let Some(name) = declaration.strip_prefix("mod ")
                && trimmed.ends_with(';')
            {
                read.test_children
                    .push(identifier(name.trim_start()).to_owned());
                continue;
            }
            // The item ends where its braces close, or at its `;` when it has none.
            let after = (braces + opened).saturating_sub(closed);
            if opened > closed || (opened == 0 && !trimmed.ends_with(';')) {
                test_item = Some(braces);
            }
            braces = after;
            continue;
        }
        let mut here: Vec<String> = module.to_vec();
        here.extend(inline.iter().map(|(_, name)| name.clone()));
        let declaration = strip_visibility(trimmed);
        if let Some(name) = declaration.strip_prefix("mod ")
            && trimmed.ends_with('{')
        {
            inline.push((braces, identifier(name.trim_start()).to_owned()));
        }
        braces = (braces + opened).saturating_sub(closed);
        while inline.last().is_some_and(|&(depth, _)| braces <= depth) {
            inline.pop();
        }
        if statement.is_none() && declaration.starts_with("use ") {
            statement = Some((number, here.clone(), String::new()));
        }
        match statement.as_mut() {
            Some((_, _, text)) => {
                text.push_str(code);
                text.push(' ');
                if let Some(end) = code.find(';') {
                    let (first, at, text) = statement.take().expect("a use declaration");
                    read.lines
                        .push((number, here.clone(), code[end + 1..].to_owned()));
                    let tree = strip_visibility(text.trim())
                        .trim_start_matches("use ")
                        .split(';')
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    for (path, name) in use_tree(&tree) {
                        let module = at.clone();
                        read.uses.push((first, Use { module, path, name }));
                    }
                }
            }
            None => read.lines.push((number, here, code.to_owned())),
        }
    }
    read
}

/// `pub use …`, `pub(crate) mod …`: the declaration without its visibility.
fn strip_visibility(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("pub") else {
        return text;
    };
    match rest.strip_prefix('(') {
        Some(inner) => inner
            .split_once(')')
            .map_or(text, |(_, rest)| rest.trim_start()),
        None if rest.starts_with(' ') => rest.trim_start(),
        None => text,
    }
}

/// The leaves of a `use` tree (`a::{b, c::d as e, self}`), each as its path and the name it
/// brings in; a glob (`a::*`) ends in `*`.
fn use_tree(tree: &str) -> Vec<(Vec<String>, String)> {
    // One space between words (`A as B`), none around `::`, braces and commas.
    let mut tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    for token in ["::", "{", "}", ","] {
        tree = tree
            .replace(&format!(" {token}"), token)
            .replace(&format!("{token} "), token);
    }
    let mut leaves = Vec::new();
    leaf_paths(&[], &tree, &mut leaves);
    leaves
}

fn leaf_paths(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, String)>) {
    if let Some(open) = tree.find('{') {
        let mut head: Vec<String> = prefix.to_vec();
        head.extend(segments(tree[..open].trim_end_matches("::")));
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start) = (0usize, 0usize);
        for (at, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    leaf_paths(&head, &inner[start..at], out);
                    start = at + 1;
                }
                _ => {}
            }
        }
        leaf_paths(&head, &inner[start..], out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path, Some(alias)),
        None => (tree, None),
    };
    let mut full: Vec<String> = prefix.to_vec();
    for segment in segments(path) {
        if segment != "self" {
            full.push(segment);
        }
    }
    let name = alias
        .map(str::to_owned)
        .or_else(|| full.last().cloned())
        .unwrap_or_default();
    out.push((full, name));
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .filter(|segment| !segment.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The `crate::…` and `super::…` paths of a line of code (not those of a `pub(in …)`, nor
/// `$crate`), each as its segments.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for root in ["crate::", "super::"] {
        for (start, _) in code.match_indices(root) {
            let before = &code[..start];
            if before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':' || c == '$')
                || before.trim_end().ends_with("(in")
            {
                continue;
            }
            let mut path = vec![root.trim_end_matches(':').to_owned()];
            let mut rest = &code[start + root.len()..];
            loop {
                let segment = identifier(rest);
                if segment.is_empty() {
                    break;
                }
                path.push(segment.to_owned());
                match rest[segment.len()..].strip_prefix("::") {
                    Some(tail) => rest = tail,
                    None => break,
                }
            }
            found.push(path);
        }
    }
    found
}

/// The crate's files as modules: each file's module path, with what was read of it.
struct Crate<'a> {
    files: Vec<(&'a Source, Vec<String>, Read)>,
    by_module: BTreeMap<Vec<String>, usize>,
    /// Files only tests compile (`#[cfg(test)] mod name;`).
    test_files: BTreeSet<usize>,
}

impl<'a> Crate<'a> {
    fn new(sources: &'a [Source]) -> Crate<'a> {
        let files: Vec<_> = layered(sources)
            .map(|(source, _, module)| {
                let read = read(&module, &source.text);
                (source, module, read)
            })
            .collect();
        let by_module: BTreeMap<Vec<String>, usize> = files
            .iter()
            .enumerate()
            .map(|(index, (_, module, _))| (module.clone(), index))
            .collect();
        let mut test_files = BTreeSet::new();
        for (_, module, read) in &files {
            for child in &read.test_children {
                let mut path = module.clone();
                path.push(child.clone());
                if let Some(&index) = by_module.get(&path) {
                    test_files.insert(index);
                }
            }
        }
        Crate {
            files,
            by_module,
            test_files,
        }
    }

    fn name(&self, file: usize) -> String {
        self.files[file].0.path.to_string_lossy().replace('\\', "/")
    }

    /// `path` as written in module `at`, made absolute (without `crate`); `None` for a path
    /// that leaves the crate or climbs above its root.
    fn absolute(&self, at: &[String], path: &[String]) -> Option<Vec<String>> {
        let first = path.first()?;
        let mut module: Vec<String> = at.to_vec();
        let mut rest = path;
        if first == "crate" {
            module.clear();
            rest = &path[1..];
        } else if first == "super" || first == "self" {
            while let Some(("super", tail)) = rest.split_first().map(|(s, t)| (s.as_str(), t)) {
                module.pop()?;
                rest = tail;
            }
            if rest.first().is_some_and(|s| s == "self") {
                rest = &rest[1..];
            }
        } else {
            // A name in scope: a child module of `at`'s file, or another crate.
            let mut child = module.clone();
            child.push(first.clone());
            if !self.by_module.contains_key(&child) {
                return None;
            }
        }
        module.extend(rest.iter().cloned());
        Some(module)
    }

    /// The file that defines what the absolute `path` names: the deepest file module on it,
    /// followed through that module's `use` of the next name.
    fn resolve(&self, path: &[String], depth: usize) -> Option<usize> {
        let mut length = path.len();
        let file = loop {
            if let Some(&file) = self.by_module.get(&path[..length]) {
                break file;
            }
            length = length.checked_sub(1)?;
        };
        let (Some(name), true) = (path.get(length), depth < 8) else {
            return Some(file);
        };
        let module = &path[..length];
        let found = self.files[file]
            .2
            .uses
            .iter()
            .find(|(_, used)| used.module == module && &used.name == name);
        match found {
            Some((_, used)) => {
                let mut target = self.absolute(module, &used.path)?;
                target.extend(path[length + 1..].iter().cloned());
                self.resolve(&target, depth + 1)
            }
            None => Some(file),
        }
    }

    /// Every path in code that names another file of its own layer.
    fn imports(&self) -> Vec<Import> {
        let mut imports = Vec::new();
        for (index, (_, module, read)) in self.files.iter().enumerate() {
            if self.test_files.contains(&index) {
                continue;
            }
            let Some(layer) = module.first() else {
                continue;
            };
            let paths = read
                .lines
                .iter()
                .flat_map(|(line, at, code)| {
                    paths_in(code).into_iter().map(move |p| (*line, at, p))
                })
                .chain(
                    read.uses
                        .iter()
                        .map(|(line, used)| (*line, &used.module, used.path.clone())),
                );
            for (line, at, path) in paths {
                let Some(absolute) = self.absolute(at, &path) else {
                    continue;
                };
                if absolute.first() != Some(layer) {
                    continue;
                }
                if let Some(to) = self.resolve(&absolute, 0)
                    && to != index
                    && !self.test_files.contains(&to)
                {
                    imports.push(Import {
                        from: self.name(index),
                        line,
                        to: self.name(to),
                    });
                }
            }
        }
        imports
    }

    /// Every folder with files, under `src/` (`item`, `item/parse`).
    fn folders(&self) -> BTreeSet<String> {
        let mut folders = BTreeSet::new();
        for index in 0..self.files.len() {
            if self.test_files.contains(&index) {
                continue;
            }
            let name = self.name(index);
            let mut parts: Vec<&str> = name.split('/').collect();
            parts.pop();
            for end in 1..=parts.len() {
                folders.insert(parts[..end].join("/"));
            }
        }
        folders
    }

    /// The files of `folder` as its order names them: `name` for `folder/name.rs`, `sub/` for
    /// every file under `folder/sub/`; its own `mod.rs` is none.
    fn members(&self, folder: &str) -> BTreeSet<String> {
        (0..self.files.len())
            .filter(|index| !self.test_files.contains(index))
            .filter_map(|index| member(folder, &self.name(index)))
            .collect()
    }
}

/// What file `name` is among the files of `folder` (see [`Crate::members`]).
fn member(folder: &str, name: &str) -> Option<String> {
    let rest = name.strip_prefix(folder)?.strip_prefix('/')?;
    match rest.split_once('/') {
        Some((sub, _)) => Some(format!("{sub}/")),
        None if rest == "mod.rs" => None,
        None => rest.strip_suffix(".rs").map(str::to_owned),
    }
}

/// The cycles among the files of a folder: each set of files that import each other (Tarjan's
/// strongly connected components), with more than one file.
fn cycles(
    members: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<Vec<String>> {
    struct State<'e> {
        edges: &'e BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        found: Vec<Vec<String>>,
    }
    fn visit(state: &mut State<'_>, node: &str) {
        let number = state.index.len();
        state.index.insert(node.to_owned(), number);
        state.low.insert(node.to_owned(), number);
        state.stack.push(node.to_owned());
        let next: Vec<String> = state
            .edges
            .get(node)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        for to in next {
            if !state.index.contains_key(&to) {
                visit(state, &to);
                let low = state.low[node].min(state.low[&to]);
                state.low.insert(node.to_owned(), low);
            } else if state.stack.contains(&to) {
                let low = state.low[node].min(state.index[&to]);
                state.low.insert(node.to_owned(), low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                let done = top == node;
                component.push(top);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in members {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.found.sort();
    state.found
}

/// Every import against the order of its folder's files, every cycle, and every folder, file
/// or entry of `order` and `left` that does not match the source tree.
fn order_violations(
    sources: &[Source],
    order: &[(&str, &str)],
    left: &[(&str, &str)],
) -> Vec<String> {
    let krate = Crate::new(sources);
    let imports = krate.imports();
    let folders = krate.folders();
    let mut found = Vec::new();
    for (folder, _) in order {
        if !folders.contains(*folder) {
            found.push(format!(
                "FILE_ORDER names `{folder}`, which is no folder of src/"
            ));
        }
    }
    let mut left_with_cycles: BTreeSet<&str> = BTreeSet::new();
    for folder in &folders {
        let members = krate.members(folder);
        let listed: Option<Vec<&str>> = order
            .iter()
            .find(|(name, _)| name == folder)
            .map(|(_, files)| files.split('<').map(str::trim).collect());
        let under_left = left
            .iter()
            .map(|(prefix, _)| *prefix)
            .find(|prefix| folder == prefix || folder.starts_with(&format!("{prefix}/")));
        // The imports among the folder's files, by the files they join.
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut at: BTreeMap<(String, String), String> = BTreeMap::new();
        for import in &imports {
            if let (Some(from), Some(to)) =
                (member(folder, &import.from), member(folder, &import.to))
                && from != to
            {
                edges.entry(from.clone()).or_default().insert(to.clone());
                at.entry((from, to))
                    .or_insert_with(|| format!("{}:{}", import.from, import.line));
            }
        }
        let cycles = cycles(&members, &edges);
        if listed.is_none()
            && let Some(prefix) = under_left
        {
            if !cycles.is_empty() {
                left_with_cycles.insert(prefix);
            }
            continue;
        }
        for cycle in &cycles {
            let steps: Vec<String> = cycle
                .iter()
                .flat_map(|from| {
                    let at = &at;
                    edges[from]
                        .iter()
                        .filter(|to| cycle.contains(to))
                        .map(move |to| {
                            format!("{from} → {to} ({})", at[&(from.clone(), to.clone())])
                        })
                })
                .collect();
            found.push(format!(
                "{folder}/: the files {} import each other: {}; move what they share to a file \
                 they both import, or to the one that owns it",
                cycle.join(", "),
                steps.join(", ")
            ));
        }
        let Some(listed) = listed else {
            found.push(format!(
                "{folder}/ has no order in FILE_ORDER: list its files ({}), each after the ones \
                 it imports",
                members.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
            continue;
        };
        for member in &members {
            if !listed.contains(&member.as_str()) {
                found.push(format!(
                    "{folder}/{member} is in no order: place it in FILE_ORDER's `{folder}`, after \
                     the files it imports"
                ));
            }
        }
        for name in &listed {
            if !members.contains(*name) {
                found.push(format!(
                    "FILE_ORDER's `{folder}` lists `{name}`, which is no file there"
                ));
            }
        }
        let position = |name: &str| listed.iter().position(|listed| *listed == name);
        for ((from, to), at) in &at {
            let in_cycle = cycles
                .iter()
                .any(|cycle| cycle.contains(from) && cycle.contains(to));
            if let (Some(i), Some(j)) = (position(from), position(to))
                && j > i
                && !in_cycle
            {
                found.push(format!(
                    "{at}: `{from}` imports `{to}`, which comes after it in FILE_ORDER's \
                     `{folder}`: move `{from}` after `{to}`"
                ));
            }
        }
    }
    for (prefix, _) in left {
        if !left_with_cycles.contains(prefix) {
            found.push(format!(
                "CYCLES_LEFT names `{prefix}`, where no files import each other any more: remove \
                 it, and list its folders' files in FILE_ORDER"
            ));
        }
    }
    found
}

#[test]
fn the_files_of_each_folder_import_in_its_order() {
    let files = crate_sources();
    // The check reads the imports it orders: a few known ones, through a re-export and not.
    let imports = Crate::new(&files).imports();
    for (from, to) in [
        ("item/entry.rs", "item/parse/header.rs"),
        ("projection/passes.rs", "projection/builder.rs"),
        ("rollout/resume/snapshot.rs", "rollout/line.rs"),
    ] {
        assert!(
            imports
                .iter()
                .any(|import| import.from == from && import.to == to),
            "{from} imports {to}"
        );
    }
    let found = order_violations(&files, FILE_ORDER, CYCLES_LEFT);
    assert!(
        found.is_empty(),
        "imports against the order of a folder's files ({} found):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The files of `tree` (path under `src/`, text) checked against `order`.
fn check(tree: &[(&str, &str)], order: &[(&str, &str)]) -> Vec<String> {
    let files: Vec<Source> = tree.iter().map(|(path, text)| file(path, text)).collect();
    order_violations(&files, order, &[])
}

#[test]
fn the_order_check_finds_each_kind_of_cycle_and_import_out_of_order() {
    let order: &[(&str, &str)] = &[("item", "a < b < c")];
    // Each file imports only the ones before it: nothing found.
    let down = [
        (
            "item/mod.rs",
            "mod a;\nmod b;\nmod c;\npub use b::Thing;\nuse c::f;",
        ),
        ("item/a.rs", "pub struct A;"),
        ("item/b.rs", "use super::a::A;\npub struct Thing(A);"),
        (
            "item/c.rs",
            "use crate::item::Thing;\nfn f() { super::a::A; }",
        ),
    ];
    assert_eq!(check(&down, order), Vec::<String>::new());
    // A cycle by `super::`, through a re-export of `mod.rs`, and by an inline `crate::` path.
    for (b, a) in [
        ("use super::a::A;", "use super::b::B;"),
        ("use super::a::A;", "use super::Thing;"),
        ("use super::a::A;", "fn f() { let _ = crate::item::b::B; }"),
        (
            "use super::a::{self, A as Other};",
            "pub(crate) use super::super::item::b::B;",
        ),
    ] {
        let tree = [
            ("item/mod.rs", "mod a;\nmod b;\npub use b::Thing;"),
            ("item/a.rs", a),
            ("item/b.rs", b),
        ];
        let found = check(&tree, &[("item", "a < b")]);
        assert_eq!(found.len(), 1, "{a} / {b}: {found:#?}");
        assert!(
            found[0].starts_with("item/: the files a, b import each other"),
            "{found:#?}"
        );
        assert!(found[0].contains("a → b (item/a.rs:"), "{found:#?}");
    }
    // An import out of order, a file in no order, a listed file that is none, a folder with
    // no order.
    let tree = [
        ("item/a.rs", "use super::b::B;"),
        ("item/b.rs", ""),
        ("item/d.rs", ""),
        ("world/x.rs", ""),
    ];
    let found = check(&tree, order);
    assert_eq!(found.len(), 4, "{found:#?}");
    for expected in [
        "item/a.rs:1: `a` imports `b`",
        "item/d is in no order",
        "FILE_ORDER's `item` lists `c`, which is no file there",
        "world/ has no order",
    ] {
        assert!(
            found.iter().any(|f| f.starts_with(expected)),
            "{expected}: {found:#?}"
        );
    }
}

#[test]
fn the_order_check_reads_sub_folders_as_one_file_and_skips_tests_and_fronts() {
    let order: &[(&str, &str)] = &[("rollout", "line < resume/"), ("rollout/resume", "scan")];
    let tree = [
        // The front uses its files; they use what it defines. Another layer, strings and tests
        // are not imports.
        (
            "rollout/mod.rs",
            "mod line;\nmod resume;\nuse resume::Resumed;\npub struct Rollout;",
        ),
        (
            "rollout/line.rs",
            "use super::Rollout;\nuse crate::item::Entry;\nconst S: &str = \"super::resume::Resumed\";\n\
             #[cfg(test)]\nmod tests {\n    use super::super::resume::Resumed;\n}\n\
             #[cfg(test)] fn f() { let _ = super::resume::Resumed; }",
        ),
        (
            "rollout/resume/mod.rs",
            "mod scan;\n#[cfg(test)]\nmod helpers;\nuse super::line::Facts;\npub struct Resumed;",
        ),
        (
            "rollout/resume/scan.rs",
            "use crate::rollout::line::Facts;\nuse super::Resumed;\n#[cfg(test)]\nuse super::helpers::h;",
        ),
        // Test-only files are not read, nor counted as files.
        (
            "rollout/resume/helpers.rs",
            "use crate::rollout::line::Facts;\nuse super::scan::x;",
        ),
        // A folder without an order.
        ("item/x.rs", ""),
    ];
    let found = check(&tree, order);
    assert_eq!(
        found,
        ["item/ has no order in FILE_ORDER: list its files (x), each after the ones it imports"]
    );
    // The sub-folder as a whole imports `line`: `line` importing it is a cycle.
    let mut cyclic = tree;
    cyclic[1] = ("rollout/line.rs", "use super::resume::Resumed;");
    let found = check(&cyclic[..5], order);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("rollout/: the files line, resume/ import each other"),
        "{found:#?}"
    );
}

#[test]
fn a_cycle_left_to_other_work_must_still_be_there() {
    let tree = [
        ("snapshot/a.rs", "use super::b::B;"),
        ("snapshot/b.rs", "use super::a::A;"),
    ];
    let files: Vec<Source> = tree.iter().map(|(path, text)| file(path, text)).collect();
    let left = [("snapshot", "its rework")];
    assert!(order_violations(&files, &[], &left).is_empty());
    let files = &files[..1];
    let found = order_violations(files, &[], &left);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("CYCLES_LEFT names `snapshot`"),
        "{found:#?}"
    );
}
