"""The release directory as a result kind: compare of two releases gives
the verdict release --against gives (scenarios.release.verdict)."""

from __future__ import annotations

from typing import Any

from scenarios.release import model, page, verdict
from scenarios.release.model import Release
from scenarios.results import files
from scenarios.results.kinds import Found, Kind, View


def load(found: Found) -> Release:
    return model.load(found.path, model.summary(found))


def _compare(old: Release, new: Release, args: Any) -> View:
    model.check_comparable(model.identity(old), model.identity(new), str(args.old))
    fail_above = (
        verdict.DEFAULT_FAIL_ABOVE if args.fail_above is None else args.fail_above
    )
    result = verdict.compare(old, new, fail_above)
    details = result.details()
    return View(
        result.text() + (f"\n{details}" if details else ""),
        {
            "json": result.to_json,
            "markdown": result.markdown,
            "html": lambda: page.page(new, result),
        },
        status=result.exit_status,
    )


KIND = Kind(
    files.RELEASE,
    "release directory",
    load=load,
    compare=_compare,
    compare_options=frozenset({"fail_above", "json", "markdown", "html"}),
)
