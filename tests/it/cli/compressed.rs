//! Every command on a compressed rollout (`.jsonl.zst`) says what it says on the plain file (the
//! path aside); a directory's `.jsonl.zst` rollouts are read with its `.jsonl` ones; `append`
//! refuses a compressed rollout and leaves it as it was.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::cli::{run, text};
use crate::common::{example, temp_dir};

/// A directory with `rollout-a.jsonl` (a copy of `name`) and `rollout-b.jsonl.zst` (its text,
/// compressed).
fn pair(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = temp_dir();
    let plain = dir.path().join("rollout-a.jsonl");
    fs::copy(example(name), &plain).expect("copies");
    let zst = dir.path().join("rollout-b.jsonl.zst");
    let bytes = zstd::encode_all(&fs::read(&plain).expect("reads")[..], 3).expect("compresses");
    fs::write(&zst, bytes).expect("writes");
    (dir, plain, zst)
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// The command's standard output and status, with `path` written as `PATH`.
fn said(args: &[&str], path: &Path) -> (Option<i32>, String) {
    let output = run(args);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        text(&output.stderr)
    );
    (
        output.status.code(),
        text(&output.stdout).replace(arg(path), "PATH"),
    )
}

#[test]
fn every_reading_command_says_the_same_of_the_compressed_file() {
    for name in ["session.jsonl", "interrupted.jsonl", "codex-session.jsonl"] {
        let (dir, plain, zst) = pair(name);
        let snapshot = dir.path().join("a.snap");
        let written = run(&["snapshot", "-q", arg(&plain), "-o", arg(&snapshot)]);
        assert!(written.status.success(), "{}", text(&written.stderr));
        let commands: [&[&str]; 9] = [
            &["project"],
            &["project", "--target", "anthropic", "--json"],
            &["project", "--snapshot", arg(&snapshot)],
            &["check", "--json"],
            &["check"],
            &["stats", "--json"],
            &["prefix", "--at-line", "1", "--at-line", "2"],
            &["verify", arg(&snapshot), "--json", "--rollout"],
            &["stats"],
        ];
        for command in commands {
            let with = |path: &Path| {
                let mut args = command.to_vec();
                args.push(arg(path));
                said(&args, path)
            };
            assert_eq!(with(&zst), with(&plain), "{name}: {command:?}");
        }
        // A snapshot of the compressed file is the plain file's snapshot.
        let from_zst = dir.path().join("b.snap");
        let written = run(&["snapshot", "-q", arg(&zst), "-o", arg(&from_zst)]);
        assert!(written.status.success(), "{}", text(&written.stderr));
        assert_eq!(
            said(
                &["verify", "--json", arg(&from_zst), "--rollout", arg(&plain)],
                &from_zst
            )
            .1,
            said(
                &["verify", "--json", arg(&snapshot), "--rollout", arg(&plain)],
                &snapshot
            )
            .1,
        );
    }
}

#[test]
fn a_directory_lists_its_compressed_rollouts_too() {
    let (dir, _, _) = pair("session.jsonl");
    let output = run(&["check", "--json", arg(dir.path())]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let paths: Vec<String> = text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("JSON"))
        .filter(|object| object["type"] == "session")
        .map(|object| object["path"].as_str().expect("a path").to_owned())
        .collect();
    let names: Vec<&str> = paths
        .iter()
        .map(|path| path.rsplit('/').next().expect("a name"))
        .collect();
    assert_eq!(names, ["rollout-a.jsonl", "rollout-b.jsonl.zst"]);
}

#[test]
fn append_refuses_a_compressed_rollout_and_leaves_it_as_it_was() {
    let (_dir, _, zst) = pair("session.jsonl");
    let before = fs::read(&zst).expect("reads");
    let events =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stream/text_message.sse");
    let output = run(&["append", arg(&zst), "--stream", arg(&events)]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("zstd-compressed"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(fs::read(&zst).expect("reads"), before);
}
