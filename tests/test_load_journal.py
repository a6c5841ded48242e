"""scenarios.load.journal: what users committed, carried between processes."""

from __future__ import annotations

import json

from scenarios.load.journal import Journal


def test_journal_moves_between_processes_as_plain_lists() -> None:
    from vfab.operations import Created, Repriced

    journal, master = Journal(), Journal()
    journal.record(Created(1 << 24, "u000001", "g00001", 12))
    journal.record(Repriced(3, 1))
    journal.record("not a receipt")
    sent = journal.drain()
    assert json.loads(json.dumps(sent)) == sent
    assert journal.drain() == {"created": [], "repriced": []}
    master.absorb(sent)
    assert master.created == journal.created and master.repriced == journal.repriced
