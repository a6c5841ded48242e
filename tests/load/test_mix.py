"""scenarios.load.mix: the operation mix, its validated config, popularity."""

from __future__ import annotations

import random

import pytest

from scenarios.errors import ConfigError
from scenarios.load.mix import OPERATIONS, LoadConfig, Popularity
from storages import StorageError


def test_config_is_validated() -> None:
    config = LoadConfig.from_values("127.0.0.1:8100", {"browse": 0})
    assert dict(config.weights)["browse"] == 0 and config.address_text.endswith(":8100")
    for kwargs, message in [
        ({"weights": {"teleport": 1}}, "unknown operation 'teleport'"),
        ({"weights": {"lookup": -1}}, "weight of lookup must be 0 or more"),
        ({"weights": {op.name: 0 for op in OPERATIONS}}, "nothing to do"),
        ({"skew": -0.5}, "skew must be 0 or more"),
        ({"retries": -1}, "retries must be 0 or more"),
    ]:
        with pytest.raises(ConfigError, match=message):
            LoadConfig.from_values("127.0.0.1:8100", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(StorageError, match="bad ZEO address"):
        LoadConfig.from_values("nowhere")


def test_picker_follows_the_weights() -> None:
    config = LoadConfig.from_values(
        "127.0.0.1:8100",
        {op.name: 0 for op in OPERATIONS} | {"lookup": 3, "browse": 1},
    )
    pick, rng = config.picker(), random.Random(5)
    names = [pick(rng).name for _ in range(4000)]
    assert set(names) == {"lookup", "browse"}
    assert 0.7 < names.count("lookup") / len(names) < 0.8


def test_popularity_skew() -> None:
    rng = random.Random(7)
    uniform = Popularity(250, 0)
    assert uniform.share_of_top() == 1 / 250
    assert {uniform.sample(rng) for _ in range(5000)} == set(range(1, 251))
    zipf = Popularity(250, 1.0)
    assert 0.15 < zipf.share_of_top() < 0.17
    draws = [zipf.sample(rng) for _ in range(20000)]
    assert 0.14 < draws.count(1) / len(draws) < 0.18
    assert min(draws) == 1 and max(draws) <= 250
