//! Reading rollouts and snapshots: paths, progress.

use std::io::{self, IsTerminal as _, Read};
use std::path::Path;

use agent_history::{ResumeOptions, Resumed, open_rollout, resume_reader};
use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};

/// Rollouts larger than this get a progress bar when stderr is a terminal.
const PROGRESS_THRESHOLD: u64 = 50 * 1024 * 1024;

/// Resumes a rollout, with a progress bar for files over 50 MB when stderr is a terminal.
pub fn resume(path: &Path, options: &ResumeOptions) -> anyhow::Result<Resumed> {
    let file = open_rollout(path)?;
    let size = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    let bar = (size > PROGRESS_THRESHOLD && io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(size);
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_message("reading");
        bar
    });
    let reader = Progress {
        inner: file,
        bar: bar.clone(),
    };
    let resumed = resume_reader(reader, path, options);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    Ok(resumed?)
}

/// A reader that advances a progress bar.
struct Progress<R> {
    inner: R,
    bar: Option<ProgressBar>,
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        if let Some(bar) = &self.bar {
            bar.inc(read as u64);
        }
        Ok(read)
    }
}

pub fn report_load(resumed: &Resumed) {
    let report = resumed.report();
    let counts = &report.skip_counts;
    status!(
        "read {} line(s): {} item(s) in history, {} skipped ({} blank, {} malformed{})",
        report.lines,
        resumed.history().len(),
        counts.total(),
        counts.blank,
        counts.malformed(),
        if report.torn_tail {
            ", torn last line"
        } else {
            ""
        }
    );
    if !report.left_out.is_empty() {
        status!(
            "  left out by resume (not history content): {}",
            report.left_out
        );
    }
    let mut listed = 0;
    for line in report.malformed() {
        status!("  skipped {line}");
        listed += 1;
    }
    if counts.malformed() > listed {
        status!("  … and {} more", counts.malformed() - listed);
    }
    for repaired in &report.repaired {
        status!("  repaired {repaired}");
    }
}
