"""Observations as numbers: one flat ``float32`` vector per game and options,
each entry in ``[0, 1]``, seen from the observing seat.

The engine writes these vectors itself (``State.encode(seat)``, which the
environments use: no JSON on the way). The encoders here compute the same
numbers from the observation dict: they document the layouts, name every entry
(``Encoder.names``), and serve an observation that came as JSON (a bot's
request); the suite checks both agree.

Seats are listed from the observer's point of view: the observer first, then
the next seats in turn order. Counts are divided by their most; open-ended
counts (turns) are divided by a scale and capped at 1. The layout of each game
is in the package's README ("Observation encodings") and in each encoder's
docstring; ``Encoder.names`` names every entry.
"""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from . import State, option_value


def _cell_index(cell: str, width: int) -> int:
    return (int(cell[1:]) - 1) * width + (ord(cell[0]) - ord("a"))


def _ego(seat: int, seats: int) -> List[int]:
    return [(seat + k) % seats for k in range(seats)]


class Encoder:
    """Turns a seat's observation (a dict) into a vector of ``size`` floats."""

    size: int
    names: List[str]

    def encode(self, observation: Dict[str, Any], seat: int) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, state: State, seat: int) -> np.ndarray:
        return state.encode(seat)


class _Layout:
    def __init__(self) -> None:
        self.names: List[str] = []

    def add(self, name: str, count: int = 1) -> int:
        start = len(self.names)
        self.names.extend([name] if count == 1 else [f"{name}[{i}]" for i in range(count)])
        return start


class UrEncoder(Encoder):
    """Ur: phase (4, one-hot: primary, converted, roll, over); the throw to play
    (11, one-hot 0-10); whether the observer is to move; whether Finkel's rules
    are played; per seat (observer first) the share of its pieces on each of the
    16 houses (0 = not entered, 15 = off); per seat its counters / 50; the pool
    / 50; the turn / 500, capped."""

    PHASES = ("primary", "converted", "roll", "over")

    def __init__(self, seats: int = 2) -> None:
        lay = _Layout()
        self.phase = lay.add("phase", 4)
        self.roll = lay.add("roll", 11)
        self.to_move = lay.add("to_move")
        self.finkel = lay.add("finkel")
        self.houses = lay.add("houses", 2 * 16)
        self.counters = lay.add("counters", 2)
        self.pool = lay.add("pool")
        self.turn = lay.add("turn")
        self.names = lay.names
        self.size = len(self.names)

    def encode(self, o: Dict[str, Any], seat: int) -> np.ndarray:
        v = np.zeros(self.size, np.float32)
        v[self.phase + self.PHASES.index(o["phase"])] = 1
        v[self.roll + min(o["roll"], 10)] = 1
        v[self.to_move] = o["to_move"] == seat
        v[self.finkel] = o["rules"] == "finkel"
        for k, s in enumerate(_ego(seat, 2)):
            pieces = o["pieces"][s]
            for house in pieces:
                v[self.houses + 16 * k + house] += 1 / len(pieces)
            v[self.counters + k] = min(o["counters"][s] / 50, 1)
        v[self.pool] = min(o["pool"] / 50, 1)
        v[self.turn] = min(o["turn"] / 500, 1)
        return v


