#!/usr/bin/env bash
# Serves this bot on a free port, checks it with `referee check-bot` on every game,
# and stops it. Needs `python3 -m pip install -r requirements.txt`. REFEREE names the
# referee program (default: `referee` on PATH, else the workspace's
# target/release/referee).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
referee="${REFEREE:-$(command -v referee || echo "$here/../../../target/release/referee")}"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 "$here/bot.py" "127.0.0.1:$port" &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
for game in ur uptick utara cuatto spartan; do
  "$referee" check-bot "grpc://127.0.0.1:$port" --game "$game"
done
