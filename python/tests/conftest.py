"""Shared set-up: where the referee binary is, for the replay tests."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pytest_configure(config):
    # PettingZoo's api_test suggests flat observations; ours are the usual
    # {"observation", "action_mask"} dict of masked environments.
    config.addinivalue_line("filterwarnings", "ignore:Observation space for each agent probably should be:UserWarning")
    config.addinivalue_line("filterwarnings", "ignore:Observation is not a NumPy array:UserWarning")


def _referee():
    given = os.environ.get("ASTRAGAL_REFEREE")
    if given:
        return pathlib.Path(given)
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / "referee"
        if path.exists():
            return path
    return None


@pytest.fixture(scope="session")
def referee():
    path = _referee()
    if path is None or not path.exists():
        if os.environ.get("CI"):
            pytest.fail("no referee binary: set ASTRAGAL_REFEREE or build it (cargo build --bins)")
        pytest.skip("no referee binary: set ASTRAGAL_REFEREE or build it (cargo build --bins)")
    return path
