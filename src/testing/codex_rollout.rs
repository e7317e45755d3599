//! [`CodexRollout`]: rollouts in the shape Codex writes today, written by this library's writer,
//! with the history they stand for.

use std::cell::Cell;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::history::{DEFAULT_TRUNCATION, History, summary_text};
use crate::item::{ItemError, ThreadId};
use crate::rollout::{Durability, RolloutWriteError, RolloutWriter, SessionMeta};
use crate::world::{WorldSnapshot, WorldStateChange};

thread_local! {
    /// Milliseconds since the generator's epoch of the next line's timestamp.
    static CLOCK_MS: Cell<u64> = const { Cell::new(0) };
}

/// 2026-11-03T14:00:00Z: the first line's timestamp.
const EPOCH_SECONDS: u64 = 1_793_714_400;

/// The writer's clock: each line 137 ms after the one before (per thread; reset by
/// [`CodexRollout::new`]).
fn tick() -> SystemTime {
    let ms = CLOCK_MS.with(|clock| {
        let now = clock.get();
        clock.set(now + 137);
        now
    });
    SystemTime::UNIX_EPOCH + Duration::from_secs(EPOCH_SECONDS) + Duration::from_millis(ms)
}

/// Building a rollout failed: an item or line the builder made was refused (a bug in the
/// builder, not bad input).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodexRolloutError {
    /// The history refused an item.
    #[error(transparent)]
    Item(#[from] ItemError),
    /// The writer refused a line.
    #[error(transparent)]
    Write(#[from] RolloutWriteError),
}

/// A rollout in the shape Codex (CLI 0.1xx) writes, built turn by turn through this library's
/// [`RolloutWriter`]: turns with their events, `turn_context` lines, reasoning, exec and patch
/// calls with their outputs, compactions, rollbacks, legacy `ghost_snapshot` items and
/// `world_state` lines. Timestamps come from a deterministic clock, so the same calls give the
/// same bytes.
///
/// Beside the lines it keeps the history they stand for, recorded as a live session would
/// ([`CodexRollout::history`]): resuming the bytes must give it. It writes what Codex writes in
/// the lines resume reads; the other lines are shaped like Codex's but not complete
/// (`docs/testing.md`, "Rollouts in Codex's shape").
pub struct CodexRollout {
    writer: RolloutWriter<Vec<u8>>,
    history: History,
    turn: u32,
    open_turn: Option<String>,
    first_turn: bool,
    last_agent_message: Option<String>,
    tokens: u64,
}

impl CodexRollout {
    /// A new rollout with thread id `thread_id`: its `session_meta` line. Resets this thread's
    /// generator clock.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if the writer refuses the line.
    pub fn new(thread_id: ThreadId) -> Result<CodexRollout, CodexRolloutError> {
        CLOCK_MS.with(|clock| clock.set(0));
        let mut meta = SessionMeta::new(thread_id);
        meta.timestamp = "2026-11-03T14:00:00.000Z".into();
        meta.cwd = "/home/user/project".into();
        meta.originator = "codex_cli_rs".into();
        meta.cli_version = "0.128.0".into();
        meta.source = Value::String("cli".into());
        meta.model_provider = Some("openai".into());
        meta.base_instructions = Some(json!({"text": "You are Codex, a coding agent."}));
        let mut writer = RolloutWriter::with_sink(Vec::new(), "codex-rollout", Durability::Flush)
            .with_clock(tick);
        writer.append_session_meta(&meta)?;
        Ok(CodexRollout {
            writer,
            history: History::with_truncation(DEFAULT_TRUNCATION),
            turn: 0,
            open_turn: None,
            first_turn: true,
            last_agent_message: None,
            tokens: 0,
        })
    }

    /// The history the lines so far stand for.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The bytes written so far.
    pub fn bytes(&self) -> &[u8] {
        self.writer.sink()
    }

    /// Whether a turn is open (started, not yet completed or aborted).
    pub fn in_turn(&self) -> bool {
        self.open_turn.is_some()
    }

    /// Starts a turn with `model`: `task_started`, then `turn_context`; the first turn also
    /// records the permissions developer message and the environment context, as Codex does.
    /// Returns the turn id.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if a line is refused.
    pub fn start_turn(&mut self, model: &str) -> Result<String, CodexRolloutError> {
        self.turn += 1;
        let turn_id = format!("019a5c3e-7d10-7000-8000-{:012x}", self.turn);
        self.event(json!({
            "type": "task_started",
            "turn_id": turn_id,
            "model_context_window": 258_400,
        }))?;
        self.raw(
            "turn_context",
            json!({
                "turn_id": turn_id,
                "cwd": "/home/user/project",
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write", "network_access": false},
                "model": model,
                "effort": "medium",
                "summary": "auto",
            }),
        )?;
        if self.first_turn {
            self.first_turn = false;
            self.item(json!({
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "<permissions instructions>\nApprovals: on-request.\n</permissions instructions>"}],
            }))?;
            self.item(json!({
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/home/user/project</cwd>\n  <shell>bash</shell>\n</environment_context>"}],
            }))?;
        }
        self.open_turn = Some(turn_id.clone());
        self.last_agent_message = None;
        Ok(turn_id)
    }

    /// The user's message: the `user_message` event and the user item (with an image when
    /// `image_url` is given, as a pasted screenshot is).
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if a line is refused.
    pub fn user(&mut self, text: &str, image_url: Option<&str>) -> Result<(), CodexRolloutError> {
        let images: Vec<&str> = image_url.into_iter().collect();
        self.event(json!({"type": "user_message", "message": text, "images": images}))?;
        let mut content = vec![json!({"type": "input_text", "text": text})];
        if let Some(url) = image_url {
            content.push(json!({"type": "input_image", "image_url": url}));
        }
        self.item(json!({"type": "message", "role": "user", "content": content}))
    }

    /// A reasoning item with a summary and encrypted content.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if a line is refused.
    pub fn reasoning(&mut self, summary: &str) -> Result<(), CodexRolloutError> {
        self.event(json!({"type": "agent_reasoning", "text": summary}))?;
        self.item(json!({
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}],
            "content": null,
            "encrypted_content": "gAAAAABencrypted-reasoning-of-the-model",
        }))
    }

    /// A shell call, its `exec_command_end` event and its output; without `output` the call is
    /// left without one (the turn was interrupted before the tool ran).
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if a line is refused.
    pub fn exec(
        &mut self,
        call_id: &str,
        command: &str,
        output: Option<&str>,
    ) -> Result<(), CodexRolloutError> {
        let arguments =
            json!({"command": ["bash", "-lc", command], "workdir": "/home/user/project"});
        self.item(json!({
            "type": "function_call",
            "name": "shell",
            "arguments": arguments.to_string(),
            "call_id": call_id,
        }))?;
        let Some(output) = output else {
            return Ok(());
        };
        self.event(json!({
            "type": "exec_command_end",
            "call_id": call_id,
            "stdout": output,
            "stderr": "",
            "exit_code": 0,
            "duration": {"secs": 0, "nanos": 41_000_000},
        }))?;
        self.item(json!({
            "type": "function_call_output",
            "call_id": call_id,
            "output": format!("Exit code: 0\nWall time: 0.04 seconds\nOutput:\n{output}"),
        }))
    }

    /// An `apply_patch` custom tool call, its `patch_apply_end` event and its output.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if a line is refused.
    pub fn patch(&mut self, call_id: &str, patch: &str) -> Result<(), CodexRolloutError> {
        self.item(json!({
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": call_id,
            "name": "apply_patch",
            "input": patch,
        }))?;
        self.event(json!({
            "type": "patch_apply_end",
            "call_id": call_id,
            "stdout": "Success. Updated the following files:\nM src/lib.rs\n",
            "stderr": "",
            "success": true,
        }))?;
        self.item(json!({
            "type": "custom_tool_call_output",
            "call_id": call_id,
            "output": "{\"output\":\"Success. Updated the following files:\\nM src/lib.rs\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}",
        }))
    }

    /// A server-side web search call.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if a line is refused.
    pub fn web_search(&mut self, query: &str) -> Result<(), CodexRolloutError> {
        self.item(json!({
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "query": query},
        }))?;
        self.event(json!({"type": "web_search_end", "call_id": "ws", "query": query}))
    }

    /// The assistant's message and its `agent_message` event.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if a line is refused.
    pub fn assistant(&mut self, text: &str) -> Result<(), CodexRolloutError> {
        self.event(json!({"type": "agent_message", "message": text}))?;
        self.item(json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }))?;
        self.last_agent_message = Some(text.to_owned());
        Ok(())
    }

    /// A `token_count` event (Codex writes one after each model response).
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if a line is refused.
    pub fn token_count(&mut self) -> Result<(), CodexRolloutError> {
        self.tokens += 1_234;
        let usage = json!({
            "input_tokens": self.tokens,
            "cached_input_tokens": self.tokens / 2,
            "output_tokens": 321,
            "reasoning_output_tokens": 64,
            "total_tokens": self.tokens + 321,
        });
        self.event(json!({
            "type": "token_count",
            "info": {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 258_400},
            "rate_limits": null,
        }))
    }

    /// A legacy `ghost_snapshot` item (an undo point older Codex wrote; readers drop it, so the
    /// history does not hold it).
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if the line is refused.
    pub fn ghost_snapshot(&mut self) -> Result<(), CodexRolloutError> {
        let item = json!({"type": "ghost_snapshot", "ghost_commit": {"id": "4b825dc6", "parent": null, "preexisting_untracked_files": [], "preexisting_untracked_dirs": []}});
        self.writer
            .append_response_items([item.to_string().as_str()])?;
        Ok(())
    }

    /// A compaction with `model_summary`: the `context_compacted` event and the `compacted` line
    /// with the replacement history local compaction builds.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if the history cannot be compacted or a line is refused.
    pub fn compact(&mut self, model_summary: &str) -> Result<(), CodexRolloutError> {
        let compacted = self.history.compact(&summary_text(model_summary))?;
        self.event(json!({"type": "context_compacted"}))?;
        self.writer.append_compacted(&compacted)?;
        Ok(())
    }

    /// Ends the open turn with `task_complete` (nothing when no turn is open).
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if the line is refused.
    pub fn complete_turn(&mut self) -> Result<(), CodexRolloutError> {
        if let Some(turn_id) = self.open_turn.take() {
            let last = self.last_agent_message.take();
            self.event(
                json!({"type": "task_complete", "turn_id": turn_id, "last_agent_message": last}),
            )?;
        }
        Ok(())
    }

    /// Ends the open turn with `turn_aborted` (the user interrupted; nothing when no turn is
    /// open).
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if the line is refused.
    pub fn abort_turn(&mut self) -> Result<(), CodexRolloutError> {
        if let Some(turn_id) = self.open_turn.take() {
            self.event(
                json!({"type": "turn_aborted", "turn_id": turn_id, "reason": "interrupted"}),
            )?;
        }
        Ok(())
    }

    /// Rolls back `n` user turns: the `thread_rolled_back` event, and the history rolled back.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if the history cannot be rolled back or the line is refused.
    pub fn rollback(&mut self, n: u32) -> Result<(), CodexRolloutError> {
        self.history.drop_last_n_user_turns(n as usize)?;
        self.writer.append_rollback(u64::from(n))?;
        Ok(())
    }

    /// Persists the world state `snapshot` as a session does
    /// ([`Session::persist_world_state`](crate::Session::persist_world_state)): the change from
    /// the history's baseline as a `world_state` line (nothing when nothing changed), after which
    /// the snapshot is the baseline. Returns the change.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if the line is refused.
    pub fn world_state(
        &mut self,
        snapshot: &WorldSnapshot,
    ) -> Result<Option<WorldStateChange>, CodexRolloutError> {
        let Some(change) = snapshot.change_from(self.history.world_state_baseline()) else {
            return Ok(None);
        };
        self.writer.append_world_state(&change)?;
        self.history
            .set_world_state_baseline(Some(snapshot.clone()));
        Ok(Some(change))
    }

    /// Writes `change` as a `world_state` line whatever the baseline (a patch without one, a
    /// state of the wrong shape), and moves the history's baseline as resume does: to the
    /// change applied when it applies, else to none.
    ///
    /// # Errors
    ///
    /// [`CodexRolloutError`] if the line is refused.
    pub fn world_state_change(
        &mut self,
        change: &WorldStateChange,
    ) -> Result<(), CodexRolloutError> {
        self.writer.append_world_state(change)?;
        let next = change.apply_to(self.history.world_state_baseline()).ok();
        self.history.set_world_state_baseline(next);
        Ok(())
    }

    fn item(&mut self, item: Value) -> Result<(), CodexRolloutError> {
        let json = item.to_string();
        self.history.record_json(json.as_str())?;
        self.writer.append_response_items([json.as_str()])?;
        Ok(())
    }

    fn event(&mut self, payload: Value) -> Result<(), CodexRolloutError> {
        self.raw("event_msg", payload)
    }

    fn raw(&mut self, kind: &str, payload: Value) -> Result<(), CodexRolloutError> {
        self.writer.append_raw(kind, &payload.to_string())?;
        Ok(())
    }
}
