"""The forward model: every game by id, moves by text, index and number, chance
seeded or explicit, observations, positions, clones, samples, errors."""

import json
import random

import pytest

import astragal_engine as astragal
from astragal_engine import ChanceRefused, MoveRefused, SetupFailed

# Every game at its default seats, plus other seat counts and options.
CASES = [(g, None, None) for g in astragal.GAME_IDS] + [
    ("utara", "moon=dark,sun=rising,scoring=advanced", 3),
    ("utara", "blocks=true,moon=half,sun=high", 4),
    ("ur", "rules=finkel", None),
    ("uptick", "size=5,reserve=4", None),
    ("cuatto", "setup=full", 2),
    ("cuatto", None, 3),
]


def random_game(state, rng, check=None):
    """Plays uniformly random moves (and chance) to the end; returns the moves."""
    played = []
    while not state.is_over:
        if state.is_chance:
            outcomes = state.chance_outcomes()
            assert abs(sum(p for _, p in outcomes) - 1) < 1e-9
            state.apply_chance(rng.randrange(len(outcomes)))
            continue
        seat = rng.choice(state.to_act)
        if check:
            check(state, seat)
        moves = state.legal_moves(seat)
        move = rng.choice(moves)
        state.play(move, seat)
        played.append((seat, move))
    return played


def test_the_games_are_listed_with_their_nature():
    infos = {g["id"]: g for g in astragal.games()}
    assert set(infos) == {"utara", "ur", "uptick", "cuatto", "spartan"}
    assert infos["spartan"]["simultaneous"] and infos["spartan"]["hidden_information"]
    assert not infos["uptick"]["chance"]
    assert all(o["name"] and o["takes"] for g in infos.values() for o in g["options"])


@pytest.mark.parametrize("game,options,seats", CASES)
def test_a_random_game_keeps_every_promise(game, options, seats):
    rng = random.Random(f"{game}{options}{seats}")
    state = astragal.new_game(game, options, seats=seats, seed=11)
    count = state.action_count

    def check(s, seat):
        moves = s.legal_moves(seat)
        actions = s.legal_actions(seat)
        assert len(moves) == len(actions) > 0
        assert actions == sorted(set(actions)), "numbers are unique and ascending"
        assert all(0 <= a < count for a in actions)
        for move, action in zip(moves, actions):
            assert s.action_of(move) == action
            assert s.move_of_action(action, seat) == move
        # The position round-trips, dice to come included.
        again = astragal.from_position(game, s.position(), options, seats=s.seats, seed=0)
        assert again == s
        # A clone is independent and plays the same.
        twin = s.clone()
        twin.play(moves[0], seat)
        assert twin != s
        # A sample looks the same to the seat, and its observation is a dict.
        sample = s.determinize(seat, 5)
        assert sample.observation(seat) == s.observation(seat)
        assert json.loads(s.observation_json(seat)) == s.observation(seat)
        assert "rng=" not in s.public_position(seat)

    played = random_game(state, rng, check)
    outcome = state.outcome()
    assert outcome is not None and len(outcome["ranks"]) == state.seats
    assert state.to_act == [] and played


@pytest.mark.parametrize("game", astragal.GAME_IDS)
def test_the_same_seed_and_moves_give_the_same_game_by_text_index_and_number(game):
    a = astragal.new_game(game, seed=99)
    b = astragal.new_game(game, seed=99)
    c = astragal.new_game(game, seed=99)
    rng = random.Random(game)
    while not a.is_over:
        seat = a.to_act[0]
        i = rng.randrange(len(a.legal_moves(seat)))
        text = a.legal_moves(seat)[i]
        a.play(text, seat)
        b.play(i, seat)
        c.play_action(c.legal_actions(seat)[i], seat)
        assert a == b == c
    assert a.outcome() == b.outcome() == c.outcome()


