#!/usr/bin/env bash
# Seeds fuzz/corpus/<target>/ (not committed: fuzz/corpus is ignored) from real inputs, so that
# the targets that read files start from valid ones: the bundled sessions (examples/rollouts/),
# the hand-written rollouts of fuzz/seeds/rollouts/ (every item kind, compactions and a rollback,
# the legacy format), a compressed rollout (fuzz/seeds/compressed/), the Codex-shaped rollouts of the goldens
# (tests/fixtures/snapshot-v{2,3,4,5}.jsonl), snapshots of all of them written by the command-line
# tool, and the golden snapshot tests/fixtures/snapshot-v6.snap (with an earlier state, a
# world-state baseline and an open turn); the snapshots the tool writes are checked with `agent-history verify` first. Run from
# anywhere; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=fuzz/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$corpus"/{record_json,rollout_read,resume_snapshot,snapshot_file}

cargo build --quiet --bin agent-history
# Where cargo put it: CARGO_TARGET_DIR when set (a CI run with a target directory of its own).
cli="${CARGO_TARGET_DIR:-target}/debug/agent-history"

# A snapshot-file input: the mode byte, the 256 header bytes, the payload (after byte 4096).
snapshot_input() { # mode file output
  { printf "\\$(printf '%03o' "$1")"; head -c 256 "$2"; tail -c +4097 "$2"; } >"$3"
}

snapshots=(tests/fixtures/snapshot-v6.snap tests/fixtures/snapshot-v6-claude-code.snap)
for rollout in examples/rollouts/*.jsonl fuzz/seeds/rollouts/*.jsonl tests/fixtures/snapshot-v{2,3,4,5}.jsonl; do
  name=$(basename "$rollout" .jsonl)
  # rollout_read: three option bytes (session_meta prefix, line limit, max reported), the bytes.
  { printf '\000\000\000'; cat "$rollout"; } >"$corpus/rollout_read/$name"
  { printf '\000\020\002'; cat "$rollout"; } >"$corpus/rollout_read/$name-limits"
  # record_json: the items of the response_item lines, one a line.
  sed -n 's/^.*"type":"response_item","payload":\(.*\)}\r*$/\1/p' "$rollout" >"$corpus/record_json/$name"
  # resume_snapshot: where to cut for the snapshot, then the bytes.
  { printf '\007'; cat "$rollout"; } >"$corpus/resume_snapshot/$name"
  for truncation in tokens:10000 bytes:64; do
    "$cli" snapshot --quiet "$rollout" -o "$work/$name-${truncation/:/-}.snap" --truncation "$truncation"
    snapshots+=("$work/$name-${truncation/:/-}.snap")
  done
done
# Every snapshot the tool wrote is a valid one (header, digests, archive), so that snapshot_file
# mutates from archives that open: `verify` fails, and with it this script, on one that does not.
"$cli" verify "$work" >/dev/null
# Inputs that are not text (gzip and zstd magic, a NUL byte), which the reader names as such.
printf '\000\000\000\037\213\010\000' >"$corpus/rollout_read/gzip"
printf '\000\000\000\050\265\057\375' >"$corpus/rollout_read/zstd"
# A compressed rollout (examples/rollouts/session.jsonl through `zstd -19`), read as its text.
{ printf '\000\000\000'; cat fuzz/seeds/compressed/session.jsonl.zst; } >"$corpus/rollout_read/session-zst"
{ printf '\007'; printf '{"type":"x"\000}\n'; cat examples/rollouts/interrupted.jsonl; } >"$corpus/resume_snapshot/nul"
for snapshot in "${snapshots[@]}"; do
  name=$(basename "$snapshot" .snap)
  snapshot_input 1 "$snapshot" "$corpus/snapshot_file/$name-fixed"
  snapshot_input 0 "$snapshot" "$corpus/snapshot_file/$name-raw"
done
# stream_events: a format byte (0 Responses, 1 Chat Completions, 2 Anthropic), a chunk size, the
# events; from the hand-written transcripts of tests/fixtures/stream/.
mkdir -p "$corpus/stream_events"
for transcript in tests/fixtures/stream/*.sse; do
  name=$(basename "$transcript" .sse)
  case "$name" in
    chat_*) format='\001' ;;
    anthropic_*) format='\002' ;;
    *) format='\000' ;;
  esac
  { printf "$format\007"; cat "$transcript"; } >"$corpus/stream_events/$name"
done
# transcript_read: a line-limit byte (0: the default), a flags byte (0: no record before), the
# transcript; from the hand-built Claude Code fixtures of tests/fixtures/claude-code/.
mkdir -p "$corpus/transcript_read"
for transcript in tests/fixtures/claude-code/*.jsonl; do
  { printf '\000\000'; cat "$transcript"; } >"$corpus/transcript_read/$(basename "$transcript" .jsonl)"
done
echo "seeded: $(ls "$corpus"/record_json | wc -l) record_json, $(ls "$corpus"/rollout_read | wc -l) rollout_read, $(ls "$corpus"/resume_snapshot | wc -l) resume_snapshot, $(ls "$corpus"/snapshot_file | wc -l) snapshot_file inputs"
