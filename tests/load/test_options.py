"""scenarios.load.options: one declaration for zeoloop's parser and locust's."""

from __future__ import annotations

import argparse

import pytest

from scenarios.load.mix import DEFAULT_ADDRESS, OPERATIONS
from scenarios.load.options import LOAD_OPTIONS, add_load_options, config_from


def test_defaults_make_the_default_config() -> None:
    for checked in (True, False):
        parser = argparse.ArgumentParser()
        add_load_options(parser, checked=checked)
        config = config_from(parser.parse_args([]))
        assert dict(config.weights) == {op.name: op.weight for op in OPERATIONS}
        assert (config.skew, config.retries, config.backoff_ms) == (1.0, 10, 5.0)
        assert config.address_text == DEFAULT_ADDRESS
    # --zeo-address comes from storages.zeo's one declaration; the rest here.
    assert len(LOAD_OPTIONS) == 3 + len(OPERATIONS)


def test_checked_parsing_refuses_negative_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser()
    add_load_options(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--weight-lookup", "-1"])
    assert "must be from 0 to" in capsys.readouterr().err
    loose = argparse.ArgumentParser()
    add_load_options(loose, checked=False)
    assert loose.parse_args(["--skew", "-1"]).skew == -1.0  # LoadConfig checks
