//! Compressed rollouts (`.jsonl.zst`, which Codex's rollout maintenance writes) read as the text
//! they decompress to: the same lines, the same report (offsets are offsets in the text), the
//! same history, from a file or a stream, through a snapshot too; damaged compressed data is an
//! error that names the file; a session never appends to one.

use std::fs;
use std::path::{Path, PathBuf};

use agent_history::{
    DEFAULT_TRUNCATION, Durability, Error, ReadMode, ResumeOptions, ResumeSource, Rollout,
    RolloutError, Session, WriteStep, resume_file, resume_reader,
};

use crate::common::paginated::{Home, T, root};
use crate::common::{example, jsons, temp_dir};

const EXAMPLES: [&str; 3] = ["session.jsonl", "interrupted.jsonl", "codex-session.jsonl"];

/// `plain` compressed into `dir` as `<name>.zst`, in two frames (as a file compressed in parts
/// is): the reader must decode frame after frame.
fn compress(plain: &Path, dir: &Path) -> PathBuf {
    let text = fs::read(plain).expect("reads");
    let half = text.len() / 2;
    let mut bytes = zstd::encode_all(&text[..half], 3).expect("compresses");
    bytes.extend(zstd::encode_all(&text[half..], 19).expect("compresses"));
    let name = format!(
        "{}.zst",
        plain.file_name().expect("a name").to_string_lossy()
    );
    let path = dir.join(name);
    fs::write(&path, bytes).expect("writes");
    path
}

fn options() -> ResumeOptions {
    ResumeOptions::new(DEFAULT_TRUNCATION)
}

#[test]
fn a_compressed_rollout_reads_and_resumes_as_its_text_from_a_file_and_a_stream() {
    let dir = temp_dir();
    for name in EXAMPLES {
        let plain = example(name);
        let zst = compress(&plain, dir.path());
        let read_plain = Rollout::read_file(&plain, ReadMode::Lenient).expect("reads");
        let read_zst = Rollout::read_file(&zst, ReadMode::Lenient).expect("reads");
        assert_eq!(read_zst.report, read_plain.report, "{name}");
        assert_eq!(read_zst.lines.len(), read_plain.lines.len(), "{name}");

        let full = resume_file(&plain, &options()).expect("resumes");
        let from_file = resume_file(&zst, &options()).expect("resumes");
        let from_stream =
            resume_reader(fs::File::open(&zst).expect("opens"), "<stdin>", &options())
                .expect("resumes");
        for resumed in [&from_file, &from_stream] {
            assert_eq!(jsons(resumed.history()), jsons(full.history()), "{name}");
            assert_eq!(resumed.report(), full.report(), "{name}");
        }
    }
}

#[test]
fn a_snapshot_covers_the_text_so_it_stands_for_the_plain_and_the_compressed_file() {
    let dir = temp_dir();
    let plain = dir.path().join("rollout.jsonl");
    fs::copy(example("codex-session.jsonl"), &plain).expect("copies");
    let zst = compress(&plain, dir.path());
    let snapshot = dir.path().join("from-zst.snap");
    resume_file(&zst, &options().snapshot_ready())
        .expect("resumes")
        .write_snapshot(&snapshot)
        .expect("snapshot written");
    let full = resume_file(&plain, &options()).expect("resumes");
    for rollout in [&zst, &plain] {
        let through = resume_file(rollout, &options().with_snapshot(&snapshot)).expect("resumes");
        assert!(
            matches!(through.source(), ResumeSource::Snapshot { .. }),
            "{}: {:?}",
            rollout.display(),
            through.source()
        );
        assert_eq!(jsons(through.history()), jsons(full.history()));
    }
    // The same through a stream, which checks the prefix as it reads it.
    let streamed = resume_reader(
        fs::File::open(&zst).expect("opens"),
        "<stdin>",
        &options().with_snapshot(&snapshot),
    )
    .expect("resumes");
    assert!(matches!(streamed.source(), ResumeSource::Snapshot { .. }));
    assert_eq!(jsons(streamed.history()), jsons(full.history()));
}

#[test]
fn damaged_or_cut_short_compressed_data_is_an_error_naming_the_file() {
    let dir = temp_dir();
    let zst = compress(&example("codex-session.jsonl"), dir.path());
    let bytes = fs::read(&zst).expect("reads");
    let cut = dir.path().join("cut.jsonl.zst");
    fs::write(&cut, &bytes[..bytes.len() - 5]).expect("writes");
    // A frame with zstd's content checksum, one byte changed: the checksum catches it. (Damage
    // to a frame without one can decompress to damaged text, which the reader reports as the
    // lines it spoils.)
    let text = fs::read(example("codex-session.jsonl")).expect("reads");
    let mut encoder = zstd::Encoder::new(Vec::new(), 3).expect("an encoder");
    encoder.include_checksum(true).expect("checksummed");
    std::io::Write::write_all(&mut encoder, &text).expect("compresses");
    let mut flipped = encoder.finish().expect("compressed");
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x01;
    let damaged = dir.path().join("damaged.jsonl.zst");
    fs::write(&damaged, &flipped).expect("writes");
    for path in [&cut, &damaged] {
        let error = resume_file(path, &options()).expect_err("not readable");
        let RolloutError::Io {
            path: named,
            source,
        } = &error
        else {
            panic!("{}: {error:?}", path.display());
        };
        assert_eq!(named, path);
        assert!(
            source.to_string().contains("does not decompress"),
            "{}: {source}",
            path.display()
        );
    }
}

#[test]
fn a_compressed_paginated_root_reads_with_its_ordinals() {
    // Codex compresses no file that has a base or that another file continues: a compressed
    // paginated file is a whole thread.
    let (file, _) = root();
    let home = Home::new();
    let plain = home.write("10-00-00", T, &file.text);
    let zst = compress(&plain, plain.parent().expect("a directory"));
    let read = Rollout::read_file(&zst, ReadMode::Strict).expect("reads");
    let pagination = read.report.pagination.as_ref().expect("paginated");
    assert_eq!(pagination.last_ordinal, Some(file.next - 1));
    assert!(pagination.is_sound());
    let resumed = resume_file(&zst, &options()).expect("resumes");
    let full = resume_file(&plain, &options()).expect("resumes");
    assert_eq!(jsons(resumed.history()), jsons(full.history()));
}

#[test]
fn a_session_does_not_append_to_a_compressed_rollout() {
    let dir = temp_dir();
    let zst = compress(&example("session.jsonl"), dir.path());
    let before = fs::read(&zst).expect("reads");
    let Err(error) = Session::resume(&zst, &options(), Durability::Flush) else {
        panic!("a compressed file was resumed for writing");
    };
    assert!(
        matches!(&error, Error::RolloutWrite(write) if write.step == WriteStep::Compressed),
        "{error:?}"
    );
    assert!(error.to_string().contains("zstd-compressed"), "{error}");
    assert_eq!(
        fs::read(&zst).expect("reads"),
        before,
        "the file is untouched"
    );
}
