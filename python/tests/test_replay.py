"""Games the referee played replay identically through the package: every
state after every move, the final position and the outcome."""

import json
import re
import subprocess

import pytest

import astragal_engine as astragal

GAMES = [
    ("utara", [], ["builtin:random", "builtin:greedy", "builtin:random"]),
    ("ur", [], ["builtin:random", "builtin:greedy"]),
    ("ur", ["rules=finkel"], ["builtin:greedy", "builtin:random"]),
    ("uptick", ["size=6"], ["builtin:random", "builtin:greedy"]),
    ("cuatto", ["setup=full"], ["builtin:greedy", "builtin:random", "builtin:random", "builtin:random"]),
    ("spartan", [], ["builtin:random", "builtin:greedy"]),
]

PLY = re.compile(r"^\d+\. seat (\d+) plays (\S+) in \d+ ms$")


def shown_states(text):
    """The boards `referee show` draws: at the start and after each move."""
    boards, current = [], None
    for line in text.splitlines():
        if line == "start" or PLY.match(line):
            if current is not None:
                boards.append("\n".join(current).strip("\n"))
            current = []
        elif line.startswith("result ("):
            break
        elif current is not None:
            current.append(line)
    if current is not None:
        boards.append("\n".join(current).strip("\n"))
    return boards


@pytest.mark.parametrize("game,options,bots", GAMES)
@pytest.mark.parametrize("seed", [3, 1234567890123])
def test_a_refereed_game_replays_state_by_state(referee, tmp_path, game, options, bots, seed):
    record = tmp_path / "games.jsonl"
    args = [str(referee), "play", "--game", game, "--seed", str(seed), "--record", str(record), "--movetime", "2000"]
    for opt in options:
        args += ["--opt", opt]
    for bot in bots:
        args += ["--bot", bot]
    subprocess.run(args, check=True, capture_output=True, timeout=300)
    shown = subprocess.run([str(referee), "show", str(record)], check=True, capture_output=True, text=True, timeout=60).stdout
    boards = shown_states(shown)
    rec = json.loads(record.read_text().splitlines()[0])

    state = astragal.new_game(game, rec["options"], seats=len(rec["seats"]), seed=rec["seed"])
    assert state.options == rec["options"]
    mine = [state.render().strip("\n")]
    for ply in rec["moves"]:
        state.play(ply["move"], ply["seat"])
        mine.append(state.render().strip("\n"))
    assert len(boards) == len(mine) == len(rec["moves"]) + 1
    for ply, (theirs, ours) in enumerate(zip(boards, mine)):
        assert ours.strip() == theirs.strip(), f"state after move {ply} differs"
    assert state.position() == rec["final_position"]
    assert state.outcome() == rec["outcome"]
