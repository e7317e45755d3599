//! The commands on paginated Codex threads: `check` and `stats --json` say the mode, the lineage
//! and any ordinal damage; `project` of a fork or a revert gives the whole thread; a missing
//! ancestor is an error, never an empty history; `--codex-home` finds a lineage whose file is not
//! under its home; no command changes a file of the lineage.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::cli::{command, run, text};
use crate::common::paginated::{F, Home, Paged, R, T, root, turn};

/// A home with the root thread T, a fork F of it, and a revert of T before its second turn.
struct Thread {
    home: Home,
    root: PathBuf,
    fork: PathBuf,
    revert: PathBuf,
}

fn thread() -> Thread {
    let home = Home::new();
    let (parent, second) = root();
    let root_path = home.write("10-00-00", T, &parent.text);
    let mut fork = Paged::new(F, parent.next, Some((T, parent.next, parent.len())));
    fork.push("event_msg", r#"{"type":"thread_settings_applied"}"#);
    turn(&mut fork, "V1", "Now in the fork", None, "Forked.");
    let fork_path = home.write("11-00-00", F, &fork.text);
    let cut = second as u64;
    let revert = Paged::new(T, cut, Some((T, cut, parent.start(second))));
    let revert_path = home.write("12-00-00", &format!("{T}_{R}"), &revert.text);
    Thread {
        home,
        root: root_path,
        fork: fork_path,
        revert: revert_path,
    }
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Every file of the home, with its bytes.
fn files(home: &Home) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut dirs = vec![home.path().to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("lists") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let bytes = fs::read(&path).expect("reads");
                found.push((path, bytes));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn check_json_says_the_mode_the_lineage_and_the_ordinals_of_each_file() {
    let thread = thread();
    let before = files(&thread.home);
    let output = run(&["check", "--json", arg(&thread.fork)]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let session: serde_json::Value =
        serde_json::from_str(text(&output.stdout).trim()).expect("JSON");
    assert_eq!(session["history_mode"], "paginated");
    assert_eq!(session["load"]["pagination"]["base"]["thread_id"], T);
    let lineage: Vec<(String, String, u64)> = session["lineage"]
        .as_array()
        .expect("lineage")
        .iter()
        .map(|file| {
            (
                file["rollout_id"].as_str().expect("id").to_owned(),
                file["path"].as_str().expect("path").to_owned(),
                file["first_ordinal"].as_u64().expect("ordinal"),
            )
        })
        .collect();
    assert_eq!(
        lineage,
        [
            (T.to_owned(), thread.root.display().to_string(), 1),
            (F.to_owned(), thread.fork.display().to_string(), 24),
        ]
    );
    assert_eq!(
        session["items"], 10,
        "T's 8 items, then the fork's user message and answer"
    );
    assert_eq!(files(&thread.home), before, "check reads only");

    let legacy = run(&[
        "check",
        "--json",
        arg(&crate::common::example("interrupted.jsonl")),
    ]);
    let legacy: serde_json::Value =
        serde_json::from_str(text(&legacy.stdout).trim()).expect("JSON");
    assert_eq!(legacy["history_mode"], "legacy");
    assert_eq!(legacy["lineage"], serde_json::json!([]));
}

#[test]
fn check_reports_a_repeated_ordinal_with_its_line_and_byte() {
    let home = Home::new();
    let mut file = Paged::new(T, 0, None);
    file.push(
        "response_item",
        &crate::common::paginated::message("user", "input_text", "hi"),
    );
    file.numbered(1, "event_msg", r#"{"type":"thread_settings_applied"}"#);
    let path = home.write("10-00-00", T, &file.text);
    let output = run(&["check", arg(&path)]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report = text(&output.stdout);
    assert!(
        report.contains("paginated history: ordinals 0 to 1"),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "line 3 (byte {}): ordinal 1 repeats ordinal 1",
            file.start(2)
        )),
        "{report}"
    );
    let strict = run(&["check", "--strict", arg(&path)]);
    assert_eq!(strict.status.code(), Some(1), "a finding under --strict");
}

#[test]
fn project_of_a_revert_gives_the_turns_before_the_cut_and_of_a_fork_the_whole_thread() {
    let thread = thread();
    let revert = run(&["project", arg(&thread.revert)]);
    assert!(revert.status.success(), "{}", text(&revert.stderr));
    let input: serde_json::Value = serde_json::from_str(&text(&revert.stdout)).expect("JSON");
    let texts = input.to_string();
    assert!(
        texts.contains("List the files") && !texts.contains("Thanks"),
        "{texts}"
    );
    assert_eq!(input.as_array().map(Vec::len), Some(6));

    let fork = run(&["project", arg(&thread.fork)]);
    let input: serde_json::Value = serde_json::from_str(&text(&fork.stdout)).expect("JSON");
    let texts = input.to_string();
    assert!(
        texts.contains("List the files")
            && texts.contains("Thanks")
            && texts.contains("Now in the fork")
    );
}

#[test]
fn snapshot_of_a_fork_covers_its_lineage_and_project_through_it_gives_the_whole_thread() {
    let thread = thread();
    let snapshot = thread.home.path().join("fork.snap");
    let written = run(&["snapshot", arg(&thread.fork), "-o", arg(&snapshot)]);
    assert!(written.status.success(), "{}", text(&written.stderr));
    let before = files(&thread.home);
    let direct = run(&["project", arg(&thread.fork)]);
    let through = run(&["project", arg(&thread.fork), "--snapshot", arg(&snapshot)]);
    assert!(through.status.success(), "{}", text(&through.stderr));
    assert!(
        text(&through.stderr).contains("resumed through snapshot"),
        "{}",
        text(&through.stderr)
    );
    assert_eq!(text(&through.stdout), text(&direct.stdout));
    assert_eq!(
        files(&thread.home),
        before,
        "no file of the lineage changed"
    );
}

#[test]
fn a_missing_ancestor_fails_the_command_naming_the_rollout_id() {
    let thread = thread();
    fs::remove_file(&thread.root).expect("removes");
    let output = run(&["project", arg(&thread.fork)]);
    assert_eq!(output.status.code(), Some(3), "an input error");
    assert!(output.stdout.is_empty(), "no history printed");
    let error = text(&output.stderr);
    assert!(
        error.contains(T) && error.contains("cannot be followed"),
        "{error}"
    );
}

#[test]
fn codex_home_finds_the_ancestors_of_a_file_kept_elsewhere() {
    let thread = thread();
    let elsewhere = crate::common::temp_dir();
    let copy = elsewhere.path().join("fork.jsonl");
    fs::copy(&thread.fork, &copy).expect("copies");
    let stats = |extra: &[&str]| {
        let mut command = command();
        command
            .env_remove("CODEX_HOME")
            .args(["stats", "--json"])
            .args(extra)
            .arg(&copy);
        command.output().expect("runs")
    };
    let without = stats(&[]);
    assert_eq!(without.status.code(), Some(3));
    assert!(
        text(&without.stderr).contains("no Codex home"),
        "{}",
        text(&without.stderr)
    );
    let with = stats(&["--codex-home", arg(thread.home.path())]);
    assert!(with.status.success(), "{}", text(&with.stderr));
    let session: serde_json::Value =
        serde_json::from_str(text(&with.stdout).lines().next().expect("a line")).expect("JSON");
    assert_eq!(
        session["load"]["pagination"]["base"]["end_ordinal_exclusive"],
        23
    );
}

#[test]
fn append_numbers_the_lines_it_adds_to_a_paginated_file() {
    let home = Home::new();
    let (file, _) = root();
    let path = home.write("10-00-00", T, &file.text);
    let events =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stream/text_message.sse");
    let output = run(&["append", arg(&path), "--stream", arg(&events)]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let written = fs::read_to_string(&path).expect("reads");
    assert!(written.starts_with(&file.text));
    let added: Vec<serde_json::Value> = written[file.text.len()..]
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    assert!(!added.is_empty());
    for (index, line) in added.iter().enumerate() {
        assert_eq!(line["ordinal"], file.next + index as u64, "{line}");
    }
    let check = run(&["check", "--json", "--strict", arg(&path)]);
    assert!(check.status.success(), "{}", text(&check.stdout));
}
