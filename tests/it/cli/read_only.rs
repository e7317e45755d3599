//! "No command modifies a rollout" (README), checked against every subcommand and every flag the
//! command line has: each invocation runs on copies of each bundled rollout, and afterwards every
//! file of the working directory has the bytes, length and modification time it had, and no file
//! came or went, except the ones the command is documented to write (`snapshot -o`). `append`
//! writes to its rollout by design; its promise is that the old bytes stay a prefix.
//!
//! The flags are read from each subcommand's `--help`, so a flag added to the command line
//! without an invocation here fails `every_flag_and_subcommand_is_exercised`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::SystemTime;

use common::cli::{command, output_with_stdin, text};
use common::{example, temp_dir};

/// One file's state: what a command that only reads must leave as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileState {
    bytes: Vec<u8>,
    len: u64,
    modified: SystemTime,
}

/// Every file and directory under `root` (links not followed), by path relative to `root`.
fn tree(root: &Path) -> BTreeMap<PathBuf, Option<FileState>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("directory listed") {
            let path = entry.expect("directory entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            let relative = path.strip_prefix(root).expect("under root").to_path_buf();
            if meta.is_dir() {
                pending.push(path);
                found.insert(relative, None);
            } else if meta.is_file() {
                found.insert(
                    relative,
                    Some(FileState {
                        bytes: std::fs::read(&path).expect("file read"),
                        len: meta.len(),
                        modified: meta.modified().expect("mtime"),
                    }),
                );
            } else {
                // A symbolic link: its target, as a link, is what must not change.
                let target = std::fs::read_link(&path).expect("link read");
                found.insert(
                    relative,
                    Some(FileState {
                        bytes: target.as_os_str().as_encoded_bytes().to_vec(),
                        len: meta.len(),
                        modified: meta.modified().expect("mtime"),
                    }),
                );
            }
        }
    }
    found
}

/// The files a session directory holds, as the invocations name them.
const ROLLOUT: &str = "rollout-a.jsonl";
const LINK: &str = "link-to-rollout.jsonl";
const SNAPSHOT: &str = "a.snap";
const NEW_SNAPSHOT: &str = "new.snap";
const SUBDIR: &str = "sessions";
const SUB_ROLLOUT: &str = "sessions/rollout-b.jsonl";
const SUB_SNAPSHOT: &str = "sessions/b.snap";
const TOOLS: &str = "tools.json";
const BODY: &str = "body.json";
const EVENTS: &str = "events.sse";
const COMPRESSED: &str = "rollout-c.jsonl.zst";
const TRANSCRIPT: &str = "claude-a.jsonl";
const REPAIRED: &str = "claude-a-repaired.jsonl";
const TRANSCRIPT_SNAPSHOT: &str = "claude-a.snap";

/// Lays out a session directory around a copy of `source`: the rollout, a symbolic link to it, a
/// snapshot of it, a subdirectory with another copy and its snapshot, a tools file, a request
/// body and an event stream.
fn session_dir(source: &Path) -> tempfile::TempDir {
    let dir = temp_dir();
    let at = |name: &str| dir.path().join(name);
    std::fs::copy(source, at(ROLLOUT)).expect("rollout copied");
    std::os::unix::fs::symlink(at(ROLLOUT), at(LINK)).expect("symlink");
    std::fs::create_dir(at(SUBDIR)).expect("subdirectory");
    std::fs::copy(source, at(SUB_ROLLOUT)).expect("rollout copied");
    let compressed = zstd::encode_all(&std::fs::read(source).expect("rollout")[..], 3);
    std::fs::write(at(COMPRESSED), compressed.expect("compressed")).expect("written");
    for (rollout, snapshot) in [(ROLLOUT, SNAPSHOT), (SUB_ROLLOUT, SUB_SNAPSHOT)] {
        let output = run(
            &[
                "snapshot",
                "--quiet",
                &at(rollout).display().to_string(),
                "-o",
                &at(snapshot).display().to_string(),
            ],
            None,
            dir.path(),
        );
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    std::fs::write(
        at(TOOLS),
        r#"[{"type":"function","name":"shell","parameters":{"type":"object"}},{"type":"web_search"}]"#,
    )
    .expect("tools written");
    std::fs::write(
        at(BODY),
        r#"{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}"#,
    )
    .expect("body written");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stream/text_message.sse"),
        at(EVENTS),
    )
    .expect("events copied");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/interrupted.jsonl"),
        at(TRANSCRIPT),
    )
    .expect("transcript copied");
    let output = run(
        &["snapshot", "--quiet", TRANSCRIPT, "-o", TRANSCRIPT_SNAPSHOT],
        None,
        dir.path(),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    dir
}

