"""The load options, declared once for `vfab-bench zeoloop` (argparse) and for
locust's command line, locust.conf and web UI form: --target (or, as
before, --zeo-address), --skew,
--retries, --backoff-ms and one --weight-<operation> per operation.

On zeoloop's parser each value is checked as it is parsed (argparse types,
exit 2).  On locust's it is not: locust converts web UI values with the
type of the current value, so every value there is checked by LoadConfig
instead, when a test starts, with the same one-line ConfigError.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from scenarios.argtypes import at_least, between
from scenarios.errors import ConfigError
from scenarios.load.mix import DEFAULT_ADDRESS, OPERATIONS, LoadConfig
from scenarios.load.target import add_target_option
from storages.zeo import add_zeo_address_option


@dataclasses.dataclass(frozen=True)
class LoadOption:
    """One option: its flag, default, metavar and help; *plain* is the type
    on locust's parser, *checked* the type on the CLI's."""

    flag: str
    default: Any
    metavar: str
    help: str
    plain: Callable[[str], Any] = str
    checked: Callable[[str], Any] = str


def weight_flag(name: str) -> str:
    """--weight-<operation>, the option of an operation's weight."""
    return f"--weight-{name.replace('_', '-')}"


#: The ranges of the load options (a minute of backoff is already a stall).
MAX_SKEW = 100.0
MAX_RETRIES = 10_000
MAX_BACKOFF_MS = 60_000.0
MAX_WEIGHT = 1_000_000

LOAD_OPTIONS: tuple[LoadOption, ...] = (
    LoadOption(
        "--skew",
        1.0,
        "S",
        "Zipf exponent for picking capabilities (0: uniform; higher: "
        "more users on the same few, more conflicts on change_price)",
        float,
        between(0, MAX_SKEW),
    ),
    LoadOption(
        "--retries",
        10,
        "N",
        "retries of an operation after a conflict before it fails",
        int,
        at_least(0, MAX_RETRIES),
    ),
    LoadOption(
        "--backoff-ms",
        5.0,
        "MS",
        "first retry backoff window in ms (doubles per retry, jittered)",
        float,
        between(0, MAX_BACKOFF_MS),
    ),
    *(
        LoadOption(
            weight_flag(op.name),
            op.weight,
            "W",
            f"weight of {op.name}: {op.description}",
            int,
            at_least(0, MAX_WEIGHT),
        )
        for op in OPERATIONS
    ),
)


def add_load_options(parser: Any, checked: bool = True) -> None:
    """LOAD_OPTIONS on *parser* (argparse's or locust's), each value checked
    as parsed when *checked*, and --target and --zeo-address as text
    (LoadConfig parses them, as it does the web UI form's)."""
    add_target_option(parser)
    add_zeo_address_option(
        parser,
        default=DEFAULT_ADDRESS,
        help="ZEO server holding a vfab data set (vfab-bench serve); "
        "--target names any shared database",
        parse=False,
        show_default=checked,  # locust's web UI shows the default itself
    )
    for option in LOAD_OPTIONS:
        parser.add_argument(
            option.flag,
            type=option.checked if checked else option.plain,
            default=option.default,
            metavar=option.metavar,
            help=option.help,
        )


def config_from(options: Any) -> LoadConfig:
    """The LoadConfig the parsed options (or web UI form) ask for; ConfigError
    or StorageError naming what is wrong."""
    try:
        weights = {
            op.name: int(getattr(options, f"weight_{op.name}")) for op in OPERATIONS
        }
        return LoadConfig.from_values(
            target_of(options),
            weights=weights,
            skew=float(options.skew),
            retries=int(options.retries),
            backoff_ms=float(options.backoff_ms),
        )
    except (TypeError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"bad option value: {e}") from None


def target_of(options: Any) -> str:
    """--target if given, else --zeo-address (whose default is the server
    `vfab-bench serve` starts); ConfigError when both name a server."""
    target = str(getattr(options, "target", "") or "").strip()
    address = str(options.zeo_address or "").strip()
    if not target:
        return address or DEFAULT_ADDRESS
    if address and address != DEFAULT_ADDRESS:
        raise ConfigError("give --target or --zeo-address, not both")
    return target
