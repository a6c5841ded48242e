"""The load options, declared once for `vfab-bench zeoloop` (argparse) and for
locust's command line, locust.conf and web UI form: --target (or, as
before, --zeo-address), --skew,
--retries, --backoff-ms and one --weight-<operation> per operation.

On zeoloop's parser each value is checked as it is parsed (argparse types,
exit 2).  On locust's it is not: locust converts web UI values with the
type of the current value, so every value there is checked by LoadConfig
instead, when a test starts, with the same one-line ConfigError.
add_options() puts them on locust's parser with LOCUST_DEFAULTS, the
settings of locust's own this suite wants wherever locust starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from scenarios.argtypes import at_least, between
from scenarios.errors import EXIT_ERRORS, ConfigError
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


#: locust's own settings as this suite wants them wherever locust starts:
#: locust.conf says the same but is read only from the working directory.
#: The web UI and the master listen on this machine only unless the user
#: names another address; users finish the operation in hand (never stop
#: inside a two-phase commit) when a test stops; failed operations exit
#: with EXIT_ERRORS (scenarios.errors), not locust's 1.
LOCUST_DEFAULTS: dict[str, object] = {
    "web_host": "127.0.0.1",
    "master_bind_host": "127.0.0.1",
    "stop_timeout": "10",
    # Failed operations beside right data: the suite's status for it, so
    # that 1 means a violation only (--exit-code-on-error still wins).
    "exit_code_on_error": EXIT_ERRORS,
}


def add_options(parser: Any) -> None:
    """Our options (scenarios.load.options), on locust's command line,
    locust.conf and the web UI form (web UI values replace the command
    line's for the next test), and LOCUST_DEFAULTS (what the command line,
    a config file or the environment says still wins)."""
    add_load_options(parser, checked=False)
    parser.add_argument(
        "--history",
        default="",
        metavar="FILE",
        help="vfab: keep every attempt's history as JSON lines (written by "
        "the master, or the single process, when locust quits)",
    )
    parser.set_defaults(**LOCUST_DEFAULTS)
