//! The library against two baselines, request body for request body, on the same generated
//! sessions (issue 10's "Benchmarks").
//!
//! Three implementations write the Responses API request body of one session:
//!
//! - **library**: clone the `History`, project it, write the body (`PromptCompiler::compile`,
//!   `ModelRequest::body`).
//! - **codex-style**: a `Vec<serde_json::Value>` cloned per request, three normalize passes
//!   (synthetic outputs for calls without one, orphan outputs removed, images stripped for a
//!   text-only model), the body written by serde.
//! - **tuned**: a `Vec<Arc<raw item>>` (the JSON text with a small header parsed once at record
//!   time), cloned per request, one scan of the headers for the pairings, then one fused pass that
//!   drops, inserts, strips and copies bytes into a body sized up front.
//!
//! The library is timed twice: with a fresh body per request (`ModelRequest::body`, compared with
//! the `alloc+copy` floor: the same bytes copied into a fresh `Vec`) and writing into a buffer it
//! keeps from request to request (`ModelRequest::write_body_into`, compared with the `memcpy`
//! floor: the same bytes copied into a warm buffer).
//!
//! Before any timing, every implementation's body is checked to be byte-identical to the
//! library's for every session and modality; the bench panics otherwise. Each figure is the median
//! over interleaved pairs (the two library runs, the baselines, a `memcpy` of the body into a warm
//! buffer and a copy into a fresh `Vec`, in a rotating order) of the per-pair ratio library /
//! other, with its interquartile range.
//!
//! `cargo bench --bench compare` prints the whole table: sizes 1k, 10k, 100k and 1M items.
//! `AGENT_HISTORY_BENCH_QUICK=1 cargo bench --bench compare` leaves out 1M: about 3 minutes on 2
//! cores, against about 31 minutes and 14 GB of memory for the full mode. `docs/performance.md`
//! has a measured table and how to read it.

use std::collections::HashSet;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use agent_history::{
    History, IMAGE_PLACEHOLDER, ItemId, Modalities, ModelRequest, ProjectionOptions,
    PromptCompiler, RequestSettings, StepContext, ToolPlan, synthetic_output_id,
};

#[path = "common/session.rs"]
mod session;
use session::generate;

// ---------------------------------------------------------------------------------------------
// Request settings shared by the three implementations.

const MODEL: &str = "gpt-5.1-codex";
const INSTRUCTIONS: &str = "You are a coding agent. Be brief.\nRun the tests before you answer.";
const CACHE_KEY: &str = "5973b6c0-94b8-487b-a530-2aeb6098ae0c";

fn tools() -> Vec<Value> {
    (0..8)
        .map(|i| {
            serde_json::json!({
                "type": "function",
                "name": format!("tool_{i}"),
                "description": "Runs a command in the workspace and returns its output.",
                "strict": false,
                "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}}, "required": ["command"]},
            })
        })
        .collect()
}

/// Pairing families, as the Responses API pairs calls and outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Family {
    Function,
    Custom,
    ToolSearch,
}

/// What a pass needs to know about an item's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Call(Family),
    Output(Family),
    Other,
}

fn role_of(item_type: &str) -> Role {
    match item_type {
        "function_call" | "local_shell_call" => Role::Call(Family::Function),
        "custom_tool_call" => Role::Call(Family::Custom),
        "tool_search_call" => Role::Call(Family::ToolSearch),
        "function_call_output" => Role::Output(Family::Function),
        "custom_tool_call_output" => Role::Output(Family::Custom),
        "tool_search_output" => Role::Output(Family::ToolSearch),
        _ => Role::Other,
    }
}

