"""PettingZoo environments for the five games.

``env(game, ...)`` is an AEC environment for any game and seat count: one seat
acts per step (in a simultaneous step of Spartan Yahtzee, the seats to act take
their turns and none sees another's choice until all have chosen).
``parallel_env(...)`` is a parallel environment, for Spartan Yahtzee's
simultaneous steps (any game works: seats not to act are ignored that step).

Agents are ``seat_0``, ``seat_1``, ... Each observation is a dict with
``observation`` (the game's numeric encoding, written by the engine straight
into a numpy array; :mod:`astragal_engine.encoding` names its entries) and
``action_mask`` (1 for each legal action number). With
``raw_observation=True`` the observation as the protocol sends it (a dict) is
in ``infos[agent]["observation"]`` too; it costs a JSON parse per agent and
step, so it is off by default (``env.state_.observation(seat)`` gives it any time).
``env.state()`` is the global state (for a centralized critic): every seat's
observation encoding, seat 0's first, in ``env.state_space``. Rewards come at the end: a seat gets the number
of seats it beat minus the number that beat it, over ``seats - 1`` (so +1 / -1 in
a two-seat game, 0 for a draw; the rewards sum to 0). A game stopped by its
length cap is truncated, not terminated. An illegal action ends the game: that
seat gets -1 and the others share +1.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv

from . import GAME_IDS, MoveRefused, Options, State, new_game, option_texts, rewards_of

__all__ = ["AstragalEnv", "AstragalParallelEnv", "env", "parallel_env", "rewards_of"]


class _Common:
    """What the AEC and parallel environments share: the game, spaces, encoding."""

    def _setup(
        self, game: str, options: Options, seats: Optional[int], render_mode: Optional[str], raw_observation: bool
    ) -> None:
        if game not in GAME_IDS:
            raise ValueError(f"unknown game {game!r} (known: {', '.join(GAME_IDS)})")
        if render_mode not in (None, "ansi", "human"):
            raise ValueError(f"render_mode {render_mode!r}: expected None, 'ansi' or 'human'")
        self.game = game
        self.game_options = option_texts(options)
        self.render_mode = render_mode
        self.raw_observation = bool(raw_observation)
        probe = new_game(game, self.game_options, seats=seats, seed=0)
        self.seats = probe.seats
        self.observation_size = probe.observation_size
        self.possible_agents = [f"seat_{i}" for i in range(self.seats)]
        self.agent_seat = {a: i for i, a in enumerate(self.possible_agents)}
        self.num_actions = probe.action_count
        self._observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(0.0, 1.0, (self.observation_size,), np.float32),
                    "action_mask": spaces.Box(0, 1, (self.num_actions,), np.int8),
                }
            )
            for a in self.possible_agents
        }
        self._action_spaces = {a: spaces.Discrete(self.num_actions) for a in self.possible_agents}
        # The global state: every seat's observation, seat 0 first.
        self.state_space = spaces.Box(0.0, 1.0, (self.seats * self.observation_size,), np.float32)
        self.state_: Optional[State] = None
        self._seed_rng = np.random.default_rng()

    # The same space object each time, as PettingZoo's tests require (and so that
    # seeding a space sticks).
    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_spaces[agent]

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    def _checked_action(self, action: Any, agent: str) -> int:
        """An action in the action space, else a ValueError naming the problem (an
        action in the space that is not legal now is the seat's loss instead)."""
        if action is None:
            raise ValueError(f"no action for {agent}, which is to act")
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
                action = int(action)
            else:
                raise ValueError(f"an action is a whole number, not {type(action).__name__}")
        action = int(action)
        if not 0 <= action < self.num_actions:
            raise ValueError(f"action {action} of {agent} is outside the action space 0..{self.num_actions - 1}")
        return action

    def _illegal(self, seat: int) -> Dict[str, float]:
        """Rewards when `seat` plays an illegal action: it loses, the others share."""
        return {a: -1.0 if self.agent_seat[a] == seat else 1.0 / max(self.seats - 1, 1) for a in self.possible_agents}

    def _new_state(self, seed: Optional[int]) -> State:
        if seed is not None:
            self._seed_rng = np.random.default_rng(seed)
        game_seed = int(self._seed_rng.integers(0, 2**63))
        return new_game(self.game, self.game_options, seats=self.seats, seed=game_seed)

    def _observe(self, seat: int) -> Dict[str, np.ndarray]:
        # Both arrays written by the engine in one call.
        observation, mask = self.state_.encode_with_mask(seat)
        return {"observation": observation, "action_mask": mask}

    def state(self) -> np.ndarray:
        """The global state, for centralized critics: every seat's observation
        encoding (each seen from that seat), seat 0's first, as one float32
        array of ``seats * observation_size`` entries in ``state_space``. Taken
        together the seats see all of the game (Spartan Yahtzee's own dice
        included), but not the dice to come."""
        if self.state_ is None:
            raise ValueError("reset() the environment before asking for its state")
        state = self.state_
        return np.concatenate([state.encode(seat) for seat in range(self.seats)])

    def _info(self, seat: int) -> dict:
        return {"observation": self.state_.observation(seat)} if self.raw_observation else {}

    def render(self) -> Optional[str]:
        if self.state_ is None or self.render_mode is None:
            return None
        text = self.state_.render()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass


class AstragalEnv(_Common, AECEnv):
    """An AEC environment of one game (see the module's docstring)."""

    metadata = {"render_modes": ["ansi", "human"], "name": "astragal_v0", "is_parallelizable": True}

    def __init__(
        self,
        game: str,
        options: Options = None,
        seats: Optional[int] = None,
        render_mode: Optional[str] = None,
        raw_observation: bool = False,
    ):
        super().__init__()
        self._setup(game, options, seats, render_mode, raw_observation)
        self.metadata = dict(self.metadata, name=f"astragal_{game}_v0")

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> None:
        self.state_ = self._new_state(seed)
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.state_.to_act[0]]
        self._refresh_infos()

    def _refresh_infos(self) -> None:
        if self.raw_observation:
            for a in self.agents:
                self.infos[a] = self._info(self.agent_seat[a])

    def observe(self, agent: str) -> Dict[str, np.ndarray]:
        return self._observe(self.agent_seat[agent])

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None:
            raise ValueError(
                f"step(None) is only for an agent that is done: {agent} is to act; give an action from its action_mask"
            )
        action = self._checked_action(action, agent)
        seat = self.agent_seat[agent]
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        state = self.state_
        try:
            state.play_action(action, seat)
        except MoveRefused:
            self.rewards = self._illegal(seat)
            self.terminations = {a: True for a in self.agents}
        else:
            to_act = state.to_act
            if to_act:
                self.agent_selection = self.possible_agents[to_act[0]]
            else:
                outcome = state.outcome()
                for a, r in zip(self.possible_agents, rewards_of(outcome)):
                    self.rewards[a] = r
                    if outcome["capped"]:
                        self.truncations[a] = True
                    else:
                        self.terminations[a] = True
        self._refresh_infos()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()


