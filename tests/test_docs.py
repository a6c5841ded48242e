"""The documents checked against the code (issue 46): README.md and
docs/*.md name only commands, options, tox environments and load
operations that exist, by their names (not an old alias), every relative
link resolves (its file, its heading) and a link that names a file names
the one it points to, and no document sends a reader to an issue number
they cannot see."""

from __future__ import annotations

import argparse
import configparser
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_help import subcommands

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```.*?^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def code(text: str) -> Iterator[str]:
    """Each line of every fenced block, and every inline code span."""
    for block in FENCE.findall(text):
        yield from block.splitlines()[1:-1]
    yield from SPAN.findall(FENCE.sub("", text))


@functools.cache
def commands() -> dict[str, argparse.ArgumentParser]:
    """Subcommand -> its parser (aliases included)."""
    return subcommands()


def aliases() -> dict[str, str]:
    """An alias -> the command's own name."""
    out = {}
    by_parser: dict[int, list[str]] = {}
    for name, parser in commands().items():
        by_parser.setdefault(id(parser), []).append(name)
    for names in by_parser.values():
        for alias in names[1:]:
            out[alias] = names[0]
    return out


#: What a word after `vfab-bench CMD` ends at: a shell's pipe, list, comment.
STOP = {"|", "||", "&&", ";", "#", ">", "2>", "<"}


def invocations(line: str) -> Iterator[tuple[str, list[str]]]:
    """(command, its --options) of each `vfab-bench CMD ...` on *line*, and
    of a span that begins with a command and an option (`run --size`)."""
    words = line.replace("\\", " ").split()
    starts = [i for i, word in enumerate(words) if word == "vfab-bench"]
    if len(words) > 1 and words[0] in commands() and words[1].startswith("--"):
        starts.append(-1)
    for i in starts:
        if i + 1 >= len(words):
            continue
        rest = words[i + 1 :]
        if rest[0] in ("--debug",):
            rest = rest[1:]
        if not rest or not re.fullmatch(r"[a-z][a-z-]*", rest[0]):
            continue
        options = []
        for w in rest[1:]:
            if w in STOP or w == "vfab-bench":
                break
            if w.startswith("--") and len(w) > 2:
                options.append(re.split(r"[=\[\]),.:;'\"]", w)[0])
        yield rest[0], options


@pytest.mark.parametrize("doc", DOCS, ids=_id)
def test_every_command_and_option_named_exists(doc: Path) -> None:
    known = commands()
    old = aliases()
    wrong = []
    for line in code(doc.read_text()):
        for command, options in invocations(line):
            parser = known.get(command)
            if parser is None:
                wrong.append(f"no command {command!r}: {line.strip()}")
                continue
            if command in old:
                wrong.append(f"{command} is now {old[command]}: {line.strip()}")
            for option in options:
                if option not in parser._option_string_actions:
                    wrong.append(f"{command} has no {option}: {line.strip()}")
    assert not wrong, "\n".join(wrong)


#: Words after a code span that make it a command's name in prose
#: ("`history` reads matrix files"), not a method's or a field's.
ACTS = r"(reads|over|writes|shows|prints|compares|takes|runs)"


@pytest.mark.parametrize("doc", DOCS, ids=_id)
def test_no_command_is_named_by_an_old_alias(doc: Path) -> None:
    old = aliases()
    prose = FENCE.sub("", doc.read_text())
    named = [
        m.group(0)
        for alias in old
        for m in re.finditer(rf"(?<!once )`{alias}`\s+{ACTS}\b", prose)
    ]
    assert not named, f"named by an old alias: {named}"


def tox_envs() -> set[str]:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini")
    out = set()
    for section in ini.sections():
        if not section.startswith("testenv:"):
            continue
        name = section.removeprefix("testenv:")
        found = re.fullmatch(r"\{(.*)\}", name)
        out.update(found.group(1).split(",") if found else [name])
    return out


@pytest.mark.parametrize("doc", DOCS, ids=_id)
def test_every_tox_environment_named_exists(doc: Path) -> None:
    envs = tox_envs()
    named = {
        m.group(1)
        for line in code(doc.read_text())
        for m in re.finditer(r"\btox -e ([\w,-]+)", line)
    }
    missing = {e for n in named for e in n.split(",") if e not in envs}
    assert not missing, f"no tox environment {sorted(missing)}"


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@pytest.mark.parametrize("doc", DOCS, ids=_id)
def test_every_link_resolves(doc: Path) -> None:
    wrong = []
    for text, target in LINK.findall(FENCE.sub("", doc.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # a web address: not checked offline
        path_part, _, anchor = target.partition("#")
        path = (doc.parent / path_part).resolve() if path_part else doc
        if not path.exists():
            wrong.append(f"[{text}]({target}): no {path_part}")
            continue
        name = text.strip("`")
        if re.fullmatch(r"[\w./-]+\.(md|py|toml|ini|cfg)", name) and (
            Path(name).name != path.name
        ):
            wrong.append(f"[{text}]({target}): the text names another file")
        if anchor and path.suffix == ".md":
            anchors = {
                slug(h) for h in HEADING.findall(FENCE.sub("", path.read_text()))
            }
            if anchor not in anchors:
                wrong.append(f"[{text}]({target}): no heading #{anchor}")
    assert not wrong, "\n".join(wrong)


def test_the_load_operations_table_is_the_mix() -> None:
    """docs/locust.md's table: every operation the mix has, its default
    weight, none it does not."""
    from scenarios.load.mix import OPERATIONS

    rows = re.findall(
        r"^\| `(\w+)` \| (\d+) \|", (ROOT / "docs" / "locust.md").read_text(), re.M
    )
    assert {name: int(w) for name, w in rows} == {
        op.name: op.weight for op in OPERATIONS
    }


@pytest.mark.parametrize("doc", DOCS, ids=_id)
def test_no_document_points_at_an_issue_number(doc: Path) -> None:
    """A reader has the documents, not the tracker: say what happened."""
    found = re.findall(r"(?i)\bissues? \d+", doc.read_text())
    assert not found, found


@pytest.mark.parametrize("doc", DOCS, ids=_id)
def test_every_weight_option_named_is_an_operations(doc: Path) -> None:
    from scenarios.load.options import LOAD_OPTIONS

    flags = {o.flag for o in LOAD_OPTIONS}
    named = set(re.findall(r"--weight-[\w-]+", doc.read_text()))
    assert named <= flags, sorted(named - flags)
