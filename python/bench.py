#!/usr/bin/env python3
"""Random playouts per second, stepped from Python, side by side in one run:
every astragal game through the package, and OpenSpiel's own C++ backgammon
(``pyspiel.load_game("backgammon")``) stepped the same way; then whole playouts
inside the engine (one call each), the PettingZoo step rate, and the games
through their OpenSpiel wrappers; PettingZoo's own ``connect_four_v3`` stepped
by the same AEC loop (it needs ``pip install pygame-ce``); and the batched
vector environment's steps/s (``astragal_engine.vector``).

    python3 python/bench.py [--seconds 2]

Each figure runs for about ``--seconds`` on one core; the table is Markdown,
for the package's README.
"""

import argparse
import random
import sys
import time

import astragal_engine as astragal


def rate(run_one, seconds):
    """Playouts (or steps) per second of `run_one`, which returns how many moves it
    played; runs whole playouts until `seconds` have passed."""
    done = moves = 0
    start = time.perf_counter()
    while True:
        moves += run_one(done)
        done += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed, moves / elapsed


def astragal_from_python(game):
    rng = random.Random(1)

    def one(i):
        state = astragal.new_game(game, seed=i)
        moves = 0
        while True:
            to_act = state.to_act
            if not to_act:
                return moves
            seat = to_act[0]
            actions = state.legal_actions(seat)
            state.play_action(actions[rng.randrange(len(actions))], seat)
            moves += 1

    return one


def astragal_in_engine(game):
    def one(i):
        return astragal.new_game(game, seed=i).random_playout(i)

    return one


def openspiel_from_python(game):
    import pyspiel

    rng = random.Random(1)

    def one(_):
        state = game.new_initial_state()
        moves = 0
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes())
                state.apply_action(rng.choices(outcomes, probs)[0])
            elif state.is_simultaneous_node():
                state.apply_actions([rng.choice(state.legal_actions(p)) for p in range(game.num_players())])
                moves += 1
            else:
                actions = state.legal_actions()
                state.apply_action(actions[rng.randrange(len(actions))])
                moves += 1
        return moves

    assert pyspiel
    return one


def aec_steps(make_env):
    """An AEC loop as PettingZoo's docs write it, a uniformly random legal action
    from the mask each step: the same loop for every environment measured."""
    import numpy as np

    env = make_env()
    rng = random.Random(1)

    def one(i):
        env.reset(seed=i)
        steps = 0
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            # A 0/1 int8 mask read as bools: numpy finds those five times
            # faster than the int8 ones (Uptick's mask has 4,480 entries).
            legal = obs["action_mask"].view(np.bool_).nonzero()[0]
            env.step(int(legal[rng.randrange(len(legal))]))
            steps += 1
        return steps

    return one


def pettingzoo_steps(game):
    from astragal_engine import pettingzoo as pz

    return aec_steps(lambda: pz.env(game))


def connect_four_steps():
    """PettingZoo's own connect_four_v3 (needs pygame-ce, which its module
    imports); None when it cannot be imported."""
    try:
        from pettingzoo.classic import connect_four_v3
    except ImportError as e:
        print(f"(connect_four_v3 cannot be imported: {e}; pip install pygame-ce)", file=sys.stderr)
        return None
    return aec_steps(connect_four_v3.env)


def vector_steps(game, num_envs):
    """Environment steps/s of a VectorEnv of `num_envs` games, random legal
    actions drawn in Rust (sample_actions): the batch's own cost, no policy's."""
    from astragal_engine.vector import VectorEnv

    env = VectorEnv(game, num_envs)
    env.reset(seed=1)

    def one(_):
        env.step(env.sample_actions())
        return num_envs

    return one


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="time per figure (default 2)")
    parser.add_argument("--num-envs", type=int, default=256, help="games per batch for the vector rows (default 256)")
    args = parser.parse_args()
    try:
        import pyspiel

        import astragal_engine.openspiel  # noqa: F401
    except ImportError:
        pyspiel = None
        print("(OpenSpiel is not installed: pip install open_spiel; its rows are left out)", file=sys.stderr)

    print(f"astragal {astragal.ENGINE_VERSION}, Python {sys.version.split()[0]}, {args.seconds} s per figure, one core\n")
    print(
        "| game | stepped from Python: playouts/s | moves/s | in the engine: playouts/s | PettingZoo AEC: steps/s "
        "| OpenSpiel wrapper: playouts/s | decisions/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for game in astragal.GAME_IDS:
        py_games, py_moves = rate(astragal_from_python(game), args.seconds)
        engine_games, _ = rate(astragal_in_engine(game), args.seconds)
        _, pz_steps = rate(pettingzoo_steps(game), args.seconds)
        wrapped = wrapped_moves = "-"
        if pyspiel is not None:
            wrapped_games, wrapped_decisions = rate(openspiel_from_python(pyspiel.load_game(f"astragal_{game}")), args.seconds)
            wrapped, wrapped_moves = f"{wrapped_games:,.0f}", f"{wrapped_decisions:,.0f}"
        print(
            f"| {game} | {py_games:,.0f} | {py_moves:,.0f} | {engine_games:,.0f} | {pz_steps:,.0f} | {wrapped} | {wrapped_moves} |"
        )
    connect_four = connect_four_steps()
    c4 = "-"
    if connect_four is not None:
        _, c4_steps = rate(connect_four, args.seconds)
        c4 = f"{c4_steps:,.0f}"
    bg_games = bg_moves = "-"
    if pyspiel is not None:
        bg_games, bg_moves = (f"{x:,.0f}" for x in rate(openspiel_from_python(pyspiel.load_game("backgammon")), args.seconds))
    # Backgammon is stepped through pyspiel either way: its wrapper figures are
    # its own.
    print(f"| OpenSpiel backgammon (C++) | {bg_games} | {bg_moves} | - | - | {bg_games} | {bg_moves} |")
    print(f"| PettingZoo connect_four_v3 | - | - | - | {c4} | - | - |")

    print(f"\nBatched in Rust: astragal_engine.vector.VectorEnv, {args.num_envs} games a call, random legal actions drawn in Rust\n")
    print("| game | environment steps/s |")
    print("|---|---:|")
    for game in astragal.GAME_IDS:
        _, steps = rate(vector_steps(game, args.num_envs), args.seconds)
        print(f"| {game} | {steps:,.0f} |")


if __name__ == "__main__":
    main()
