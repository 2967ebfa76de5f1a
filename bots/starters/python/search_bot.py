#!/usr/bin/env python3
"""The starter bot that searches: the same protocol loop as bot.py, but each
move is chosen by simulating games with the astragal package (`pip install
./python` from the repository), on the rules the referee plays.

At each `go` it rebuilds the position from the observation's `position` (what
this seat may know: no dice to come, no other seat's secrets), then for every
legal move plays PLAYOUTS random games from a fresh sample of what it cannot
see (`determinize`), and plays the move that did best on average. It stops
early when its share of the move's time is spent (40% of `movetime`). This is flat
Monte Carlo: no tree, no knowledge of any game, and it beats the plain starter
at every game (figures in README.md).
"""

import json
import os
import random
import shlex
import sys
import time

try:
    import astragal_engine as astragal
except ImportError:
    sys.stderr.write("search_bot.py needs the astragal package: pip install ./python (from the repository)\n")
    raise

NAME = "starter-python-search"
# Random games per decision, shared among the legal moves (at least 4 each).
PLAYOUTS = int(os.environ.get("SEARCH_PLAYOUTS", "2000"))
rng = random.Random()


def parse(line):
    """A protocol line as (command, fields). `obs=` takes the rest of the line."""
    head, sep, obs = line.partition(" obs=")
    words = shlex.split(head)
    fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    if sep:
        fields["obs"] = obs
    return (words[0] if words else ""), fields


def budget_seconds(f):
    """The time to spend on this move: a share of `movetime`, or of the clock
    with its increment, so that a slow machine searches less instead of
    losing on time."""
    if "movetime" in f:
        return int(f["movetime"]) / 1000 * 0.4
    if "time" in f:
        left, inc = int(f["time"]) / 1000, int(f.get("inc", "0")) / 1000
        return min(left * 0.4, left / 30 + inc * 0.8)
    return float("inf")


def choose(game, options, seats, seat, obs, legal, budget=float("inf")):
    if len(legal) == 1:
        return legal[0]
    started = time.monotonic()
    known = astragal.from_position(game, obs["position"], options, seats=seats, seed=rng.getrandbits(64))
    per_move = max(4, PLAYOUTS // len(legal))
    totals = [0.0] * len(legal)
    played = 0
    # One playout per move a round, so that a search cut short by its time
    # budget has given every move the same number.
    while played < per_move:
        for i, move in enumerate(legal):
            # A world consistent with what this seat sees, with dice to come drawn
            # afresh: the bot never learns the real future.
            world = known.determinize(seat, rng.getrandbits(64))
            world.play(move, seat)
            world.random_playout(rng.getrandbits(64))
            # +1 for first alone, -1 for last alone (astragal_engine.rewards_of).
            totals[i] += astragal.rewards_of(world.outcome())[seat]
        played += 1
        if time.monotonic() - started > budget:
            break
    best = max(range(len(legal)), key=lambda i: totals[i])
    return legal[best]


def main():
    game, options, seats, seat = None, [], 2, 0
    for line in sys.stdin:
        command, f = parse(line.rstrip("\r\n"))
        if command == "astragal":
            print(f"id name={NAME} author=you", flush=True)
            print("astragalok version=1", flush=True)
        elif command == "newgame":
            game = f["game"]
            options = [o for o in f.get("options", "").split(",") if o]
            seats, seat = int(f.get("seats", "2")), int(f.get("seat", "0"))
            rng.seed(int(f.get("salt", "0")))  # the same game plays the same way
        elif command == "isready":
            print("readyok", flush=True)
        elif command == "go":
            obs = json.loads(f["obs"])
            legal = f["legal"].split(",")
            move = choose(game, options, seats, int(obs.get("seat", seat)), obs, legal, budget_seconds(f))
            print(f"move id={f['id']} move={move}", flush=True)
        elif command == "quit":
            return


if __name__ == "__main__":
    main()
