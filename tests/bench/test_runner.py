"""The runner: the 2000 rows first and unchanged, every row for every
storage, the same answers everywhere and in every form, caches in the state
each row claims, batches, pack, and servers stopped when a phase raises."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

import pytest

import storages
from scenarios.bench import report, rss, runner
from scenarios.bench.config import RunConfig
from scenarios.bench.phases import PHASE_NAMES, PHASES, PHASES_2000, QUERIES, Phase
from scenarios.errors import ConfigError, RunFailure
from scenarios.results.model import RunResult, Sample
from tests.conftest import runzeo_pids, storage_params
from tests.support.tiers import starts

#: A client's CPU seconds cannot pass its wall seconds times the processors.
CPUS = os.cpu_count() or 1

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


def test_the_2000_rows_come_first_in_order() -> None:
    assert PHASE_NAMES[:8] == EIGHT
    assert tuple(p.name for p in PHASES_2000) == EIGHT
    assert len(set(PHASE_NAMES)) == len(PHASE_NAMES)
    for base, _, _ in QUERIES:
        for form in ("", ", indexed"):
            for state in ("cold", "warm", "hot"):
                assert f"{base}{form} ({state})" in PHASE_NAMES
    assert PHASE_NAMES[-3:] == ("update prices", "commit update", "pack")


def available() -> list[str]:
    return [n for n in storages.REGISTRY if storages.get(n).unavailable() is None]


@pytest.fixture(scope="module")
@starts("server")
def timed_two_trials() -> tuple[RunResult, float]:
    """Every available storage, two trials, shared by the tests below (a
    module fixture cannot use no_leaked_servers: it checks by itself), and
    the wall seconds the whole run took."""
    before = runzeo_pids()
    t0 = time.perf_counter()
    result = runner.run(
        RunConfig(storages=tuple(available()), repeat=2, warmups=0, budget_s=0)
    )
    elapsed = time.perf_counter() - t0
    assert runzeo_pids() <= before, "runzeo left running"
    return result, elapsed


@pytest.fixture(scope="module")
def two_trials(timed_two_trials: tuple[RunResult, float]) -> RunResult:
    return timed_two_trials[0]


@pytest.mark.server
def test_every_storage_gives_every_row(
    timed_two_trials: tuple[RunResult, float],
) -> None:
    result, elapsed = timed_two_trials
    names = available()
    assert result.storages == names
    assert result.phases == list(PHASE_NAMES)
    for name in names:
        for phase in PHASE_NAMES:
            r = result.get(name, phase)
            if name == "memory" and phase == "pack":
                assert r is None  # nothing to pack: no row
                continue
            assert r is not None and len(r.samples) == 2
            # A phase is part of the run: timed, and shorter than all of it;
            # its time in the garbage collector is part of its wall time.
            for s in r.samples:
                assert 0 < s.wall_s < elapsed, (name, phase, s)
                assert 0 <= s.cpu_s < elapsed * CPUS, (name, phase, s)
                assert s.gc_s is not None and 0 <= s.gc_s <= s.wall_s
            assert r.rss_peak_bytes and r.rss_peak_bytes > 10 * 2**20
            if name == "memory":
                assert r.loads is None and r.size_change_bytes is None
            elif phase.startswith("commit"):
                assert r.stores and r.stores > 0
                assert r.size_change_bytes is not None
                # zeo+bdb counts the server's directory, whose Berkeley DB
                # log files are preallocated: it grows in steps of a file;
                # InnoDB (relstorage-mysql) in 16 KB pages and extents, so
                # the small data set's users and groups may fit in pages
                # it already has.
                if name not in ("zeo+bdb", "relstorage-mysql", "relstorage-mysql-hp"):
                    assert r.size_change_bytes > 0
            elif phase != "pack":
                assert r.stores == 0
    commit_seq = result.get("file", "commit sequences")
    assert commit_seq is not None and commit_seq.stores is not None
    assert commit_seq.stores > 300  # 30 sequences and their 300-600 steps


@pytest.mark.server
def test_cache_states_show_in_loads_and_hits(two_trials: RunResult) -> None:
    for name in available():
        if name == "memory":
            continue
        for base, _, _ in QUERIES:
            for form in ("", ", indexed"):
                cold = two_trials.get(name, f"{base}{form} (cold)")
                warm = two_trials.get(name, f"{base}{form} (warm)")
                hot = two_trials.get(name, f"{base}{form} (hot)")
                assert cold and warm and hot
                assert cold.loads and cold.loads == warm.loads, (name, base, form)
                assert hot.loads == 0, (name, base, form)
                if name == "zeo":
                    # cold: a new client, its cache empty but for the root;
                    # warm: every load a client cache hit.
                    assert cold.cache_hits is not None and cold.cache_hits <= 2
                    assert warm.cache_hits is not None
                    assert warm.cache_hits >= warm.loads
        brute = two_trials.get(name, "query processes (cold)")
        indexed = two_trials.get(name, "query processes, indexed (cold)")
        assert brute and indexed and brute.loads and indexed.loads
        assert indexed.loads < brute.loads


@pytest.mark.server
def test_trials_record_size_objects_and_counters(two_trials: RunResult) -> None:
    for name in available():
        trials = two_trials.trials_of(name)
        assert len(trials) == 2
        for t in trials:
            assert t.objects > 1000 and t.batch == 0 and t.batch_commits == 0
            if name in ("file", "zeo"):
                assert t.size_bytes and t.size_bytes > 100_000
        if name == "zeo":
            server = trials[0].stats["server"]
            assert server["commits"] >= 4 and server["loads"] > 0
    # FileStorage shrinks; a Berkeley DB pack frees pages and logs it: it grows.
    for name in ("file", "zeo"):
        pack = two_trials.get(name, "pack")
        assert pack is not None and pack.size_change_bytes is not None
        assert pack.size_change_bytes < 0


def check_answers(trial: runner.Trial) -> dict[str, str]:
    """Every query row of a trial answered alike; returns the digests."""
    digests = trial.state.digests
    for base, _, _ in QUERIES:
        rows = [n for n in digests if n == base or n.startswith(base + " (")]
        rows += [n for n in digests if n.startswith(base + ", indexed (")]
        assert len(rows) == 7
        assert len({digests[n] for n in rows}) == 1, {n: digests[n] for n in rows}
    return digests


def after_update(state):  # type: ignore[no-untyped-def]
    for base, brute, indexed in QUERIES:
        state.answers[f"{base} after update"] = brute(state.fab)
        state.answers[f"{base}, indexed after update"] = indexed(state.fab)


@pytest.mark.server
def test_answers_agree_across_storages_forms_and_updates(
    no_leaked_servers: None, frozen_heap: None
) -> None:
    config = RunConfig(repeat=1, warmups=0)
    phases = (*PHASES, Phase("check", after_update, "both forms after the update"))
    digests = {}
    for name in available():
        trial = runner.run_trial(storages.get(name), config, phases)
        digests[name] = check_answers(trial)
        assert trial.state.answers["query processes"]["cheapest"]
        d = digests[name]
        for base, _, _ in QUERIES:
            assert d[f"{base} after update"] == d[f"{base}, indexed after update"]
        assert d["query processes after update"] != d["query processes"]
    first = next(iter(digests.values()))
    for d in digests.values():
        assert d == first


def test_batches_give_the_same_data(tmp_path: Path, frozen_heap: None) -> None:
    factory = storages.get("file")
    whole = runner.run_trial(factory, RunConfig(repeat=1, batch=0))
    batched = runner.run_trial(factory, RunConfig(repeat=1, batch=100))
    assert batched.state.digests == whole.state.digests
    assert batched.summary.objects == whole.summary.objects
    assert batched.summary.batch_commits == whole.summary.objects // 100 or (
        batched.summary.batch_commits >= 9
    )
    convert = batched.samples["convert processes"]
    assert convert.batch_commit_s and convert.stores and convert.stores >= 200
    assert whole.samples["convert processes"].batch_commit_s is None
    xlarge, large = RunConfig(scale=1700), RunConfig(scale=100)
    assert xlarge.batch_size == 100_000 and large.batch_size == 0
    assert xlarge.storage_options.cache_size == 1_000_000
    assert large.storage_options.cache_size is None
    assert xlarge.to_json()["options"]["cache_size"] == 1_000_000


def test_rss_peak_is_per_phase() -> None:
    if not rss.reset_peak():
        pytest.skip("this kernel cannot reset the peak RSS")
    base = rss.peak_bytes()
    block = bytearray(64 * 2**20)
    block[::4096] = b"x" * len(block[::4096])
    assert rss.peak_bytes() >= base + 60 * 2**20
    del block
    rss.reset_peak()
    assert rss.peak_bytes() < base + 60 * 2**20


def test_profile_names_are_safe(tmp_path: Path) -> None:
    path = runner.profile_path(
        tmp_path, "zeo+bdb", "scale 3", "query processes, indexed (cold)"
    )
    assert path.parent == tmp_path
    assert path.name == "zeo+bdb-scale-3-query-processes-indexed-cold.prof"
    assert runner.profile_path(tmp_path, "file", "small", "../../etc").parent == (
        tmp_path
    )


@pytest.mark.parametrize("name", storage_params(["zeo", "file"]))
def test_a_failing_phase_closes_the_store(name: str, no_leaked_servers: None) -> None:
    def explode(state):  # type: ignore[no-untyped-def]
        raise RuntimeError("phase failed")

    before = runzeo_pids()
    phases = (*PHASES[:2], Phase("explode", explode, "raises"))
    with pytest.raises(RunFailure, match="phase 'explode' failed: .*phase failed") as e:
        runner.run_trial(storages.get(name), RunConfig(repeat=1), phases)
    assert isinstance(e.value.__cause__, RuntimeError)
    assert runzeo_pids() <= before


def test_config_validation() -> None:
    with pytest.raises(ConfigError, match="unknown storage"):
        RunConfig(storages=("nope",))
    with pytest.raises(ConfigError, match="--repeat"):
        RunConfig(repeat=0)
    with pytest.raises(ConfigError, match="twice"):
        RunConfig(storages=("file", "file"))
    with pytest.raises(ConfigError, match="--batch"):
        RunConfig(batch=-1)


def test_run_config_defaults_are_the_commands() -> None:
    """RunConfig() is what `vfab-bench run` runs without options: each
    default (rounds, warmups, budget, trials, statistic, rows) is defined
    once (scenarios.bench.config) and used by both."""
    from scenarios.cli import build_parser
    from scenarios.cli.run import run_config

    config, _ = run_config(build_parser().parse_args(["run"]))
    default = RunConfig()
    for field in ("repeat", "warmups", "budget_s", "max_trials", "statistic", "rows"):
        assert getattr(config, field) == getattr(default, field), field
    assert (default.repeat, default.budget_s) == (5, 17.0)


@pytest.mark.subprocess
@pytest.mark.parametrize("slow_hook", [False, True])
def test_ctrl_c_inside_a_callback_is_not_lost(tmp_path: Path, slow_hook: bool) -> None:
    """Python swallows what a gc or weakref callback raises; the runner's GC
    clock is such a callback, so Ctrl-C landing in one must come again.
    *slow_hook*: the main thread still inside the hook when the thread that
    asks again is ready (as on a loaded machine): the stop must not land
    in the hook and be swallowed there."""
    import subprocess
    import sys

    slow = (
        "import threading\n"
        "start = threading.Thread.start\n"
        "def slow_start(self):\n"
        "    start(self)\n"
        "    time.sleep(0.05)  # descheduled inside the hook\n"
        "threading.Thread.start = slow_start\n"
    )
    script = tmp_path / "swallow.py"
    script.write_text(
        "import gc, time, weakref\n"
        + (slow if slow_hook else "")
        + "from scenarios.interrupts import _Interrupts, defer_interrupts\n"
        "defer_interrupts()\n"
        "class T: pass\n"
        "t = T()\n"
        "r = weakref.ref(t, lambda _: _Interrupts.handler(2, None))\n"
        "try:\n"
        "    del t  # the callback raises KeyboardInterrupt: swallowed\n"
        "    deadline = time.monotonic() + 10\n"
        "    while time.monotonic() < deadline:\n"
        "        time.sleep(0.01)\n"
        "    print('lost')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout.strip() == "interrupted", proc.stderr
    assert "Traceback" not in proc.stderr


def _sample(wall: float) -> Sample:
    return Sample(wall_s=wall, cpu_s=wall)


def test_a_minimum_settles_when_trials_come_back_to_it() -> None:
    n = runner.SETTLE_MIN_TRIALS
    slow = [_sample(0.010 * (1.7 + i / 100)) for i in range(n)]
    # One fast trial among slow ones: a lucky trial, not settled.
    assert not runner.settled([_sample(0.010), *slow])
    # SETTLE_COUNT trials within SETTLE_TOLERANCE of the minimum: settled.
    near = [_sample(0.010 * (1 + runner.SETTLE_TOLERANCE / 2))]
    close = [_sample(0.010), *near * (runner.SETTLE_COUNT - 1), *slow]
    assert runner.settled(close)
    # ...but not before SETTLE_MIN_TRIALS trials.
    assert not runner.settled(close[: n - 1])
    # A minimum under a millisecond (marked ~) holds nothing back.
    assert runner.settled([_sample(0.0005 * (1 + i)) for i in range(n)])


def _counts(result: RunResult) -> dict[str, int]:
    return {r.phase: len(r.samples) for r in result.results}


def test_top_up_rounds_time_the_2000_rows_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under a budget, rounds after --repeat time only the 2000 rows; the
    other rows keep --repeat trials, and only full trials leave summaries."""
    monkeypatch.setattr(runner, "SETTLE_COUNT", 10**6)  # never settled
    config = RunConfig(
        storages=("memory", "mapping"), repeat=2, warmups=0, budget_s=60, max_trials=5
    )
    result = runner.run(config)
    for storage in ("memory", "mapping"):
        counts = {
            r.phase: len(r.samples) for r in result.results if r.storage == storage
        }
        assert {counts[p.name] for p in PHASES_2000} == {5}  # max_trials
        assert {counts[p.name] for p in PHASES[8:] if p.name in counts} == {2}
        assert len(result.trials_of(storage)) == 2
    assert gc.get_freeze_count() == 0, "the run left the collector frozen"
    # Speed probes after the warmups and after each of the 5 rounds.
    probes = result.metadata["environment"]["speed_probes_s"]
    assert len(probes) == runner.PROBES * 6 and all(p > 0 for p in probes)
    flat = " ".join(report.text(result).split())  # the legend is filled
    assert "Speed probe (a fixed Python loop, 30 times" in flat
    text = report.text(result)
    assert "minimum of 2-5 trials" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("timed trials"))
    assert row.split()[-6:] == ["5", "/", "2", "5", "/", "2"]


def test_settled_storages_get_no_top_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """A storage whose 2000 minimums settled gets no more trials: with a
    rule every run satisfies, the run stops after its --repeat rounds,
    whatever the budget."""
    monkeypatch.setattr(runner, "SETTLE_MIN_TRIALS", 1)
    monkeypatch.setattr(runner, "SETTLE_COUNT", 1)
    config = RunConfig(
        storages=("memory",), repeat=3, warmups=0, budget_s=600, max_trials=100
    )
    result = runner.run(config)
    assert set(_counts(result).values()) == {3}


def test_rows_2000_under_a_budget_keeps_every_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "SETTLE_COUNT", 10**6)
    config = RunConfig(
        storages=("memory",),
        repeat=2,
        warmups=0,
        budget_s=60,
        max_trials=4,
        rows="2000",
    )
    result = runner.run(config)
    assert set(_counts(result).values()) == {4}
    assert len(result.trials) == 4