fn run(args: &[&str], stdin: Option<&[u8]>, cwd: &Path) -> Output {
    output_with_stdin(
        command().args(args).current_dir(cwd),
        stdin.unwrap_or_default(),
    )
}

/// What an invocation is allowed to do, beyond reading.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// Parsed and ran (status 0, 1 or 3): the flags were accepted, so what they do was reached.
    Runs,
    /// A usage error (status 2): a meaningless combination, refused before anything is read.
    Usage,
}

/// One invocation: its arguments (file names relative to the session directory), what goes to
/// standard input, the files it may write (created or replaced), and its expected kind of exit.
struct Invocation {
    args: Vec<&'static str>,
    stdin: Option<&'static str>,
    writes: &'static [&'static str],
    expect: Expect,
}

fn reads(args: &[&'static str]) -> Invocation {
    Invocation {
        args: args.to_vec(),
        stdin: None,
        writes: &[],
        expect: Expect::Runs,
    }
}

fn reads_stdin(args: &[&'static str], stdin: &'static str) -> Invocation {
    Invocation {
        stdin: Some(stdin),
        ..reads(args)
    }
}

fn usage(args: &[&'static str]) -> Invocation {
    Invocation {
        expect: Expect::Usage,
        ..reads(args)
    }
}

fn writes(args: &[&'static str], files: &'static [&'static str]) -> Invocation {
    Invocation {
        writes: files,
        ..reads(args)
    }
}

/// Every invocation of the commands that promise not to modify a rollout, `snapshot R -o R
/// --force` among them (the rollout read is never replaced); `snapshot --force` pointed at
/// another rollout replaces it, the README's one exception; `append` is checked apart.
fn invocations() -> Vec<Invocation> {
    let mut all = vec![
        // project: every flag, every target, the rollout by path, by link, as a snapshot path,
        // from standard input, and a snapshot in its place.
        reads(&["project", ROLLOUT]),
        reads(&["project", LINK, "--quiet"]),
        reads(&["project", "-q", ROLLOUT, "--pretty", "--json"]),
        reads(&["project", ROLLOUT, "--strict"]),
        reads(&["project", ROLLOUT, "--send-unknown", "--modalities", "text"]),
        reads(&["project", ROLLOUT, "--modalities", "text,image,audio"]),
        reads(&["project", ROLLOUT, "--truncation", "bytes:10"]),
        reads(&["project", ROLLOUT, "--truncation", "tokens:1"]),
        reads(&["project", ROLLOUT, "--snapshot", SNAPSHOT, "--json"]),
        reads(&["project", ROLLOUT, "--snapshot", ROLLOUT]),
        reads(&["project", ROLLOUT, "--snapshot", LINK]),
        reads(&["project", ROLLOUT, "--snapshot", SUB_SNAPSHOT]),
        reads(&["project", SNAPSHOT]),
        reads(&["project", SNAPSHOT, "--trusted", "--json"]),
        reads(&["project", LINK, "--trusted"]),
        reads_stdin(&["project", "/dev/stdin"], ROLLOUT),
        reads(&["project", ROLLOUT, "--target", "responses"]),
        reads(&["project", ROLLOUT, "--target", "chat", "--keep-developer"]),
        reads(&["project", ROLLOUT, "--target", "anthropic", "--strict"]),
        reads(&["project", SNAPSHOT, "--target", "chat", "--json"]),
        reads(&[
            "project",
            ROLLOUT,
            "--request",
            "--model",
            "m",
            "--instructions",
            "x",
            "--tools",
            TOOLS,
            "--parallel-tool-calls",
            "--tool-choice",
            "required",
            "--store",
            "true",
            "--stream",
            "false",
            "--reasoning-effort",
            "low",
            "--reasoning-summary",
            "auto",
            "--include",
            "reasoning.encrypted_content",
            "--prompt-cache-key",
        ]),
        reads(&[
            "project",
            ROLLOUT,
            "--request",
            "--model",
            "m",
            "--tools",
            ROLLOUT,
        ]),
        reads(&[
            "project",
            ROLLOUT,
            "--request",
            "--model",
            "m",
            "--tools",
            LINK,
        ]),
        reads(&[
            "project",
            ROLLOUT,
            "--request",
            "--model",
            "m",
            "--target",
            "chat",
            "--tools",
            TOOLS,
            "--tool-choice",
            r#"{"type":"function","name":"shell"}"#,
        ]),
        reads(&[
            "project",
            LINK,
            "--request",
            "--model",
            "m",
            "--target",
            "anthropic",
            "--max-tokens",
            "100",
            "--tools",
            TOOLS,
            "--tool-choice",
            "none",
        ]),
        reads(&[
            "project",
            SNAPSHOT,
            "--request",
            "--model",
            "m",
            "--target",
            "responses",
            "--tool-choice",
            "auto",
            "--include",
            "",
        ]),
        usage(&["project", ROLLOUT, "--tools", TOOLS]),
        usage(&["project", ROLLOUT, "--request"]),
        // check and stats: files, links, snapshots, directories, standard input.
        reads(&["check", ROLLOUT]),
        reads(&["check", ROLLOUT, "--strict", "--json"]),
        reads(&["check", LINK, SNAPSHOT, SUBDIR, "--json"]),
        reads(&["check", ".", "--strict"]),
        reads_stdin(&["check", "-", "--json"], ROLLOUT),
        reads(&["stats", ROLLOUT]),
        reads(&["stats", ROLLOUT, "--json"]),
        reads(&["stats", LINK, SNAPSHOT, SUBDIR, "--json"]),
        reads(&["stats", "."]),
        reads_stdin(&["stats", "-"], ROLLOUT),
        // verify: snapshots, a rollout given as a snapshot, directories, `--rollout`.
        reads(&["verify", SNAPSHOT]),
        reads(&["verify", SNAPSHOT, "--json"]),
        reads(&["verify", ROLLOUT]),
        reads(&["verify", LINK, "--json"]),
        reads(&["verify", SUBDIR, "."]),
        reads(&["verify", SNAPSHOT, "--rollout", ROLLOUT]),
        reads(&["verify", SNAPSHOT, "--rollout", LINK, "--json"]),
        reads(&["verify", ROLLOUT, "--rollout", ROLLOUT]),
        reads(&["verify", SUB_SNAPSHOT, "--rollout", ROLLOUT]),
        // prefix: rollouts and snapshots, both orders, points of one rollout.
        reads(&["prefix", ROLLOUT, SNAPSHOT]),
        reads(&["prefix", SNAPSHOT, ROLLOUT, "--trusted"]),
        reads(&["prefix", LINK, SUB_ROLLOUT, "--modalities", "text"]),
        reads(&["prefix", ROLLOUT, "--at-line", "3"]),
        reads(&["prefix", ROLLOUT, "--at-line", "2", "--at-line", "5"]),
        reads(&["prefix", ROLLOUT, ROLLOUT, "--truncation", "bytes:8"]),
        reads_stdin(&["prefix", "-", ROLLOUT], ROLLOUT),
        // lint: bodies, and a rollout and a snapshot that are not bodies, every target.
        reads(&["lint", "--target", "responses", BODY]),
        reads(&["lint", "--target", "chat", BODY, ROLLOUT, "--json"]),
        reads(&["lint", "--target", "anthropic", LINK, SNAPSHOT]),
        reads_stdin(&["lint", "--target", "responses", "-"], BODY),
        // snapshot: the outputs the README allows (a new file, an existing snapshot), and the
        // ones it refuses (the rollout itself, through a link, another rollout, a directory,
        // the tools file) with and without `--force` where the target is not the rollout.
        writes(&["snapshot", ROLLOUT, "-o", NEW_SNAPSHOT], &[NEW_SNAPSHOT]),
        writes(
            &[
                "snapshot",
                LINK,
                "--output",
                NEW_SNAPSHOT,
                "--truncation",
                "bytes:64",
            ],
            &[NEW_SNAPSHOT],
        ),
        writes(&["snapshot", ROLLOUT, "-o", SNAPSHOT], &[SNAPSHOT]),
        writes(
            &["snapshot", ROLLOUT, "-o", SUB_SNAPSHOT, "--force"],
            &[SUB_SNAPSHOT],
        ),
        writes(&["snapshot", ROLLOUT, "-o", TOOLS, "--force"], &[TOOLS]),
        reads(&["snapshot", ROLLOUT, "-o", ROLLOUT]),
        reads(&["snapshot", ROLLOUT, "-o", ROLLOUT, "--force"]),
        reads(&["snapshot", ROLLOUT, "-o", LINK, "--force"]),
        reads(&["snapshot", ROLLOUT, "-o", LINK]),
        reads(&["snapshot", LINK, "-o", ROLLOUT]),
        reads(&["snapshot", ROLLOUT, "-o", SUB_ROLLOUT]),
        reads(&["snapshot", ROLLOUT, "-o", SUBDIR]),
        reads(&["snapshot", ROLLOUT, "-o", SUBDIR, "--force"]),
        reads(&["snapshot", ROLLOUT, "-o", BODY]),
        writes(&["snapshot", SNAPSHOT, "-o", NEW_SNAPSHOT], &[NEW_SNAPSHOT]),
        writes(
            &["snapshot", "--quiet", ROLLOUT, "-o", NEW_SNAPSHOT],
            &[NEW_SNAPSHOT],
        ),
        // completions and man read nothing.
        reads(&["man"]),
        reads(&["man", "--quiet"]),
        reads(&["completions", "--quiet", "bash"]),
        // `--quiet` (global) on the others.
        reads(&["check", "--quiet", ROLLOUT, SNAPSHOT]),
        reads(&["stats", "--quiet", ROLLOUT]),
        reads(&["verify", "--quiet", SNAPSHOT, "--rollout", ROLLOUT]),
        reads(&["prefix", "--quiet", ROLLOUT, SNAPSHOT]),
        reads(&["lint", "--quiet", "--target", "chat", BODY]),
        reads_stdin(&["project", "-", "--quiet"], ROLLOUT),
        // A compressed rollout, read as its text and never replaced.
        reads(&["project", COMPRESSED, "--snapshot", SNAPSHOT]),
        reads(&["check", COMPRESSED, "--json"]),
        reads(&["snapshot", COMPRESSED, "-o", COMPRESSED, "--force"]),
        reads(&["snapshot", ROLLOUT, "-o", COMPRESSED]),
        reads(&["verify", SNAPSHOT, "--rollout", COMPRESSED]),
        // `--codex-home` (where a paginated file's ancestors are looked up) on every command.
        reads(&["project", ROLLOUT, "--codex-home", SUBDIR]),
        reads(&["check", "--codex-home", SUBDIR, ROLLOUT, SNAPSHOT]),
        reads(&["stats", "--codex-home", ".", "."]),
        reads(&[
            "verify",
            SNAPSHOT,
            "--rollout",
            ROLLOUT,
            "--codex-home",
            ".",
        ]),
        reads(&["prefix", ROLLOUT, SNAPSHOT, "--codex-home", SUBDIR]),
        reads(&["lint", "--codex-home", ".", "--target", "chat", BODY]),
        reads(&["snapshot", ROLLOUT, "-o", ROLLOUT, "--codex-home", "."]),
        reads(&["man", "--codex-home", "."]),
        reads(&["completions", "--codex-home", ".", "zsh"]),
        // A Claude Code transcript: read by project, check, stats and prefix (told from its
        // first line, or by `--format`), refused by name by the others, never written.
        reads(&["project", TRANSCRIPT]),
        reads(&["project", TRANSCRIPT, "--target", "chat", "--json"]),
        reads(&["project", TRANSCRIPT, "--request", "--tools", TOOLS]),
        reads(&["project", TRANSCRIPT, "--format", "claude-code", "--pretty"]),
        reads(&["project", TRANSCRIPT, "--format", "codex"]),
        reads_stdin(&["project", "-", "--format", "claude-code"], TRANSCRIPT),
        reads(&["project", TRANSCRIPT, "--target", "responses", "--json"]),
        reads(&["project", TRANSCRIPT, "--snapshot", SNAPSHOT]),
        reads(&[
            "project",
            TRANSCRIPT,
            "--snapshot",
            TRANSCRIPT_SNAPSHOT,
            "--json",
        ]),
        reads(&["project", TRANSCRIPT_SNAPSHOT, "--target", "responses"]),
        reads(&["project", TRANSCRIPT_SNAPSHOT, "--request", "--trusted"]),
        usage(&["project", TRANSCRIPT, "--truncation", "bytes:100"]),
        usage(&[
            "project",
            "-",
            "--format",
            "claude-code",
            "--snapshot",
            TRANSCRIPT_SNAPSHOT,
        ]),
        reads(&["check", TRANSCRIPT_SNAPSHOT, "--json"]),
        reads(&["stats", TRANSCRIPT_SNAPSHOT]),
        reads(&[
            "verify",
            TRANSCRIPT_SNAPSHOT,
            "--rollout",
            TRANSCRIPT,
            "--json",
        ]),
        reads(&["verify", TRANSCRIPT_SNAPSHOT, "--rollout", ROLLOUT]),
        reads(&["project", ROLLOUT, "--snapshot", TRANSCRIPT_SNAPSHOT]),
        reads(&["check", TRANSCRIPT, ROLLOUT, "--json"]),
        reads(&["check", "--format", "claude-code", TRANSCRIPT]),
        reads(&["stats", TRANSCRIPT, "--json"]),
        reads(&["stats", "--format", "claude-code", TRANSCRIPT]),
        writes(
            &["snapshot", TRANSCRIPT, "-o", NEW_SNAPSHOT],
            &[NEW_SNAPSHOT],
        ),
        writes(
            &[
                "snapshot",
                "--format",
                "claude-code",
                TRANSCRIPT,
                "-o",
                TRANSCRIPT_SNAPSHOT,
            ],
            &[TRANSCRIPT_SNAPSHOT],
        ),
        usage(&[
            "snapshot",
            TRANSCRIPT,
            "-o",
            NEW_SNAPSHOT,
            "--truncation",
            "bytes:9",
        ]),
        reads(&["snapshot", TRANSCRIPT, "-o", TRANSCRIPT, "--force"]),
        reads(&["snapshot", TRANSCRIPT, "-o", ROLLOUT]),
        reads(&["prefix", TRANSCRIPT, ROLLOUT]),
        reads(&[
            "prefix",
            TRANSCRIPT,
            "--at-line",
            "2",
            "--format",
            "claude-code",
        ]),
        reads_stdin(
            &["prefix", "-", "--at-line", "3", "--format", "claude-code"],
            TRANSCRIPT,
        ),
        reads(&["verify", SNAPSHOT, "--rollout", TRANSCRIPT]),
        reads(&["lint", "--target", "anthropic", TRANSCRIPT]),
        reads(&["lint", "--target", "anthropic", TRANSCRIPT, BODY, "--json"]),
        usage(&["lint", "--target", "responses", TRANSCRIPT]),
        // repair: a new file only; the transcript itself, an existing file, a rollout refused.
        writes(&["repair", TRANSCRIPT, "-o", REPAIRED], &[REPAIRED]),
        writes(
            &[
                "repair", "--quiet", TRANSCRIPT, "--output", REPAIRED, "--json",
            ],
            &[REPAIRED],
        ),
        reads(&["repair", TRANSCRIPT, "-o", TRANSCRIPT]),
        reads(&["repair", TRANSCRIPT, "-o", ROLLOUT]),
        reads(&["repair", TRANSCRIPT, "-o", LINK]),
        reads(&["repair", ROLLOUT, "-o", "new.jsonl"]),
        reads(&["repair", "--codex-home", ".", SNAPSHOT, "-o", "new.jsonl"]),
    ];
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        all.push(reads(&["completions", shell]));
    }
    all
}

/// Runs `invocation` in `dir` and checks that the files are as `before` says, except those it
/// may write; returns the tree after it (the new baseline).
fn check_invocation(
    dir: &Path,
    invocation: &Invocation,
    before: &BTreeMap<PathBuf, Option<FileState>>,
    label: &str,
) -> BTreeMap<PathBuf, Option<FileState>> {
    let stdin = invocation
        .stdin
        .map(|name| std::fs::read(dir.join(name)).expect("stdin file"));
    let output = run(&invocation.args, stdin.as_deref(), dir);
    let code = output.status.code();
    let context = || {
        format!(
            "{label}: {:?} exited {code:?}\nstderr: {}",
            invocation.args,
            text(&output.stderr)
        )
    };
    match invocation.expect {
        Expect::Runs => assert!(matches!(code, Some(0 | 1 | 3)), "{}", context()),
        Expect::Usage => assert_eq!(code, Some(2), "{}", context()),
    }
    let after = tree(dir);
    let allowed: BTreeSet<PathBuf> = invocation.writes.iter().map(PathBuf::from).collect();
    let names = |tree: &BTreeMap<PathBuf, Option<FileState>>| -> BTreeSet<PathBuf> {
        tree.keys()
            .filter(|path| !allowed.contains(*path))
            .cloned()
            .collect()
    };
    assert_eq!(
        names(before),
        names(&after),
        "files came or went: {}",
        context()
    );
    for (path, state) in before {
        if allowed.contains(path) {
            continue;
        }
        let now = &after[path];
        if let (Some(state), Some(now)) = (state, now) {
            assert!(
                state.bytes == now.bytes,
                "{} changed: {}",
                path.display(),
                context()
            );
            assert_eq!(state.len, now.len, "{}: {}", path.display(), context());
            assert_eq!(
                state.modified,
                now.modified,
                "{} touched: {}",
                path.display(),
                context()
            );
        }
    }
    after
}

#[test]
fn no_command_modifies_a_rollout_with_any_flag() {
    let invocations = invocations();
    for name in ["session.jsonl", "interrupted.jsonl", "codex-session.jsonl"] {
        let dir = session_dir(&example(name));
        let original = std::fs::read(dir.path().join(ROLLOUT)).expect("rollout");
        let mut before = tree(dir.path());
        for invocation in &invocations {
            before = check_invocation(dir.path(), invocation, &before, name);
        }
        // After everything, the rollouts are the bundled file, byte for byte.
        for rollout in [ROLLOUT, SUB_ROLLOUT] {
            assert_eq!(
                std::fs::read(dir.path().join(rollout)).expect("rollout"),
                original,
                "{name}"
            );
        }
    }
}

/// `append` writes to its rollout, and only there: the old bytes are a prefix of the new ones,
/// with every format and flag, from a file or standard input; every other file is untouched.
/// A file that is not a rollout (a snapshot, the events themselves) is refused and left alone.
#[test]
fn append_keeps_the_old_bytes_as_a_prefix_and_touches_nothing_else() {
    let stream = |name: &str| {
        std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/stream")
                .join(name),
        )
        .expect("fixture")
    };
    let cases: [(&[&str], Option<Vec<u8>>); 8] = [
        (&["--stream", EVENTS], None),
        (&["--stream", EVENTS, "--codex-home", SUBDIR], None),
        (
            &["--stream", EVENTS, "--format", "responses", "--json"],
            None,
        ),
        (
            &["--stream", "-", "--format", "chat", "--strict"],
            Some(stream("chat_tool_calls.sse")),
        ),
        (
            &["--stream", "-", "--format", "anthropic", "--quiet"],
            Some(stream("anthropic_tool_use.sse")),
        ),
        (&["--stream", ROLLOUT], None),
        (&["--stream", SNAPSHOT, "--json"], None),
        (&["--stream", COMPRESSED], None),
    ];
    for name in ["session.jsonl", "interrupted.jsonl", "codex-session.jsonl"] {
        let dir = session_dir(&example(name));
        for (flags, stdin) in &cases {
            for target in [ROLLOUT, LINK] {
                let before = tree(dir.path());
                let old = std::fs::read(dir.path().join(ROLLOUT)).expect("rollout");
                let mut args = vec!["append", target];
                args.extend_from_slice(flags);
                let output = run(&args, stdin.as_deref(), dir.path());
                let context = format!(
                    "{name}: {args:?} exited {:?}: {}",
                    output.status.code(),
                    text(&output.stderr)
                );
                assert!(matches!(output.status.code(), Some(0 | 1 | 3)), "{context}");
                let new = std::fs::read(dir.path().join(ROLLOUT)).expect("rollout");
                assert!(new.starts_with(&old), "old bytes not a prefix: {context}");
                let mut after = tree(dir.path());
                after.insert(PathBuf::from(ROLLOUT), before[Path::new(ROLLOUT)].clone());
                // Under a Codex home (`--codex-home`) append takes Codex's writer lock on the
                // thread: its directory and coordination file stay, as Codex leaves them, and
                // the thread's lock file is gone once the lock is given back.
                let locks = Path::new(SUBDIR).join("thread-writer-locks");
                let left: Vec<PathBuf> = after
                    .keys()
                    .filter(|path| path.starts_with(&locks) && !before.contains_key(*path))
                    .cloned()
                    .collect();
                for path in &left {
                    assert!(
                        *path == locks || *path == locks.join(".coordination.lock"),
                        "{} left behind: {context}",
                        path.display()
                    );
                    after.remove(path);
                }
                // The link's own metadata does not change when its target grows.
                assert_eq!(before, after, "another file changed: {context}");
            }
        }
        // Refused: not a rollout (a Claude Code transcript named as one), or a compressed one.
        for target in [SNAPSHOT, EVENTS, BODY, COMPRESSED, TRANSCRIPT] {
            let before = tree(dir.path());
            let output = run(&["append", target, "--stream", EVENTS], None, dir.path());
            assert_eq!(
                output.status.code(),
                Some(3),
                "{target}: {}",
                text(&output.stderr)
            );
            assert_eq!(before, tree(dir.path()), "{target} was touched");
        }
    }
}

/// The long flags of `agent-history <subcommand> --help` (`--help` and `--version` left out),
/// and the short aliases it lists (`-o` for `--output`).
fn help_flags(subcommand: &str) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let output = run(&[subcommand, "--help"], None, Path::new("."));
    assert!(output.status.success(), "{subcommand} --help");
    let mut flags = BTreeSet::new();
    let mut aliases = BTreeMap::new();
    for line in text(&output.stdout).lines() {
        // Option lines are indented by two to six spaces; descriptions by more.
        let indent = line.len() - line.trim_start().len();
        let line = line.trim_start();
        if !(2..=6).contains(&indent) || !line.starts_with('-') {
            continue;
        }
        let mut short = None;
        // `[` starts an optional value (`--prompt-cache-key[=<KEY>]`).
        for token in line.split([' ', ',', '=', '[']) {
            if let Some(name) = token.strip_prefix("--") {
                let flag = format!("--{name}");
                if flag != "--help" && flag != "--version" {
                    if let Some(short) = short.take() {
                        aliases.insert(short, flag.clone());
                    }
                    flags.insert(flag);
                }
                break;
            } else if token.starts_with('-') && token.len() == 2 {
                short = Some(token.to_owned());
            }
        }
    }
    (flags, aliases)
}

/// The subcommands `agent-history --help` lists (`help` left out).
fn subcommands() -> BTreeSet<String> {
    let output = run(&["--help"], None, Path::new("."));
    let help = text(&output.stdout);
    let commands = help
        .split("Commands:")
        .nth(1)
        .expect("a Commands section")
        .split("\n\n")
        .next()
        .expect("its lines");
    commands
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// A flag or subcommand added to the command line without an invocation in this file fails
/// here: the invocations above (and `append`'s) use every flag of every subcommand.
#[test]
fn every_flag_and_subcommand_is_exercised() {
    let mut used: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut note = |args: &[&str]| {
        let entry = used.entry(args[0].to_owned()).or_default();
        for arg in &args[1..] {
            if arg.starts_with('-') && arg.len() > 1 {
                entry.insert((*arg).to_owned());
            }
        }
    };
    for invocation in invocations() {
        note(&invocation.args);
    }
    // `append`'s flags, as its test uses them.
    note(&[
        "append",
        "--stream",
        "--format",
        "--json",
        "--strict",
        "--quiet",
        "--codex-home",
    ]);
    let subcommands = subcommands();
    assert!(subcommands.len() >= 10, "{subcommands:?}");
    for subcommand in &subcommands {
        let used = used
            .get(subcommand)
            .unwrap_or_else(|| panic!("`{subcommand}` is never run"));
        let (flags, aliases) = help_flags(subcommand);
        assert!(flags.contains("--quiet"), "{subcommand}: {flags:?}");
        let used: BTreeSet<String> = used
            .iter()
            .map(|flag| aliases.get(flag).cloned().unwrap_or_else(|| flag.clone()))
            .collect();
        let missing: Vec<_> = flags.difference(&used).collect();
        assert!(
            missing.is_empty(),
            "`{subcommand}` flags no invocation uses: {missing:?}"
        );
        let unknown: Vec<_> = used.difference(&flags).collect();
        assert!(
            unknown.is_empty(),
            "`{subcommand}` flags its --help does not list: {unknown:?}"
        );
    }
}
