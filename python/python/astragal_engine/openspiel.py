"""The five games as OpenSpiel (``pyspiel``) Python games.

Importing this module registers ``astragal_utara``, ``astragal_ur``,
``astragal_uptick``, ``astragal_cuatto`` and ``astragal_spartan``::

    import pyspiel
    import astragal_engine.openspiel  # registers the games
    game = pyspiel.load_game("astragal_ur")
    game = pyspiel.load_game("astragal_cuatto", {"players": 4, "setup": "full"})
    game = pyspiel.load_game("astragal_ur(rules=finkel)")

Each engine option is a parameter of its own, so a game's string loads back as
the same game; ``{"options": "k=v,k=v"}`` is read too.

Chance is explicit: every die, coin and drawn cell is a chance node whose
outcomes are equally likely (a game draws uniformly over a range it names, so a
draw of range ``n`` has outcomes ``0..n-1``, each ``1/n``). Spartan Yahtzee's
steps are simultaneous nodes; its own dice are each seat's private information.
Actions are the game's action numbers (see the package README). Returns are
(seats beaten - seats that beat it) / (seats - 1): zero-sum, in ``[-1, 1]``.

Observations: the observation string is the seat's observation (the protocol's
JSON); the information state string is every observation the seat has had at
its decisions, in order, with its own actions (perfect recall). The observation
tensor is the numeric encoding of :mod:`astragal_engine.encoding`.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np
import pyspiel

from . import GAME_IDS, MoveRefused, State, games, new_game, option_texts, option_value, rewards_of

# Decisions per turn at most, times the game's `max_turns`: OpenSpiel's bound on
# a game's length (a simultaneous step counts once). Checked by the random
# simulations in the tests.
_DECISIONS_PER_TURN = {"utara": 2, "ur": 2, "uptick": 1, "cuatto": 4, "spartan": 4}
_MAX_TURNS = {info["id"]: next(int(o["default"]) for o in info["options"] if o["name"] == "max_turns") for info in games()}


def _game_type(info: dict) -> pyspiel.GameType:
    chance = info["chance"]
    return pyspiel.GameType(
        short_name=f"astragal_{info['id']}",
        long_name=f"astragal {info['name']}",
        dynamics=pyspiel.GameType.Dynamics.SIMULTANEOUS if info["simultaneous"] else pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC if chance else pyspiel.GameType.ChanceMode.DETERMINISTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION
        if info["hidden_information"] or info["simultaneous"]
        else pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=info["max_seats"],
        min_num_players=info["min_seats"],
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification={"players": info["default_seats"], "options": "", **_option_parameters(info)},
    )


def _option_parameters(info: dict) -> Dict[str, object]:
    """Each of the game's options as an OpenSpiel parameter of its own, typed as
    a game string reads it (``astragal_ur(rules=finkel,max_turns=300)``). An
    option whose default depends on the seats (Utara's ``sky``, ``rounds``) has
    an empty default (``0`` for a number): the engine's own."""
    spec: Dict[str, object] = {}
    for option in info["options"]:
        default, takes = option["default"], option["takes"]
        if takes.startswith("a whole number"):
            spec[option["name"]] = int(default) if default else 0
        elif takes == "true or false":
            spec[option["name"]] = default == "true"
        else:
            spec[option["name"]] = default
    return spec


def _engine_options(info: dict, params: dict) -> List[str]:
    """The engine's ``key=value`` options from OpenSpiel parameters: each option
    given as its own parameter, and the older ``options`` text (``"rules=finkel"``)."""
    texts = option_texts(str(params.get("options", "")))
    named = {t.partition("=")[0] for t in texts}
    defaults = _option_parameters(info)
    for name, default in defaults.items():
        if name not in params:
            continue
        value = params[name]
        if value == default:
            # The default (which for a seat-dependent option is the engine's own).
            continue
        if name in named:
            raise ValueError(f"option {name} is given twice: as a parameter and in options={params['options']!r}")
        texts.append(f"{name}={_value_text(value)}")
    return texts


def _value_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class AstragalGame(pyspiel.Game):
    """One of the five games, with its seat count and options."""

    def __init__(self, game_id: str, params: Optional[dict] = None):
        info = next(i for i in games() if i["id"] == game_id)
        params = dict(params or {})
        seats = int(params.get("players", info["default_seats"]))
        self.options = _engine_options(info, params)
        self.game_id = game_id
        # A probe state: the options are checked here, and it gives the sizes.
        probe = new_game(game_id, self.options, seats=seats, seed=0, chance="explicit")
        # The game string names each option apart (``options`` would hold `=` and
        # `,`, which a game string cannot), so it loads back as this very game.
        params = {"players": probe.seats}
        given = {t.partition("=")[0]: t.partition("=")[2] for t in self.options}
        for name, default in _option_parameters(info).items():
            if name in given:
                text = given[name]
                params[name] = text == "true" if isinstance(default, bool) else type(default)(text)
        self.observation_size = probe.observation_size
        max_turns = int(option_value(probe.options, "max_turns") or _MAX_TURNS[game_id])
        game_info = pyspiel.GameInfo(
            num_distinct_actions=probe.action_count,
            max_chance_outcomes=probe.max_chance_outcomes,
            num_players=probe.seats,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=max_turns * _DECISIONS_PER_TURN[game_id] + 2,
        )
        super().__init__(_GAME_TYPES[game_id], game_info, params)
        self.seats = probe.seats

    def new_initial_state(self) -> "AstragalState":
        return AstragalState(self)

    def make_py_observer(self, iig_obs_type=None, params=None) -> "AstragalObserver":
        return AstragalObserver(self, iig_obs_type, params)


class AstragalState(pyspiel.State):
    """A state; ``astragal_state`` is the engine's state underneath."""

    def __init__(self, game: AstragalGame):
        super().__init__(game)
        self.astragal_state: State = new_game(game.game_id, game.options, seats=game.seats, seed=0, chance="explicit")
        # Each seat's information state so far: its observations at its
        # decisions and the moves it made.
        self._seen: List[tuple] = [() for _ in range(game.seats)]

    def current_player(self) -> int:
        s = self.astragal_state
        if s.is_chance:
            return pyspiel.PlayerId.CHANCE
        to_act = s.to_act
        if not to_act:
            return pyspiel.PlayerId.TERMINAL
        if len(to_act) > 1:
            return pyspiel.PlayerId.SIMULTANEOUS
        return to_act[0]

    def _legal_actions(self, player: int) -> List[int]:
        if player not in self.astragal_state.to_act:
            return []
        return self.astragal_state.legal_actions(player)

    def chance_outcomes(self):
        return self.astragal_state.chance_outcomes()

    def _remember(self, seat: int, action: int) -> None:
        self._seen[seat] = self._seen[seat] + (self.astragal_state.observation_json(seat), action)

    def _apply_action(self, action: int) -> None:
        s = self.astragal_state
        if s.is_chance:
            s.apply_chance(action)
            return
        seat = s.to_act[0]
        self._remember(seat, action)
        s.play_action(action, seat)

    def _apply_actions(self, actions: List[int]) -> None:
        s = self.astragal_state
        to_act = s.to_act
        for seat in to_act:
            self._remember(seat, actions[seat])
        for seat in to_act:
            s.play_action(actions[seat], seat)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"chance {action}"
        try:
            return self.astragal_state.move_of_action(action, player)
        except MoveRefused:
            return f"action {action}"

    def is_terminal(self) -> bool:
        return self.astragal_state.is_over

    def returns(self) -> List[float]:
        outcome = self.astragal_state.outcome()
        if outcome is None:
            return [0.0] * self.astragal_state.seats
        return rewards_of(outcome)

    def information_state(self, seat: int) -> str:
        now = self.astragal_state.observation_json(seat)
        return "\n".join(str(x) for x in self._seen[seat] + (now,))

    def __str__(self) -> str:
        s = self.astragal_state
        pending = f" chance={s.pending_chance}" if s.is_chance else ""
        return s.position() + pending


class AstragalObserver:
    """OpenSpiel's observer: a seat's observation as a string and a tensor, or
    with perfect recall its information state as a string."""

    def __init__(self, game: AstragalGame, iig_obs_type, params):
        if params:
            raise ValueError(f"observation parameters are not supported; given {params}")
        self.perfect_recall = bool(iig_obs_type is not None and iig_obs_type.perfect_recall)
        self.tensor = np.zeros(game.observation_size, np.float32)
        self.dict: Dict[str, np.ndarray] = {"observation": self.tensor}

    def set_from(self, state: AstragalState, player: int) -> None:
        self.tensor[:] = state.astragal_state.encode(player)

    def string_from(self, state: AstragalState, player: int) -> str:
        if self.perfect_recall:
            return state.information_state(player)
        return state.astragal_state.observation_json(player)


_GAME_TYPES = {info["id"]: _game_type(info) for info in games()}


def _register() -> None:
    registered = set(pyspiel.registered_names())
    for game_id in GAME_IDS:
        game_type = _GAME_TYPES[game_id]
        if game_type.short_name in registered:
            continue
        # A class per game, as OpenSpiel's own Python games register.
        game_class = type(
            f"Astragal{game_id.capitalize()}Game",
            (AstragalGame,),
            {"__init__": _init_for(game_id), "__module__": __name__},
        )
        globals()[game_class.__name__] = game_class
        pyspiel.register_game(game_type, game_class)


def _init_for(game_id: str):
    def __init__(self, params: Optional[dict] = None) -> None:
        AstragalGame.__init__(self, game_id, params)

    return __init__


_register()


class EngineRolloutEvaluator:
    """An evaluator for OpenSpiel's ``mcts.MCTSBot``: uniformly random playouts,
    dice included, played inside the engine (one call per playout rather than a
    Python call per move, as ``mcts.RandomRolloutEvaluator`` makes), averaged
    over ``n_rollouts``; uniform priors."""

    def __init__(self, n_rollouts: int = 1, random_state: Optional[np.random.RandomState] = None):
        self.n_rollouts = n_rollouts
        self._random_state = random_state or np.random.RandomState()

    def evaluate(self, state: AstragalState) -> np.ndarray:
        total = np.zeros(state.num_players())
        for _ in range(self.n_rollouts):
            playout = state.astragal_state.clone()
            playout.random_playout(int(self._random_state.randint(2**62)))
            total += rewards_of(playout.outcome())
        return total / self.n_rollouts

    def prior(self, state: AstragalState):
        if state.is_chance_node():
            return state.chance_outcomes()
        actions = state.legal_actions(state.current_player())
        return [(a, 1.0 / len(actions)) for a in actions]
