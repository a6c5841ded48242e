"""The output options of every command (--json, --markdown, --html...):
declared once, checked before the work (against the command's inputs
too), and written by emit(), the one place a command's view is put out
(scenarios.outputs holds the checks and writers)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from scenarios import argtypes
from scenarios.errors import ConfigError
from scenarios.outputs import (
    Writer,
    check_not_an_input,
    check_output,
    is_device,
    write_text,
)

# Still imported from here by cli/verify.py and load/locust_plugin.py, which
# another branch is changing: their imports move to scenarios.outputs after
# the merge, and these two lines go.
from scenarios.outputs import write_json as write_json
from scenarios.outputs import write_with as write_with
from scenarios.results.kinds import View

#: Output option -> the suffixes its writer understands (others: any).
FORMATS: dict[str, tuple[str, ...]] = {
    "plot": (".svg",),
    "html": (".html", ".htm"),
}


def add_output_options(p: argparse.ArgumentParser, **outputs: str) -> None:
    """One --NAME FILE per keyword (its help), and --force; check_outputs()
    refuses them before any work, write_text()/write_json() writes them."""
    g = p.add_argument_group("outputs")
    for name, help in outputs.items():
        g.add_argument(f"--{name}", type=argtypes.path, metavar="FILE", help=help)
    flags = "/".join(f"--{name}" for name in outputs)
    g.add_argument("--force", action="store_true", help=f"replace existing {flags}")
    p.set_defaults(outputs=tuple(outputs))


def emit(args: argparse.Namespace, view: View) -> int:
    """Write each output *args* names from *view* (results are written
    before anything is printed), then print its text and its note; its
    exit status."""
    for name in getattr(args, "outputs", ()):
        path = getattr(args, name)
        if path is None:
            continue
        made = view.files[name]()
        if isinstance(made, Writer):
            write_with(path, args.force, made.write)
        elif made is not None:
            (write_json if name == "json" else write_text)(path, made, args.force)
    print(view.text, end="")
    if view.note:
        print(view.note, file=sys.stderr)
    return view.status


def check_outputs(args: argparse.Namespace) -> None:
    """check_output for every output add_output_options declared, no file
    named twice, and none that is one of the command's inputs
    (command_inputs())."""
    paths = []
    inputs = command_inputs(args)
    for name in args.outputs:
        path = getattr(args, name)
        check_output(path, args.force, FORMATS.get(name, ()), f"--{name}")
        if path is not None and not is_device(path):
            check_not_an_input(path, inputs, f"--{name}")
            paths.append(os.path.realpath(path))
    if len(set(paths)) != len(paths):
        raise ConfigError("one file is named by two outputs")


def command_inputs(args: argparse.Namespace) -> list[Path]:
    """The local files and directories a command reads: every path argument
    that is not an output (a result file, --path, --storage-config), and
    the local paths inside its URI and target arguments (file:// URIs, a
    ZConfig file given as --target, sqlite:// data directories)."""
    outputs = {*getattr(args, "outputs", ()), *OUTPUT_DIRECTORIES}
    found: list[Path] = []
    for name, value in vars(args).items():
        if name in outputs:
            continue
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, Path):
                found.append(item)
            elif isinstance(item, str) and item and name in URI_ARGUMENTS:
                found.extend(_paths_in(item))
    return found


#: Path arguments that are outputs of their own (run --profile DIR).
OUTPUT_DIRECTORIES = ("profile",)

#: Arguments whose text may name local files (URIs, NAME=URI, a ZConfig
#: file as --target).
URI_ARGUMENTS = ("uri", "target", "storage_uri")


def _paths_in(text: str) -> list[Path]:
    """Local paths a URI, NAME=URI or a file name given as text names."""
    from urllib.parse import parse_qs, urlsplit

    from storages.named import URISource

    _, sep, rest = text.partition("=")
    candidates = [text, rest] if sep and "://" in rest else [text]
    out = []
    for candidate in candidates:
        if "://" not in candidate:
            if os.path.lexists(candidate):
                out.append(Path(candidate))
            continue
        parts = urlsplit(candidate)
        # The schemes whose path is a file or directory here, as their
        # storages declare them (URIScheme.local).
        scheme, _ = URISource(candidate).entry()
        if parts.path and scheme.local:
            out.append(Path(parts.path))
        for key in ("data_dir", "path", "envdir"):
            out.extend(Path(v) for v in parse_qs(parts.query).get(key, ()))
    return out
