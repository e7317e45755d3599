//! Resume a rollout or open a snapshot and print its projection or request body.

use std::io::Write as _;
use std::process::ExitCode;

use agent_history::{
    DeveloperRole, DroppedTool, History, ProjectionOptions, PromptCompiler, ReasoningConfig,
    RepairReport, RequestSettings, ResponseOptions, ResumeOptions, ResumeSource, ResumedTranscript,
    SessionFormat, SnapshotOptions, SnapshotTrust, StepContext, Target, TargetOptions,
    TargetReport, ThreadId, ToolPlan, UnknownItems, is_snapshot, open_snapshot, read_tools,
};
use anyhow::Context as _;
use serde_json::{Map, Value};

use super::Usage;
use super::args::ProjectArgs;
use super::input::{
    format_of, is_stdin, no_truncation, progress_bar, read_transcript, resume_rollout, source_of,
};
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
pub fn run(mut args: ProjectArgs) -> anyhow::Result<ExitCode> {
    let source = source_of(&args.rollout);
    let snapshot_input = is_snapshot_path(&args.rollout);
    let transcript = !snapshot_input && format_of(&source) == SessionFormat::ClaudeCode;
    // The source's own API unless `--target` names another; a snapshot's source is known once
    // it is open.
    if !snapshot_input {
        args.target.get_or_insert(own_target(transcript));
        check_flags(&args, transcript)?;
    }
    // The machine-readable report, written to stderr at the end with `--json`.
    let mut report = Map::new();
    report.insert("type".into(), "report".into());
    report.insert("path".into(), args.rollout.display().to_string().into());
    // Before the rollout, which can be large: a wrong tools file fails at once.
    let tools = match &args.tools {
        Some(path) => read_tools(path)?,
        None => ToolPlan::empty(),
    };
    let mut input = load(&args, transcript, &mut report)?;
    if snapshot_input {
        args.target
            .get_or_insert(own_target(input.transcript.is_some()));
        check_flags(&args, input.transcript.is_some())?;
    }
    if let Some(resumed) = &input.transcript {
        let (history, left_out) = resumed.history_for(args.target())?;
        input.history = history;
        report.insert("items_left_out".into(), left_out.into());
        if left_out > 0 {
            status_text!(
                args.json,
                "left out {left_out} item(s) the {} API takes none of: thinking, and blocks it has no form for",
                args.target()
            );
        }
    }
    if args.request && args.model.is_none() && input.model.is_none() && input.transcript.is_some() {
        return Err(Usage(format!(
            "--request needs --model: {} names no model",
            args.rollout.display()
        ))
        .into());
    }
    let target = target_options(&args);
    let mut out = stdout();
    // `--pretty`: the JSON is written compact into a buffer, then indented.
    let mut compact = Vec::new();
    let projected = {
        let sink: &mut dyn std::io::Write = if args.pretty { &mut compact } else { &mut out };
        if args.request {
            write_request(&args, input, tools, &target, &mut report, sink)?
        } else {
            write_input(&input.history, &target, sink)?
        }
    };
    if args.pretty {
        let value: Value = serde_json::from_slice(&compact)?;
        serde_json::to_writer_pretty(&mut out, &value).context("cannot write to stdout")?;
    }
    writeln!(out)
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
    report_repairs(&args, &projected, report)?;
    Ok(ExitCode::SUCCESS)
}

/// The API a session's own agent sends it to: Anthropic Messages for a Claude Code transcript,
/// Responses for a Codex rollout.
fn own_target(transcript: bool) -> Target {
    if transcript {
        Target::AnthropicMessages
    } else {
        Target::Responses
    }
}

