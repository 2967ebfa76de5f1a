#!/usr/bin/env bash
# Builds this bot with its manifest's `build` line, then checks its `run` line
# against the protocol: `referee check-bot`, on every game, in a copy of this
# folder (as a ladder's worker builds in a copy), so that nothing built is left
# here to be uploaded. REFEREE names the referee program (default: `referee` on
# PATH, else the workspace's target/release/referee).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
referee="${REFEREE:-$(command -v referee || echo "$here/../../../target/release/referee")}"
field() { sed -n "s/^$1 = \"\(.*\)\"\$/\1/p" "$here/astragal.toml"; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -R "$here/." "$work/"
cd "$work"
eval "$(field build)"
for game in ur uptick utara cuatto spartan; do
  "$referee" check-bot "$(field run)" --game "$game"
done
