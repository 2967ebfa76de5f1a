"""The games as OpenSpiel games: OpenSpiel's own random-simulation checks, and
its algorithms playing through them."""

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import cfr, exploitability, get_all_states, mcts
from open_spiel.python.bots import uniform_random

import astragal_engine as astragal
import astragal_engine.openspiel  # noqa: F401  (registers the games)

SETTINGS = [(g, {}) for g in astragal.GAME_IDS] + [
    ("utara", {"players": 4, "options": "blocks=true,moon=half,sun=high"}),
    ("cuatto", {"players": 3, "options": "setup=full"}),
    ("ur", {"rules": "finkel"}),
    ("uptick", {"size": 4, "reserve": 3}),
]


@pytest.mark.parametrize("game,params", SETTINGS)
def test_openspiels_random_simulations_pass(game, params):
    g = pyspiel.load_game(f"astragal_{game}", params)
    # With its defaults: serialize=True loads the game back from its string
    # and the state from its history, at every step.
    pyspiel.random_sim_test(g, num_sims=5, serialize=True, verbose=False)


@pytest.mark.parametrize(
    "text,options",
    [
        ("astragal_ur(rules=finkel)", ["rules=finkel"]),
        ("astragal_utara(players=3,sky=7x7,rounds=2,blocks=True)", ["sky=7x7", "blocks=true", "rounds=2"]),
        ("astragal_uptick(size=4,reserve=3,max_turns=20)", ["size=4", "reserve=3", "max_turns=20"]),
    ],
)
def test_a_game_string_names_options_and_loads_back_as_the_same_game(text, options):
    g = pyspiel.load_game(text)
    assert sorted(g.options) == sorted(options)
    again = pyspiel.load_game(str(g))
    assert str(again) == str(g) and sorted(again.options) == sorted(options)


def test_the_older_options_text_still_loads_and_names_each_option():
    g = pyspiel.load_game("astragal_cuatto", {"players": 3, "options": "setup=full"})
    assert str(g) == "astragal_cuatto(players=3,setup=full)"
    with pytest.raises(Exception, match="given twice"):
        pyspiel.load_game("astragal_ur", {"options": "max_turns=10", "max_turns": 20})


def test_the_game_types_say_what_each_game_is():
    t = {g: pyspiel.load_game(f"astragal_{g}").get_type() for g in astragal.GAME_IDS}
    Chance, Dyn, Info = pyspiel.GameType.ChanceMode, pyspiel.GameType.Dynamics, pyspiel.GameType.Information
    assert t["uptick"].chance_mode == Chance.DETERMINISTIC
    assert all(t[g].chance_mode == Chance.EXPLICIT_STOCHASTIC for g in ("ur", "utara", "cuatto", "spartan"))
    assert t["spartan"].dynamics == Dyn.SIMULTANEOUS
    assert t["spartan"].information == Info.IMPERFECT_INFORMATION
    assert t["ur"].information == Info.PERFECT_INFORMATION
    assert pyspiel.load_game("astragal_cuatto", {"players": 4}).num_players() == 4


def test_a_bad_option_is_refused_when_the_game_loads():
    with pytest.raises(Exception, match="no option"):
        pyspiel.load_game("astragal_ur", {"options": "colour=red"})


def test_a_seat_sees_its_own_dice_and_not_the_others():
    g = pyspiel.load_game("astragal_spartan")
    s = g.new_initial_state()
    while s.is_chance_node():
        s.apply_action(s.chance_outcomes()[0][0])
    assert s.current_player() == pyspiel.PlayerId.SIMULTANEOUS
    mine = s.observation_string(0)
    assert '"your_dice":[1,1,1,1,1,1,1,1,1,1]' in mine
    other = s.clone()
    # Another state whose only difference is seat 1's dice looks the same to seat 0.
    t = g.new_initial_state()
    draws = 0
    while t.is_chance_node():
        t.apply_action(0 if draws < 10 else t.chance_outcomes()[-1][0])
        draws += 1
    assert t.observation_string(0) == other.observation_string(0)
    assert t.observation_string(1) != other.observation_string(1)
    assert t.information_state_string(0) == other.information_state_string(0)


def play(game, bots, rng):
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            state.apply_action(int(rng.choice([o for o, _ in outcomes])))
        else:
            state.apply_action(bots[state.current_player()].step(state))
    return state.returns()


