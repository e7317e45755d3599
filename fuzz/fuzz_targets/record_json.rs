//! Arbitrary bytes as item JSON and as rollout lines: an error or a stored item, never a panic;
//! whatever was stored projects, and projects the same way twice.
#![no_main]

use agent_history::{
    History, Modalities, ProjectionOptions, READER_LABEL, ResumeOptions, resume_reader,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut history = History::new();
    if let Ok(text) = std::str::from_utf8(data) {
        for line in text.lines() {
            let _ = history.record_json(line);
        }
    }
    history.assert_invariants();
    let options = ProjectionOptions::for_modalities(Modalities::TEXT);
    let first = history.project(&options).expect("lenient never fails");
    let second = history.project(&options).expect("lenient never fails");
    assert_eq!(first.to_json_array(), second.to_json_array());

    // Bytes without a session_meta line are a typed error, not a panic.
    if let Ok(resumed) = resume_reader(data, READER_LABEL, &ResumeOptions::default()) {
        resumed.history().assert_invariants();
        let _ = resumed.history().project(&options.strict());
    }
});
