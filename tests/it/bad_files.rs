//! Files of the wrong kind, given where a rollout or a snapshot is expected: the error is typed
//! and its message names what the user gave and what it looks like, not internals (the first
//! bytes as numbers, the memory map's errno, a hidden temporary file).

use crate::common;

use std::fs;

use agent_history::{
    BinaryContent, READER_LABEL, ResumeOptions, RolloutError, SnapshotError, SnapshotOptions,
    SnapshotStep, open_snapshot, resume_file, resume_reader,
};
use common::{item_line, meta_line, temp_dir, user};

fn open_error(bytes: &[u8]) -> (std::path::PathBuf, SnapshotError, tempfile::TempDir) {
    let dir = temp_dir();
    let path = dir.path().join("given.snap");
    fs::write(&path, bytes).unwrap();
    let error = open_snapshot(&path, SnapshotOptions::untrusted()).expect_err("not a snapshot");
    (path, error, dir)
}

#[test]
fn a_rollout_opened_as_a_snapshot_is_not_a_snapshot() {
    let text = format!("{}\n{}\n", meta_line(), item_line(&user("hi")));
    let (path, error, _dir) = open_error(text.as_bytes());
    assert!(matches!(error, SnapshotError::BadMagic { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "{} is not a snapshot (it looks like JSON, a rollout perhaps)",
            path.display()
        )
    );
}

#[test]
fn compressed_and_empty_files_opened_as_snapshots_say_what_they_look_like() {
    for (bytes, looks) in [
        (
            &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3][..],
            "it looks gzip-compressed",
        ),
        (
            &[0x28, 0xb5, 0x2f, 0xfd, 0, 0x58][..],
            "it looks zstd-compressed",
        ),
        (&[][..], "it is empty or starts with zero bytes"),
        (b"AGX", "it does not start with the snapshot magic"),
    ] {
        let (path, error, _dir) = open_error(bytes);
        assert!(matches!(error, SnapshotError::BadMagic { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            format!("{} is not a snapshot ({looks})", path.display())
        );
    }
}

#[test]
fn a_directory_opened_as_a_snapshot_is_a_directory() {
    let dir = temp_dir();
    let error = open_snapshot(dir.path(), SnapshotOptions::default()).expect_err("a directory");
    match &error {
        SnapshotError::Directory { path } => assert_eq!(path, dir.path()),
        other => panic!("expected Directory, got {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        format!("snapshot {} is a directory", dir.path().display())
    );
}

#[test]
fn a_failed_snapshot_write_names_the_target() {
    let dir = temp_dir();
    let rollout = dir.path().join("rollout.jsonl");
    fs::write(
        &rollout,
        format!("{}\n{}\n", meta_line(), item_line(&user("hi"))),
    )
    .unwrap();
    let resumed = resume_file(&rollout, &ResumeOptions::default().snapshot_ready()).unwrap();
    // The target's directory does not exist: the temporary file cannot be created.
    let target = dir.path().join("missing").join("out.snap");
    let error = resumed.write_snapshot(&target).expect_err("no directory");
    match &error {
        SnapshotError::Io { path, step, .. } => {
            assert_eq!(path, &target);
            assert_eq!(*step, SnapshotStep::CreateTemporary);
        }
        other => panic!("expected Io, got {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains(&target.display().to_string()), "{message}");
    // The whole chain, as the command line prints it: no temporary file's name anywhere.
    let mut chain = message.clone();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        chain.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    assert!(!chain.contains(".tmp-"), "{chain}");
    assert!(chain.contains("No such file or directory"), "{chain}");
}

#[test]
fn compressed_or_binary_rollouts_say_what_they_look_like() {
    let meta = format!("{}\n", meta_line());
    for (bytes, expected) in [
        (
            [&[0x1f, 0x8b, 8, 0][..], b"\x00\x00\n\xff\xfe"].concat(),
            BinaryContent::Gzip,
        ),
        // Compressed twice: the reader decompresses once, and finds zstd's magic again.
        (
            zstd::encode_all(&[0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x00, 0x58, b'\n'][..], 3)
                .expect("compresses"),
            BinaryContent::Zstd,
        ),
        (
            b"\x7fELF\x02\x01\x01\x00\x00\n".to_vec(),
            BinaryContent::NulBytes,
        ),
        // A rollout saved as UTF-16 (little- and big-endian): text, but not UTF-8.
        (
            [
                &[0xff, 0xfe][..],
                &"{\"type\"}\n"
                    .encode_utf16()
                    .flat_map(u16::to_le_bytes)
                    .collect::<Vec<u8>>(),
            ]
            .concat(),
            BinaryContent::Utf16,
        ),
        (
            [
                &[0xfe, 0xff][..],
                &"{\"type\"}\n"
                    .encode_utf16()
                    .flat_map(u16::to_be_bytes)
                    .collect::<Vec<u8>>(),
            ]
            .concat(),
            BinaryContent::Utf16,
        ),
    ] {
        let dir = temp_dir();
        let path = dir.path().join("given.jsonl");
        fs::write(&path, &bytes).unwrap();
        let error = resume_file(&path, &ResumeOptions::default()).expect_err("not text");
        match &error {
            RolloutError::NotText {
                path: named,
                looks_like,
            } => {
                assert_eq!(named, &path);
                assert_eq!(*looks_like, expected);
            }
            other => panic!("expected NotText, got {other:?}"),
        }
        assert_eq!(
            error.to_string(),
            format!("{} is not a Codex rollout: {expected}", path.display())
        );
        // A stream says the same.
        let streamed = resume_reader(&bytes[..], READER_LABEL, &ResumeOptions::default())
            .expect_err("not text");
        assert!(
            matches!(streamed, RolloutError::NotText { .. }),
            "{streamed:?}"
        );
    }
    // zstd's magic and then no zstd frame: the error says the data does not decompress.
    let fake = [&[0x28, 0xb5, 0x2f, 0xfd][..], b"\x04\x00\x58\n"].concat();
    let error = resume_reader(&fake[..], READER_LABEL, &ResumeOptions::default())
        .expect_err("not zstd data");
    assert!(
        matches!(&error, RolloutError::Io { source, .. }
            if source.to_string().starts_with("compressed (zstd) data does not decompress after 0 byte(s)")),
        "{error:?}"
    );
    // A rollout whose later lines hold a NUL byte is still a rollout: the bad line is skipped.
    let text = format!("{meta}{}\nnul\0here\n", item_line(&user("hi")));
    let resumed = resume_reader(text.as_bytes(), READER_LABEL, &ResumeOptions::default())
        .expect("a rollout with one bad line");
    assert_eq!(resumed.report().skip_counts.malformed(), 1);
}
