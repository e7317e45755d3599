//! The seeded session generator that the comparison bench and the projection bench share
//! (issue 10's "same generated sessions"), kept apart from `common` so that benches that do not
//! generate sessions do not compile it.
//!
//! Include it with `#[path = "common/session.rs"] mod session;`.

/// A small deterministic generator (xorshift64), so every run measures the same sessions.
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

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Log-uniform in [low, high): many small bodies, a few large ones.
    fn log_uniform(&mut self, low: usize, high: usize) -> usize {
        let ratio = high as f64 / low as f64;
        (low as f64 * ratio.powf(self.unit())) as usize
    }
}

/// Text that needs no JSON escaping except the `\n` escapes it spells out, so that a serde round
/// trip writes it back byte for byte.
struct Pools {
    words: String,
    base64: String,
}

impl Pools {
    fn new(rng: &mut Rng) -> Pools {
        const WORDS: [&str; 12] = [
            "the",
            "test",
            "fails",
            "because",
            "cargo",
            "build",
            "src/lib.rs",
            "error[E0308]:",
            "expected",
            "found",
            "ok",
            "let",
        ];
        let mut words = String::with_capacity(64 << 10);
        while words.len() < 48 << 10 {
            words.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            words.push_str(if rng.below(16) == 0 { "\\n" } else { " " });
        }
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let base64 = (0..64 << 10)
            .map(|_| alphabet[rng.below(64) as usize] as char)
            .collect();
        Pools { words, base64 }
    }

    /// About `len` bytes of text starting after a space (never inside a `\n` escape).
    fn text<'a>(&'a self, rng: &mut Rng, len: usize) -> &'a str {
        let len = len.min(self.words.len() / 2);
        let mut start = rng.below((self.words.len() - len - 64) as u64) as usize;
        while self.words.as_bytes()[start] != b' ' {
            start += 1;
        }
        let mut end = start + 1 + len;
        while end < self.words.len() && self.words.as_bytes()[end - 1] == b'\\' {
            end += 1;
        }
        &self.words[start + 1..end]
    }

    /// Text of a log-uniform length in [low, high).
    fn text_between<'a>(&'a self, rng: &mut Rng, low: usize, high: usize) -> &'a str {
        let len = rng.log_uniform(low, high);
        self.text(rng, len)
    }

    fn image(&self, rng: &mut Rng) -> String {
        let len = rng.log_uniform(2 << 10, 48 << 10);
        format!("data:image/png;base64,{}", &self.base64[..len])
    }
}

/// Generates a session of about `n` items (the JSON text of each) with `k` broken pairings,
/// spread evenly: calls without output and orphan outputs, alternately.
///
/// A turn is a user message (sometimes with an image), a reasoning item, one to four calls of a
/// random family (function, local shell, custom, tool search) each followed by its output
/// (100 B to 20 KB, log-uniform; a function output sometimes carries an image), and an assistant
/// message. About 1 % of the items carry an image.
pub fn generate(n: usize, k: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    let pools = Pools::new(&mut rng);
    let mut items = Vec::with_capacity(n + 8);
    let mut call = 0usize;
    let mut broken = 0usize;
    let mut message = 0usize;
    while items.len() < n {
        message += 1;
        let text = pools.text_between(&mut rng, 40, 2_000);
        if rng.below(35) == 0 {
            let image = pools.image(&mut rng);
            items.push(format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}},{{"type":"input_image","image_url":"{image}"}}]}}"#
            ));
        } else {
            items.push(format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
            ));
        }
        let summary = pools.text_between(&mut rng, 40, 400);
        let encrypted = &pools.base64[..rng.log_uniform(200, 4_000)];
        items.push(format!(
            r#"{{"type":"reasoning","id":"rs_{message}","summary":[{{"type":"summary_text","text":"{summary}"}}],"content":null,"encrypted_content":"{encrypted}"}}"#
        ));
        for _ in 0..1 + rng.below(4) {
            call += 1;
            let body_len = rng.log_uniform(100, 20_000);
            let body = pools.text(&mut rng, body_len);
            let (call_json, output_json) = match rng.below(4) {
                0 => (
                    format!(
                        r#"{{"type":"function_call","id":"fc_{call}","name":"shell","arguments":"{{\"command\":[\"cargo\",\"test\"]}}","call_id":"call_{call}"}}"#
                    ),
                    if rng.below(30) == 0 {
                        let image = pools.image(&mut rng);
                        format!(
                            r#"{{"type":"function_call_output","call_id":"call_{call}","output":[{{"type":"input_text","text":"{body}"}},{{"type":"input_image","image_url":"{image}"}}]}}"#
                        )
                    } else {
                        format!(
                            r#"{{"type":"function_call_output","call_id":"call_{call}","output":"{body}"}}"#
                        )
                    },
                ),
                1 => (
                    format!(
                        r#"{{"type":"local_shell_call","id":"lsh_{call}","call_id":"call_{call}","status":"completed","action":{{"type":"exec","command":["cargo","build"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}}}"#
                    ),
                    format!(
                        r#"{{"type":"function_call_output","call_id":"call_{call}","output":"{body}"}}"#
                    ),
                ),
                2 => (
                    format!(
                        r#"{{"type":"custom_tool_call","id":"ctc_{call}","status":"completed","call_id":"call_{call}","name":"apply_patch","input":"*** Begin Patch {summary}"}}"#
                    ),
                    format!(
                        r#"{{"type":"custom_tool_call_output","call_id":"call_{call}","output":"{body}"}}"#
                    ),
                ),
                _ => (
                    format!(
                        r#"{{"type":"tool_search_call","id":"tsc_{call}","call_id":"call_{call}","status":"completed","execution":"client","arguments":{{"query":"cargo"}}}}"#
                    ),
                    format!(
                        r#"{{"type":"tool_search_output","call_id":"call_{call}","status":"completed","execution":"client","tools":[{{"type":"function","name":"cargo","description":"{body}","parameters":{{"type":"object","properties":{{}}}}}}]}}"#
                    ),
                ),
            };
            items.push(call_json);
            // The next broken pairing is due once the session reaches its share of n.
            if broken < k && items.len() >= (broken * 2 + 1) * n / (k * 2) {
                if broken % 2 == 1 {
                    items.push(output_json);
                    items.push(format!(
                        r#"{{"type":"function_call_output","call_id":"orphan_{broken}","output":"{body}"}}"#
                    ));
                } // else: the call gets no output
                broken += 1;
            } else {
                items.push(output_json);
            }
        }
        let answer = pools.text_between(&mut rng, 40, 2_000);
        items.push(format!(
            r#"{{"type":"message","id":"msg_{message}","role":"assistant","content":[{{"type":"output_text","text":"{answer}"}}]}}"#
        ));
    }
    assert_eq!(broken, k, "every broken pairing placed");
    items
}