def test_openspiels_mcts_beats_random_play_at_ur():
    game = pyspiel.load_game("astragal_ur")
    wins = 0
    for i in range(10):
        rng = np.random.RandomState(i)
        me = i % 2
        searcher = mcts.MCTSBot(
            game,
            uct_c=2,
            max_simulations=100,
            evaluator=astragal.openspiel.EngineRolloutEvaluator(1, rng),
            random_state=rng,
        )
        bots = [None, None]
        bots[me] = searcher
        bots[1 - me] = uniform_random.UniformRandomBot(1 - me, rng)
        wins += play(game, bots, rng)[me] > 0
    assert wins >= 8, f"MCTS won {wins} of 10"


def test_openspiels_own_rollout_evaluator_plays_ur_through():
    game = pyspiel.load_game("astragal_ur")
    rng = np.random.RandomState(1)
    bot = mcts.MCTSBot(game, uct_c=2, max_simulations=4, evaluator=mcts.RandomRolloutEvaluator(1, rng), random_state=rng)
    returns = play(game, [bot, uniform_random.UniformRandomBot(1, rng)], rng)
    assert sorted(returns) == [-1.0, 1.0]


def test_cfr_approaches_equilibrium_on_a_small_uptick():
    game = pyspiel.load_game("astragal_uptick", {"options": "size=3,reserve=1,max_turns=2"})
    solver = cfr.CFRSolver(game)
    solver.evaluate_and_update_policy()
    first = exploitability.nash_conv(game, solver.average_policy())
    for _ in range(19):
        solver.evaluate_and_update_policy()
    last = exploitability.nash_conv(game, solver.average_policy())
    assert first > 0.1, first
    assert last < first / 10, (first, last)


def first_decision(game, draws):
    """A Spartan state at its first decision, its opening dice given by `draws`
    (a draw past the list is 3: a four, which may be rerolled)."""
    s = game.new_initial_state()
    k = 0
    while s.is_chance_node():
        s.apply_action(draws[k] if k < len(draws) else 3)
        k += 1
    return s, k


def test_spartans_information_state_tensor_has_perfect_recall_from_what_the_seat_saw():
    g = pyspiel.load_game("astragal_spartan")
    assert g.get_type().provides_information_state_tensor
    size = g.information_state_tensor_size()
    assert g.information_state_tensor_shape() == [size]
    base, n = first_decision(g, [])
    # Another opening in which only the last die drawn differs: one seat's own
    # dice differ, the other seat cannot tell the two states apart.
    other, _ = first_decision(g, [3] * (n - 1) + [5])
    blind = [p for p in range(2) if base.observation_string(p) == other.observation_string(p)]
    assert len(blind) == 1
    seer = 1 - blind[0]
    assert base.information_state_tensor(blind[0]) == other.information_state_tensor(blind[0])
    assert base.information_state_tensor(seer) != other.information_state_tensor(seer)
    # Two different own histories: the same opening, seat 0 choosing differently.
    choices = base.legal_actions(0)
    assert len(choices) > 1
    a, b = base.clone(), base.clone()
    seat1 = base.legal_actions(1)[0]
    a.apply_actions([choices[0], seat1])
    b.apply_actions([choices[-1], seat1])
    # Chance alike afterwards (the rerolled dice all 0s) until seat 0 decides again.
    for s in (a, b):
        while s.is_chance_node():
            s.apply_action(0)
    assert a.information_state_tensor(0) != b.information_state_tensor(0)
    # Seat 1 made the same choice and saw the same: it cannot tell a from b only
    # if its observation is the same, and then neither can its tensor.
    if a.observation_string(1) == b.observation_string(1):
        assert a.information_state_tensor(1) == b.information_state_tensor(1)
    # Each record holds what the observer saw: the current observation's encoding
    # is the live record's start.
    t = np.array(a.information_state_tensor(0), np.float32)
    record = astragal.openspiel.SpartanRecall.RECORD
    live = t.reshape(-1, record)
    filled = int(live[:, astragal.openspiel.SpartanRecall.ENCODING + astragal.openspiel.SpartanRecall.REVEAL].sum())
    assert filled == 2  # one decision made, then now
    np.testing.assert_array_equal(live[1, :25], a.astragal_state.encode(0))


