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
its decisions, in order, with its own actions (perfect recall), replayed from
the state's steps when asked for. The observation tensor is the numeric
encoding of :mod:`astragal_engine.encoding`; Spartan Yahtzee also has a
perfect-recall information state tensor (:class:`SpartanRecall`).

Ur's opening (tablet rules) throws again while the throws tie, a chance tree
without end: ``astragal_ur(rethrows=k)`` draws ``k`` tied rounds, then who
starts as one chance node (see :class:`_Opening`), so exhaustive traversals
such as ``get_all_states`` finish.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np
import pyspiel

from . import GAME_IDS, ChanceRefused, MoveRefused, State, games, new_game, option_texts, option_value, rewards_of

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
        # Spartan Yahtzee's, with perfect recall (SpartanRecall).
        provides_information_state_tensor=info["id"] == "spartan",
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification={
            "players": info["default_seats"],
            "options": "",
            **_option_parameters(info),
            **({"rethrows": -1} if info["id"] == "ur" else {}),
        },
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


_CONVERT = {1: 5, 2: 6, 3: 7, 4: 10}


class _Opening:
    """Ur's opening under the tablet rules: each seat throws, again while the two
    throws tie, and the higher starts. Drawn one draw at a time that tree has no
    end. With ``rethrows=k``, after ``k`` tied rounds the next chance node is
    "who starts" (outcome 0: seat 0, 1: seat 1, each 1/2, as the throws would
    decide: they are alike for both seats), played as two throws that decide
    it. Only who starts outlives the opening, so the games that follow, and
    their probabilities, are the engine's."""

    def __init__(self, bone: bool, rethrows: int):
        self.bone = bone
        self.rethrows = rethrows
        # A throw is a primary draw (a d4, or the bone's ten faces) and a coin
        # (1: converted). Seat 0 starts: it throws 10 (a converted 4), seat 1 a 1.
        four = 9 if bone else 3
        self.draws = {0: (four, 1, 0, 0), 1: (0, 0, four, 1)}

    def _throw(self, primary: int, coin: int) -> int:
        if self.bone:
            value = 1 if primary == 0 else 2 if primary <= 4 else 3 if primary <= 8 else 4
        else:
            value = primary + 1
        return _CONVERT[value] if coin == 1 else value

    def bounded(self, draws: List[int]) -> bool:
        """Whether the opening's draws so far are ``rethrows`` tied rounds: the
        node where "who starts" is drawn at once."""
        if len(draws) != 4 * self.rethrows:
            return False
        return all(self._throw(draws[i], draws[i + 1]) == self._throw(draws[i + 2], draws[i + 3]) for i in range(0, len(draws), 4))


class AstragalGame(pyspiel.Game):
    """One of the five games, with its seat count and options."""

    def __init__(self, game_id: str, params: Optional[dict] = None):
        info = next(i for i in games() if i["id"] == game_id)
        params = dict(params or {})
        seats = int(params.get("players", info["default_seats"]))
        # Ur's bound on tied opening throws (-1: none), the wrapper's, not the engine's.
        self.rethrows = int(params.pop("rethrows", -1))
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
        if self.rethrows >= 0:
            params["rethrows"] = self.rethrows
            if option_value(probe.options, "rules") != "tablet":
                raise ValueError("rethrows bounds the tied opening throws of Ur's tablet rules; other rules have none")
        self.opening = _Opening(option_value(probe.options, "astragal") == "bone", self.rethrows) if self.rethrows >= 0 else None
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
        # Two decisions a turn (two rerolls) for each seat.
        self.recall = SpartanRecall(2 * max_turns) if game_id == "spartan" else None

    def new_initial_state(self) -> "AstragalState":
        return AstragalState(self)

    def make_py_observer(self, iig_obs_type=None, params=None) -> "AstragalObserver":
        return AstragalObserver(self, iig_obs_type, params)


# What a state remembers of each step, to rebuild information states on demand
# (a tuple per step, so remembering costs next to nothing per move).
_CHANCE = -1
_TOGETHER = -2
# Each chance range's outcomes, (k, 1/n) for k in 0..n.
_UNIFORM: Dict[int, List[tuple]] = {}


