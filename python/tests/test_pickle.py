"""States and environments pickle and come back equal, at every step of every
game: for checkpoints, multiprocessing workers and OpenSpiel's serialization."""

import pickle
import random

import numpy as np
import pyspiel
import pytest

import astragal_engine as astragal
import astragal_engine.openspiel  # noqa: F401  (registers the games)
from astragal_engine import pettingzoo as pz

CASES = [(g, None, None) for g in astragal.GAME_IDS] + [
    ("utara", "blocks=true,moon=half,sun=high", 4),
    ("ur", "rules=finkel", None),
    ("cuatto", "setup=full", 3),
]


def round_trip(x):
    return pickle.loads(pickle.dumps(x))


@pytest.mark.parametrize("chance", ["seeded", "explicit"])
@pytest.mark.parametrize("game,options,seats", CASES)
def test_a_state_pickles_equal_at_every_step_and_plays_on_alike(game, options, seats, chance):
    rng = random.Random(f"{game}{options}{chance}")
    state = astragal.new_game(game, options, seats=seats, seed=7, chance=chance)
    steps = 0
    while True:
        copy = round_trip(state)
        assert copy == state
        assert copy.position() == state.position()
        assert copy.pending_chance == state.pending_chance
        assert copy.to_act == state.to_act and copy.is_chance == state.is_chance
        if state.is_over:
            assert copy.outcome() == state.outcome()
            break
        if state.is_chance:
            outcome = rng.randrange(len(state.chance_outcomes()))
            state.apply_chance(outcome)
            copy.apply_chance(outcome)
        else:
            seat = rng.choice(state.to_act)
            action = rng.choice(state.legal_actions(seat))
            state.play_action(action, seat)
            copy.play_action(action, seat)
        # Seeded dice to come travel with the pickle: the copy throws the same.
        assert copy == state
        steps += 1
    assert steps > 0


def test_two_states_that_differ_only_in_the_dice_to_come_are_not_equal():
    a = astragal.new_game("ur", seed=1)
    b = astragal.from_position("ur", a.public_position(0), seed=2)
    assert a != b
    assert round_trip(a) == a and round_trip(a) != b


def observations_equal(a, b):
    assert set(a) == set(b)
    for key in a:
        assert np.array_equal(a[key], b[key]), key


@pytest.mark.parametrize("game,options,seats", CASES)
def test_the_aec_environment_pickles_equal_at_every_step(game, options, seats):
    env = pz.env(game, options, seats)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for agent in env.agent_iter(max_iter=400):
        copy = round_trip(env)
        assert copy.agent_selection == env.agent_selection
        assert copy.state_ == env.state_
        assert copy._cumulative_rewards == env._cumulative_rewards
        assert copy.terminations == env.terminations and copy.truncations == env.truncations
        for a in env.agents:
            observations_equal(copy.observe(a), env.observe(a))
        obs, _, term, trunc, _ = env.last()
        action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
        copy.step(action)
        assert copy.state_ == env.state_ and copy.rewards == env.rewards


@pytest.mark.parametrize("game", ["spartan", "ur"])
def test_the_parallel_environment_pickles_equal_at_every_step(game):
    env = pz.parallel_env(game)
    observations, _ = env.reset(seed=5)
    rng = np.random.default_rng(1)
    while env.agents:
        copy = round_trip(env)
        assert copy.state_ == env.state_ and copy.agents == env.agents
        actions = {a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"]))) if observations[a]["action_mask"].any() else 0 for a in env.agents}
        observations, rewards, *_ = env.step(actions)
        again, rewards_again, *_ = copy.step(actions)
        assert rewards_again == rewards
        for a in observations:
            observations_equal(again[a], observations[a])


SETTINGS = [(g, {}) for g in astragal.GAME_IDS] + [
    ("utara", {"players": 4, "options": "blocks=true,moon=half,sun=high"}),
    ("cuatto", {"players": 3, "setup": "full"}),
    ("ur", {"rules": "finkel"}),
    ("uptick", {"size": 4, "reserve": 3}),
]


@pytest.mark.parametrize("game,params", SETTINGS)
def test_serialize_game_and_state_round_trips_at_every_step(game, params):
    g = pyspiel.load_game(f"astragal_{game}", params)
    rng = random.Random(game)
    state = g.new_initial_state()
    while True:
        text = pyspiel.serialize_game_and_state(g, state)
        g2, s2 = pyspiel.deserialize_game_and_state(text)
        assert str(g2) == str(g)
        assert s2.history() == state.history() and str(s2) == str(state)
        s3 = round_trip(state)
        assert str(s3) == str(state) and s3.history() == state.history()
        if state.is_terminal():
            assert s2.returns() == state.returns()
            break
        if state.is_chance_node():
            state.apply_action(rng.choice([o for o, _ in state.chance_outcomes()]))
        elif state.is_simultaneous_node():
            state.apply_actions([rng.choice(state.legal_actions(p) or [0]) for p in range(g.num_players())])
        else:
            state.apply_action(rng.choice(state.legal_actions()))