/// The flags that only make sense together.
fn check_flags(args: &ProjectArgs, transcript: bool) -> anyhow::Result<()> {
    if args.request && args.model.is_none() && !transcript {
        return Err(Usage(format!(
            "--request needs --model: {} names no model",
            args.rollout.display()
        ))
        .into());
    }
    if transcript && args.truncation.is_some() {
        return Err(no_truncation(&args.rollout));
    }
    // A transcript is hashed before it is read: a stream (standard input, a FIFO) could not be
    // read again.
    let stream = is_stdin(&args.rollout)
        || std::fs::metadata(&args.rollout).is_ok_and(|metadata| !metadata.is_file());
    if transcript && args.snapshot.is_some() && stream {
        return Err(Usage(
            "--snapshot needs a transcript file: a transcript's snapshot stands for a whole \
             file, and a stream cannot be checked against it and then read"
                .to_owned(),
        )
        .into());
    }
    if args.max_tokens.is_some() && !(args.request && args.target() == Target::AnthropicMessages) {
        return Err(Usage("--max-tokens needs --target anthropic --request".to_owned()).into());
    }
    if args.keep_developer && args.target() != Target::ChatCompletions {
        return Err(Usage("--keep-developer needs --target chat".to_owned()).into());
    }
    let no_equivalent = match args.target() {
        Target::Responses => None,
        Target::ChatCompletions => (args.store.is_some()
            || args.include.is_some()
            || args.reasoning_summary.is_some())
        .then_some(
            "--store, --include and --reasoning-summary have no Chat Completions equivalent",
        ),
        Target::AnthropicMessages => (args.store.is_some()
            || args.include.is_some()
            || args.reasoning_effort.is_some()
            || args.reasoning_summary.is_some())
        .then_some(
            "--store, --include, --reasoning-effort and --reasoning-summary have no \
             Anthropic Messages equivalent",
        ),
    };
    if let Some(message) = no_equivalent.filter(|_| args.request) {
        return Err(Usage(message.to_owned()).into());
    }
    if is_snapshot_path(&args.rollout) {
        if args.truncation.is_some() {
            return Err(Usage(format!(
                "--truncation has no effect on a snapshot ({} stores its items truncated already)",
                args.rollout.display()
            ))
            .into());
        }
        if args.snapshot.is_some() {
            return Err(Usage(format!(
                "--snapshot needs a rollout, and {} is a snapshot itself",
                args.rollout.display()
            ))
            .into());
        }
    }
    Ok(())
}

/// What `project` reads: the history, its thread, the base instructions it records, and the
/// model it names (a transcript's).
struct Input {
    history: History,
    thread_id: Option<ThreadId>,
    recorded: Recorded,
    model: Option<String>,
    /// A Claude Code transcript's conversation, read or from a snapshot (the history above is
    /// its history for the target, once the target is known).
    transcript: Option<Box<ResumedTranscript>>,
}

/// The base instructions the input of `project` records.
enum Recorded {
    /// The rollout's `session_meta` records these.
    Text(String),
    /// The rollout's `session_meta` records none.
    None,
    /// The source keeps no instructions (a Claude Code transcript).
    NotKept,
}

/// Opens the snapshot, reads the transcript (`transcript`: told once, by `run`) or resumes the
/// rollout `args` names, saying how in `report`.
fn load(
    args: &ProjectArgs,
    transcript: bool,
    report: &mut Map<String, Value>,
) -> anyhow::Result<Input> {
    if is_snapshot_path(&args.rollout) {
        load_snapshot(args, report)
    } else if transcript {
        load_transcript(args, report)
    } else {
        load_rollout(args, report)
    }
}

/// Whether `path` names a snapshot (standard input never does).
fn is_snapshot_path(path: &std::path::Path) -> bool {
    !is_stdin(path) && is_snapshot(path)
}