/// The synthetic output that answers a call without one, as a JSON object (key order as sent).
fn synthetic_output(family: Family, item_id: Option<&str>, call_id: &str) -> Value {
    let (kind, prefix) = match family {
        Family::Function => ("function_call_output", "fco"),
        Family::Custom => ("custom_tool_call_output", "ctco"),
        Family::ToolSearch => ("tool_search_output", "tso"),
    };
    let mut item = Map::new();
    item.insert("type".into(), kind.into());
    let id = item_id.map(ItemId::new);
    if let Some(id) = synthetic_output_id(prefix, id.as_ref()) {
        item.insert("id".into(), id.as_str().into());
    }
    item.insert("call_id".into(), call_id.into());
    match family {
        Family::Function | Family::Custom => {
            item.insert("output".into(), "aborted".into());
        }
        Family::ToolSearch => {
            item.insert("status".into(), "completed".into());
            item.insert("execution".into(), "client".into());
            item.insert("tools".into(), Value::Array(Vec::new()));
        }
    }
    Value::Object(item)
}

/// Replaces every `input_image` part of an array with the placeholder text part. The number
/// replaced.
fn strip_parts(parts: Option<&mut Value>) -> usize {
    let Some(Value::Array(parts)) = parts else {
        return 0;
    };
    let mut replaced = 0;
    for part in parts {
        if part.get("type").and_then(Value::as_str) == Some("input_image") {
            let mut text = Map::new();
            text.insert("type".into(), "input_text".into());
            text.insert("text".into(), IMAGE_PLACEHOLDER.into());
            *part = Value::Object(text);
            replaced += 1;
        }
    }
    replaced
}

/// Strips the images of one item in place; whether anything changed.
fn strip_images(item: &mut Value) -> bool {
    match item.get("type").and_then(Value::as_str) {
        Some("message") => strip_parts(item.get_mut("content")) > 0,
        Some("function_call_output" | "custom_tool_call_output") => {
            strip_parts(item.get_mut("output")) > 0
        }
        _ => false,
    }
}

fn str_field<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    item.get(key).and_then(Value::as_str)
}

// ---------------------------------------------------------------------------------------------
// (a) The library.

struct Library {
    history: History,
    image: PromptCompiler,
    text: PromptCompiler,
}

impl Library {
    fn new(items: &[String]) -> Library {
        let mut history = History::new();
        for json in items {
            history.record_json(json.as_str()).expect("a valid item");
        }
        let plan = Arc::new(ToolPlan::new(tools()).expect("distinct tool names"));
        let compiler = |modalities| {
            PromptCompiler::new(RequestSettings {
                model: MODEL.into(),
                prompt_cache_key: Some(CACHE_KEY.into()),
                ..RequestSettings::default()
            })
            .with_base_instructions(INSTRUCTIONS)
            .with_tools(Arc::clone(&plan), true)
            .with_projection(ProjectionOptions::for_modalities(modalities))
        };
        Library {
            history,
            image: compiler(Modalities::TEXT_IMAGE),
            text: compiler(Modalities::TEXT),
        }
    }

    fn request(&self, text_only: bool) -> ModelRequest {
        let history = self.history.clone();
        let compiler = if text_only { &self.text } else { &self.image };
        compiler
            .compile(&history, StepContext::default())
            .expect("lenient")
    }

    /// A fresh body per request (`ModelRequest::body`).
    fn body(&self, text_only: bool) -> Vec<u8> {
        self.request(text_only).body().expect("a Vec")
    }

    /// The body written into the caller's buffer, kept from request to request
    /// (`ModelRequest::write_body_into`).
    fn body_into(&self, text_only: bool, buffer: &mut Vec<u8>) {
        self.request(text_only)
            .write_body_into(buffer)
            .expect("a Vec");
    }
}

// ---------------------------------------------------------------------------------------------
// (b) The Codex-style baseline.

/// The body as a serde struct, keys in the order the API gets them.
#[derive(Serialize)]
struct CodexBody<'a> {
    model: &'a str,
    instructions: &'a str,
    input: &'a [Value],
    tools: &'a [Value],
    tool_choice: &'a str,
    parallel_tool_calls: bool,
    reasoning: Option<()>,
    store: bool,
    stream: bool,
    include: &'a [&'a str],
    prompt_cache_key: &'a str,
}

