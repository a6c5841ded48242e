"""The environments of ab (scenarios.ab.envs): what a user names, read or
refused; real uv builds, cached by what they hold (pypi tier)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.ab import envs
from scenarios.errors import ConfigError
from tests.support.tiers import starts

ROOT = Path(__file__).resolve().parents[2]
VERSION_OF_ZODB = "import ZODB, importlib.metadata as m; print(m.version('ZODB'))"
RELEASE = ROOT / "tests" / "data" / "releases" / "a"


def refused(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as e:
        envs.parse(text, "B")
    assert str(e.value).startswith("B: ")
    assert fragment in str(e.value)
    assert "\n" not in str(e.value)


def test_what_names_nothing_is_refused_in_one_line(tmp_path: Path) -> None:
    refused(str(tmp_path / "missing"), "no such directory")
    refused(str(tmp_path), "is not a virtual environment (no bin/python), a package")
    refused("ZODB===", "not a requirement: 'ZODB==='")
    refused("  ", "empty environment")
    refused(str(ROOT), "is this project")
    (tmp_path / "empty.txt").write_text("# nothing\n")
    refused(str(tmp_path / "empty.txt"), "no requirement in it")


def test_an_existing_environment_requirements_and_a_file() -> None:
    spec = envs.parse(sys.prefix, "A")
    assert spec.kind == "venv" and not spec.built
    spec = envs.parse("ZODB==6.2  ZEO>=6", "A")
    assert spec.kind == "requirements"
    assert spec.requirements == ("ZODB==6.2", "ZEO>=6")
    url = "git+https://github.com/zopefoundation/ZEO@0123abc"
    spec = envs.parse(f"ZODB==6.2 ZEO @ {url} BTrees", "A")
    assert spec.requirements == ("ZODB==6.2", f"ZEO @ {url}", "BTrees")


def test_a_release_is_rebuilt_from_the_versions_it_recorded() -> None:
    spec = envs.parse(str(RELEASE), "A")
    assert spec.kind == "release"
    recorded = json.loads((RELEASE / "release.json").read_text())["metadata"]
    assert f"ZODB=={recorded['versions']['ZODB']}" in spec.requirements
    assert not any(
        r.startswith(("vfab-loadtest", "berkeleydb")) for r in spec.requirements
    )


def test_a_release_installed_from_a_local_tree_cannot_be_rebuilt(
    tmp_path: Path,
) -> None:
    meta = {
        "versions": {"ZODB": "6.4"},
        "code": {"packages": {"ZODB": {"url": "file:///src/ZODB", "commit": None}}},
    }
    (tmp_path / "release.json").write_text(json.dumps({"metadata": meta}))
    refused(str(tmp_path), "ZODB was installed from file:///src/ZODB with no commit")
    (tmp_path / "release.json").write_text(json.dumps({"metadata": {}}))
    refused(str(tmp_path), "recorded no versions to rebuild from")


def test_the_projects_requirements_come_from_its_setup_cfg() -> None:
    lines = envs.project_requirements(["file"], micro=True)
    assert any(line.startswith("ZODB") for line in lines)
    assert any(line.startswith("pytest-benchmark") for line in lines)
    assert not any(line.startswith("berkeleydb") for line in lines)
    assert any(
        line.startswith("berkeleydb")
        for line in envs.project_requirements(["zeo+bdb"], micro=False)
    )


def test_the_key_is_what_the_environment_holds() -> None:
    project = envs.project_requirements(["file"], micro=False)
    one = envs.parse("ZODB==6.2", "A")
    key, content = envs.key_of(one, project)
    assert key == envs.key_of(envs.parse("ZODB==6.2", "B"), project)[0]
    assert key != envs.key_of(envs.parse("ZODB==6.3", "B"), project)[0]
    assert key != envs.key_of(one, [*project, "pytest"])[0]
    assert content["python"]["version"] in sys.version


def test_uvs_reason_in_one_line() -> None:
    stderr = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because there is no version of zodb==99 and you require "
        "zodb==99, we can conclude that your requirements are unsatisfiable.\n"
    )
    assert envs.uv_reason(stderr) == (
        "No solution found when resolving dependencies:; Because there is no "
        "version of zodb==99 and you require zodb==99, we can conclude that "
        "your requirements are unsatisfiable."
    )


@pytest.fixture(scope="session")
def ab_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One environment cache for the session's ab tests."""
    return tmp_path_factory.mktemp("ab-cache")


@pytest.mark.pypi
@pytest.mark.subprocess
@starts("subprocess")
def test_built_once_then_reused(package_index: None, ab_cache: Path) -> None:
    spec = envs.parse("ZODB==6.2", "B")
    project = envs.project_requirements(["file"], micro=False)
    said: list[str] = []
    env = envs.prepare(spec, "B", project, ab_cache, said.append)
    assert env.built_now and said == [f"B: building the environment {env.root} (uv)"]
    version = subprocess.run(
        [str(env.python), "-c", VERSION_OF_ZODB],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    assert version == "6.2"
    assert "zodb==6.2" in (env.root / envs.FREEZE_FILE).read_text().lower()
    stamp = (env.root / envs.SPEC_FILE).stat().st_mtime_ns
    again = envs.prepare(
        envs.parse("ZODB==6.2", "A"), "A", project, ab_cache, said.append
    )
    assert not again.built_now and again.python == env.python
    assert len(said) == 1  # nothing built the second time
    assert (env.root / envs.SPEC_FILE).stat().st_mtime_ns == stamp


@pytest.mark.pypi
@pytest.mark.subprocess
@starts("subprocess")
def test_a_requirement_that_does_not_resolve_leaves_nothing(
    package_index: None, tmp_path: Path
) -> None:
    spec = envs.parse("ZODB==99.0", "B")
    project = envs.project_requirements(["file"], micro=False)
    with pytest.raises(ConfigError) as e:
        envs.prepare(spec, "B", project, tmp_path)
    assert str(e.value).startswith("B: the environment cannot be built: ")
    assert "zodb==99.0" in str(e.value).lower()
    assert [p.name for p in tmp_path.iterdir()] == [".locks"]