/// Reads the Claude Code transcript `args.rollout` (through `args.snapshot` when given) and the
/// conversation a resume of it sends.
fn load_transcript(args: &ProjectArgs, report: &mut Map<String, Value>) -> anyhow::Result<Input> {
    let source = source_of(&args.rollout);
    let bar = progress_bar(0, quiet());
    let read = read_transcript(&source, args.snapshot.as_deref(), &bar);
    bar.finish_and_clear();
    let resumed = read?;
    report.insert("input".into(), "claude-code".into());
    report.insert("source".into(), serde_json::to_value(resumed.source())?);
    if let Some(snapshot) = &args.snapshot {
        match resumed.source() {
            ResumeSource::Snapshot { covered } => status_text!(
                args.json,
                "resumed through snapshot {} (fast path): it stands for the transcript's {} line(s)",
                snapshot.display(),
                covered.lines
            ),
            ResumeSource::Fallback(reason) => status_text!(
                args.json,
                "snapshot {} not used ({reason}): read the transcript",
                snapshot.display()
            ),
            ResumeSource::Rollout | _ => {}
        }
    }
    transcript_input(args, resumed, report)
}

/// The input of a transcript's conversation, its reports in `report`.
fn transcript_input(
    args: &ProjectArgs,
    resumed: ResumedTranscript,
    report: &mut Map<String, Value>,
) -> anyhow::Result<Input> {
    report.insert("transcript".into(), serde_json::to_value(resumed.report())?);
    report.insert(
        "conversation".into(),
        serde_json::to_value(resumed.conversation())?,
    );
    if !args.json {
        let chosen = resumed.conversation();
        status!(
            "read transcript: {} line(s), {} record(s) sent as {} item(s); {} skipped, {} rescue(s), {} branch(es) not taken{}",
            resumed.report().lines,
            resumed.sent().len(),
            resumed.history().len(),
            resumed.report().skip_counts.malformed(),
            chosen.rescues.len(),
            chosen.branches.len(),
            if chosen.cut.is_some() {
                ", after a compaction"
            } else {
                ""
            }
        );
    }
    let thread_id = resumed
        .session_id()
        .and_then(|id| id.parse::<ThreadId>().ok());
    Ok(Input {
        history: resumed.history().clone(),
        thread_id,
        recorded: Recorded::NotKept,
        model: resumed.model().map(str::to_owned),
        transcript: Some(Box::new(resumed)),
    })
}

/// Opens the snapshot `args.rollout`.
fn load_snapshot(args: &ProjectArgs, report: &mut Map<String, Value>) -> anyhow::Result<Input> {
    let options = SnapshotOptions {
        trust: if args.trusted {
            SnapshotTrust::Own
        } else {
            SnapshotTrust::Untrusted
        },
        ..SnapshotOptions::default()
    };
    let opened = open_snapshot(&args.rollout, options)?;
    report.insert("input".into(), "snapshot".into());
    report.insert("snapshot".into(), serde_json::to_value(opened.header())?);
    if opened.is_transcript() {
        status_text!(
            args.json,
            "opened snapshot of a Claude Code transcript: {} item(s), covering {} line(s)",
            opened.history().len(),
            opened.header().rollout.lines
        );
        let resumed = ResumedTranscript::from_snapshot(opened, &args.rollout)?;
        return transcript_input(args, resumed, report);
    }
    status_text!(
        args.json,
        "opened snapshot: {} item(s), covering {} rollout line(s)",
        opened.history().len(),
        opened.header().rollout.lines
    );
    let thread_id = opened.state().thread_id;
    let text = opened
        .state()
        .base_instructions
        .as_ref()
        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
        .and_then(|value| value.get("text")?.as_str().map(str::to_owned));
    let recorded = match text {
        Some(text) => Recorded::Text(text),
        None => Recorded::None,
    };
    Ok(Input {
        history: opened.into_history(),
        thread_id,
        recorded,
        model: None,
        transcript: None,
    })
}