struct CodexStyle {
    items: Vec<Value>,
    tools: Vec<Value>,
}

impl CodexStyle {
    fn new(items: &[String]) -> CodexStyle {
        CodexStyle {
            items: items
                .iter()
                .map(|json| serde_json::from_str(json).expect("JSON"))
                .collect(),
            tools: tools(),
        }
    }

    fn body(&self, text_only: bool) -> Vec<u8> {
        let mut items = self.items.clone();
        Self::add_missing_outputs(&mut items);
        Self::remove_orphan_outputs(&mut items);
        if text_only {
            for item in &mut items {
                strip_images(item);
            }
        }
        serde_json::to_vec(&CodexBody {
            model: MODEL,
            instructions: INSTRUCTIONS,
            input: &items,
            tools: &self.tools,
            tool_choice: "auto",
            parallel_tool_calls: true,
            reasoning: None,
            store: false,
            stream: true,
            include: &[],
            prompt_cache_key: CACHE_KEY,
        })
        .expect("serializable")
    }

    /// Pass 1: a synthetic output right after each call that has none.
    fn add_missing_outputs(items: &mut Vec<Value>) {
        let outputs: HashSet<(Family, String)> = items
            .iter()
            .filter_map(|item| match role_of(str_field(item, "type")?) {
                Role::Output(family) => Some((family, str_field(item, "call_id")?.to_owned())),
                _ => None,
            })
            .collect();
        let mut missing = Vec::new();
        for (position, item) in items.iter().enumerate() {
            let Some(Role::Call(family)) = str_field(item, "type").map(role_of) else {
                continue;
            };
            let Some(call_id) = str_field(item, "call_id") else {
                continue;
            };
            if !outputs.contains(&(family, call_id.to_owned())) {
                let output = synthetic_output(family, str_field(item, "id"), call_id);
                missing.push((position, output));
            }
        }
        for (position, output) in missing.into_iter().rev() {
            items.insert(position + 1, output);
        }
    }

    /// Pass 2: outputs whose call is nowhere in the list are removed.
    fn remove_orphan_outputs(items: &mut Vec<Value>) {
        let calls: HashSet<(Family, String)> = items
            .iter()
            .filter_map(|item| match role_of(str_field(item, "type")?) {
                Role::Call(family) => Some((family, str_field(item, "call_id")?.to_owned())),
                _ => None,
            })
            .collect();
        items.retain(|item| match str_field(item, "type").map(role_of) {
            Some(Role::Output(family)) => str_field(item, "call_id")
                .is_none_or(|call_id| calls.contains(&(family, call_id.to_owned()))),
            _ => true,
        });
    }
}

// ---------------------------------------------------------------------------------------------
// (c) The tuned baseline.

/// One item: its JSON text and what the passes need, parsed once when it is recorded.
struct Raw {
    json: Box<str>,
    role: Role,
    call_id: Option<Box<str>>,
    item_id: Option<Box<str>>,
    has_image: bool,
}

struct Tuned {
    items: Vec<Arc<Raw>>,
    bytes: usize,
    prefix: String,
    suffix: String,
}

