"""Types of the extension module (the engine, in Rust)."""

from typing import Any, Dict, List, Optional, Tuple, Union

ENGINE_VERSION: str

class AstragalError(ValueError):
    """Any input the engine refuses."""

class SetupFailed(AstragalError):
    """A game that cannot be set up: unknown id, bad options or seats, a
    position that does not parse."""

class MoveRefused(AstragalError):
    """A move that does not parse or is not legal, or a seat that is not to act."""

class ChanceRefused(AstragalError):
    """A chance outcome given when chance is not to decide, or out of its range."""

class State:
    """A state of one of the five games."""

    @property
    def game(self) -> str:
        """The game id."""
    @property
    def seats(self) -> int:
        """The number of seats."""
    @property
    def options(self) -> List[str]:
        """Every option as ``key=value``, canonical and sorted."""
    @property
    def explicit_chance(self) -> bool:
        """Whether the caller gives the dice (``chance="explicit"``)."""
    @property
    def to_act(self) -> List[int]:
        """The seats that must decide now: empty at a chance node and at the end."""
    @property
    def current_player(self) -> int:
        """OpenSpiel's current player: the one seat to act, -1 at a chance node,
        -2 when several seats decide at once, -4 at the end."""
    def legal_actions_of(self, player: int) -> List[int]:
        """Legal action numbers of ``player``; empty (not an error) for a player
        not to act."""
    @property
    def is_over(self) -> bool:
        """Whether the game has ended."""
    @property
    def is_chance(self) -> bool:
        """Whether chance is to decide (only with ``chance="explicit"``)."""
    @property
    def chance_range(self) -> Optional[int]:
        """The range of the draw that waits (outcomes ``0..range``, equally
        likely), or ``None`` when chance is not to decide."""
    @property
    def pending_chance(self) -> List[int]:
        """The outcomes given so far to the step that waits for chance."""
    @property
    def action_count(self) -> int:
        """How many action numbers this game and options use."""
    @property
    def max_chance_outcomes(self) -> int:
        """The widest draw of chance (0 for a game without chance)."""
    def chance_outcomes(self) -> List[Tuple[int, float]]:
        """The outcomes of the draw that waits and their probabilities."""
    def apply_chance(self, outcome: int) -> None:
        """Decides the draw that waits. Raises ChanceRefused."""
    def legal_moves(self, seat: Optional[int] = None) -> List[str]:
        """Legal moves of ``seat`` (default: the one seat to act), sorted by number."""
    def legal_actions(self, seat: Optional[int] = None) -> List[int]:
        """Legal moves of ``seat`` as action numbers, ascending."""
    def action_of(self, text: str) -> int:
        """The action number of a move in notation. Raises MoveRefused."""
    def move_of_action(self, action: int, seat: Optional[int] = None) -> str:
        """The notation of a legal action of ``seat``. Raises MoveRefused."""
    def play(self, move_: Union[str, int], seat: Optional[int] = None) -> None:
        """Plays a move given as notation or as an index into ``legal_moves``."""
    def play_action(self, action: int, seat: Optional[int] = None) -> None:
        """Plays the move with this action number. Raises MoveRefused."""
    def apply_at_node(self, action: int) -> int:
        """Decides the draw that waits (returns -1) or plays the one seat to act's action (returns the seat)."""
    def play_together(self, actions: List[int]) -> None:
        """Plays ``actions[seat]`` for each seat to act, in seat order. Raises MoveRefused."""
    def random_playout(self, seed: int) -> int:
        """Plays random moves (and chance) to the end in the engine; returns moves played."""
    def observation(self, seat: int) -> Dict[str, Any]:
        """What ``seat`` may see: the protocol's observation, as Python objects."""
    def observation_json(self, seat: int) -> str:
        """What ``seat`` may see, as the protocol's JSON text."""
    def position(self) -> str:
        """The whole state in position notation, with the dice to come."""
    def public_position(self, seat: int) -> str:
        """The position as ``seat`` may know it."""
    def render(self, seat: Optional[int] = None) -> str:
        """The board as text: everything, or what ``seat`` may see."""
    def outcome(self) -> Optional[Dict[str, Any]]:
        """``{"ranks", "scores", "capped"}`` once over, else ``None``."""
    def determinize(self, seat: int, seed: int) -> "State":
        """A state that looks the same to ``seat``, hidden parts and dice to come drawn from ``seed``."""
    def clone(self) -> "State":
        """An independent copy, dice to come included: a lookahead on a clone of a
        seeded state sees the dice the game will throw. Use ``determinize`` to
        look ahead fairly."""
    def __copy__(self) -> "State": ...
    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]: ...
    @property
    def observation_size(self) -> int: ...
    def encode(self, seat: int) -> Any:
        """``seat``'s observation as a float32 numpy array, written by the engine."""
    def action_mask(self, seat: int) -> Any:
        """An int8 numpy array, 1 for each legal action of ``seat``."""
    def encode_with_mask(self, seat: int) -> Tuple[Any, Any]: ...

class Batch:
    """Many games of one kind stepped together (see ``astragal_engine.vector``)."""
    def __init__(self, game: str, options: List[str], seats: Optional[int], n: int, every_seat: bool) -> None: ...
    num_envs: int
    seats: int
    observation_size: int
    action_count: int
    every_seat: bool
    seeds: List[int]
    def reset(self, seed: int) -> Tuple[Any, Any, Any, Any, Any, Any]: ...
    def step(self, actions: Any) -> Tuple[Any, Any, Any, Any, Any, Any]: ...
    def sample_actions(self) -> Any: ...
    def state(self, i: int) -> State: ...
    def __deepcopy__(self, memo: Any) -> "State": ...
    def __eq__(self, other: object) -> bool: ...

def new_state(game: str, options: List[str], seats: Optional[int], seed: int, chance: str) -> State: ...
def state_from_position(
    game: str, position: str, options: List[str], seats: Optional[int], seed: int, chance: str
) -> State: ...
def game_infos() -> List[Dict[str, Any]]: ...
def os_seed() -> int: ...
