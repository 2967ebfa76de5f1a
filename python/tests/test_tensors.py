"""Observations and action masks written by the engine straight into numpy
arrays: the same numbers as the Python encoders compute from the observation
dict, and masks that are the legal actions, at every step of every game."""

import random

import numpy as np
import pytest

import astragal_engine as astragal
from astragal_engine.encoding import encoder_for

CASES = [(g, None, None) for g in astragal.GAME_IDS] + [
    ("utara", "moon=dark,sun=rising,scoring=advanced", 3),
    ("utara", "blocks=true,moon=half,sun=high,sky=9x7", 4),
    ("ur", "rules=finkel", None),
    ("uptick", "size=5,reserve=4", None),
    ("cuatto", "setup=full", 2),
    ("cuatto", "length=12", 3),
]


@pytest.mark.parametrize("game,options,seats", CASES)
def test_the_engines_tensors_are_the_encoders_numbers_and_the_legal_actions(game, options, seats):
    state = astragal.new_game(game, options, seats=seats, seed=5)
    encoder = encoder_for(state)
    assert state.observation_size == encoder.size
    rng = random.Random(game)
    steps = 0
    while True:
        for seat in range(state.seats):
            tensor = state.encode(seat)
            assert tensor.dtype == np.float32 and tensor.shape == (encoder.size,)
            expected = encoder.encode(state.observation(seat), seat)
            wrong = [encoder.names[i] for i in np.flatnonzero(~np.isclose(tensor, expected, atol=1e-6))]
            assert not wrong, f"step {steps}, seat {seat}: {wrong}"
            assert ((tensor >= 0) & (tensor <= 1)).all()
            mask = state.action_mask(seat)
            assert mask.dtype == np.int8 and mask.shape == (state.action_count,)
            legal = state.legal_actions(seat) if seat in state.to_act else []
            assert np.flatnonzero(mask).tolist() == legal
            both = state.encode_with_mask(seat)
            assert np.array_equal(both[0], tensor) and np.array_equal(both[1], mask)
        if state.is_over:
            break
        seat = rng.choice(state.to_act)
        state.play_action(rng.choice(state.legal_actions(seat)), seat)
        steps += 1
    assert steps > 0


def test_a_chance_node_has_an_empty_mask_and_a_bad_seat_is_refused():
    state = astragal.new_game("cuatto", seed=1, chance="explicit")
    assert state.is_chance
    assert not state.action_mask(0).any()
    with pytest.raises(ValueError, match="no seat 9"):
        state.encode(9)
    with pytest.raises(ValueError, match="seat -1 is negative"):
        state.action_mask(-1)
