"""The runner: all eight rows for every storage, same answers everywhere,
servers stopped when a phase raises."""

from __future__ import annotations

import pytest

import storages
from scenarios import runner
from scenarios.config import ConfigError, RunConfig
from scenarios.phases import PHASE_NAMES, PHASES, Phase
from tests.conftest import runzeo_pids

EIGHT = (
    "create users/groups",
    "commit users/groups",
    "convert processes",
    "commit processes",
    "query processes",
    "generate sequences",
    "commit sequences",
    "query sequences",
)


def test_phases_are_the_2000_rows_in_order() -> None:
    assert PHASE_NAMES == EIGHT


def available() -> list[str]:
    return [n for n in storages.REGISTRY if storages.get(n).unavailable() is None]


def test_every_storage_gives_every_row(no_leaked_servers: None) -> None:
    names = tuple(available())
    result = runner.run(RunConfig(storages=names, repeat=2, warmups=0))
    assert result.storages == list(names)
    assert result.phases == list(EIGHT)
    for name in names:
        for phase in EIGHT:
            r = result.get(name, phase)
            assert r is not None and len(r.samples) == 2
            assert all(s.wall_s >= 0 and s.cpu_s >= 0 for s in r.samples)
            if name == "memory":
                assert r.loads is None
            elif phase.startswith("commit"):
                assert r.stores and r.stores > 0
    commit_seq = result.get("file", "commit sequences")
    assert commit_seq is not None and commit_seq.stores is not None
    assert commit_seq.stores > 300  # 30 sequences and their 300-600 steps


def test_answers_agree_across_storages(no_leaked_servers: None) -> None:
    config = RunConfig(repeat=1, warmups=0)
    answers = {
        name: runner.run_trial(storages.get(name), config)[1].answers
        for name in available()
    }
    first = next(iter(answers.values()))
    assert first["query processes"]["cheapest"]
    for a in answers.values():
        assert a == first


@pytest.mark.parametrize("name", ["zeo", "file"])
def test_a_failing_phase_closes_the_store(name: str, no_leaked_servers: None) -> None:
    def explode(state):  # type: ignore[no-untyped-def]
        raise RuntimeError("phase failed")

    before = runzeo_pids()
    phases = (*PHASES[:2], Phase("explode", explode, "raises"))
    with pytest.raises(RuntimeError, match="phase failed"):
        runner.run_trial(storages.get(name), RunConfig(repeat=1), phases)
    assert runzeo_pids() <= before


def test_config_validation() -> None:
    with pytest.raises(ConfigError, match="unknown storage"):
        RunConfig(storages=("nope",))
    with pytest.raises(ConfigError, match="--repeat"):
        RunConfig(repeat=0)
    with pytest.raises(ConfigError, match="twice"):
        RunConfig(storages=("file", "file"))
