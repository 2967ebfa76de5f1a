#!/usr/bin/env bash
# Builds this bot, then checks it against the protocol: `referee check-bot`, on
# every game. REFEREE names the referee program (default: `referee` on PATH, else
# the workspace's target/release/referee).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
referee="${REFEREE:-$(command -v referee || echo "$here/../../../target/release/referee")}"
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bot="$(cargo metadata --format-version 1 --no-deps --manifest-path "$here/Cargo.toml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/astragal-starter"
for game in ur uptick utara cuatto spartan; do
  "$referee" check-bot "$bot" --game "$game"
done
