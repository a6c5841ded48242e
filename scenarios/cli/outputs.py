"""The output options of every command (--json, --markdown, --html...):
declared once, checked before the work (against the command's inputs
too), and written by emit(), the one place a command's view is put out
(scenarios.outputs holds the checks and writers)."""

from __future__ import annotations

import argparse
import os
import sys

from scenarios import argtypes
from scenarios.errors import ConfigError
from scenarios.outputs import (
    Writer,
    check_not_an_input,
    check_output,
    command_inputs,
    is_device,
    write_json,
    write_pyperf,
    write_text,
    write_with,
)
from scenarios.printable import shown, silence_stdout
from scenarios.results.kinds import View

#: Output option -> the suffixes its writer understands (others: any).
FORMATS: dict[str, tuple[str, ...]] = {
    "plot": (".svg",),
    "html": (".html", ".htm"),
}


def add_output_options(p: argparse.ArgumentParser, **outputs: str) -> None:
    """One --NAME FILE per keyword (its help), and --force; check_outputs()
    refuses them before any work, emit() writes them."""
    g = p.add_argument_group("outputs")
    for name, help in outputs.items():
        g.add_argument(f"--{name}", type=argtypes.path, metavar="FILE", help=help)
    flags = "/".join(f"--{name}" for name in outputs)
    g.add_argument("--force", action="store_true", help=f"replace existing {flags}")
    p.set_defaults(outputs=tuple(outputs))


def emit(args: argparse.Namespace, view: View) -> int:
    """Write each output *args* names from *view* (results are written
    before anything is printed), then print its text and its note, their
    control characters shown escaped; its exit status."""
    for name in getattr(args, "outputs", ()):
        path = getattr(args, name)
        if path is None:
            continue
        made = view.files[name]()
        if isinstance(made, Writer):
            write_with(path, args.force, made.write)
        elif made is not None:
            writer = {"json": write_json, "pyperf": write_pyperf}.get(name, write_text)
            writer(path, made, args.force)
    # Text from a file (a storage name, a host name) may hold escape
    # sequences: shown, never acted on by the terminal.  A closed stdout
    # (`| head`) costs nothing but the text: the files are written.
    try:
        print(shown(view.text), end="", flush=True)
    except BrokenPipeError:
        silence_stdout()
    if view.note:
        print(shown(view.note), file=sys.stderr)
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