class AstragalState(pyspiel.State):
    """A state; ``astragal_state`` is the engine's state underneath."""

    def __init__(self, game: AstragalGame):
        super().__init__(game)
        self.astragal_state: State = new_game(game.game_id, game.options, seats=game.seats, seed=0, chance="explicit")
        # Every step so far: (_CHANCE, outcome), (seat, action), or
        # (_TOGETHER, actions) for a simultaneous step. Information states are
        # replayed from it when asked for, not recorded at every move.
        self._steps: List[tuple] = []
        # Ur's bounded opening (rethrows=k), while no seat has decided yet.
        self._bound: Optional[_Opening] = game.opening
        self._opening = game.opening is not None

    def current_player(self) -> int:
        # The engine answers in OpenSpiel's numbering (-1 chance, -2
        # simultaneous, -4 terminal) in one call.
        return self.astragal_state.current_player

    # Called from Python, pyspiel's own node tests and `legal_actions` ask the
    # state back through its bridge (`current_player`, `_legal_actions`, the
    # list copied into C++ and out again); these answer from the engine at
    # once, as pyspiel would (tested against it). C++ callers still take
    # pyspiel's path.
    def is_chance_node(self) -> bool:
        return self.astragal_state.is_chance

    def is_simultaneous_node(self) -> bool:
        return self.astragal_state.current_player == pyspiel.PlayerId.SIMULTANEOUS

    def is_player_node(self) -> bool:
        return self.astragal_state.current_player >= 0

    def legal_actions(self, player: Optional[int] = None) -> List[int]:
        s = self.astragal_state
        if player is None:
            player = s.current_player
            if player < 0:
                # Chance outcomes, a simultaneous node's flat joint actions, or
                # none at the end: pyspiel's own answers.
                return pyspiel.State.legal_actions(self)
        elif player < 0 or s.is_chance:
            return pyspiel.State.legal_actions(self, player)
        return s.legal_actions_of(player)

    def _legal_actions(self, player: int) -> List[int]:
        return self.astragal_state.legal_actions_of(player)

    def chance_outcomes(self):
        if self._opening and self._bound.bounded(self.astragal_state.pending_chance):
            return [(0, 0.5), (1, 0.5)]
        n = self.astragal_state.chance_range
        if n is None:
            return []
        # A copy of the list made once per range (a caller may change it):
        # cheaper than making n pairs again at every node.
        outcomes = _UNIFORM.get(n)
        if outcomes is None:
            outcomes = _UNIFORM[n] = [(k, 1.0 / n) for k in range(n)]
        return outcomes[:]

    def _give_chance(self, s: State, outcome: int, opening: bool) -> None:
        if opening and self._bound.bounded(s.pending_chance):
            if outcome not in (0, 1):
                raise ChanceRefused(f"chance outcome {outcome}: who starts is 0 or 1 (rethrows={self._bound.rethrows})")
            for draw in self._bound.draws[outcome]:
                s.apply_chance(draw)
        else:
            s.apply_chance(outcome)

    def _apply_action(self, action: int) -> None:
        if self._opening:
            s = self.astragal_state
            if s.is_chance:
                self._give_chance(s, action, True)
                self._steps.append((_CHANCE, action))
                return
            self._opening = False
        # One engine call: -1 for chance (_CHANCE), else the seat that moved.
        self._steps.append((self.astragal_state.apply_at_node(action), action))

    def _apply_actions(self, actions: List[int]) -> None:
        self.astragal_state.play_together(actions)
        self._opening = False
        self._steps.append((_TOGETHER, tuple(actions)))

    def _replay(self, seat: int):
        """``seat``'s decisions so far, replayed from the start: for each, the
        engine state just before it (``seat`` to decide) and the action it took."""
        game = self.get_game()
        s = new_game(game.game_id, game.options, seats=game.seats, seed=0, chance="explicit")
        opening = self._bound is not None
        for who, what in self._steps:
            if who == _CHANCE:
                self._give_chance(s, what, opening)
                continue
            opening = False
            if who == _TOGETHER:
                to_act = s.to_act
                if seat in to_act:
                    yield s, what[seat]
                for p in to_act:
                    s.play_action(what[p], p)
            else:
                if who == seat:
                    yield s, what
                s.play_action(what, who)

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
        """The seat's observation (JSON) at each of its decisions, each followed by
        the action it took, then its observation now: one per line."""
        seen = []
        for s, action in self._replay(seat):
            seen.append(s.observation_json(seat))
            seen.append(str(action))
        seen.append(self.astragal_state.observation_json(seat))
        return "\n".join(seen)

    def __str__(self) -> str:
        s = self.astragal_state
        pending = f" chance={s.pending_chance}" if s.is_chance else ""
        return s.position() + pending