class UtaraEncoder(Encoder):
    """Utara: per cell of the sky (row by row from a1), 10 channels: the die's
    face (6, one-hot N E S W O C), whether the die came with the observer, with
    another seat, whether a block stands there, whether a High Sun waits there
    for a direction. Then the phase (5, one-hot: block, start, sun, continue,
    over); whether the observer is to move; the round / rounds; per seat
    (observer first) the faces it collected this round (6 counts / cells), its
    round points / 100 and total points / 100, capped."""

    FACES = "NESWOC"
    PHASES = ("block", "start", "sun", "continue", "over")
    CHANNELS = 10

    def __init__(self, width: int, height: int, seats: int) -> None:
        self.width, self.cells, self.seats = width, width * height, seats
        lay = _Layout()
        self.sky = lay.add("sky", self.cells * self.CHANNELS)
        self.phase = lay.add("phase", 5)
        self.to_move = lay.add("to_move")
        self.round = lay.add("round")
        self.per_seat = lay.add("seat", seats * 8)
        self.names = lay.names
        self.size = len(self.names)

    def encode(self, o: Dict[str, Any], seat: int) -> np.ndarray:
        v = np.zeros(self.size, np.float32)
        ch = self.CHANNELS
        for die in o["dice"]:
            base = self.sky + _cell_index(die["cell"], self.width) * ch
            v[base + self.FACES.index(die["face"])] = 1
            v[base + (6 if die["owner"] == seat else 7)] = 1
        for cell in o["blocks"]:
            v[self.sky + _cell_index(cell, self.width) * ch + 8] = 1
        if o["sun_cell"]:
            v[self.sky + _cell_index(o["sun_cell"], self.width) * ch + 9] = 1
        v[self.phase + self.PHASES.index(o["phase"])] = 1
        v[self.to_move] = o["to_move"] == seat
        rnd, rounds = o["round"]
        v[self.round] = rnd / max(rounds, 1)
        for k, s in enumerate(_ego(seat, self.seats)):
            base = self.per_seat + 8 * k
            for face in o["collected"][s]:
                v[base + self.FACES.index(face)] += 1 / self.cells
            v[base + 6] = min(max(o["round_points"][s], 0) / 100, 1)
            v[base + 7] = min(max(o["totals"][s], 0) / 100, 1)
        return v


class UptickEncoder(Encoder):
    """Uptick: per cell (row by row from a1), 4 channels: the observer's die
    value / 6, the opponent's die value / 6, whether the observer's die there is
    frozen, whether the opponent's is. Then per seat (observer first) its reserve
    / the starting reserve and its captured pips / (6 × reserve); whether the
    observer is to move; whether the observer, or the opponent, moved last; the
    moves made / 1000, capped; whether the game is over."""

    def __init__(self, size: int, reserve: int) -> None:
        self.side, self.cells, self.reserve = size, size * size, max(reserve, 1)
        lay = _Layout()
        self.board = lay.add("board", self.cells * 4)
        self.reserves = lay.add("reserve", 2)
        self.captured = lay.add("captured", 2)
        self.to_move = lay.add("to_move")
        self.last = lay.add("last_mover", 2)
        self.turn = lay.add("turn")
        self.over = lay.add("over")
        self.names = lay.names
        self.size = len(self.names)

    def encode(self, o: Dict[str, Any], seat: int) -> np.ndarray:
        v = np.zeros(self.size, np.float32)
        for die in o["dice"]:
            base = self.board + _cell_index(die["cell"], self.side) * 4
            mine = die["seat"] == seat
            v[base + (0 if mine else 1)] = die["value"] / 6
            v[base + (2 if mine else 3)] = die["frozen"]
        for k, s in enumerate(_ego(seat, 2)):
            v[self.reserves + k] = min(o["reserve"][s] / self.reserve, 1)
            v[self.captured + k] = min(o["captured"][s] / (6 * self.reserve), 1)
        v[self.to_move] = o["to_move"] == seat
        if o["last_mover"] is not None:
            v[self.last + (0 if o["last_mover"] == seat else 1)] = 1
        v[self.turn] = min(o["turn"] / 1000, 1)
        v[self.over] = o["over"]
        return v