/// Resumes the rollout `args.rollout`, through `args.snapshot` when given.
fn load_rollout(args: &ProjectArgs, report: &mut Map<String, Value>) -> anyhow::Result<Input> {
    let truncation = args
        .truncation
        .unwrap_or(ResumeOptions::default().truncation);
    let resumed = match &args.snapshot {
        Some(snapshot) => {
            let options = super::input::resume_options(Some(truncation)).with_snapshot(snapshot);
            let resumed = resume_rollout(&args.rollout, &options)?;
            match resumed.source() {
                ResumeSource::Snapshot { covered } => status_text!(
                    args.json,
                    "resumed through snapshot {} (fast path): it covers {} line(s); read the {} after it",
                    snapshot.display(),
                    covered.lines,
                    resumed.report().lines.saturating_sub(covered.lines)
                ),
                ResumeSource::Fallback(reason) => status_text!(
                    args.json,
                    "snapshot {} not used ({reason}): read every line",
                    snapshot.display()
                ),
                ResumeSource::Rollout | _ => {}
            }
            resumed
        }
        None => resume_rollout(
            &args.rollout,
            &super::input::resume_options(Some(truncation)),
        )?,
    };
    report.insert("input".into(), "rollout".into());
    report.insert("source".into(), serde_json::to_value(resumed.source())?);
    report.insert("load".into(), serde_json::to_value(resumed.report())?);
    if !args.json {
        report_load(&resumed);
    }
    let thread_id = Some(resumed.thread_id());
    let recorded = match &resumed.report().base_instructions {
        Some(recorded) => Recorded::Text(recorded.text.clone()),
        None => Recorded::None,
    };
    Ok(Input {
        history: resumed.into_history(),
        thread_id,
        recorded,
        model: None,
        transcript: None,
    })
}

/// The target and projection options the flags ask for.
fn target_options(args: &ProjectArgs) -> TargetOptions {
    let mut projection = ProjectionOptions::for_modalities(args.modalities);
    if args.strict {
        projection = projection.strict();
    }
    if args.send_unknown {
        projection.unknown_items = UnknownItems::Send;
    }
    TargetOptions {
        target: args.target(),
        projection,
        developer_role: if args.keep_developer {
            DeveloperRole::Developer
        } else {
            DeveloperRole::System
        },
    }
}

/// What a projection repaired: the Responses projection's report, and the target's (for a
/// target other than Responses).
struct Projected {
    repairs: RepairReport,
    target: Option<TargetReport>,
}

/// Writes the input array for `target`.
fn write_input(
    history: &History,
    target: &TargetOptions,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<Projected> {
    let projection = history.project_for(target)?;
    projection
        .write_json(out)
        .context("cannot write to stdout")?;
    Ok(Projected {
        repairs: projection.report().projection().clone(),
        target: (target.target != Target::Responses).then(|| projection.report().clone()),
    })
}

/// Writes the request body for `target`: the session's base instructions (or the flag's),
/// Codex's settings unless the flags say otherwise, the tools of `tools`.
fn write_request(
    args: &ProjectArgs,
    input: Input,
    tools: ToolPlan,
    target: &TargetOptions,
    report: &mut Map<String, Value>,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<Projected> {
    let instructions = instructions(args, input.recorded);
    let tool_items = input.history.iter().any(|entry| entry.call_id().is_some());
    if tool_items && tools.specs().is_empty() && target.target == Target::AnthropicMessages {
        // The validator's `anthropic_missing_tools`: said before the body, not after it.
        status_text!(
            args.json,
            "tools: none given, and the history holds tool calls: pass the session's tools with \
             --tools (Anthropic is said to refuse tool blocks without them)"
        );
    }
    let reasoning =
        (args.reasoning_effort.is_some() || args.reasoning_summary.is_some()).then(|| {
            ReasoningConfig {
                effort: args.reasoning_effort.clone(),
                summary: args.reasoning_summary.clone(),
            }
        });
    let settings = RequestSettings {
        model: args.model.clone().or(input.model).unwrap_or_default(),
        reasoning,
        // Only when asked for (the library's default); bare, the flag means the thread id, as
        // Codex keys the prompt cache by thread. The other APIs leave it out, and stderr says so.
        prompt_cache_key: match args.prompt_cache_key.as_deref() {
            None => None,
            Some("") => input.thread_id.map(|id| id.to_string()),
            Some(key) => Some(key.to_owned()),
        },
        max_output_tokens: args.max_tokens,
        ..RequestSettings::default()
    };
    let defaults = ResponseOptions::default();
    let response = ResponseOptions {
        tool_choice: args.tool_choice.clone().unwrap_or(defaults.tool_choice),
        store: args.store.unwrap_or(defaults.store),
        stream: args.stream.unwrap_or(defaults.stream),
        include: args.include.as_ref().map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
                .collect()
        }),
    };
    let request = PromptCompiler::new(settings)
        .with_base_instructions(instructions)
        .with_tools(tools, args.parallel_tool_calls)
        .with_response_options(response)
        .compile_for(&input.history, target, StepContext::default())?;
    request.write_body(out).context("cannot write to stdout")?;
    let api = match target.target {
        Target::Responses => None,
        Target::ChatCompletions => Some("Chat Completions"),
        Target::AnthropicMessages => Some("Anthropic Messages"),
    };
    if let Some(api) = api {
        report_dropped_tools(request.dropped_tools(), api, args.json, report)?;
        // Settings given that the body has no field for (`prompt_cache_key`, …).
        for setting in request.left_out() {
            status_text!(args.json, "{setting} left out: {api} has no such field");
        }
        report.insert("left_out".into(), serde_json::to_value(request.left_out())?);
    }
    Ok(Projected {
        repairs: request.report().projection().clone(),
        target: api.map(|_| request.report().clone()),
    })
}

