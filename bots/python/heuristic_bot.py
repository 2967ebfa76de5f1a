#!/usr/bin/env python3
"""An astragal bot with a simple one-move heuristic per game.

It reads only its observation and its legal moves, like any bot. The heuristics are
deliberately plain; they are an example of reading observations, not a strong bot.
"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from astragal_bot import run  # noqa: E402

rng = random.Random(7)


def ur(obs, move):
    if move == "gamble":
        return 0.5 if obs.get("roll", 0) <= 1 else -1  # gamble away a poor roll
    piece, _, to = move.partition(":") if ":" in move else ("", "", move.split("-")[-1])
    if to == "off":
        return 10
    to = int(to)
    opponent = obs["pieces"][1 - obs["seat"]]
    score = 0.0
    if to in (4, 8, 14):
        score += 6  # rosettes collect counters (tablet) or give another roll (finkel)
    if 5 <= to <= 12 and to in opponent:
        score += 5  # capture on the shared row
    return score + to / 20


def uptick(obs, move):
    if "=" in move:  # placement: prefer low values, away from the edge
        cell, value = move.split("=")
        return 1 - int(value) / 10
    frm, to = move.replace("x", "-").split("-")
    theirs = {d["cell"]: d["value"] for d in obs["dice"] if d["seat"] != obs["seat"]}
    return 3 + theirs[to] if to in theirs else 0.5


def cuatto(obs, move):
    die, spot = move.split(":")
    spot = spot.rstrip("ps")
    if spot.startswith("b"):
        return int(die) / 10
    start = 0 if spot == "0" else int(spot)
    land = start + int(die)
    return (5 if land > obs["length"] else 0) + land / 10


def spartan(obs, move):
    # Reroll Necromancers when the graveyard is empty, keep everything else.
    dice = obs.get("your_dice", [])
    if obs["graveyard"][obs["seat"]] == 0 and 6 in dice:
        return 1 if move == "reroll:" + "6" * dice.count(6) else 0
    return 1 if move == "stand" else 0


def utara(obs, move):
    return 0  # paths are hard to judge by their start alone: play at random


HEURISTICS = {"ur": ur, "uptick": uptick, "cuatto": cuatto, "spartan": spartan, "utara": utara}


def choose(obs, legal, info):
    judge = HEURISTICS.get(info["game"])
    if judge is None or obs is None:
        return rng.choice(legal)
    best = max(judge(obs, m) + rng.random() * 1e-3 for m in legal)
    return next(m for m in legal if judge(obs, m) + 1e-3 >= best)


if __name__ == "__main__":
    run(choose, name="py-heuristic", author="astragal examples")
