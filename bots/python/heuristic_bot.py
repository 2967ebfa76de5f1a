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
        return -1  # a sure move is worth more than a coin flip
    if ":" in move:
        bird, _, to = move.partition(":")
        birds = ["swallow", "storm", "raven", "rooster", "eagle"]
        frm = obs["pieces"][obs["seat"]][birds.index(bird)]
    else:
        frm, _, to = move.partition("-")
        frm = int(frm)
    if to == "off":
        return 20
    to = int(to)
    opponent = obs["pieces"][1 - obs["seat"]]
    score = 0.0
    if 5 <= to <= 12 and to in opponent:
        score += 12  # capture: the opponent starts that piece again
    if to in (4, 8, 14):
        score += 8  # safe, and collects counters (tablet) or rolls again (finkel)
    if frm == 0:
        score += 4  # get pieces onto the board while their launch roll is here
    if 5 <= frm <= 12 and frm != 8:
        score += 2  # leave the shared row, where pieces can be taken
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
    kind = spot[-1] if spot[-1] in "ps" else ""
    spot = spot.rstrip("ps")
    if spot.startswith("b"):
        land = int(spot[1:]) + int(die) - 6  # bridge slot b6 is next to position 1
        if land <= 0:
            return 0.1
    else:
        land = int(spot) + int(die)
    if land > obs["length"]:
        return 20  # off the board
    me = obs["seat"]
    mine = [c.rstrip("ps") for c in obs["teams"][me]].count(str(land))
    others = sum(1 for t, team in enumerate(obs["teams"]) if t != me for c in team if c.rstrip("ps") == str(land))
    score = land / 10
    if mine >= 1:
        score += 4  # a block of two: safe, and it hits whoever else is there
        score += 6 * others
    if kind == "s" and others:
        score += 6 * others  # a strong checker hits on landing
    if mine == 0 and others == 0:
        score -= 1  # a lone checker can be hit
    return score


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
