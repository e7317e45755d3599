//! The `agent-history` command.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use agent_history::rollout::{self, Resumed};
use agent_history::{
    Modalities, ProjectionOptions, PromptCompiler, RequestSettings, StepContext, TruncationPolicy,
    UnknownItems,
};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "agent-history",
    version,
    about = "Persistent, immutable conversation histories for LLM agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Resume a Codex rollout and print the repaired prompt input (or a whole request body).
    ///
    /// The projected input goes to stdout as one JSON array; the repair report and the count of
    /// skipped lines go to stderr. The rollout file is only read.
    Project {
        /// The rollout JSONL file.
        rollout: PathBuf,
        /// Input modalities of the model: a comma-separated list of text, image, audio.
        #[arg(long, default_value = "text,image", value_parser = parse_modalities)]
        modalities: Modalities,
        /// Fail on the protocol violations Codex treats as bugs instead of repairing them.
        #[arg(long)]
        strict: bool,
        /// Send items of unknown type instead of holding them back.
        #[arg(long)]
        send_unknown: bool,
        /// Record-time truncation of tool outputs, as `tokens:N` or `bytes:N`.
        #[arg(long, default_value = "tokens:10000", value_parser = parse_truncation)]
        truncation: TruncationPolicy,
        /// Print the whole Responses API request body instead of the input array.
        #[arg(long, requires = "model")]
        request: bool,
        /// The model slug of the request body.
        #[arg(long)]
        model: Option<String>,
        /// Base instructions of the request body.
        #[arg(long, default_value = "")]
        instructions: String,
    },
}

fn parse_modalities(text: &str) -> Result<Modalities, String> {
    text.parse().map_err(|error| format!("{error}"))
}

fn parse_truncation(text: &str) -> Result<TruncationPolicy, String> {
    let (mode, limit) = text
        .split_once(':')
        .ok_or_else(|| format!("expected tokens:N or bytes:N, got `{text}`"))?;
    let limit: usize = limit
        .parse()
        .map_err(|_| format!("`{limit}` is not a whole number"))?;
    match mode {
        "tokens" => Ok(TruncationPolicy::Tokens(limit)),
        "bytes" => Ok(TruncationPolicy::Bytes(limit)),
        _ => Err(format!(
            "unknown truncation mode `{mode}` (tokens or bytes)"
        )),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("agent-history: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Project {
            rollout,
            modalities,
            strict,
            send_unknown,
            truncation,
            request,
            model,
            instructions,
        } => {
            let resumed = rollout::resume_file(&rollout, truncation).map_err(|e| e.to_string())?;
            report_load(&resumed);
            let mut options = ProjectionOptions::for_modalities(modalities);
            if strict {
                options = options.strict();
            }
            if send_unknown {
                options.unknown_items = UnknownItems::Send;
            }
            let stdout = io::stdout();
            let mut out = BufWriter::new(stdout.lock());
            let repairs = if request {
                let settings = RequestSettings {
                    model: model.unwrap_or_default(),
                    prompt_cache_key: resumed.thread_id.clone().filter(|id| !id.is_empty()),
                    ..RequestSettings::default()
                };
                let compiled = PromptCompiler::new(settings)
                    .with_projection(options)
                    .with_base_instructions(instructions)
                    .compile(&resumed.history, StepContext::default())
                    .map_err(|e| e.to_string())?;
                compiled.write_body(&mut out).map_err(|e| e.to_string())?;
                compiled.prompt.input.report().clone()
            } else {
                let projection = resumed
                    .history
                    .project(&options)
                    .map_err(|e| e.to_string())?;
                projection
                    .write_json_array(&mut out)
                    .map_err(|e| format!("cannot write to stdout: {e}"))?;
                projection.report().clone()
            };
            writeln!(out)
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write to stdout: {e}"))?;
            if repairs.is_empty() {
                eprintln!("repairs: none");
            } else {
                eprintln!("repairs: {}", repairs.len());
                for repair in repairs.repairs() {
                    eprintln!("  {repair}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn report_load(resumed: &Resumed) {
    let malformed: Vec<_> = resumed.malformed().collect();
    let blank = resumed.skipped.len() - malformed.len();
    eprintln!(
        "read {} line(s): {} item(s) in history, {} skipped ({} blank, {} malformed{})",
        resumed.lines,
        resumed.history.len(),
        resumed.skipped.len(),
        blank,
        malformed.len(),
        if resumed.torn_tail {
            ", torn last line"
        } else {
            ""
        }
    );
    for line in malformed {
        eprintln!("  skipped {line}");
    }
}