@pytest.mark.parametrize("game", [g["id"] for g in astragal.games() if g["chance"]])
def test_explicit_chance_waits_for_each_draw(game):
    state = astragal.new_game(game, chance="explicit")
    assert state.explicit_chance
    rng = random.Random(game)
    nodes = 0
    while not state.is_over:
        if state.is_chance:
            nodes += 1
            assert state.to_act == []
            outcomes = state.chance_outcomes()
            assert len(outcomes) <= state.max_chance_outcomes
            with pytest.raises(MoveRefused, match="chance is to decide"):
                state.legal_moves()
            with pytest.raises(ChanceRefused, match="outside"):
                state.apply_chance(len(outcomes))
            state.apply_chance(rng.randrange(len(outcomes)))
        else:
            seat = state.to_act[0]
            state.play(rng.randrange(len(state.legal_moves(seat))), seat)
    assert nodes > 0
    with pytest.raises(ChanceRefused, match="no chance"):
        state.apply_chance(0)


def test_a_seeded_state_takes_no_chance_from_outside():
    state = astragal.new_game("ur", seed=1)
    assert not state.is_chance and state.chance_outcomes() == []
    with pytest.raises(ChanceRefused, match="seeded"):
        state.apply_chance(0)


def test_a_sample_never_knows_the_real_dice():
    state = astragal.new_game("spartan", seed=3)
    hidden = state.observation(1)["your_dice"]
    samples = {tuple(state.determinize(0, s).observation(1)["your_dice"]) for s in range(20)}
    assert len(samples) > 1, "the other seat's dice are drawn afresh"
    assert all(state.determinize(0, s).observation(0) == state.observation(0) for s in range(5))
    assert hidden  # the real state still has them


def test_bad_input_raises_an_error_that_names_the_problem():
    with pytest.raises(SetupFailed, match="unknown game \"chess\""):
        astragal.new_game("chess")
    with pytest.raises(SetupFailed, match="no option \"colour\""):
        astragal.new_game("ur", {"colour": "red"})
    with pytest.raises(SetupFailed, match="size"):
        astragal.new_game("uptick", "size=0")
    with pytest.raises(SetupFailed, match="2 to 2 seats, not 5"):
        astragal.new_game("ur", seats=5)
    with pytest.raises(SetupFailed, match="chance="):
        astragal.new_game("ur", chance="maybe")
    with pytest.raises(SetupFailed, match="seed"):
        astragal.new_game("ur", seed=-1)
    with pytest.raises(SetupFailed):
        astragal.from_position("ur", "not a position")
    state = astragal.new_game("uptick", seed=1)
    seat = state.to_act[0]
    before = state.position()
    with pytest.raises(MoveRefused, match="cannot parse move"):
        state.play("zz99", seat)
    with pytest.raises(MoveRefused, match="not to act"):
        state.play(state.legal_moves(seat)[0], 1 - seat)
    with pytest.raises(MoveRefused, match="no seat 7"):
        state.play(0, 7)
    with pytest.raises(MoveRefused, match="out of range"):
        state.play(10_000, seat)
    with pytest.raises(MoveRefused, match="negative"):
        state.play(-1, seat)
    with pytest.raises(MoveRefused, match="not a bool"):
        state.play(True, seat)
    with pytest.raises(MoveRefused, match="not float"):
        state.play(1.5, seat)
    with pytest.raises(MoveRefused, match="not a legal move"):
        state.play_action(state.action_count - 1, seat)
    with pytest.raises(MoveRefused, match="no seat"):
        state.observation(2)
    assert state.position() == before, "a refused move changes nothing"
    spartan = astragal.new_game("spartan", seed=1)
    with pytest.raises(MoveRefused, match="decide at once: name the seat"):
        spartan.legal_moves()