class SpartanRecall:
    """Spartan Yahtzee's perfect-recall information state as numbers: one record
    per decision of the seat, in order, then one for now, each
    ``RECORD`` entries (unused records are zero):

    - the seat's observation encoding at that moment (25 entries, as
      ``State.encode``: its own dice, hit points, phase, ...);
    - the previous turn's reveal as the seat saw it: each army's dice per face,
      the seat's first (12 entries, count / 10), who used the Mercenary (the
      seat, the other; 2) and its d4 (4, one-hot);
    - a flag that the record is filled (1), and the action the seat took
      (stand; then the count of each face 2-6 rerolled / 10): 6 entries, zero
      in the record of now.

    Built only from what the seat observed and its own actions, by replaying
    the state's history: two histories the seat can tell apart give different
    tensors, two it cannot give the same."""

    ENCODING = 25
    REVEAL = 12 + 2 + 4
    RECORD = ENCODING + REVEAL + 1 + 6

    def __init__(self, decisions: int):
        self.decisions = decisions
        self.shape = ((decisions + 1) * self.RECORD,)

    def _record(self, out: np.ndarray, state: State, seat: int, action: Optional[int]) -> None:
        out[: self.ENCODING] = state.encode(seat)
        reveal = state.observation(seat).get("last_reveal")
        at = self.ENCODING
        if reveal:
            for k, army in enumerate((seat, 1 - seat)):
                for face in reveal["dice"][army]:
                    out[at + 6 * k + face - 1] += 0.1
            mercenary = reveal.get("mercenary")
            if mercenary:
                out[at + 12 + (0 if mercenary["seat"] == seat else 1)] = 1.0
                out[at + 14 + mercenary["roll"] - 1] = 1.0
        at += self.REVEAL
        out[at] = 1.0
        if action is not None:
            text = state.move_of_action(action, seat)
            if text == "stand":
                out[at + 1] = 1.0
            else:
                for face in text.partition(":")[2]:
                    out[at + 2 + int(face) - 2] += 0.1

    def fill(self, out: np.ndarray, state: "AstragalState", seat: int) -> None:
        out[:] = 0.0
        k = 0
        for s, action in state._replay(seat):
            if k == self.decisions:
                raise ValueError(f"more than {self.decisions} decisions of seat {seat}: the tensor has no room")
            self._record(out[k * self.RECORD : (k + 1) * self.RECORD], s, seat, action)
            k += 1
        self._record(out[k * self.RECORD : (k + 1) * self.RECORD], state.astragal_state, seat, None)

    def tensor(self, state: "AstragalState", seat: int) -> np.ndarray:
        out = np.zeros(self.shape, np.float32)
        self.fill(out, state, seat)
        return out


class AstragalObserver:
    """OpenSpiel's observer: a seat's observation as a string and a tensor, or
    with perfect recall its information state as a string (and for Spartan
    Yahtzee as a tensor, :class:`SpartanRecall`)."""

    def __init__(self, game: AstragalGame, iig_obs_type, params):
        if params:
            raise ValueError(f"observation parameters are not supported; given {params}")
        self.perfect_recall = bool(iig_obs_type is not None and iig_obs_type.perfect_recall)
        self.recall = game.recall if self.perfect_recall else None
        size = self.recall.shape[0] if self.recall is not None else game.observation_size
        self.tensor = np.zeros(size, np.float32)
        self.dict: Dict[str, np.ndarray] = {"information_state" if self.recall is not None else "observation": self.tensor}

    def set_from(self, state: AstragalState, player: int) -> None:
        if self.recall is not None:
            self.recall.fill(self.tensor, state, player)
        else:
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