def test_spartans_information_state_tensor_keeps_every_history_apart_in_random_play():
    # Distinct information state strings (perfect recall, from the observations)
    # give distinct tensors, and equal strings equal tensors.
    g = pyspiel.load_game("astragal_spartan(max_turns=3)")
    rng = np.random.RandomState(3)
    by_string = {}
    for _ in range(30):
        s = g.new_initial_state()
        while not s.is_terminal():
            if s.is_chance_node():
                s.apply_action(int(rng.choice([o for o, _ in s.chance_outcomes()])))
                continue
            for p in range(2):
                key = s.information_state_string(p)
                tensor = tuple(s.information_state_tensor(p))
                assert by_string.setdefault(key, tensor) == tensor
            s.apply_actions([int(rng.choice(s.legal_actions(p))) for p in range(2)])
    tensors = list(by_string.values())
    assert len(set(tensors)) == len(tensors) > 30


def test_other_games_have_no_information_state_tensor():
    assert not pyspiel.load_game("astragal_ur").get_type().provides_information_state_tensor


def all_states(game):
    # OpenSpiel's own exhaustive traversal (python/algorithms/get_all_states.py),
    # with no depth limit.
    return get_all_states.get_all_states(game, depth_limit=-1, include_terminals=True, include_chance_states=True)


def test_get_all_states_finishes_on_a_small_uptick():
    states = all_states(pyspiel.load_game("astragal_uptick(size=3,reserve=1,max_turns=2)"))
    assert len(states) > 10
    assert any(s.is_terminal() for s in states.values())


def test_urs_opening_is_bounded_by_rethrows_and_get_all_states_finishes():
    g = pyspiel.load_game("astragal_ur(rethrows=1,max_turns=2)")
    assert str(g) == "astragal_ur(max_turns=2,players=2,rethrows=1)" or "rethrows=1" in str(g)
    assert pyspiel.load_game(str(g)).rethrows == 1
    states = all_states(g)
    assert any(s.is_terminal() for s in states.values())
    # One tied round is drawn die by die; after it, one node decides who starts
    # (two outcomes), else the first roll is drawn (a d4).
    after_one_round = [s for s in states.values() if len(s.history()) == 4 and s.is_chance_node()]
    assert {len(s.chance_outcomes()) for s in after_one_round} == {2, 4}
    tied = {tuple(s.history()) for s in after_one_round if len(s.chance_outcomes()) == 2}
    # After a tie, the second round is never drawn die by die: it is one of the
    # two throws that decide who starts.
    decided = {(3, 1, 0, 0), (0, 0, 3, 1)}
    second_rounds = [
        tuple(s.astragal_state.pending_chance[4:8])
        for s in states.values()
        if s.is_chance_node() and tuple(s.history()[:4]) in tied and len(s.astragal_state.pending_chance) >= 8
    ]
    assert second_rounds and set(second_rounds) <= decided
    with pytest.raises(Exception, match="rethrows"):
        pyspiel.load_game("astragal_ur(rules=finkel,rethrows=1)")


@pytest.mark.parametrize("astragal_option", ["uniform", "bone"])
def test_the_bounded_opening_decides_who_starts_as_the_throws_would(astragal_option):
    # With rethrows=0 the opening is one node; each of its two outcomes leads to
    # the very state every opening drawn throw by throw leads to when that seat
    # starts (the first roll drawn alike).
    bounded = pyspiel.load_game(f"astragal_ur(rethrows=0,astragal={astragal_option})")
    free = pyspiel.load_game(f"astragal_ur(astragal={astragal_option})")
    s = bounded.new_initial_state()
    assert s.chance_outcomes() == [(0, 0.5), (1, 0.5)]
    with pytest.raises(Exception, match="who starts"):
        s.clone().apply_action(2)
    after = {}
    for starter in (0, 1):
        b = s.clone()
        b.apply_action(starter)
        # The first roll: each draw its highest.
        while b.is_chance_node():
            b.apply_action(b.chance_outcomes()[-1][0])
        assert b.current_player() == starter
        after[starter] = b.astragal_state.position()
    assert after[0] != after[1]
    rng = np.random.RandomState(7)
    seen = set()
    for _ in range(200):
        f = free.new_initial_state()
        for _ in range(4):
            f.apply_action(int(rng.choice([o for o, _ in f.chance_outcomes()])))
        # The first roll (two draws, each its highest) ends the opening, unless
        # the throws tied.
        for _ in range(2):
            f.apply_action(f.chance_outcomes()[-1][0])
        if f.is_chance_node():
            continue
        starter = f.current_player()
        seen.add(starter)
        assert f.astragal_state.position() == after[starter]
    assert seen == {0, 1}


