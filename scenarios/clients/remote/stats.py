"""locust's outputs as the suite's runs need them: --csv beside
--json-file keeping every row's figures, the final summary printed when
locust leaves it out, and its CSV writer stopped before its files close.
"""

from __future__ import annotations

from typing import Any

import gevent
from locust.env import Environment


def print_summary(environment: Environment) -> None:
    """locust's final summary tables, as it prints them without
    --json-file (it leaves them out when it saves that file): printed at
    locust's quit event, after the file is saved."""
    options = environment.parsed_options
    if not getattr(options, "json_file", None):
        return  # locust printed them itself
    from locust import stats

    stats.print_stats(environment.stats, current=False)
    stats.print_percentile_stats(environment.stats)
    stats.print_error_report(environment.stats)


def keep_stats_through_json(environment: Environment) -> None:
    """Make --json and --json-file leave the statistics as they are.

    locust 2.47 writes them with RequestStats.serialize_stats(), which
    takes each entry's report with get_stripped_report(): the report,
    then a reset of the entry, as a worker's stats report needs (it sends
    what happened since the last one).  Saving --json-file at exit thus
    zeroed every entry (not the Aggregated total) before the --csv writer's
    last write: every operation's row 0.  On a process that sends no stats
    reports (a master, or the single process) nothing else calls it, so
    there it serializes without the reset.
    """
    stats = environment.stats

    def serialize_kept() -> list[Any]:
        return [
            e.serialize()
            for e in stats.entries.values()
            if not (e.num_requests == 0 and e.num_failures == 0)
        ]

    stats.serialize_stats = serialize_kept  # type: ignore[method-assign]


def stop_csv_writer(**_kw: Any) -> None:
    """Stop locust's --csv writer before locust closes its files.

    locust 2.4x closes the CSV files at exit (PR #3486) but leaves the
    greenlet writing them running; with --processes, its exit handler
    sleeps and the writer wakes on closed files: "ValueError: I/O operation
    on closed file" and a traceback after a clean run.  So let it write once
    more, with the final numbers, then stop it.
    """
    import gc

    from locust.stats import CSV_STATS_INTERVAL_SEC

    writers = [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, gevent.Greenlet)
        and not obj.dead
        and getattr(getattr(obj, "_run", None), "__name__", "") == "stats_writer"
    ]
    if writers:
        gevent.sleep(CSV_STATS_INTERVAL_SEC + 0.1)
        gevent.killall(writers, block=True)
