"""Many games stepped together in Rust, one call for all of them.

``VectorEnv(game, num_envs)`` is a Gymnasium-style vector environment (a
``gymnasium.vector.VectorEnv``): each step, in every game the one seat to act
plays the action given for that game (self-play: ``infos["to_act"]`` says which
seat each observation is for). ``ParallelVectorEnv(game, num_envs)`` is
PettingZoo-parallel-style: every agent gets a batch of observations each step
and gives a batch of actions (an agent's action is ignored in a game where that
seat is not to act, as its all-zero mask says), so Spartan Yahtzee's
simultaneous steps are one call.

Observations are ``{"observation": float32 (N, size), "action_mask": int8 (N,
actions)}``, written by the engine into numpy arrays (the layouts of
:mod:`astragal_engine.encoding`). A game that ends is replaced in the same step
by a new one (Gymnasium's same-step autoreset): the step's rewards, terminations
and truncations are the ended game's, its observation the new game's first. The
rewards are those of the single environments (at the end, (seats beaten - seats
that beat it) / (seats - 1)); a game ended by its length cap is truncated. An
action that is not legal is a ``ValueError`` naming the game, and changes
nothing. Each game's dice come from its own seed, drawn from the ``reset`` seed:
``seeds`` lists the current games' seeds, and ``new_game(game, seed=s)`` is the
same game.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector import VectorEnv as _GymVectorEnv
from gymnasium.vector.utils import batch_space

from . import Options, option_texts, os_seed
from ._astragal import Batch

__all__ = ["ParallelVectorEnv", "VectorEnv"]


def _seed(seed: Optional[int]) -> int:
    if seed is None:
        return os_seed()
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an int from 0 to 2**64-1, not {seed!r}")
    return int(seed)


def _single_spaces(batch: Batch) -> Tuple[spaces.Dict, spaces.Discrete]:
    observation = spaces.Dict(
        {
            "observation": spaces.Box(0.0, 1.0, (batch.observation_size,), np.float32),
            "action_mask": spaces.Box(0, 1, (batch.action_count,), np.int8),
        }
    )
    return observation, spaces.Discrete(batch.action_count)


def _actions(actions: Any, shape: Tuple[int, ...]) -> np.ndarray:
    array = np.asarray(actions)
    if array.shape != shape:
        raise ValueError(f"actions of shape {array.shape}: expected {shape}")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"actions are whole numbers, not {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.int64).reshape(-1)


class VectorEnv(_GymVectorEnv):
    """``num_envs`` games of ``game``, the seat to act in each playing each step."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, game: str, num_envs: int, options: Options = None, seats: Optional[int] = None):
        self._batch = Batch(game, option_texts(options), seats, int(num_envs), False)
        self.game = game
        self.num_envs = int(num_envs)
        self.seats = self._batch.seats
        self.single_observation_space, self.single_action_space = _single_spaces(self._batch)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._to_act: Optional[np.ndarray] = None

    def _observations(self, obs: np.ndarray, masks: np.ndarray) -> Dict[str, np.ndarray]:
        return {
            "observation": obs.reshape(self.num_envs, -1),
            "action_mask": masks.reshape(self.num_envs, -1),
        }

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        obs, masks, _, _, _, to_act = self._batch.reset(_seed(seed))
        self._to_act = to_act
        return self._observations(obs, masks), {"to_act": to_act}

    def step(self, actions: Any):
        if self._to_act is None:
            raise ValueError("reset() the environment before stepping it")
        flat = _actions(actions, (self.num_envs,))
        obs, masks, rewards, terminated, truncated, to_act = self._batch.step(flat)
        rewards = rewards.reshape(self.num_envs, self.seats)
        # The reward of the seat that acted in each game.
        reward = rewards[np.arange(self.num_envs), self._to_act]
        self._to_act = to_act
        infos = {"to_act": to_act, "rewards": rewards}
        return self._observations(obs, masks), reward, terminated, truncated, infos

    def sample_actions(self) -> np.ndarray:
        """A uniformly random legal action per game, drawn in Rust."""
        return self._batch.sample_actions()

    @property
    def seeds(self) -> List[int]:
        return self._batch.seeds

    def game_state(self, i: int):
        """A copy of game ``i`` as a :class:`astragal_engine.State`."""
        return self._batch.state(i)


class ParallelVectorEnv:
    """``num_envs`` games of ``game``; every agent (``seat_0``, ...) observes and
    acts in all of them each step."""

    metadata = {"name": "astragal_parallel_vector_v0"}

    def __init__(self, game: str, num_envs: int, options: Options = None, seats: Optional[int] = None):
        self._batch = Batch(game, option_texts(options), seats, int(num_envs), True)
        self.game = game
        self.num_envs = int(num_envs)
        self.seats = self._batch.seats
        self.possible_agents = [f"seat_{i}" for i in range(self.seats)]
        self.agents = self.possible_agents[:]
        self._observation_space, self._action_space = _single_spaces(self._batch)
        self._started = False

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    def _split(self, obs, masks, to_act):
        n, k = self.num_envs, self.seats
        obs = obs.reshape(n, k, -1)
        masks = masks.reshape(n, k, -1)
        to_act = to_act.reshape(n, k).astype(bool)
        observations = {a: {"observation": obs[:, s], "action_mask": masks[:, s]} for s, a in enumerate(self.possible_agents)}
        infos = {a: {"to_act": to_act[:, s]} for s, a in enumerate(self.possible_agents)}
        return observations, infos

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        obs, masks, _, _, _, to_act = self._batch.reset(_seed(seed))
        self._started = True
        return self._split(obs, masks, to_act)

    def step(self, actions: Dict[str, Any]):
        if not self._started:
            raise ValueError("reset() the environment before stepping it")
        missing = [a for a in self.possible_agents if a not in actions]
        if missing:
            raise ValueError(f"no actions for {', '.join(missing)}: give every agent one action per game")
        table = np.stack([_actions(actions[a], (self.num_envs,)) for a in self.possible_agents], axis=1)
        obs, masks, rewards, terminated, truncated, to_act = self._batch.step(table.reshape(-1))
        rewards = rewards.reshape(self.num_envs, self.seats)
        observations, infos = self._split(obs, masks, to_act)
        reward = {a: rewards[:, s] for s, a in enumerate(self.possible_agents)}
        terminations = {a: terminated for a in self.possible_agents}
        truncations = {a: truncated for a in self.possible_agents}
        return observations, reward, terminations, truncations, infos

    def sample_actions(self) -> Dict[str, np.ndarray]:
        """A uniformly random legal action per agent and game (0 where the seat
        is not to act), drawn in Rust."""
        table = self._batch.sample_actions().reshape(self.num_envs, self.seats)
        return {a: table[:, s] for s, a in enumerate(self.possible_agents)}

    @property
    def seeds(self) -> List[int]:
        return self._batch.seeds

    def game_state(self, i: int):
        return self._batch.state(i)

    def close(self) -> None:
        pass
