"""The PettingZoo environments pass PettingZoo's own tests."""

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import astragal_engine as astragal
from astragal_engine import pettingzoo as pz
from astragal_engine.encoding import encoder_for

SETTINGS = [(g, None, None) for g in astragal.GAME_IDS] + [
    ("utara", "moon=dark,sun=rising,scoring=advanced", 3),
    ("cuatto", "setup=full", 4),
    ("ur", "rules=finkel", None),
]


@pytest.mark.parametrize("game,options,seats", SETTINGS)
def test_the_aec_environment_passes_pettingzoos_api_and_seed_tests(game, options, seats):
    api_test(pz.env(game, options, seats), num_cycles=400)
    seed_test(lambda: pz.env(game, options, seats), num_cycles=200)


@pytest.mark.parametrize("game", ["spartan", "ur"])
def test_the_parallel_environment_passes_pettingzoos_parallel_tests(game):
    parallel_api_test(pz.parallel_env(game), num_cycles=400)
    parallel_seed_test(lambda: pz.parallel_env(game))


@pytest.mark.parametrize("game", astragal.GAME_IDS)
def test_observations_are_in_their_space_and_masks_are_the_legal_moves(game):
    env = pz.env(game, raw_observation=True)
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    encoder = encoder_for(env.state_)
    steps = 0
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        assert env.observation_space(agent).contains(obs)
        if term or trunc:
            env.step(None)
            continue
        seat = env.agent_seat[agent]
        legal = env.state_.legal_actions(seat)
        assert np.flatnonzero(obs["action_mask"]).tolist() == legal
        assert info["observation"] == env.state_.observation(seat)
        # The engine's encoding is the one astragal_engine.encoding computes
        # from the observation dict.
        assert np.allclose(obs["observation"], encoder.encode(info["observation"], seat), atol=1e-6)
        env.step(int(rng.choice(legal)))
        steps += 1
    assert steps > 0
    assert sum(env._cumulative_rewards.values()) == pytest.approx(0)


def test_an_illegal_action_loses_the_game_for_that_seat():
    env = pz.env("uptick")
    env.reset(seed=1)
    agent = env.agent_selection
    legal = set(env.state_.legal_actions(env.agent_seat[agent]))
    illegal = next(a for a in range(env.num_actions) if a not in legal)
    env.step(illegal)
    assert all(env.terminations.values())
    assert env.rewards[agent] == -1 and sum(env.rewards.values()) == 0


def test_step_none_is_for_a_finished_agent_and_bad_actions_are_value_errors():
    env = pz.env("ur")
    env.reset(seed=2)
    agent = env.agent_selection
    before = env.state_.position()
    with pytest.raises(ValueError, match=f"step\\(None\\) is only for an agent that is done: {agent} is to act"):
        env.step(None)
    with pytest.raises(ValueError, match=f"action -1 of {agent} is outside the action space 0..{env.num_actions - 1}"):
        env.step(-1)
    with pytest.raises(ValueError, match=f"action 999 of {agent} is outside"):
        env.step(999)
    with pytest.raises(ValueError, match="an action is a whole number, not str"):
        env.step("a")
    assert env.state_.position() == before and not any(env.terminations.values())
    # Once done, step(None) is what PettingZoo asks for, and an action is refused.
    legal = np.flatnonzero(env.observe(agent)["action_mask"])
    illegal = next(a for a in range(env.num_actions) if a not in legal)
    env.step(illegal)
    assert env.terminations[env.agent_selection]
    with pytest.raises(ValueError, match="None"):
        env.step(0)
    env.step(None)


def test_the_parallel_environment_names_a_missing_or_bad_action():
    env = pz.parallel_env("spartan")
    env.reset(seed=1)
    with pytest.raises(ValueError, match="no action for seat_1, which is to act"):
        env.step({"seat_0": 0})
    with pytest.raises(ValueError, match="action -2 of seat_0 is outside"):
        env.step({"seat_0": -2, "seat_1": 0})
    assert env.agents == ["seat_0", "seat_1"]


def test_the_same_seed_gives_the_same_game_and_another_seed_another():
    def first_observations(seed):
        env = pz.env("cuatto")
        env.reset(seed=seed)
        return env.observe(env.agent_selection)["observation"]

    assert np.array_equal(first_observations(5), first_observations(5))
    assert any(not np.array_equal(first_observations(5), first_observations(s)) for s in range(6, 12))


def test_infos_hold_the_raw_observation_only_when_asked():
    env = pz.env("ur")
    env.reset(seed=1)
    assert env.infos == {a: {} for a in env.agents}
    par = pz.parallel_env("spartan", raw_observation=True)
    _, infos = par.reset(seed=1)
    assert infos["seat_0"]["observation"] == par.state_.observation(0)


def test_rewards_follow_ranks():
    assert pz.rewards_of({"ranks": [1, 2]}) == [1.0, -1.0]
    assert pz.rewards_of({"ranks": [1, 1]}) == [0.0, 0.0]
    assert pz.rewards_of({"ranks": [2, 1, 2]}) == [-0.5, 1.0, -0.5]


@pytest.mark.parametrize("game,options,seats", SETTINGS)
def test_the_global_state_passes_pettingzoos_state_test_and_is_every_seats_observation(game, options, seats):
    from pettingzoo.test import state_test

    state_test(pz.env(game, options, seats), pz.parallel_env(game, options, seats), num_cycles=50)
    env = pz.env(game, options, seats)
    env.reset(seed=3)
    rng = np.random.default_rng(1)
    for agent in env.agent_iter(300):
        obs, _, term, trunc, _ = env.last()
        state = env.state()
        assert state.dtype == np.float32 and env.state_space.contains(state)
        assert state.shape == (env.seats * env.observation_size,)
        for seat in range(env.seats):
            part = state[seat * env.observation_size : (seat + 1) * env.observation_size]
            np.testing.assert_array_equal(part, env.state_.encode(seat))
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))


def test_spartans_global_state_holds_what_each_seat_alone_cannot_see():
    # Each seat sees only its own dice; the state holds both seats' dice, so two
    # states that look alike to seat 0 can differ in the global state.
    par = pz.parallel_env("spartan")
    par.reset(seed=5)
    state = par.state()
    size = par.observation_size
    mine, theirs = state[:size], state[size:]
    np.testing.assert_array_equal(mine, par.state_.encode(0))
    np.testing.assert_array_equal(theirs, par.state_.encode(1))
    dice = slice(8, 14)  # own dice, per face (encoding.py)
    assert mine[dice].sum() > 0 and theirs[dice].sum() > 0
    with pytest.raises(ValueError, match="reset"):
        pz.env("ur").state()