def test_every_bad_number_is_a_value_error_that_names_the_problem():
    state = astragal.new_game("ur", seed=1)
    seat = state.to_act[0]
    other = 1 - seat
    legal = state.legal_actions(seat)[0]
    before = state.position()
    calls = [
        (lambda: state.play_action(-1), "action -1 is negative"),
        (lambda: state.play_action(2**70), "action .* is too large"),
        (lambda: state.play_action("3"), "action is a whole number, not str"),
        (lambda: state.play_action(True), "action is a whole number, not a bool"),
        (lambda: state.play_action(legal, other), f"seat {other} is not to act \\(to act: \\[{seat}\\]\\)"),
        (lambda: state.play_action(legal, -1), "seat -1 is negative"),
        (lambda: state.play(0, other), f"seat {other} is not to act"),
        (lambda: state.move_of_action(-5), "action -5 is negative"),
        (lambda: state.legal_actions(-1), "seat -1 is negative"),
        (lambda: state.observation(-1), "seat -1 is negative"),
        (lambda: state.observation_json(1.0), "seat is a whole number, not float"),
        (lambda: state.public_position(None), "seat is a whole number, not NoneType"),
        (lambda: state.render(-3), "seat -3 is negative"),
        (lambda: state.determinize(0, -1), "seed -1 is negative"),
        (lambda: state.random_playout(-2), "seed -2 is negative"),
    ]
    for call, message in calls:
        with pytest.raises(ValueError, match=message):
            call()
    assert state.position() == before, "a refused call changes nothing"
    # numpy's integers are whole numbers too.
    np = pytest.importorskip("numpy")
    state.play_action(np.int64(legal), np.int32(seat))
    explicit = astragal.new_game("ur", seed=1, chance="explicit")
    with pytest.raises(ChanceRefused, match="chance outcome -1 is negative"):
        explicit.apply_chance(-1)
    with pytest.raises(MoveRefused, match="seat 0 is not to act: chance is to decide"):
        explicit.play_action(0, 0)
    over = astragal.new_game("uptick", "size=3,reserve=1,max_turns=2", seed=1)
    over.random_playout(1)
    with pytest.raises(MoveRefused, match="seat 0 is not to act: the game is over"):
        over.play_action(0, 0)


def test_random_text_never_crashes_the_engine():
    """Deterministic fuzzing: random text as moves, options and positions raises
    the package's errors and nothing else."""
    rng = random.Random(7)
    alphabet = "abc123=:,;/ -_xXoO\u00e9\x00"
    for game in astragal.GAME_IDS:
        state = astragal.new_game(game, seed=2)
        seat = state.to_act[0]
        base = state.position()
        for _ in range(300):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
            try:
                state.clone().play(text, seat)
            except MoveRefused:
                pass
            # Random options: refused cleanly or a real game.
            try:
                astragal.new_game(game, text.replace(";", ","), seed=1).random_playout(2)
            except SetupFailed:
                pass
            # A mutated position: refused cleanly or a real state.
            chars = list(base)
            for _ in range(rng.randrange(1, 4)):
                chars[rng.randrange(len(chars))] = rng.choice(alphabet)
            try:
                mutated = astragal.from_position(game, "".join(chars), seed=0)
            except SetupFailed:
                continue
            mutated.random_playout(1)
            assert mutated.is_over


def test_the_encodings_have_the_sizes_the_readme_gives():
    from astragal_engine.encoding import encoder_for

    def size(game, options=None, seats=None):
        return encoder_for(astragal.new_game(game, options, seats=seats, seed=0)).size

    assert size("utara") == 10 * 81 + 7 + 8 * 2 == 833
    assert size("ur") == 53
    assert size("uptick", "size=5") == 4 * 25 + 9
    assert size("cuatto") == 3 * 4 * (18 + 8) + 2 * 4 + 8 == 328
    assert size("cuatto", "length=12", 2) == 3 * 2 * (12 + 8) + 2 * 2 + 8
    assert size("spartan") == 25
    counts = {g: astragal.new_game(g, seed=0).action_count for g in astragal.GAME_IDS}
    assert counts == {"utara": 2 * 81 + 3, "ur": 337, "uptick": 6 * 64 + 64 * 64, "cuatto": 18 * 26, "spartan": 3003}