/// The base instructions of the request: the flag's, else those the input records.
fn instructions(args: &ProjectArgs, recorded: Recorded) -> String {
    match (&args.instructions, recorded) {
        (Some(given), _) => given.clone(),
        (None, Recorded::Text(text)) => {
            status_text!(
                args.json,
                "instructions: from session_meta ({} bytes)",
                text.len()
            );
            text
        }
        (None, Recorded::None) => {
            status_text!(args.json, "instructions: none (session_meta records none)");
            String::new()
        }
        (None, Recorded::NotKept) => {
            status_text!(
                args.json,
                "instructions: none (a Claude Code transcript keeps no system prompt: pass \
                 --instructions)"
            );
            String::new()
        }
    }
}

/// Reports the repairs: in the `--json` report, or as grouped status lines.
fn report_repairs(
    args: &ProjectArgs,
    projected: &Projected,
    mut report: Map<String, Value>,
) -> anyhow::Result<()> {
    let Projected { repairs, target } = projected;
    if args.json {
        report.insert("repairs".into(), serde_json::to_value(repairs)?);
        if let Some(target_report) = target {
            report.insert("target".into(), serde_json::to_value(args.target())?);
            report.insert(
                "target_repairs".into(),
                serde_json::to_value(target_report)?,
            );
        }
        if !quiet() {
            let mut err = std::io::stderr().lock();
            json_line(&mut err, &report)?;
        }
        return Ok(());
    }
    if repairs.is_empty() {
        status!("repairs: none");
    } else {
        status!("repairs: {}", repairs.len());
        // Grouped by what was repaired and on which kind of item: a long session can need
        // thousands of the same repair, shown as one line with a count.
        let entries: Vec<(String, String, String)> = repairs
            .repairs()
            .iter()
            .map(|repair| {
                (
                    format!("{} ({})", repair.kind.name(), repair.at.item_kind),
                    format!("item {}", repair.at.position),
                    repair.to_string(),
                )
            })
            .collect();
        for text in collapse(&entries) {
            status!("  {text}");
        }
    }
    if let Some(target_report) = target {
        report_target_repairs(args.target(), target_report);
    }
    Ok(())
}

/// The target's repairs as grouped status lines.
fn report_target_repairs(target: Target, report: &TargetReport) {
    if report.repairs().is_empty() {
        status!("{target} conversion: nothing lost or moved");
        return;
    }
    status!("{target} conversion: {}", report.repairs().len());
    let entries: Vec<(String, String, String)> = report
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

/// Says which tool specs a request for `api` left out (on stderr unless `json`) and lists them
/// in the report's `dropped_tools`.
fn report_dropped_tools(
    dropped: &[DroppedTool],
    api: &str,
    json: bool,
    report: &mut Map<String, Value>,
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