impl Tuned {
    fn new(items: &[String]) -> Tuned {
        let items: Vec<Arc<Raw>> = items
            .iter()
            .map(|json| {
                let value: Value = serde_json::from_str(json).expect("JSON");
                let mut stripped = value.clone();
                Arc::new(Raw {
                    json: json.as_str().into(),
                    role: str_field(&value, "type").map_or(Role::Other, role_of),
                    call_id: str_field(&value, "call_id").map(Into::into),
                    item_id: str_field(&value, "id").map(Into::into),
                    has_image: strip_images(&mut stripped),
                })
            })
            .collect();
        let bytes = items.iter().map(|raw| raw.json.len() + 1).sum();
        let json = |value: &Value| value.to_string();
        let prefix = format!(
            r#"{{"model":{},"instructions":{},"input":["#,
            json(&MODEL.into()),
            json(&INSTRUCTIONS.into())
        );
        let suffix = format!(
            r#"],"tools":{},"tool_choice":"auto","parallel_tool_calls":true,"reasoning":null,"store":false,"stream":true,"include":[],"prompt_cache_key":{}}}"#,
            json(&Value::Array(tools())),
            json(&CACHE_KEY.into())
        );
        Tuned {
            items,
            bytes,
            prefix,
            suffix,
        }
    }

