//! Paginated Codex files for the tests, in the shapes Codex 0.150 writes: a builder that numbers
//! the lines and knows where each starts (the byte offsets a `history_base` names), the worked
//! example's two-turn thread, the same lines as a legacy file, and a Codex home to put them in.

use std::fs;
use std::path::{Path, PathBuf};

use super::temp_dir;

pub const T: &str = "019a0000-0000-7000-8000-000000000001";
pub const F: &str = "019a0000-0000-7000-8000-0000000000f0";
pub const R: &str = "019a0000-0000-7000-8000-0000000000e0";

/// A paginated file being written: its text and where each line starts.
pub struct Paged {
    pub text: String,
    pub starts: Vec<u64>,
    pub next: u64,
}

impl Paged {
    /// A file whose first line is a `session_meta` of thread `id` at ordinal `first`, with the
    /// base `base` (`(rollout id, end_ordinal_exclusive, end_byte_offset)`).
    pub fn new(id: &str, first: u64, base: Option<(&str, u64, u64)>) -> Paged {
        let mut paged = Paged {
            text: String::new(),
            starts: Vec::new(),
            next: first,
        };
        paged.push("session_meta", &meta(id, "paginated", base));
        paged
    }

    /// Appends a line of type `kind` with `payload`, numbered with the next ordinal.
    pub fn push(&mut self, kind: &str, payload: &str) -> &mut Paged {
        let ordinal = self.next;
        self.next += 1;
        self.numbered(ordinal, kind, payload)
    }

    /// Appends a line with ordinal `ordinal` (a repeat or a gap when it is not the next one).
    pub fn numbered(&mut self, ordinal: u64, kind: &str, payload: &str) -> &mut Paged {
        self.starts.push(self.text.len() as u64);
        self.text.push_str(&format!(
            r#"{{"timestamp":"2026-09-20T08:00:{:02}.000Z","ordinal":{ordinal},"type":"{kind}","payload":{payload}}}"#,
            self.starts.len() % 60
        ));
        self.text.push('\n');
        self.next = self.next.max(ordinal + 1);
        self
    }

    /// The offset where line `index` (0-based) starts.
    pub fn start(&self, index: usize) -> u64 {
        self.starts[index]
    }

    /// The file's length.
    pub fn len(&self) -> u64 {
        self.text.len() as u64
    }
}

/// A `session_meta` payload of thread `id`.
pub fn meta(id: &str, mode: &str, base: Option<(&str, u64, u64)>) -> String {
    let base = base.map_or(String::new(), |(rollout, end, bytes)| {
        format!(
            r#","history_base":{{"thread_id":"{rollout}","end_ordinal_exclusive":{end},"end_byte_offset":{bytes}}}"#
        )
    });
    format!(
        r#"{{"session_id":"{id}","id":"{id}","timestamp":"2026-09-20T08:00:00.100Z","cwd":"/repo","originator":"codex-tui","cli_version":"0.150.0","source":"cli","thread_source":"user","model_provider":"openai","base_instructions":{{"text":"Be brief."}},"history_mode":"{mode}"{base},"context_window":{{"window_id":"w1"}}}}"#
    )
}

pub fn message(role: &str, kind: &str, text: &str) -> String {
    format!(
        r#"{{"type":"message","role":"{role}","content":[{{"type":"{kind}","text":"{text}"}}]}}"#
    )
}

pub fn completed(turn: &str, item: &str) -> String {
    format!(
        r#"{{"type":"item_completed","thread_id":"{T}","turn_id":"{turn}","item":{item},"started_at_ms":1789891200500,"completed_at_ms":1789891200500}}"#
    )
}

pub fn turn_context(turn: &str) -> String {
    format!(
        r#"{{"turn_id":"{turn}","cwd":"/repo","approval_policy":"on-request","sandbox_policy":{{"type":"workspace-write"}},"model":"gpt-5","summary":"auto"}}"#
    )
}

/// A float in the payload, as in the files that trigger Codex bug #35746.
pub const TOKEN_COUNT: &str = r#"{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":66.0,"window_minutes":300}}}"#;

