"""ab's result and its text (scenarios.ab.model, report), on a run made
here: the JSON reads back to the same run; the text leads with the verdict
and names what differs between the sides."""

from __future__ import annotations

import json

from scenarios.ab import report
from scenarios.ab.model import ABRun, PairedCell, SideInfo


def side(name: str, zodb: str, persistent: str) -> SideInfo:
    hello = {
        "python": {"version": "3.11.7", "implementation": "CPython"},
        "distributions": {"zodb": zodb, "persistent": "6.9", "pytest": "9.2"},
        "implementations": {"persistent": persistent, "BTrees": "C"},
        "sources": {},
    }
    return SideInfo(name, "requirements", f"ZODB=={zodb}", f"/c/{name}/bin/python",
                    f"key{name}", name == "B", hello, {})  # fmt: skip


def run() -> ABRun:
    slower = PairedCell("rows", "file", "commit processes", (0.010,) * 10,
                        tuple(0.0125 + i * 1e-5 for i in range(10)))  # fmt: skip
    same = PairedCell("rows", "file", "query processes",
                      (0.020, 0.021) * 5, (0.021, 0.020) * 5)  # fmt: skip
    meta = {"measuring_code": {"path": "/src/vfab", "commit": "abcdef123456789"}}
    return ABRun("interleaved", side("A", "6.4", "C"), side("B", "6.2", "Python"),
                 (same, slower), meta, first=("A", "B") * 5)  # fmt: skip


def test_the_json_reads_back_to_the_same_run() -> None:
    original = run()
    document = json.loads(json.dumps(report.document(original)))
    assert document["kind"] == "ab" and document["version"] == 1
    assert ABRun.from_json(document) == original
    judged = {j["row"]: j for j in document["judged"]}
    assert judged["commit processes"]["significant"]
    assert judged["query processes"]["verdict"] == "not significant"


def test_the_text_leads_with_the_verdict_and_names_the_differences() -> None:
    text = report.text(run())
    lines = text.splitlines()
    first = " ".join(text[: text.index("ab (interleaved)")].split())
    assert first == (
        "verdict: B 1 cell slower (most: file commit processes, 1.25x slower "
        "(+25%)), 1 not significant"
    )
    assert "both sides measured with /src/vfab at abcdef123456" in lines
    assert "differences: zodb 6.4 -> 6.2; persistent in C -> Python" in lines
    body = text[text.index("the 2000 rows, largest change first:") :]
    assert body.index("file commit processes") < body.index("file query processes")
    assert max(len(line) for line in lines) <= 100


def test_a_patch_on_one_side_is_named_other_tools_counted() -> None:
    from scenarios.ab.model import SideInfo
    from scenarios.ab.report import differences

    def side(name: str, extra: dict[str, str]) -> SideInfo:
        hello = {"distributions": {"zodb": "6.4", **extra}}
        return SideInfo(name, "venv", "x", "x/bin/python", None, False, hello, {})

    a = side("A", {})
    b = side("B", {"vfab-ab-patch": "0+store3pct", "ipython": "8.0"})
    assert differences(a, b) == [
        "vfab-ab-patch absent -> 0+store3pct",
        "1 other package on one side only",
    ]
