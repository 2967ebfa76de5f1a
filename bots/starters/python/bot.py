#!/usr/bin/env python3
"""A starter bot for astragal, in Python, standard library only.

Copy this folder and change `choose`. The protocol is in docs/protocol.md; each
game's observation is documented in docs/rules/<game>.md. This bot plays the Game
of Ur with a one-move heuristic (it beats the built-in `first`) and any other game
with a random legal move.
"""

import json
import random
import shlex
import sys

NAME = "starter-python"
rng = random.Random()


def parse(line):
    """A protocol line as (command, fields). `obs=` takes the rest of the line."""
    head, sep, obs = line.partition(" obs=")
    words = shlex.split(head)
    fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    if sep:
        fields["obs"] = obs
    return (words[0] if words else ""), fields


BIRDS = ["swallow", "storm", "raven", "rooster", "eagle"]


def ur_score(obs, move):
    """How good a move of the Game of Ur looks, from the observation alone."""
    if move == "gamble":
        return -1.0
    if ":" in move:  # tablet rules: <bird>:<house>
        bird, _, to = move.partition(":")
        frm = obs["pieces"][obs["seat"]][BIRDS.index(bird)]
    else:  # finkel rules: <from>-<to>
        frm, _, to = move.partition("-")
        frm = int(frm)
    if to == "off":
        return 20.0
    to = int(to)
    score = to / 20
    if 5 <= to <= 12 and to in obs["pieces"][1 - obs["seat"]]:
        score += 12  # a capture sends the other piece home
    if to in (4, 8, 14):
        score += 8  # rosettes are safe and pay
    if frm == 0:
        score += 4  # enter pieces while the roll allows
    if 5 <= frm <= 12 and frm != 8:
        score += 2  # leave the shared row, where pieces are taken
    theirs = obs["pieces"][1 - obs["seat"]]
    if 5 <= to <= 12 and to != 8 and any(1 <= to - t <= 4 for t in theirs):
        score -= 3  # within reach of a piece behind
    return score


def choose(game, obs, legal):
    if game == "ur":
        return max(legal, key=lambda m: ur_score(obs, m))
    return rng.choice(legal)


def main():
    game = None
    for line in sys.stdin:
        command, f = parse(line.rstrip("\r\n"))
        if command == "astragal":
            print(f"id name={NAME} author=you", flush=True)
            print("astragalok version=1", flush=True)
        elif command == "newgame":
            game = f["game"]
            rng.seed(int(f.get("salt", "0")))  # the same game plays the same way
        elif command == "isready":
            print("readyok", flush=True)
        elif command == "go":
            move = choose(game, json.loads(f["obs"]), f["legal"].split(","))
            print(f"move id={f['id']} move={move}", flush=True)
        elif command == "quit":
            return
        # Everything else (played, gameover, setoption, new commands) is ignored.


if __name__ == "__main__":
    main()