class AstragalParallelEnv(_Common, ParallelEnv):
    """A parallel environment of one game (see the module's docstring)."""

    metadata = {"render_modes": ["ansi", "human"], "name": "astragal_parallel_v0"}

    def __init__(
        self,
        game: str = "spartan",
        options: Options = None,
        seats: Optional[int] = None,
        render_mode: Optional[str] = None,
        raw_observation: bool = False,
    ):
        self._setup(game, options, seats, render_mode, raw_observation)
        self.metadata = dict(self.metadata, name=f"astragal_{game}_parallel_v0")
        self.agents: List[str] = []

    def _infos(self) -> Dict[str, dict]:
        return {a: self._info(self.agent_seat[a]) for a in self.agents}

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        self.state_ = self._new_state(seed)
        self.agents = self.possible_agents[:]
        return {a: self._observe(self.agent_seat[a]) for a in self.agents}, self._infos()

    def step(self, actions: Dict[str, Any]):
        rewards = {a: 0.0 for a in self.agents}
        terminations = {a: False for a in self.agents}
        truncations = {a: False for a in self.agents}
        # Every seat to act plays; the engine keeps each choice secret until all
        # seats of the step have chosen, so the order does not matter.
        to_act = self.state_.to_act
        # Checked before any is played, so a refused step changes nothing.
        checked = {seat: self._checked_action(actions.get(self.possible_agents[seat]), self.possible_agents[seat]) for seat in to_act}
        illegal = None
        for seat in to_act:
            try:
                self.state_.play_action(checked[seat], seat)
            except MoveRefused:
                illegal = seat
                break
        if illegal is not None:
            rewards = self._illegal(illegal)
            terminations = {a: True for a in self.agents}
        else:
            outcome = self.state_.outcome()
            if outcome is not None:
                for a, r in zip(self.possible_agents, rewards_of(outcome)):
                    rewards[a] = r
                    (truncations if outcome["capped"] else terminations)[a] = True
        observations = {a: self._observe(self.agent_seat[a]) for a in self.agents}
        infos = self._infos()
        if any(terminations.values()) or any(truncations.values()):
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos


def env(
    game: str,
    options: Options = None,
    seats: Optional[int] = None,
    render_mode: Optional[str] = None,
    raw_observation: bool = False,
) -> AstragalEnv:
    """An AEC environment of ``game`` (any of ``astragal_engine.GAME_IDS``)."""
    return AstragalEnv(game, options, seats, render_mode, raw_observation)


def parallel_env(
    game: str = "spartan",
    options: Options = None,
    seats: Optional[int] = None,
    render_mode: Optional[str] = None,
    raw_observation: bool = False,
) -> AstragalParallelEnv:
    """A parallel environment of ``game`` (Spartan Yahtzee by default, whose steps
    are simultaneous)."""
    return AstragalParallelEnv(game, options, seats, render_mode, raw_observation)
