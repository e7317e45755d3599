//! `append`: the complete items of a recorded event stream appended to a rollout.

use std::fs::File;
use std::io::{self, Read};
use std::process::ExitCode;

use agent_history::{
    AnthropicAccumulator, ChatAccumulator, Durability, ResponsesAccumulator, Session, StreamEnd,
    StreamSummary, Target, Update,
};
use anyhow::Context as _;
use serde::Serialize;

use super::args::AppendArgs;
use super::input::{STDIN_LABEL, is_stdin};
use super::output::{self, json_line, stdout};

/// The report of `append --json`.
#[derive(Serialize)]
struct Report<'a> {
    r#type: &'static str,
    rollout: &'a str,
    stream: &'a str,
    format: Target,
    #[serde(flatten)]
    summary: &'a StreamSummary,
    /// The bad input that ended the stream, if any.
    error: Option<String>,
}

/// One of the accumulators, chosen by `--format`.
enum Accumulator {
    Responses(ResponsesAccumulator),
    Chat(ChatAccumulator),
    Anthropic(AnthropicAccumulator),
}

impl Accumulator {
    fn feed(&mut self, bytes: &[u8], session: &mut Session) -> Result<(), agent_history::Error> {
        let ignore = |_: Update<'_>| {};
        match self {
            Accumulator::Responses(acc) => acc.feed(bytes, session, ignore),
            Accumulator::Chat(acc) => acc.feed(bytes, session, ignore),
            Accumulator::Anthropic(acc) => acc.feed(bytes, session, ignore),
        }
    }

    fn finish(&mut self, session: &mut Session) -> Result<StreamSummary, agent_history::Error> {
        match self {
            Accumulator::Responses(acc) => acc.finish(session),
            Accumulator::Chat(acc) => acc.finish(session),
            Accumulator::Anthropic(acc) => acc.finish(session),
        }
    }
}

/// Runs `append`.
pub fn run(args: AppendArgs) -> anyhow::Result<ExitCode> {
    let AppendArgs {
        rollout,
        stream,
        format,
        json,
        strict,
    } = args;
    // The events first: a stream that cannot be opened leaves the rollout untouched.
    let (mut events, stream_label): (Box<dyn Read>, String) = if is_stdin(&stream) {
        (Box::new(io::stdin().lock()), STDIN_LABEL.to_owned())
    } else {
        let file = File::open(&stream)
            .with_context(|| format!("cannot open the event stream {}", stream.display()))?;
        (Box::new(file), stream.display().to_string())
    };
    super::input::rollouts_only(&super::input::source_of(&rollout))?;
    let resumed = Session::resume(
        &rollout,
        &super::input::resume_options(None),
        Durability::SyncData,
    )
    .with_context(|| format!("cannot append to {}", rollout.display()))?;
    let mut session = resumed.into_session();
    let mut accumulator = match format {
        Target::Responses => Accumulator::Responses(ResponsesAccumulator::new()),
        Target::ChatCompletions => Accumulator::Chat(ChatAccumulator::new()),
        Target::AnthropicMessages => Accumulator::Anthropic(AnthropicAccumulator::new()),
    };
    let mut buffer = vec![0; 64 * 1024];
    let mut failure: Option<anyhow::Error> = None;
    loop {
        let read = match events.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                failure = Some(
                    anyhow::Error::new(error)
                        .context(format!("cannot read the event stream {stream_label}")),
                );
                break;
            }
        };
        if let Err(error) = accumulator.feed(&buffer[..read], &mut session) {
            failure =
                Some(anyhow::Error::new(error).context(format!("bad event stream {stream_label}")));
            break;
        }
    }
    // Ends the stream: what is complete is recorded, what is open is dropped and reported.
    let summary = accumulator
        .finish(&mut session)
        .with_context(|| format!("cannot append to {}", rollout.display()))?;
    session
        .flush()
        .with_context(|| format!("cannot append to {}", rollout.display()))?;
    drop(session);
    let rollout_label = rollout.display().to_string();
    let mut out = stdout();
    if json {
        let report = Report {
            r#type: "append",
            rollout: &rollout_label,
            stream: &stream_label,
            format,
            summary: &summary,
            error: failure.as_ref().map(|error| format!("{error:#}")),
        };
        json_line(&mut out, &report)?;
    } else if !output::quiet() {
        for line in text(&summary, &rollout_label) {
            output::line(&mut out, line)?;
        }
    }
    output::finish(out)?;
    if let Some(error) = failure {
        return Err(error);
    }
    let clean = summary.dropped.is_empty() && summary.end == StreamEnd::Completed;
    Ok(ExitCode::from(if strict && !clean {
        output::FINDINGS
    } else {
        output::SUCCESS
    }))
}

/// The report as text lines.
fn text(summary: &StreamSummary, rollout: &str) -> Vec<String> {
    let end = match &summary.end {
        StreamEnd::Completed => "the response completed".to_owned(),
        StreamEnd::Incomplete { reason } => format!(
            "the response ended incomplete ({})",
            reason.as_deref().unwrap_or("no reason given")
        ),
        StreamEnd::Failed { code, message } => format!(
            "the response failed ({}: {})",
            code.as_deref().unwrap_or("no code"),
            message.as_deref().unwrap_or("no message")
        ),
        StreamEnd::Aborted => "the stream was cancelled".to_owned(),
        StreamEnd::EndOfInput => "the stream ended before the response completed".to_owned(),
        StreamEnd::InvalidInput { event } => format!("bad input at event {event}"),
        StreamEnd::NotEnded => "the stream has not ended".to_owned(),
        _ => format!("{:?}", summary.end),
    };
    let mut lines = vec![format!(
        "appended {} item(s) to {rollout} from {} event(s); {end}",
        summary.recorded, summary.events
    )];
    for dropped in &summary.dropped {
        lines.push(format!(
            "dropped output item {} ({} {}): incomplete, {} delta(s), {} byte(s) seen",
            dropped.output_index,
            dropped.item_type.as_deref().unwrap_or("unknown type"),
            dropped.item_id.as_deref().unwrap_or("without id"),
            dropped.deltas,
            dropped.delta_bytes
        ));
    }
    for (index, what) in &summary.not_representable {
        lines.push(format!("left out output item {index}: {what}"));
    }
    if summary.unknown_events > 0 {
        lines.push(format!(
            "ignored {} event(s) of unknown type",
            summary.unknown_events
        ));
    }
    if summary.torn_event {
        lines.push("the input ended inside an event (discarded)".to_owned());
    }
    lines
}
