//! Resume a rollout or open a snapshot and print its projection or request body.

use std::io::Write as _;
use std::process::ExitCode;

use agent_history::{
    AnthropicRequest, ChatRequest, DEFAULT_ANTHROPIC_MAX_TOKENS, DeveloperRole, DroppedTool,
    ProjectionOptions, PromptCompiler, ReasoningConfig, RequestSettings, ResponseOptions,
    ResumeOptions, ResumeSource, SnapshotOptions, SnapshotTrust, StepContext, Target,
    TargetOptions, TargetReport, ToolPlan, UnknownItems, is_snapshot, open_snapshot, read_tools,
    resume_file,
};
use anyhow::Context as _;

use super::Usage;
use super::args::ProjectArgs;
use super::input::{is_stdin, resume};
use super::output::{collapse, json_line, quiet, report_load, stdout};

/// A status line, left out with `--json` (whose report says the same).
macro_rules! status_text {
    ($json:expr, $($arg:tt)*) => {{
        if !$json {
            status!($($arg)*);
        }
    }};
}

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
        snapshot,
        json,
        pretty,
        target,
        keep_developer,
        max_tokens,
    } = args;
    if max_tokens.is_some() && !(request && target == Target::AnthropicMessages) {
        return Err(Usage("--max-tokens needs --target anthropic --request".to_owned()).into());
    }
    if keep_developer && target != Target::ChatCompletions {
        return Err(Usage("--keep-developer needs --target chat".to_owned()).into());
    }
    let is_snapshot_input = !is_stdin(&rollout) && is_snapshot(&rollout);
    if is_snapshot_input && truncation.is_some() {
        return Err(Usage(format!(
            "--truncation has no effect on a snapshot ({} stores its items truncated already)",
            rollout.display()
        ))
        .into());
    }
    if is_snapshot_input && snapshot.is_some() {
        return Err(Usage(format!(
            "--snapshot needs a rollout, and {} is a snapshot itself",
            rollout.display()
        ))
        .into());
    }
    let truncation = truncation.unwrap_or(ResumeOptions::default().truncation);
    // The machine-readable report, written to stderr at the end with `--json`.
    let mut report = serde_json::Map::new();
    report.insert("type".into(), "report".into());
    report.insert("path".into(), rollout.display().to_string().into());
    // Before the rollout, which can be large: a wrong tools file fails at once.
    let tools = match tools {
        Some(path) => read_tools(path)?,
        None => ToolPlan::empty(),
    };
    let (history, thread_id, recorded) = if is_snapshot_input {
        let options = SnapshotOptions {
            trust: if trusted {
                SnapshotTrust::Own
            } else {
                SnapshotTrust::Untrusted
            },
            ..SnapshotOptions::default()
        };
        let opened = open_snapshot(&rollout, options)?;
        report.insert("input".into(), "snapshot".into());
        report.insert("snapshot".into(), serde_json::to_value(opened.header())?);
        status_text!(
            json,
            "opened snapshot: {} item(s), covering {} rollout line(s)",
            opened.history().len(),
            opened.header().rollout.lines
        );
        let thread_id = opened.state().thread_id;
        let text = opened
            .state()
            .base_instructions
            .as_ref()
            .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok())
            .and_then(|value| value.get("text")?.as_str().map(str::to_owned));
        let recorded = match text {
            Some(text) => Recorded::Text(text),
            None => Recorded::None,
        };
        (opened.into_history(), thread_id, recorded)
    } else {
        let resumed = match &snapshot {
            Some(snapshot) => {
                let options = ResumeOptions::new(truncation).with_snapshot(snapshot);
                let resumed = resume_file(&rollout, &options)?;
                match resumed.source() {
                    ResumeSource::Snapshot { covered } => status_text!(
                        json,
                        "resumed through snapshot {} (fast path): it covers {} line(s); read the {} after it",
                        snapshot.display(),
                        covered.lines,
                        resumed.report().lines.saturating_sub(covered.lines)
                    ),
                    ResumeSource::Fallback(reason) => status_text!(
                        json,
                        "snapshot {} not used ({reason}): read every line",
                        snapshot.display()
                    ),
                    ResumeSource::Rollout | _ => {}
                }
                resumed
            }
            None => resume(&rollout, &ResumeOptions::new(truncation))?,
        };
        report.insert("input".into(), "rollout".into());
        report.insert("source".into(), serde_json::to_value(resumed.source())?);
        report.insert("load".into(), serde_json::to_value(resumed.report())?);
        if !json {
            report_load(&resumed);
        }
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
    // `--pretty`: the JSON is written compact into a buffer, then indented.
    let mut compact = Vec::new();
    let mut target_report: Option<TargetReport> = None;
    let repairs = if request {
        let instructions = match (instructions, recorded) {
            (Some(given), _) => given,
            (None, Recorded::Text(text)) => {
                status_text!(
                    json,
                    "instructions: from session_meta ({} bytes)",
                    text.len()
                );
                text
            }
            (None, Recorded::None) => {
                status_text!(json, "instructions: none (session_meta records none)");
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
        if target == Target::ChatCompletions {
            if store.is_some()
                || include.is_some()
                || settings
                    .reasoning
                    .as_ref()
                    .is_some_and(|r| r.summary.is_some())
            {
                return Err(Usage(
                    "--store, --include and --reasoning-summary have no Chat Completions equivalent"
                        .to_owned(),
                )
                .into());
            }
            let projection = history.project_for(&TargetOptions {
                target,
                projection: options,
                developer_role: developer_role(keep_developer),
            })?;
            let body = ChatRequest {
                model: settings.model.clone(),
                instructions,
                tools: tools.specs().to_vec(),
                tool_choice: tool_choice.unwrap_or(defaults.tool_choice),
                parallel_tool_calls,
                stream: stream.unwrap_or(defaults.stream),
                reasoning_effort: settings.reasoning.and_then(|r| r.effort),
            };
            let converted = if pretty {
                projection.write_chat_request(&body, &mut compact)?
            } else {
                projection
                    .write_chat_request(&body, &mut out)
                    .context("cannot write to stdout")?
            };
            report_dropped_tools(&converted.dropped, "Chat Completions", json, &mut report)?;
            let repairs = projection.report().projection().clone();
            target_report = Some(projection.report().clone());
            repairs
        } else if target == Target::AnthropicMessages {
            if store.is_some() || include.is_some() || settings.reasoning.is_some() {
                return Err(Usage(
                    "--store, --include, --reasoning-effort and --reasoning-summary have no \
                     Anthropic Messages equivalent"
                        .to_owned(),
                )
                .into());
            }
            let projection = history.project_for(&TargetOptions {
                target,
                projection: options,
                ..TargetOptions::default()
            })?;
            let body = AnthropicRequest {
                model: settings.model.clone(),
                max_tokens: max_tokens.unwrap_or(DEFAULT_ANTHROPIC_MAX_TOKENS),
                instructions,
                tools: tools.specs().to_vec(),
                tool_choice: tool_choice.unwrap_or(defaults.tool_choice),
                parallel_tool_calls,
                stream: stream.unwrap_or(defaults.stream),
            };
            let converted = if pretty {
                projection.write_anthropic_request(&body, &mut compact)?
            } else {
                projection
                    .write_anthropic_request(&body, &mut out)
                    .context("cannot write to stdout")?
            };
            report_dropped_tools(&converted.dropped, "Anthropic Messages", json, &mut report)?;
            let repairs = projection.report().projection().clone();
            target_report = Some(projection.report().clone());
            repairs
        } else {
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
            if pretty {
                compiled.write_body(&mut compact)?;
            } else {
                compiled
                    .write_body(&mut out)
                    .context("cannot write to stdout")?;
            }
            compiled.prompt.input.report().clone()
        }
    } else if target != Target::Responses {
        let projection = history.project_for(&TargetOptions {
            target,
            projection: options,
            developer_role: developer_role(keep_developer),
        })?;
        if pretty {
            projection.write_json(&mut compact)?;
        } else {
            projection
                .write_json(&mut out)
                .context("cannot write to stdout")?;
        }
        target_report = Some(projection.report().clone());
        projection.report().projection().clone()
    } else {
        let projection = history.project(&options)?;
        if pretty {
            projection.write_json_array(&mut compact)?;
        } else {
            projection
                .write_json_array(&mut out)
                .context("cannot write to stdout")?;
        }
        projection.report().clone()
    };
    if pretty {
        let value: serde_json::Value = serde_json::from_slice(&compact)?;
        serde_json::to_writer_pretty(&mut out, &value).context("cannot write to stdout")?;
    }
    writeln!(out)
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
    if json {
        report.insert("repairs".into(), serde_json::to_value(&repairs)?);
        if let Some(target_report) = &target_report {
            report.insert("target".into(), serde_json::to_value(target)?);
            report.insert(
                "target_repairs".into(),
                serde_json::to_value(target_report)?,
            );
        }
        if !quiet() {
            let mut err = std::io::stderr().lock();
            json_line(&mut err, &report)?;
        }
    } else if repairs.is_empty() {
        status!("repairs: none");
    } else {
        status!("repairs: {}", repairs.len());
        // Grouped by what was repaired and on which kind of item: a long session can need
        // thousands of the same repair, shown as one line with a count.
        let entries: Vec<(String, String, String)> = repairs
            .repairs()
            .iter()
            .map(|repair| {
                let kind = serde_json::to_value(repair)
                    .ok()
                    .and_then(|value| value["kind"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                (
                    format!("{kind} ({})", repair.at.item_kind),
                    format!("item {}", repair.at.position),
                    repair.to_string(),
                )
            })
            .collect();
        for text in collapse(&entries) {
            status!("  {text}");
        }
    }
    if let (false, Some(target_report)) = (json, &target_report) {
        if target_report.repairs().is_empty() {
            status!("{target} conversion: nothing lost or moved");
        } else {
            status!("{target} conversion: {}", target_report.repairs().len());
            let entries: Vec<(String, String, String)> = target_report
                .repairs()
                .iter()
                .map(|repair| {
                    (
                        format!("{} ({})", repair.kind.name(), repair.at.item_kind),
                        format!("item {}", repair.at.position),
                        format!("{}: {}", repair.at, repair.kind.name()),
                    )
                })
                .collect();
            for text in collapse(&entries) {
                status!("  {text}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The developer role of `--keep-developer`.
fn developer_role(keep: bool) -> DeveloperRole {
    if keep {
        DeveloperRole::Developer
    } else {
        DeveloperRole::System
    }
}

/// The base instructions the input of `project` records.
enum Recorded {
    /// The rollout's `session_meta` records these.
    Text(String),
    /// The rollout's `session_meta` records none.
    None,
}

/// Says which tool specs a request for `api` left out (on stderr unless `json`) and lists them
/// in the report's `dropped_tools`.
fn report_dropped_tools(
    dropped: &[DroppedTool],
    api: &str,
    json: bool,
    report: &mut serde_json::Map<String, serde_json::Value>,
) -> anyhow::Result<()> {
    for tool in dropped {
        status_text!(
            json,
            "tool {} ({}) left out: {api} has no equivalent or refuses it",
            tool.name.as_deref().unwrap_or("without a name"),
            if tool.tool_type.is_empty() {
                "not an object"
            } else {
                &tool.tool_type
            }
        );
    }
    report.insert("dropped_tools".into(), serde_json::to_value(dropped)?);
    Ok(())
}
