"""The result kinds: one registry (scenarios.registry), one sniffer
(scenarios.results.kinds.sniff), one parse per file, one output block
(scenarios.cli.outputs.emit)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scenarios import registry
from scenarios.cli.outputs import emit
from scenarios.outputs import OutputError
from scenarios.results import files, kinds
from scenarios.results.kinds import View, sniff
from tests.conftest import DATA
from tests.support.cli_helpers import run_cli


def test_every_format_is_one_registered_kind() -> None:
    formats = [v for v in vars(files).values() if isinstance(v, files.Format)]
    assert sorted(f.name for f in formats) == sorted(registry.KINDS)
    for name, kind in registry.KINDS.items():
        assert kind.name == name and kind.format in formats


def test_sniff_tells_each_kind(tmp_path: Path) -> None:
    assert sniff(DATA / "run-3.json").kind == "run"  # a run file has no "kind"
    assert sniff(DATA / "sweep.json").kind == "sweep"
    assert sniff(DATA / "scale.json").kind == "scale"
    release = sniff(DATA / "releases" / "a")
    assert release.kind == "release" and release.data["kind"] == "release"
    assert sniff(tmp_path).kind is None  # a directory without release.json
    other = tmp_path / "bench.json"
    other.write_text(json.dumps({"benchmarks": []}))
    assert sniff(other) == kinds.Found(other, None, {"benchmarks": []})


@pytest.mark.parametrize(
    "name", ["run-3.json", "sweep.json", "scale.json", "releases/a"]
)
def test_compare_reads_each_file_once(
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = DATA / name
    new = tmp_path / Path(name).name
    if old.is_dir():
        shutil.copytree(old, new)
    else:
        shutil.copy(old, new)
    reads: Counter[Path] = Counter()
    read_json = files.read_json

    def counted(path: Path) -> Any:
        reads[Path(path)] += 1
        return read_json(path)

    for module in (files, kinds):
        monkeypatch.setattr(module, "read_json", counted)
    r = run_cli(capsys, "compare", str(old), str(new))
    assert r.status == 0, r.err
    assert reads and set(reads.values()) == {1}, reads


def test_emit_writes_the_files_before_printing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = type("Args", (), {})()
    args.outputs, args.force = ("json", "markdown"), False
    args.json, args.markdown = tmp_path / "r.json", None
    view = View("the text\n", {"json": lambda: {"a": 1}}, "a note", 3)
    assert emit(args, view) == 3
    assert json.loads(args.json.read_text()) == {"a": 1}
    out = capsys.readouterr()
    assert (out.out, out.err) == ("the text\n", "a note\n")
    # An output that cannot be written: one error, nothing printed.
    args.json, args.markdown = None, tmp_path / "gone" / "r.md"
    with pytest.raises(OutputError, match="cannot write .*gone/r.md"):
        emit(args, View("the text\n", {"markdown": lambda: "# r\n"}))
    assert capsys.readouterr().out == ""


def test_a_kind_a_command_does_not_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    census = tmp_path / "c.json"
    census.write_text(json.dumps({"schema_version": 1, "kind": "census"}))
    r = run_cli(capsys, "compare", str(census), str(census))
    assert r.status == 2 and len(r.err.splitlines()) == 1
    assert "is a census file (kind 'census'); compare reads run files" in r.err
