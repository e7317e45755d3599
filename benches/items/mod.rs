//! A seeded generator of Codex-style items as JSON text (one line each, `type` first, an `id` on
//! every item as Codex assigns at persistence): user and assistant messages, reasoning, calls of
//! four families with outputs from 100 B to 20 KB (log-uniform), about 1 % with an image; text
//! carries escapes (`\n`, `\"`, `\\`, `\u00e9`) and raw UTF-8, as tool output does.

/// xorshift64: the same items on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A length between `low` and `high`, uniform in its logarithm.
    fn log_uniform(&mut self, low: usize, high: usize) -> usize {
        let unit = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let (low, high) = (low as f64, high as f64);
        (low * (high / low).powf(unit)) as usize
    }
}

/// JSON string content (already escaped) of about `len` bytes: words, a `\n` about every ten
/// words, now and then a quoted word, a backslash or an escaped `é`.
fn text(rng: &mut Rng, len: usize) -> String {
    const WORDS: [&str; 10] = [
        "cargo",
        "test",
        "passed",
        "src/lib.rs",
        "fn",
        "main()",
        "é",
        "ok",
        "warning:",
        "result",
    ];
    const RARE: [&str; 3] = [r#"\"x\""#, r"\u00e9", r"\\"];
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        match rng.below(100) {
            0..=8 => out.push_str(r"\n"),
            9..=10 => out.push_str(RARE[rng.below(RARE.len() as u64) as usize]),
            _ => out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]),
        }
        out.push(' ');
    }
    out
}

/// A `data:` URL of 2–48 KB.
fn image(rng: &mut Rng) -> String {
    let len = rng.log_uniform(2_000, 48_000);
    let mut url = String::from("data:image/png;base64,");
    url.extend((0..len).map(|i| (b'A' + ((i * 7 + len) % 26) as u8) as char));
    url
}

/// At least `n` items, in turns.
pub fn generate(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed | 1);
    let mut items = Vec::with_capacity(n + 8);
    let mut call = 0usize;
    let mut turn = 0usize;
    while items.len() < n {
        turn += 1;
        let question_len = rng.log_uniform(40, 2_000);
        let question = text(&mut rng, question_len);
        if rng.below(40) == 0 {
            let url = image(&mut rng);
            items.push(format!(
                r#"{{"type":"message","id":"msg_u{turn}","role":"user","content":[{{"type":"input_text","text":"{question}"}},{{"type":"input_image","image_url":"{url}"}}]}}"#
            ));
        } else {
            items.push(format!(
                r#"{{"type":"message","id":"msg_u{turn}","role":"user","content":[{{"type":"input_text","text":"{question}"}}]}}"#
            ));
        }
        let summary_len = rng.log_uniform(40, 400);
        let summary = text(&mut rng, summary_len);
        let encrypted: String = (0..rng.log_uniform(200, 4_000))
            .map(|i| (b'a' + (i % 26) as u8) as char)
            .collect();
        items.push(format!(
            r#"{{"type":"reasoning","id":"rs_{turn}","summary":[{{"type":"summary_text","text":"{summary}"}}],"content":null,"encrypted_content":"{encrypted}"}}"#
        ));
        for _ in 0..1 + rng.below(4) {
            call += 1;
            let body_len = rng.log_uniform(100, 20_000);
            let body = text(&mut rng, body_len);
            match rng.below(4) {
                0 => {
                    items.push(format!(
                        r#"{{"type":"function_call","id":"fc_{call}","name":"shell","arguments":"{{\"command\":[\"cargo\",\"test\"]}}","call_id":"call_{call}"}}"#
                    ));
                    items.push(format!(
                        r#"{{"type":"function_call_output","id":"fco_{call}","call_id":"call_{call}","output":"{body}"}}"#
                    ));
                }
                1 => {
                    items.push(format!(
                        r#"{{"type":"local_shell_call","id":"lsh_{call}","call_id":"call_{call}","status":"completed","action":{{"type":"exec","command":["cargo","build"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}}}"#
                    ));
                    items.push(format!(
                        r#"{{"type":"function_call_output","id":"fco_{call}","call_id":"call_{call}","output":[{{"type":"input_text","text":"{body}"}}]}}"#
                    ));
                }
                2 => {
                    items.push(format!(
                        r#"{{"type":"custom_tool_call","id":"ctc_{call}","status":"completed","call_id":"call_{call}","name":"apply_patch","input":"*** Begin Patch {summary}"}}"#
                    ));
                    items.push(format!(
                        r#"{{"type":"custom_tool_call_output","id":"ctco_{call}","call_id":"call_{call}","output":"{body}"}}"#
                    ));
                }
                _ => {
                    items.push(format!(
                        r#"{{"type":"tool_search_call","id":"tsc_{call}","call_id":"call_{call}","status":"completed","execution":"server","arguments":{{"query":"cargo"}}}}"#
                    ));
                    items.push(format!(
                        r#"{{"type":"tool_search_output","id":"tso_{call}","call_id":"call_{call}","status":"completed","execution":"server","tools":[{{"type":"function","name":"cargo","description":"{body}","parameters":{{"type":"object","properties":{{}}}}}}]}}"#
                    ));
                }
            }
        }
        let answer_len = rng.log_uniform(40, 2_000);
        let answer = text(&mut rng, answer_len);
        items.push(format!(
            r#"{{"type":"message","id":"msg_a{turn}","role":"assistant","content":[{{"type":"output_text","text":"{answer}"}}]}}"#
        ));
    }
    items
}

/// The items as a rollout: a `session_meta` line, then one `response_item` line each.
#[allow(dead_code)]
pub fn rollout(items: &[String]) -> Vec<u8> {
    let mut text = String::from(
        r#"{"timestamp":"2026-11-03T14:00:00.000Z","type":"session_meta","payload":{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2026-11-03T14:00:00.000Z"}}"#,
    );
    text.push('\n');
    for item in items {
        text.push_str(
            r#"{"timestamp":"2026-11-03T14:00:01.000Z","type":"response_item","payload":"#,
        );
        text.push_str(item);
        text.push_str("}\n");
    }
    text.into_bytes()
}
