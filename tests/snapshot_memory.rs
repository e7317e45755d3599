//! The memory of writing a snapshot from a large rollout, read from the heap profiler (`dhat`,
//! which counts the bytes live and the peak; no time is measured): resuming holds the history,
//! and writing the snapshot must not add a copy of every item on top of it.
//!
//! One test per binary: the global allocator counts everything the process allocates.

mod common;

use std::fs::File;
use std::io::{BufReader, Write};

use agent_history::{ResumeOptions, TruncationPolicy, resume_reader};
use common::{assistant, event_line, item_line, line, meta_line, temp_dir, user};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// A Codex-shaped session of `turns` turns: turn events and context, a user message, a shell
/// call with a 3 KB output and its end event repeating it, an answer, a token count.
fn write_session(path: &std::path::Path, turns: usize) -> u64 {
    let mut out = std::io::BufWriter::new(File::create(path).unwrap());
    writeln!(out, "{}", meta_line()).unwrap();
    let output = "drwxr-xr-x 2 user user 4096 Nov 30 file.rs\\n".repeat(70);
    for i in 0..turns {
        let lines = [
            event_line(&format!(r#"{{"type":"task_started","turn_id":"t{i}"}}"#)),
            line(
                "turn_context",
                &format!(
                    r#"{{"turn_id":"t{i}","cwd":"/w","model":"gpt-5","approval_policy":"never"}}"#
                ),
            ),
            item_line(&user(&format!("turn {i}: list the files again, please"))),
            item_line(&format!(
                r#"{{"type":"function_call","name":"shell","arguments":"{{\"command\":[\"ls\",\"-l\"]}}","call_id":"call_{i}"}}"#
            )),
            item_line(&format!(
                r#"{{"type":"function_call_output","call_id":"call_{i}","output":"{output}"}}"#
            )),
            // Codex repeats a command's output in its end event.
            event_line(&format!(
                r#"{{"type":"exec_command_end","call_id":"call_{i}","exit_code":0,"aggregated_output":"{output}"}}"#
            )),
            item_line(&assistant(&format!("Here are the files of turn {i}."))),
            event_line(r#"{"type":"token_count","info":null,"rate_limits":null}"#),
            event_line(&format!(r#"{{"type":"task_complete","turn_id":"t{i}"}}"#)),
        ];
        for text in lines {
            writeln!(out, "{text}").unwrap();
        }
    }
    out.flush().unwrap();
    drop(out);
    std::fs::metadata(path).unwrap().len()
}

#[test]
fn writing_a_snapshot_adds_no_copy_of_the_items() {
    let dir = temp_dir();
    let rollout = dir.path().join("rollout.jsonl");
    let snapshot = dir.path().join("rollout.snap");
    let bytes = write_session(&rollout, 1_500);

    let _profiler = dhat::Profiler::builder().testing().build();
    let options = ResumeOptions::new(TruncationPolicy::Tokens(10_000)).snapshot_ready();
    let resumed = resume_reader(
        BufReader::new(File::open(&rollout).unwrap()),
        &rollout,
        &options,
    )
    .expect("resumes");
    let resume_peak = dhat::HeapStats::get().max_bytes;
    let held = dhat::HeapStats::get().curr_bytes;
    let header = resumed.write_snapshot(&snapshot).expect("written");
    let peak = dhat::HeapStats::get().max_bytes;
    // What the write allocated beyond what the resumed history holds, at its peak: exact when
    // the write set a new peak, else at most the resume's peak over what it holds.
    let write_extra = peak.max(resume_peak) - held;
    let ratio = |n: usize| n as f64 / bytes as f64;
    println!(
        "rollout {bytes} B, payload {} B; resume peak {:.2}x, held after resume {:.2}x, \
         peak with the write {:.2}x, write adds at most {:.2}x",
        header.payload_len,
        ratio(resume_peak),
        ratio(held),
        ratio(peak),
        ratio(write_extra),
    );
    // Resume holds the parsed lines until the replay is done (the items shared with the
    // history, the text of event lines dropped): the whole run stays under the file's size
    // and a quarter (1.36x while event lines kept their text; 3.38x, without the end events,
    // while the writer copied every item twice).
    assert!(
        peak < bytes as usize + bytes as usize / 4,
        "resume and write peaked at {:.2}x the rollout's size",
        ratio(peak)
    );
    assert!(
        peak == resume_peak || (peak - held) < bytes as usize / 4,
        "the snapshot write added {:.2}x the rollout's size on top of the resumed history",
        ratio(peak - held)
    );
}