@pytest.mark.parametrize("game", ["utara", "spartan", "cuatto"])
def test_the_wrappers_chance_outcomes_are_the_engines_and_a_caller_may_change_them(game):
    g = pyspiel.load_game(f"astragal_{game}")
    s = g.new_initial_state()
    rng = np.random.RandomState(2)
    chance_nodes = 0
    while not s.is_terminal() and chance_nodes < 200:
        if s.is_chance_node():
            chance_nodes += 1
            outcomes = s.chance_outcomes()
            assert outcomes == s.astragal_state.chance_outcomes()
            outcomes.clear()
            assert s.chance_outcomes() == s.astragal_state.chance_outcomes() != []
            s.apply_action(int(rng.choice([o for o, _ in s.chance_outcomes()])))
        elif s.is_simultaneous_node():
            s.apply_actions([int(rng.choice(s.legal_actions(p) or [0])) for p in range(g.num_players())])
        else:
            s.apply_action(int(rng.choice(s.legal_actions())))
    assert chance_nodes > 10


@pytest.mark.parametrize("game,params", SETTINGS)
def test_the_wrappers_own_node_tests_and_legal_actions_answer_as_pyspiels_do(game, params):
    # The wrapper answers these from the engine when called from Python;
    # pyspiel's own (State's methods, through the bridge) must agree everywhere.
    g = pyspiel.load_game(f"astragal_{game}", params)
    rng = np.random.RandomState(5)
    checked = {"chance": 0, "player": 0, "simultaneous": 0, "terminal": 0}
    for _ in range(3):
        s = g.new_initial_state()
        while True:
            base = pyspiel.State
            assert s.is_chance_node() == base.is_chance_node(s)
            assert s.is_simultaneous_node() == base.is_simultaneous_node(s)
            assert s.is_player_node() == base.is_player_node(s)
            assert s.legal_actions() == base.legal_actions(s)
            for p in range(g.num_players()):
                assert s.legal_actions(p) == base.legal_actions(s, p), (p, str(s))
            if s.is_terminal():
                checked["terminal"] += 1
                break
            if s.is_chance_node():
                checked["chance"] += 1
                s.apply_action(int(rng.choice([o for o, _ in s.chance_outcomes()])))
            elif s.is_simultaneous_node():
                checked["simultaneous"] += 1
                s.apply_actions([int(rng.choice(s.legal_actions(p) or [0])) for p in range(g.num_players())])
            else:
                checked["player"] += 1
                s.apply_action(int(rng.choice(s.legal_actions())))
    assert checked["terminal"] == 3
    assert checked["player"] + checked["simultaneous"] > 10


def test_a_step_through_the_wrapper_is_refused_as_the_engine_refuses_it():
    rng = np.random.RandomState(8)

    def past_chance(s):
        while s.is_chance_node():
            s.apply_action(int(rng.choice([o for o, _ in s.chance_outcomes()])))

    g = pyspiel.load_game("astragal_ur")
    s = g.new_initial_state()
    past_chance(s)
    history = s.history()
    with pytest.raises(astragal.MoveRefused, match="is not a legal move of seat"):
        s.apply_action(g.num_distinct_actions() - 1)
    assert s.history() == history
    # Spartan Yahtzee's joint step names the seat an action is missing for.
    g = pyspiel.load_game("astragal_spartan")
    s = g.new_initial_state()
    past_chance(s)
    before = s.astragal_state.clone()
    with pytest.raises(astragal.MoveRefused, match="seat 1 is to act too"):
        s.astragal_state.play_together([s.legal_actions(0)[0]])
    with pytest.raises(astragal.MoveRefused, match="is not a legal move of seat"):
        s.apply_actions([s.legal_actions(0)[0], g.num_distinct_actions() + 5])
    # Neither refusal played seat 0's action.
    assert s.astragal_state == before
    assert s.legal_actions(0) == before.legal_actions_of(0)
