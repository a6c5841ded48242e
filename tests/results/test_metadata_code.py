"""What a release records of the code it measured (issue 31): the
project's commit, whether the tree was patched and a digest of the patch,
and where packages not from an index came from."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scenarios.results import metadata

pytestmark = pytest.mark.subprocess  # git


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


def test_a_patched_tree_is_told_from_a_clean_one(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "file.py").write_text("x = 1\n")
    _git(tmp_path, "add", "file.py")
    _git(tmp_path, "commit", "-qm", "one")
    clean = metadata.project_code(tmp_path)
    assert len(clean["commit"]) == 40 and clean["dirty"] is False
    assert clean["diff"] is None
    (tmp_path / "file.py").write_text("x = 2\n")
    patched = metadata.project_code(tmp_path)
    assert patched["commit"] == clean["commit"] and patched["dirty"] is True
    (tmp_path / "file.py").write_text("x = 3\n")
    other = metadata.project_code(tmp_path)
    assert other["diff"] and other["diff"] != patched["diff"]
    # A new module is a patch too.
    (tmp_path / "file.py").write_text("x = 1\n")
    (tmp_path / "new.py").write_text("y = 1\n")
    assert metadata.project_code(tmp_path)["dirty"] is True


def test_no_checkout_records_nothing_rather_than_guessing(tmp_path: Path) -> None:
    assert metadata.project_code(tmp_path) == {
        "commit": None,
        "dirty": None,
        "diff": None,
    }


def test_this_project_installed_from_its_checkout_is_named() -> None:
    code = metadata.code()
    assert code["project"]["commit"]
    source = code["packages"].get("vfab-loadtest")
    assert source is not None and str(source["url"]).startswith("file://")
