"""The games as OpenSpiel games: OpenSpiel's own random-simulation checks, and
its algorithms playing through them."""

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import cfr, exploitability, mcts
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
