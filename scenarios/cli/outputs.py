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
    "plot": (".svg", ".png"),
    "html": (".html", ".htm"),
}

#: What --plot FILE.png needs: the same SVG, rendered by CairoSVG (the png
#: extra; it loads Debian's libcairo2), not a second plotting stack.
PNG_NEEDS = (
    "cairosvg and Debian's libcairo2: pip install 'vfab-loadtest[png]' "
    "(./bootstrap installs both), or write .svg"
)


def png_renderer_missing() -> str | None:
    """Why a PNG cannot be rendered here, or None."""
    try:
        import cairosvg  # noqa: F401
    except (ImportError, OSError):  # OSError: cairocffi found no libcairo
        return PNG_NEEDS
    return None


def svg_to_png(svg: str) -> Writer:
    """A writer of *svg* rendered as PNG, at twice the SVG's size (sharp
    on a high-density screen, in an issue or a chat)."""
    import cairosvg

    def write(path: Path) -> None:
        cairosvg.svg2png(
            bytestring=svg.encode("utf-8"),
            write_to=str(path),
            scale=2.0,
            background_color="white",
        )

    return Writer(write)


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
        if name == "plot" and isinstance(made, str) and path.suffix.lower() == ".png":
            made = svg_to_png(made)
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
        if name == "plot" and path is not None and path.suffix.lower() == ".png":
            missing = png_renderer_missing()
            if missing:
                raise ConfigError(f"--plot {path}: a PNG needs {missing}")
        if path is not None and not is_device(path):
            check_not_an_input(path, inputs, f"--{name}")
            paths.append(os.path.realpath(path))
    if len(set(paths)) != len(paths):
        raise ConfigError("one file is named by two outputs")
