//! Codex's writer lock: a session that writes a rollout under a Codex home holds
//! `thread-writer-locks/<thread id>.lock` as Codex does, so that a thread Codex has open is
//! refused with an error that says so, and Codex is refused a thread a session writes. Codex is
//! played by another process that takes the same advisory lock (util-linux `flock`, which locks
//! as Rust's `File::try_lock` does on Linux): not this library's code.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use agent_history::{
    DEFAULT_TRUNCATION, Durability, Error, ResumeOptions, Session, SessionMeta, WriteStep,
};

use crate::common::cli::{run, text};
use crate::common::paginated::{Home, T, root};
use crate::common::{temp_dir, user};

fn lock_of(home: &Home, thread: &str) -> PathBuf {
    home.path()
        .join("thread-writer-locks")
        .join(format!("{thread}.lock"))
}

/// Another process holding the lock at `lock` until it is killed.
struct Holder(Child);

impl Holder {
    fn hold(lock: &Path) -> Holder {
        fs::create_dir_all(lock.parent().expect("a directory")).expect("lock directory");
        // Without forking: the process killed is the one that holds the lock.
        let mut child = Command::new("flock")
            .args(["--no-fork", "--exclusive"])
            .arg(lock)
            .args(["sh", "-c", "echo held; exec sleep 60"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("util-linux flock runs");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().expect("stdout"))
            .read_line(&mut line)
            .expect("reads");
        assert_eq!(line.trim(), "held");
        Holder(child)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether another process could take the lock at `lock` now (`flock --nonblock`).
fn free_for_another_process(lock: &Path) -> bool {
    Command::new("flock")
        .args(["--nonblock", "--exclusive"])
        .arg(lock)
        .arg("true")
        .status()
        .expect("flock runs")
        .success()
}

fn options(home: &Home) -> ResumeOptions {
    ResumeOptions::new(DEFAULT_TRUNCATION).with_codex_home(home.path())
}

fn assert_held(error: &Error, lock: &Path) {
    assert!(
        matches!(error, Error::RolloutWrite(write)
            if write.step == WriteStep::HeldByCodex { lock: lock.to_owned() }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("Codex has this thread open"),
        "{error}"
    );
}

#[test]
fn a_thread_codex_holds_is_refused_and_left_as_it_was() {
    let home = Home::new();
    let (file, _) = root();
    let path = home.write("10-00-00", T, &file.text);
    let lock = lock_of(&home, T);
    let codex = Holder::hold(&lock);
    let Err(error) = Session::resume(&path, &options(&home), Durability::Flush) else {
        panic!("resumed a thread Codex holds");
    };
    assert_held(&error, &lock);
    assert_eq!(fs::read_to_string(&path).expect("reads"), file.text);
    // A new file of that thread is not even created.
    let new = home
        .day()
        .join(format!("rollout-2026-09-20T11-00-00-{T}.jsonl"));
    let Err(error) = Session::create(
        &new,
        SessionMeta::new(T.parse().expect("id")).paginated(None),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    ) else {
        panic!("created a file of a thread Codex holds");
    };
    assert_held(&error, &lock);
    assert!(!new.exists());
    // The command line says the same, and exits 3.
    let events =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stream/text_message.sse");
    let output = run(&[
        "append",
        path.to_str().expect("utf-8"),
        "--stream",
        events.to_str().expect("utf-8"),
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("Codex has this thread open"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(fs::read_to_string(&path).expect("reads"), file.text);
    drop(codex);

    // Codex let go: the session takes the lock, and Codex would be refused while it lives.
    let mut resumed = Session::resume(&path, &options(&home), Durability::Flush).expect("resumes");
    assert_eq!(
        resumed
            .session()
            .codex_lock()
            .map(|held| held.path().to_owned()),
        Some(lock.clone())
    );
    assert!(
        !free_for_another_process(&lock),
        "another process took the lock the session holds"
    );
    resumed
        .session_mut()
        .record_json(&user("Now"))
        .expect("recorded");
    drop(resumed);
    // Given back as Codex gives it back: the lock file removed.
    assert!(!lock.exists(), "the lock file is removed");
    assert!(free_for_another_process(&lock));
}

#[test]
fn a_session_created_under_a_codex_home_holds_the_lock_and_one_elsewhere_none() {
    let home = Home::new();
    let path = home
        .day()
        .join(format!("rollout-2026-09-20T09-00-00-{T}.jsonl"));
    let lock = lock_of(&home, T);
    let session = Session::create(
        &path,
        SessionMeta::new(T.parse().expect("id")).paginated(None),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    assert!(session.codex_lock().is_some());
    assert!(!free_for_another_process(&lock));
    drop(session);
    assert!(free_for_another_process(&lock));

    let elsewhere = temp_dir();
    let session = Session::create(
        elsewhere.path().join("rollout.jsonl"),
        SessionMeta::new(T.parse().expect("id")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    assert!(
        session.codex_lock().is_none(),
        "no Codex home, no Codex lock"
    );
    assert!(!elsewhere.path().join("thread-writer-locks").exists());
}
