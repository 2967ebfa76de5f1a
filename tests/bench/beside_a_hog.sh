#!/bin/bash
# Games/s of a calm match run alone, beside a match whose bot computes a full
# core for 50 ms each move, and beside a match of the CPU hog (issue 76),
# interleaved. Needs cgroups (root), bubblewrap, and the binaries built:
#   cargo build --release -p astragal-referee -p astragal-bots
#   cargo build -p astragal-tests --bin attack_bot
# Usage: tests/bench/beside_a_hog.sh [ROUNDS] (from the workspace root).
set -euo pipefail
R=target/release/referee
B=$PWD/target/release/astragal-bot
A=$PWD/target/debug/attack_bot
ticks=$(mktemp)
calm() {
  "$R" match --game ur --games "${GAMES:-600}" --concurrency "${C:-2}" --sandbox isolated \
    --movetime 2000 --bot "$B --bot greedy" --bot "$B --bot random" 2>/dev/null |
    tail -1 | grep -o "([0-9.]* games/s)"
}
beside() { # $1: the background match's first bot; $2: its label
  "$R" match --game ur --games 100000 --sandbox none --movetime 2000 \
    --bot "$1" --bot "$B --bot random" >/dev/null 2>&1 &
  local background=$!
  sleep 2
  echo "$2: $(calm)"
  kill -INT "$background"
  wait "$background" || true
}
for _ in $(seq "${1:-6}"); do
  echo "alone: $(calm)"
  beside "$A --attack victim --ticks $ticks --work-ms 50" "beside a bot computing 50 ms a move"
  beside "$A --attack hog --ticks $ticks" "beside the hog"
done
rm -f "$ticks"
