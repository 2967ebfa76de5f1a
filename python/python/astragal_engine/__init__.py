"""astragal_engine: five dice games for agents, on the engine the astragal referee uses.

A forward model (:func:`new_game`, :class:`State`), PettingZoo environments
(:mod:`astragal_engine.pettingzoo`) and OpenSpiel games (:mod:`astragal_engine.openspiel`).
The same game id, options, seed and moves give the same game as
``referee play``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from ._astragal import (
    ENGINE_VERSION,
    AstragalError,
    ChanceRefused,
    MoveRefused,
    SetupFailed,
    State,
    game_infos,
    os_seed,
    new_state as _new_state,
    state_from_position as _state_from_position,
)

__all__ = [
    "ENGINE_VERSION",
    "GAME_IDS",
    "AstragalError",
    "ChanceRefused",
    "MoveRefused",
    "SetupFailed",
    "State",
    "from_position",
    "games",
    "new_game",
    "option_value",
    "rewards_of",
]

Options = Union[None, str, Mapping[str, Any], Iterable[str]]

GAME_IDS = tuple(info["id"] for info in game_infos())


def games() -> List[Dict[str, Any]]:
    """Every game: id, name, seat range, nature (chance, simultaneous, hidden
    information) and options with their defaults."""
    return game_infos()


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def option_texts(options: Options) -> List[str]:
    """Options as the engine reads them: ``key=value`` texts. Accepts ``None``, a
    dict, a list of ``key=value`` texts, or one text with commas."""
    if options is None:
        return []
    if isinstance(options, str):
        return [part.strip() for part in options.split(",") if part.strip()]
    if isinstance(options, Mapping):
        return [f"{key}={_value_text(value)}" for key, value in options.items()]
    texts = []
    for item in options:
        if not isinstance(item, str):
            raise SetupFailed(f"an option is a 'key=value' text, not {type(item).__name__}")
        texts.append(item)
    return texts


def option_value(texts: Iterable[str], key: str) -> Optional[str]:
    """The value of ``key`` among ``key=value`` texts (a state's ``options``), or
    ``None``."""
    for pair in texts:
        k, _, value = pair.partition("=")
        if k == key:
            return value
    return None


def rewards_of(outcome: Mapping[str, Any]) -> List[float]:
    """What a finished game is worth to each seat: (seats it beat - seats that beat
    it) / (seats - 1). +1 / -1 in a two-seat game, 0 for a draw; they sum to 0."""
    ranks = outcome["ranks"]
    n = len(ranks)
    return [sum((r < other) - (r > other) for other in ranks) / max(n - 1, 1) for r in ranks]


def _seed(seed: Optional[int]) -> int:
    if seed is None:
        return os_seed()
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise SetupFailed(f"seed must be an int from 0 to 2**64-1, not {seed!r}")
    return seed


def new_game(
    game: str,
    options: Options = None,
    *,
    seats: Optional[int] = None,
    seed: Optional[int] = None,
    chance: str = "seeded",
) -> State:
    """A new game.

    ``seed`` decides every die (from the OS random source when ``None``).
    ``chance="explicit"`` leaves the dice to you: the state stops at chance
    nodes (``state.is_chance``) until you give each draw with
    ``apply_chance``."""
    return _new_state(game, option_texts(options), seats, _seed(seed), chance)


def from_position(
    game: str,
    position: str,
    options: Options = None,
    *,
    seats: Optional[int] = None,
    seed: Optional[int] = None,
    chance: str = "seeded",
) -> State:
    """A state from position notation (``State.position()``, or a public position
    from an observation). The dice to come are the position's ``rng`` field, or
    drawn from ``seed`` when it has none."""
    return _state_from_position(game, position, option_texts(options), seats, _seed(seed), chance)