/// One turn `turn`: the user says `said`, the assistant answers `answer`; with a call when
/// `call` is given.
pub fn turn(file: &mut Paged, turn: &str, said: &str, call: Option<&str>, answer: &str) {
    file.push(
        "event_msg",
        &format!(r#"{{"type":"task_started","turn_id":"{turn}","started_at":1789891200,"model_context_window":258400}}"#),
    );
    file.push("turn_context", &turn_context(turn));
    file.push("response_item", &message("user", "input_text", said));
    file.push(
        "event_msg",
        &completed(
            turn,
            &format!(r#"{{"type":"UserMessage","id":"u-{turn}","content":[{{"type":"text","text":"{said}","text_elements":[]}}]}}"#),
        ),
    );
    if let Some(call) = call {
        file.push(
            "response_item",
            &format!(r#"{{"type":"function_call","id":"fc_{call}","name":"exec_command","arguments":"{{\"cmd\":\"ls\"}}","call_id":"{call}"}}"#),
        );
        file.push(
            "event_msg",
            &completed(turn, &format!(r#"{{"type":"CommandExecution","id":"{call}","command":["/bin/bash","-lc","ls"],"cwd":"file:///repo","status":"completed","aggregated_output":"a.txt\n","exit_code":0,"duration":{{"secs":0,"nanos":12000000}}}}"#)),
        );
        file.push(
            "response_item",
            &format!(r#"{{"type":"function_call_output","call_id":"{call}","output":"a.txt\n"}}"#),
        );
    }
    file.push("event_msg", TOKEN_COUNT);
    file.push(
        "event_msg",
        &completed(turn, &format!(r#"{{"type":"AgentMessage","id":"msg-{turn}","content":[{{"type":"Text","text":"{answer}"}}],"phase":"final_answer"}}"#)),
    );
    file.push(
        "response_item",
        &message("assistant", "output_text", answer),
    );
    file.push(
        "event_msg",
        &format!(r#"{{"type":"task_complete","turn_id":"{turn}","last_agent_message":"{answer}","duration_ms":4000}}"#),
    );
}

/// The root thread T of the worked example: context messages, a `world_state`, then two turns
/// (U1 with a function call, U2 without). Returns the file and where U2's `task_started` is.
pub fn root() -> (Paged, usize) {
    let mut file = Paged::new(T, 0, None);
    file.push(
        "response_item",
        &message(
            "developer",
            "input_text",
            "<permissions instructions>sandboxed</permissions instructions>",
        ),
    );
    file.push(
        "response_item",
        &message(
            "user",
            "input_text",
            "<environment_context><cwd>/repo</cwd></environment_context>",
        ),
    );
    file.push("world_state", r#"{"full":true,"state":{"cwd":"/repo"}}"#);
    turn(
        &mut file,
        "U1",
        "List the files",
        Some("call_1"),
        "There is one file: a.txt.",
    );
    let second = file.starts.len();
    turn(&mut file, "U2", "Thanks", None, "You are welcome.");
    (file, second)
}

/// The same lines as a legacy file: no ordinals, mode legacy. A paginated file's model context
/// is rebuilt exactly as this file's is.
pub fn as_legacy(paged: &str) -> String {
    paged
        .lines()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).expect("JSON");
            let object = value.as_object_mut().expect("object");
            object.remove("ordinal");
            if let Some(meta) = object
                .get_mut("payload")
                .filter(|_| line.contains("\"session_meta\""))
            {
                meta["history_mode"] = "legacy".into();
            }
            format!("{}\n", serde_json::to_string(&value).expect("JSON"))
        })
        .collect()
}

/// A Codex home with `sessions/2026/09/20/` and `archived_sessions/`.
pub struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Home {
        let home = Home { dir: temp_dir() };
        fs::create_dir_all(home.day()).expect("sessions tree");
        fs::create_dir_all(home.path().join("archived_sessions")).expect("archive");
        home
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn day(&self) -> PathBuf {
        self.path().join("sessions/2026/09/20")
    }

    /// Writes `text` as the rollout of `ids` (`<thread>` or `<thread>_<rollout>`) in the day's
    /// folder.
    pub fn write(&self, stamp: &str, ids: &str, text: &str) -> PathBuf {
        let path = self
            .day()
            .join(format!("rollout-2026-09-20T{stamp}-{ids}.jsonl"));
        fs::write(&path, text).expect("writes");
        path
    }
}
