#!/usr/bin/env bash
# Checks this bot against the protocol: `referee check-bot`, on every game.
# REFEREE names the referee program (default: `referee` on PATH, else the
# workspace's target/release/referee).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
referee="${REFEREE:-$(command -v referee || echo "$here/../../../target/release/referee")}"
for game in ur uptick utara cuatto spartan; do
  "$referee" check-bot "node $here/bot.js" --game "$game"
done
