//! `docs/architecture.md`'s layout table names every source file: a file added, moved or removed
//! without the table fails here.

use std::collections::BTreeSet;
use std::path::Path;

/// Every `.rs` file under `src/`, as `src/…` paths.
fn sources(dir: &Path, root: &Path, found: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("src/ can be read") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, root, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = path.strip_prefix(root).expect("under the crate");
            found.insert(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

#[test]
fn the_layout_table_names_every_source_file_and_no_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = BTreeSet::new();
    sources(&root.join("src"), root, &mut files);
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).expect("the page");
    let named: BTreeSet<String> = page
        .lines()
        .filter_map(|line| line.strip_prefix("| `src/"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(path, _)| format!("src/{path}"))
        .filter(|path| path.ends_with(".rs"))
        .collect();
    let missing: Vec<&String> = files.difference(&named).collect();
    let stale: Vec<&String> = named.difference(&files).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/architecture.md's layout table: add {missing:?}, remove {stale:?}"
    );
    assert!(files.len() > 100, "{} files found", files.len());
}
