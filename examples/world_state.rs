//! A session whose world state changes between steps: at every step the example brings the model
//! up to date (`Session::update_world_state`), records the step's conversation, compiles the
//! request and prints its size and how much of it the previous request's prefix covers — what a
//! provider's prompt cache can reuse (`docs/world-state.md`, `docs/prompt-prefix.md`).
//!
//! Run it with `cargo run --example world_state`. It writes its rollout to a temporary directory
//! and resumes it at the end, to show that an update right after a resume renders nothing.

use agent_history::{
    DEFAULT_TRUNCATION, Durability, JsonSection, ModelRequest, PromptCompiler, RequestSettings,
    ResumeOptions, Session, SessionMeta, StepContext, ThreadId, ToolRegistry, WorldState,
};
use serde_json::json;

/// The world state at `step`: the working directory moves at step 3, the user's rules change at
/// step 5, the open files change at every other step.
fn world_at(step: u64) -> Result<WorldState, agent_history::WorldStateError> {
    let cwd = if step < 3 {
        "/repo"
    } else {
        "/repo/crates/core"
    };
    let rules = if step < 5 {
        "Answer briefly. Run the tests before you say a change is done."
    } else {
        "Answer briefly. Run the tests before you say a change is done. Never push to main."
    };
    let mut state = WorldState::new();
    state.add(JsonSection::new(
        "environment",
        json!({"cwd": cwd, "shell": "bash"}),
    ))?;
    state.add(JsonSection::new("rules", json!(rules)))?;
    state.add(JsonSection::new(
        "open_files",
        json!({"files": [format!("src/step_{}.rs", step / 2)]}),
    ))?;
    Ok(state)
}

fn message(role: &str, kind: &str, text: &str) -> String {
    json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]}).to_string()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir =
        std::env::temp_dir().join(format!("agent-history-world-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("rollout.jsonl");
    let meta = SessionMeta::new(ThreadId::random());
    let mut session = Session::create(&path, meta, DEFAULT_TRUNCATION, Durability::Flush)?;

    let mut tools = ToolRegistry::default();
    let plan = tools.add(json!({"type": "function", "name": "shell",
                                "parameters": {"type": "object"}}))?;
    let compiler = PromptCompiler::new(RequestSettings {
        model: "gpt-5.1-codex".into(),
        ..Default::default()
    })
    .with_base_instructions("You are a coding agent.")
    .with_tools(plan, false);

    println!("step  world-state change      items  body bytes  prefix shared with the step before");
    let mut previous: Option<ModelRequest> = None;
    for step in 0..8u64 {
        let update = session.update_world_state(&world_at(step)?)?;
        let change = match &update.change {
            None => "none".to_owned(),
            Some(change) if change.full => "full snapshot".to_owned(),
            Some(change) => format!("patch of {} B", change.state.to_string().len()),
        };
        session.record_json(&message("user", "input_text", &format!("Do task {step}.")))?;
        let request = compiler.compile(
            session.history(),
            StepContext {
                turn_id: None,
                step_id: step,
            },
        )?;
        let body = request.body()?;
        let reusable = match &previous {
            None => "-".to_owned(),
            Some(before) => {
                let prefix = before.common_prefix(&request)?;
                format!(
                    "{} B ({:.1} %)",
                    prefix.bytes,
                    100.0 * prefix.bytes as f64 / body.len() as f64
                )
            }
        };
        println!(
            "{step:>4}  {change:<22}  {:>5}  {:>10}  {reusable}",
            session.history().len(),
            body.len()
        );
        session.record_json(&message(
            "assistant",
            "output_text",
            &format!("Task {step} is done; the tests pass."),
        ))?;
        previous = Some(request);
    }
    session.flush()?;
    let live = session.history().clone();
    drop(session);

    let mut resumed =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush)?.into_session();
    assert_eq!(
        resumed.history(),
        &live,
        "the file holds the same history and baseline"
    );
    let after = resumed.update_world_state(&world_at(7)?)?;
    println!(
        "resumed {} items; an update with an unchanged world state renders {} items",
        resumed.history().len(),
        after.items.len()
    );
    drop(resumed);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
