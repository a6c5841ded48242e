"""The parts of `vfab-bench verify`: what it runs against each shared
storage to see that the storage keeps ZODB's promises.

scenarios.py holds the short deterministic scenarios (a readCurrent
failure, a conflict at vote, a conflict BTrees resolve, a client killed
between vote and finish), each a plain function over a client spec of a
fresh shared database that returns a ScenarioResult: "ok", "violation"
(what was seen) or "not run" (why).
"""