    fn body(&self, text_only: bool) -> Vec<u8> {
        let items = self.items.clone();
        let mut calls: HashSet<(Family, &str)> = HashSet::new();
        let mut outputs: HashSet<(Family, &str)> = HashSet::new();
        for raw in &items {
            match (raw.role, raw.call_id.as_deref()) {
                (Role::Call(family), Some(id)) => {
                    calls.insert((family, id));
                }
                (Role::Output(family), Some(id)) => {
                    outputs.insert((family, id));
                }
                _ => {}
            }
        }
        // Room for every item and a few synthetic outputs; more grows the buffer once.
        let mut out = Vec::with_capacity(self.prefix.len() + self.bytes + self.suffix.len() + 4096);
        out.extend_from_slice(self.prefix.as_bytes());
        let mut first = true;
        let mut push = |out: &mut Vec<u8>, bytes: &[u8]| {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(bytes);
        };
        for raw in &items {
            match (raw.role, raw.call_id.as_deref()) {
                (Role::Output(family), Some(id)) if !calls.contains(&(family, id)) => continue,
                _ => {}
            }
            if text_only && raw.has_image {
                let mut value: Value = serde_json::from_str(&raw.json).expect("JSON");
                strip_images(&mut value);
                push(&mut out, value.to_string().as_bytes());
            } else {
                push(&mut out, raw.json.as_bytes());
            }
            if let (Role::Call(family), Some(id)) = (raw.role, raw.call_id.as_deref())
                && !outputs.contains(&(family, id))
            {
                let output = synthetic_output(family, raw.item_id.as_deref(), id);
                push(&mut out, output.to_string().as_bytes());
            }
        }
        out.extend_from_slice(self.suffix.as_bytes());
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Measurement.

/// Time of one call of `f`.
fn time<T>(f: impl FnOnce() -> T) -> Duration {
    let start = Instant::now();
    let result = f();
    let elapsed = start.elapsed();
    drop(black_box(result));
    elapsed
}

/// The median and the interquartile range of `values`.
fn quartiles(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

fn human(seconds: f64) -> String {
    match seconds {
        s if s < 1e-6 => format!("{:.0} ns", s * 1e9),
        s if s < 1e-3 => format!("{:.1} µs", s * 1e6),
        s if s < 1.0 => format!("{:.2} ms", s * 1e3),
        s => format!("{s:.2} s"),
    }
}

fn ratio_cell(values: &mut [f64]) -> String {
    let (median, low, high) = quartiles(values);
    format!("{median:.3} [{low:.3}–{high:.3}]")
}

fn main() {
    let quick = std::env::var_os("AGENT_HISTORY_BENCH_QUICK").is_some_and(|v| v != "0");
    // `AGENT_HISTORY_BENCH_SIZES=10000,100000` runs only those sizes (to profile one of them).
    let chosen: Option<Vec<usize>> = std::env::var("AGENT_HISTORY_BENCH_SIZES")
        .ok()
        .map(|sizes| {
            sizes
                .split(',')
                .map(|size| size.trim().parse().expect("a number of items"))
                .collect()
        });
    let sizes: &[usize] = match &chosen {
        Some(sizes) => sizes,
        None if quick => &[1_000, 10_000, 100_000],
        None => &[1_000, 10_000, 100_000, 1_000_000],
    };
    let started = Instant::now();
    println!(
        "compare: {} mode; ratios are library / other, median [interquartile range] over interleaved pairs",
        if quick { "quick" } else { "full" }
    );
    println!(
        "| items | k | model | body | pairs | library | library, reused buffer | codex-style | tuned | memcpy | alloc+copy | lib/codex | lib/tuned | lib/alloc+copy | lib reused/memcpy | lib/memcpy |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &n in sizes {
        for k in [0usize, 16] {
            let items = generate(n, k, 0x9e37_79b9_7f4a_7c15 ^ n as u64);
            let library = Library::new(&items);
            let codex = CodexStyle::new(&items);
            let tuned = Tuned::new(&items);
            drop(items);
            for text_only in [false, true] {
                let expected = library.body(text_only);
                let model = if text_only { "text" } else { "text+image" };
                let mut reused = Vec::new();
                library.body_into(text_only, &mut reused);
                for (name, body) in [
                    ("library, reused buffer", reused.clone()),
                    ("codex-style", codex.body(text_only)),
                    ("tuned", tuned.body(text_only)),
                ] {
                    if body != expected {
                        let at = body
                            .iter()
                            .zip(&expected)
                            .position(|(a, b)| a != b)
                            .unwrap_or(body.len().min(expected.len()));
                        let context = |bytes: &[u8]| {
                            String::from_utf8_lossy(
                                &bytes[at.saturating_sub(80)..(at + 80).min(bytes.len())],
                            )
                            .into_owned()
                        };
                        panic!(
                            "{name} writes a different body than the library ({n} items, k = {k}, {model}) at byte {at}:\n library: {}\n {name}: {}",
                            context(&expected),
                            context(&body)
                        );
                    }
                }
                let pairs = if n <= 10_000 { 101 } else { 31 };
                let mut floor = vec![0u8; expected.len()];
                const RUNS: usize = 6;
                let mut t: [Vec<f64>; RUNS] = Default::default();
                for pair in 0..pairs {
                    // Rotate the order, so that no implementation always runs first or last.
                    for slot in 0..RUNS {
                        let which = (slot + pair) % RUNS;
                        let elapsed = match which {
                            0 => time(|| library.body(text_only)),
                            1 => time(|| {
                                library.body_into(text_only, &mut reused);
                                black_box(&reused);
                            }),
                            2 => time(|| codex.body(text_only)),
                            3 => time(|| tuned.body(text_only)),
                            4 => time(|| {
                                floor.copy_from_slice(black_box(&expected));
                                black_box(&floor);
                            }),
                            _ => time(|| black_box(&expected).to_vec()),
                        };
                        t[which].push(elapsed.as_secs_f64().max(1e-9));
                    }
                }
                let ratio = |mine: usize, other: usize| -> String {
                    let mut ratios: Vec<f64> =
                        t[mine].iter().zip(&t[other]).map(|(a, b)| a / b).collect();
                    ratio_cell(&mut ratios)
                };
                let medians: Vec<String> = t
                    .iter()
                    .map(|times| {
                        let mut times = times.clone();
                        human(quartiles(&mut times).0)
                    })
                    .collect();
                println!(
                    "| {n} | {k} | {model} | {:.1} MB | {pairs} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    expected.len() as f64 / 1e6,
                    medians[0],
                    medians[1],
                    medians[2],
                    medians[3],
                    medians[4],
                    medians[5],
                    ratio(0, 2),
                    ratio(0, 3),
                    ratio(0, 5),
                    ratio(1, 4),
                    ratio(0, 4),
                );
            }
        }
        eprintln!(
            "# sizes up to {n} done after {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    println!(
        "bodies byte-identical in every case; whole run {:.0} s",
        started.elapsed().as_secs_f64()
    );
}
