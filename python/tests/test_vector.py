"""Batched stepping in Rust: a batch of N games equals N single states stepped
alike, observation by observation, through ends and automatic resets."""

import numpy as np
import pytest

import astragal_engine as astragal
from astragal_engine import rewards_of
from astragal_engine.vector import ParallelVectorEnv, VectorEnv

CASES = [(g, None, None) for g in astragal.GAME_IDS] + [
    ("ur", "rules=finkel,max_turns=40", None),
    ("cuatto", "setup=full", 3),
    ("uptick", "size=4,reserve=3,max_turns=30", None),
]


def expected_end(single):
    outcome = single.outcome()
    return rewards_of(outcome), not outcome["capped"], outcome["capped"]


@pytest.mark.parametrize("game,options,seats", CASES)
def test_a_batch_equals_single_states_stepped_alike(game, options, seats):
    n = 5
    env = VectorEnv(game, n, options, seats)
    obs, info = env.reset(seed=11)
    singles = [astragal.new_game(game, options, seats=seats, seed=s) for s in env.seeds]
    rng = np.random.default_rng(abs(hash(game)) % 1000)
    ends = 0
    for step in range(400):
        for i, single in enumerate(singles):
            seat = int(info["to_act"][i])
            assert seat == single.to_act[0]
            assert np.array_equal(obs["observation"][i], single.encode(seat)), (step, i)
            assert np.array_equal(obs["action_mask"][i], single.action_mask(seat)), (step, i)
            assert env.game_state(i) == single
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        acting = info["to_act"].copy()
        obs, reward, terminated, truncated, info = env.step(actions)
        for i in range(n):
            singles[i].play_action(int(actions[i]), int(acting[i]))
            if singles[i].is_over:
                ends += 1
                rewards, term, trunc = expected_end(singles[i])
                assert info["rewards"][i].tolist() == pytest.approx(rewards)
                assert reward[i] == pytest.approx(rewards[acting[i]])
                assert (terminated[i], truncated[i]) == (term, trunc)
                singles[i] = astragal.new_game(game, options, seats=seats, seed=env.seeds[i])
            else:
                assert not terminated[i] and not truncated[i] and not info["rewards"][i].any()
    assert ends > 0, "some games ended and were reset"


@pytest.mark.parametrize("game", ["spartan", "ur"])
def test_a_parallel_batch_equals_single_states_stepped_alike(game):
    n = 4
    env = ParallelVectorEnv(game, n)
    obs, infos = env.reset(seed=3)
    singles = [astragal.new_game(game, seed=s) for s in env.seeds]
    rng = np.random.default_rng(7)
    ends = 0
    for step in range(300):
        actions = {}
        for s, agent in enumerate(env.possible_agents):
            for i, single in enumerate(singles):
                assert bool(infos[agent]["to_act"][i]) == (s in single.to_act)
                assert np.array_equal(obs[agent]["observation"][i], single.encode(s))
                assert np.array_equal(obs[agent]["action_mask"][i], single.action_mask(s))
            actions[agent] = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in obs[agent]["action_mask"]])
        obs, rewards, terminations, truncations, infos = env.step(actions)
        for i, single in enumerate(singles):
            for s in list(single.to_act):
                single.play_action(int(actions[f"seat_{s}"][i]), s)
            if single.is_over:
                ends += 1
                expected, term, trunc = expected_end(single)
                assert [rewards[a][i] for a in env.possible_agents] == pytest.approx(expected)
                assert (terminations["seat_0"][i], truncations["seat_0"][i]) == (term, trunc)
                singles[i] = astragal.new_game(game, seed=env.seeds[i])
    assert ends > 0


def test_a_refused_step_names_the_game_and_changes_nothing():
    env = VectorEnv("uptick", 3)
    obs, info = env.reset(seed=1)
    before = [env.game_state(i) for i in range(3)]
    actions = np.array([np.flatnonzero(m)[0] for m in obs["action_mask"]])
    illegal = next(a for a in range(env.single_action_space.n) if not obs["action_mask"][2][a])
    actions[2] = illegal
    with pytest.raises(ValueError, match=f"game 2: action {illegal} is not a legal move of seat 0"):
        env.step(actions)
    with pytest.raises(ValueError, match=r"actions of shape \(2,\): expected \(3,\)"):
        env.step(actions[:2])
    with pytest.raises(ValueError, match="whole numbers"):
        env.step(actions.astype(float))
    assert [env.game_state(i) for i in range(3)] == before
    with pytest.raises(ValueError, match="reset"):
        VectorEnv("ur", 2).step([0, 0])
    with pytest.raises(ValueError, match="at least one game"):
        VectorEnv("ur", 0)
    with pytest.raises(ValueError, match="no actions for seat_1"):
        par = ParallelVectorEnv("spartan", 2)
        par.reset(seed=1)
        par.step({"seat_0": [0, 0]})


def test_the_same_seed_gives_the_same_batch_and_sampled_actions_are_legal():
    def run(seed):
        env = VectorEnv("cuatto", 4)
        obs, _ = env.reset(seed=seed)
        out = []
        for _ in range(50):
            actions = env.sample_actions()
            assert all(obs["action_mask"][i][a] for i, a in enumerate(actions))
            obs, reward, *_ = env.step(actions)
            out.append(obs["observation"].copy())
        return np.stack(out)

    assert np.array_equal(run(5), run(5))
    assert not np.array_equal(run(5), run(6))
    env = VectorEnv("ur", 2)
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)
