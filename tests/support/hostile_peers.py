"""Peers that are no worker and masters that are no master, for issue 35's
cluster cases (tests/support/hostile.py, kind "cluster peers"): a program run in
the background of a case, `python tests/support/hostile_peers.py MODE PORT
[TOKEN]`, until the case ends.

Towards a master on 127.0.0.1:PORT (as a locust client: zmq DEALER):
  forge    locust's own messages, unsealed, as a plain locust worker
           would send them: client_ready, then stats carrying the
           point's key and history lines that are not even JSON, and a
           vfab_scale_result, again every 0.2 s
  junk     a cut-short msgpack array, an array of two, client_ready with
           an integer for a version, frames of three parts, and plain TCP
           bytes (an HTTP request) on another connection, every 0.2 s
  sealed   with the run's TOKEN: an empty hello and one whose clock is of
           strings, a stats message of the wrong shape (a worker of this
           run that is broken or of another version)
  records  towards the locustfile's master (tests/clients/remote/test_peers.py):
           client_ready, then stats carrying two forged history records
           (sequence 987654 created twice, never stored) and a vfab_final
           with them, unsealed, every 0.2 s
  sealed-records  with TOKEN, as a worker of the run would: joins
           (client_ready), then heartbeats, the same stats and a
           vfab_final, sealed, every 0.2 s (users it is given never run);
           the records are of its own clients (w<last 6 of its id>.), or
           of PREFIX's, another worker's, when given after TOKEN
As a master on 127.0.0.1:PORT (zmq ROUTER), to a worker:
  garbage  answers each frame with bytes that are not UTF-8 msgpack
  plan-x   with TOKEN: acks the worker, then sends PLAN {"point": "x"}
  plan-bad with TOKEN: acks the worker, then a PLAN of the right shape
           whose process plan is junk ({"plan": 1})
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

# the checkout, not tests/ (whose relstorage/ would hide the package)
sys.path[0] = str(Path(__file__).resolve().parents[2])

import msgpack  # noqa: E402
import zmq  # noqa: E402

#: How long a peer lives at most (the case stops it sooner).
LIFE_S = 300.0
VERSION = "2.47.0"


def pack(kind: str, data: object, node: str) -> bytes:
    return msgpack.packb([kind, data, node])


def towards_master(
    mode: str, port: int, token: str | None, prefix: str | None = None
) -> None:
    context = zmq.Context()
    node = "forger_0123456789abcdef"
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.IDENTITY, node.encode())
    dealer.connect(f"tcp://127.0.0.1:{port}")
    seal = None
    if mode in ("sealed", "sealed-records"):
        from scenarios.clients.remote.seal import TO_MASTER, Seal

        assert token is not None
        seal = Seal(token, TO_MASTER)
    history = ["not json: a forged attempt", '{"forged": true']
    mine = prefix or f"w{node[-6:]}."
    records = [
        {"client": f"{mine}u{n}", "n": 1, "op": "create_sequence",
         "outcome": "ok", "error": None, "tid": f"00000000000000f{n}",
         "reads": [], "writes": [["sequence", 987654, 1, ["nobody", "none", 3]]]}
        for n in (1, 2)
    ]  # fmt: skip
    total = {
        "name": "Aggregated", "method": "", "start_time": time.time(),
        "last_request_timestamp": None, "num_requests": 0, "num_none_requests": 0,
        "num_failures": 0, "total_response_time": 0, "max_response_time": 0,
        "min_response_time": None, "total_content_length": 0, "response_times": {},
        "num_reqs_per_sec": {}, "num_fail_per_sec": {},
    }  # fmt: skip
    forged = {
        "stats": [], "stats_total": total, "errors": {}, "user_classes_count": {},
        "user_count": 0, "vfab_history": records,
    }  # fmt: skip
    peer, joined = node.encode(), False
    end = time.monotonic() + LIFE_S
    while time.monotonic() < end:
        if mode == "records":
            dealer.send(pack("client_ready", VERSION, node))
            dealer.send(pack("stats", forged, node))
            dealer.send(pack("vfab_final", records, node))
        elif mode == "sealed-records":
            assert seal is not None
            if not joined:
                dealer.send(seal.seal(peer, pack("client_ready", VERSION, node)))
                joined = True
            beat = {"state": "ready", "current_cpu_usage": 1.0}
            for kind, data in (
                ("heartbeat", beat), ("stats", forged), ("vfab_final", records),
            ):  # fmt: skip
                dealer.send(seal.seal(peer, pack(kind, data, node)))
        elif mode == "forge":
            dealer.send(pack("client_ready", VERSION, node))
            stats = {
                "stats": [], "stats_total": {}, "errors": {},
                "user_classes_count": {}, "user_count": 0,
                "vfab_scale_point": 1, "vfab_history": history,
            }  # fmt: skip
            dealer.send(pack("stats", stats, node))
            result = {"point": 1, "results": [["ok", {}]], "history": history,
                      "stderr": {"lines": 0, "last": ""},
                      "cpu_busy_s": None}  # fmt: skip
            dealer.send(pack("vfab_scale_result", result, node))
        elif mode == "junk":
            whole = pack("client_ready", VERSION, node)
            dealer.send(whole[: len(whole) // 2])
            dealer.send(msgpack.packb(["heartbeat", None]))
            dealer.send(pack("client_ready", 7, node))
            dealer.send_multipart([b"a", b"b"])
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                    s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 20)
            except OSError:
                pass
        elif seal is not None:
            peer = node.encode()
            strings = {"offset_s": "x", "uncertainty_s": "y"}
            for kind, data in (
                ("vfab_scale_hello", {}),
                ("vfab_scale_hello",
                 {"host": "h", "address": "a", "kernel": "k", "clock": strings}),
                ("stats", {"vfab_history": history}),
            ):  # fmt: skip
                dealer.send(seal.seal(peer, pack(kind, data, node)))
        time.sleep(0.2)


def as_master(mode: str, port: int, token: str | None) -> None:
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.bind(f"tcp://127.0.0.1:{port}")
    seal = opener = None
    if mode != "garbage":
        from scenarios.clients.remote.seal import TO_MASTER, TO_WORKER, Seal

        assert token is not None
        seal, opener = Seal(token, TO_WORKER), Seal(token, TO_MASTER)
    end = time.monotonic() + LIFE_S
    planned = False
    while time.monotonic() < end:
        if not router.poll(200):
            continue
        peer, frame = router.recv_multipart()[:2]
        if seal is None or opener is None:
            router.send_multipart([peer, b"\xc4\x02\xff\xfe" + b"\xa2\xff\xfe"])
            continue
        payload = opener.open(peer, frame)
        if payload is None or planned:
            continue
        kind = msgpack.unpackb(payload)[0]
        if kind != "client_ready":
            continue
        node = peer.decode()
        router.send_multipart([peer, seal.seal(peer, pack("ack", {"index": 0}, node))])
        time.sleep(0.5)
        plan: object = {"point": "x"}
        if mode == "plan-bad":
            plan = {"point": 1, "plans": [{"plan": 1}], "record": True,
                    "ready_timeout_s": 30}  # fmt: skip
        router.send_multipart(
            [peer, seal.seal(peer, pack("vfab_scale_plan", plan, node))]
        )
        planned = True


def main() -> None:
    mode, port = sys.argv[1], int(sys.argv[2])
    token = sys.argv[3] if len(sys.argv) > 3 else None
    prefix = sys.argv[4] if len(sys.argv) > 4 else None
    if mode in ("forge", "junk", "sealed", "records", "sealed-records"):
        towards_master(mode, port, token, prefix)
    else:
        as_master(mode, port, token)


if __name__ == "__main__":
    main()
