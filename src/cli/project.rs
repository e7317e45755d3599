//! Resume a rollout or open a snapshot and print its projection or request body.

use std::io::Write as _;
use std::process::ExitCode;

use agent_history::{
    ProjectionOptions, PromptCompiler, ReasoningConfig, RequestSettings, ResponseOptions,
    ResumeOptions, SnapshotOptions, SnapshotTrust, StepContext, ToolPlan, UnknownItems,
    is_snapshot, open_snapshot, read_tools,
};
use anyhow::Context as _;

use super::args::ProjectArgs;
use super::input::{report_load, resume};
use super::output::stdout;

/// Runs `project`.
pub fn run(args: ProjectArgs) -> anyhow::Result<ExitCode> {
    let ProjectArgs {
        rollout,
        trusted,
        modalities,
        strict,
        send_unknown,
        truncation,
        request,
        model,
        instructions,
        tools,
        parallel_tool_calls,
        tool_choice,
        store,
        stream,
        reasoning_effort,
        reasoning_summary,
        include,
    } = args;
    // Before the rollout, which can be large: a wrong tools file fails at once.
    let tools = match tools {
        Some(path) => read_tools(path)?,
        None => ToolPlan::empty(),
    };
    let (history, thread_id, recorded) = if is_snapshot(&rollout) {
        let options = SnapshotOptions {
            trust: if trusted {
                SnapshotTrust::Own
            } else {
                SnapshotTrust::Untrusted
            },
            ..SnapshotOptions::default()
        };
        let opened = open_snapshot(&rollout, options)?;
        status!(
            "opened snapshot: {} item(s), covering {} rollout line(s)",
            opened.history().len(),
            opened.header().rollout.lines
        );
        let thread_id = opened.state().thread_id;
        // Version 2 keeps the session's base instructions; version 1 did not.
        let text = opened
            .state()
            .base_instructions
            .as_ref()
            .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok())
            .and_then(|value| value.get("text")?.as_str().map(str::to_owned));
        let recorded = match text {
            Some(text) => Recorded::Text(text),
            None if opened.header().format_version >= 2 => Recorded::None,
            None => Recorded::NotInSnapshot,
        };
        (opened.into_history(), thread_id, recorded)
    } else {
        let resumed = resume(&rollout, &ResumeOptions::new(truncation))?;
        report_load(&resumed);
        let thread_id = resumed.thread_id();
        let recorded = match &resumed.report().base_instructions {
            Some(recorded) => Recorded::Text(recorded.text.clone()),
            None => Recorded::None,
        };
        (resumed.into_history(), Some(thread_id), recorded)
    };
    let mut options = ProjectionOptions::for_modalities(modalities);
    if strict {
        options = options.strict();
    }
    if send_unknown {
        options.unknown_items = UnknownItems::Send;
    }
    let mut out = stdout();
    let repairs = if request {
        let instructions = match (instructions, recorded) {
            (Some(given), _) => given,
            (None, Recorded::Text(text)) => {
                status!("instructions: from session_meta ({} bytes)", text.len());
                text
            }
            (None, Recorded::None) => {
                status!("instructions: none (session_meta records none)");
                String::new()
            }
            (None, Recorded::NotInSnapshot) => {
                status!(
                    "instructions: none (a version 1 snapshot does not keep the session's \
                     base instructions; pass --instructions or project the rollout)"
                );
                String::new()
            }
        };
        let reasoning = (reasoning_effort.is_some() || reasoning_summary.is_some()).then_some(
            ReasoningConfig {
                effort: reasoning_effort,
                summary: reasoning_summary,
            },
        );
        let settings = RequestSettings {
            model: model.unwrap_or_default(),
            reasoning,
            prompt_cache_key: thread_id.map(|id| id.to_string()),
            ..RequestSettings::default()
        };
        let defaults = ResponseOptions::default();
        let response = ResponseOptions {
            tool_choice: tool_choice.unwrap_or(defaults.tool_choice),
            store: store.unwrap_or(defaults.store),
            stream: stream.unwrap_or(defaults.stream),
            include: include.map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned)
                    .collect()
            }),
        };
        let compiled = PromptCompiler::new(settings)
            .with_projection(options)
            .with_base_instructions(instructions)
            .with_tools(tools, parallel_tool_calls)
            .with_response_options(response)
            .compile(&history, StepContext::default())?;
        compiled
            .write_body(&mut out)
            .context("cannot write to stdout")?;
        compiled.prompt.input.report().clone()
    } else {
        let projection = history.project(&options)?;
        projection
            .write_json_array(&mut out)
            .context("cannot write to stdout")?;
        projection.report().clone()
    };
    writeln!(out)
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
    if repairs.is_empty() {
        status!("repairs: none");
    } else {
        status!("repairs: {}", repairs.len());
        for repair in repairs.repairs() {
            status!("  {repair}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
/// The base instructions the input of `project` records.
enum Recorded {
    /// The rollout's `session_meta` records these.
    Text(String),
    /// The rollout's `session_meta` records none.
    None,
    /// The input is a version 1 snapshot, which does not keep them.
    NotInSnapshot,
}
