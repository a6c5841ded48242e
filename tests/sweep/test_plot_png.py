"""--plot FILE.png: the same SVG as --plot FILE.svg, rendered by CairoSVG
(the png extra), not a second plotting stack; without the renderer, one
line naming what to install, before any work (exit 2 at the edge)."""

from __future__ import annotations

import argparse
import re
import struct
import sys
from pathlib import Path

import pytest

from scenarios.cli.outputs import check_outputs, emit
from scenarios.errors import ConfigError
from scenarios.results.kinds import View
from scenarios.sweep import page
from scenarios.sweep.model import SweepRun

SWEEP = Path(__file__).resolve().parents[1] / "data" / "sweep.json"


def args_for(plot: Path) -> argparse.Namespace:
    return argparse.Namespace(outputs=("plot",), plot=plot, force=False)


@pytest.mark.subprocess  # cairocffi looks for libcairo with `ldconfig -p`
def test_a_png_is_the_svg_rendered(tmp_path: Path) -> None:
    pytest.importorskip("cairosvg", reason="the png extra is not installed")
    svg = page.svg_file(SweepRun.load(SWEEP))
    width = float(re.search(r'<svg[^>]* width="([\d.]+)', svg).group(1))  # type: ignore[union-attr]
    png, same = tmp_path / "sweep.png", tmp_path / "sweep.svg"
    for path in (png, same):
        args = args_for(path)
        check_outputs(args)
        assert emit(args, View("", {"plot": lambda: svg})) == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    png_width, png_height = struct.unpack(">II", data[16:24])
    assert png_width == round(2 * width) and png_height > 100  # twice the SVG's
    assert len(data) > 10_000  # drawn, not blank
    assert same.read_text() == svg


def test_without_the_renderer_one_line_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cairosvg", None)  # import fails
    with pytest.raises(ConfigError) as e:
        check_outputs(args_for(tmp_path / "x.png"))
    message = str(e.value)
    assert "\n" not in message and "vfab-loadtest[png]" in message
    assert "libcairo2" in message
    check_outputs(args_for(tmp_path / "x.svg"))  # an SVG needs nothing
    with pytest.raises(ConfigError, match="use .svg, .png"):
        check_outputs(args_for(tmp_path / "x.jpg"))
    assert not list(tmp_path.iterdir())
