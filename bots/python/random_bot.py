#!/usr/bin/env python3
"""An astragal bot that plays a uniformly random legal move."""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from astragal_bot import run  # noqa: E402

rng = random.Random(int(os.environ.get("ASTRAGAL_BOT_SEED", "1")))


def choose(obs, legal, info):
    return rng.choice(legal)


def set_option(name, value):
    if name == "seed":
        rng.seed(int(value))


if __name__ == "__main__":
    run(choose, name="py-random", author="astragal examples",
        options=[{"name": "seed", "type": "spin", "default": 1, "min": 0, "max": 2**31}],
        on_option=set_option)