class CuattoEncoder(Encoder):
    """Cuatto: per team (observer first), per spot (not entered, bridge slots 1-6,
    track 1..length, off), per kind (regular, pin, strong) the share of the
    team's checkers there; per team its pips / its pips at the start; the dice
    still to use (6 counts of faces / 4); whether the observer is to move; per
    team whether it has finished; the turn / 500, capped."""

    KINDS = {"": 0, "p": 1, "s": 2}

    def __init__(self, length: int, seats: int) -> None:
        self.length, self.seats = length, seats
        self.spots = length + 8
        lay = _Layout()
        self.checkers = lay.add("checkers", seats * self.spots * 3)
        self.pips = lay.add("pips", seats)
        self.dice = lay.add("dice", 6)
        self.to_move = lay.add("to_move")
        self.finished = lay.add("finished", seats)
        self.turn = lay.add("turn")
        self.names = lay.names
        self.size = len(self.names)
        self.start_pips: Dict[int, float] = {}

    def _spot(self, text: str) -> int:
        if text == "0":
            return 0
        if text == "off":
            return 7 + self.length
        if text.startswith("b"):
            return int(text[1:])
        return 6 + int(text)

    def encode(self, o: Dict[str, Any], seat: int) -> np.ndarray:
        v = np.zeros(self.size, np.float32)
        finished = set(o["finished"])
        for k, team in enumerate(_ego(seat, self.seats)):
            checkers = o["teams"][team]
            for spot in checkers:
                kind = self.KINDS.get(spot[-1], 0) if spot[-1] in "ps" else 0
                body = spot[:-1] if spot[-1] in "ps" and spot != "0" else spot
                index = (k * self.spots + self._spot(body)) * 3 + kind
                v[self.checkers + index] += 1 / max(len(checkers), 1)
            most = len(checkers) * (self.length + 1)
            v[self.pips + k] = min(o["pips"][team] / max(most, 1), 1)
            v[self.finished + k] = team in finished
        for die in o["dice"]:
            v[self.dice + die - 1] += 0.25
        v[self.to_move] = o["to_move"] == seat
        v[self.turn] = min(o["turn"] / 500, 1)
        return v


class SpartanEncoder(Encoder):
    """Spartan Yahtzee: phase (3, one-hot: reroll1, reroll2, over); per army
    (observer first) hit points / 10, capped; who holds the Mercenary (observer,
    opponent, nobody); the observer's dice (6 counts of faces / 10); whether it
    has decided this step; per army dice in hand, resting and in the graveyard,
    each / 10; the turn / 200, capped; the sudden death: whose it was (observer,
    opponent) and its rolls / 100. The previous reveal is not encoded: read
    ``last_reveal`` in the observation dict."""

    PHASES = ("reroll1", "reroll2", "over")

    def __init__(self) -> None:
        lay = _Layout()
        self.phase = lay.add("phase", 3)
        self.hp = lay.add("hp", 2)
        self.mercenary = lay.add("mercenary", 3)
        self.dice = lay.add("your_dice", 6)
        self.decided = lay.add("you_decided")
        self.in_hand = lay.add("in_hand", 2)
        self.resting = lay.add("resting", 2)
        self.graveyard = lay.add("graveyard", 2)
        self.turn = lay.add("turn")
        self.sudden = lay.add("sudden_death_winner", 2)
        self.sudden_rolls = lay.add("sudden_death_rolls")
        self.names = lay.names
        self.size = len(self.names)

    def encode(self, o: Dict[str, Any], seat: int) -> np.ndarray:
        v = np.zeros(self.size, np.float32)
        v[self.phase + self.PHASES.index(o["phase"])] = 1
        for k, s in enumerate(_ego(seat, 2)):
            v[self.hp + k] = min(max(o["hp"][s], 0) / 10, 1)
            v[self.in_hand + k] = o["in_hand"][s] / 10
            v[self.resting + k] = o["resting"][s] / 10
            v[self.graveyard + k] = o["graveyard"][s] / 10
        holder = o["mercenary"]
        v[self.mercenary + (2 if holder is None else 0 if holder == seat else 1)] = 1
        for face in o["your_dice"]:
            v[self.dice + face - 1] += 0.1
        v[self.decided] = o["you_decided"]
        v[self.turn] = min(o["turn"] / 200, 1)
        winner = o["sudden_death_winner"]
        if winner is not None:
            v[self.sudden + (0 if winner == seat else 1)] = 1
        v[self.sudden_rolls] = min(o["sudden_death_rolls"] / 100, 1)
        return v


def encoder_for(state: State) -> Encoder:
    """The encoder of a state's game, options and seats."""
    game, options, seats = state.game, state.options, state.seats
    if game == "ur":
        return UrEncoder()
    if game == "utara":
        o = state.observation(0)
        width, height = o["sky"]
        return UtaraEncoder(width, height, seats)
    if game == "uptick":
        return UptickEncoder(int(option_value(options, "size") or 8), int(option_value(options, "reserve") or 8))
    if game == "cuatto":
        return CuattoEncoder(state.observation(0)["length"], seats)
    if game == "spartan":
        return SpartanEncoder()
    raise ValueError(f"no encoder for game {game!r}")
