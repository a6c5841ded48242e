"""Issue 28's bad inputs, environments and signals for the commands added
since issue 21 (verify, history, release, run --counts, --pyperf, the new
file kinds), as data: one Case each, grouped by kind and by command.

A case is a command line whose {placeholders} lay out its inputs and start
its helpers (tests/support/hostile_setups.py's resolve(): copies of real files and
data sets made by the checkout's own commands or altered ones,
tests/support/hostile_files.py; a served data set, a runzeo on [::1], a listener
that never answers), with the environment, resource limits, working
directory and stdout it runs under, and what a set-up adds (a second
writer, a fake valgrind, a full tmpfs, a signal or SIGSTOP while it runs).
It is handled when the command meets every expectation (Result.problems()
lists those it misses):

- an exit status the case allows (2 for bad input; 143 SIGTERM, 129
  SIGHUP, 3 "not fully checked"), within the case's bound (90 s unless
  it says; past it: "hang");
- bad input (status 2) is exactly one line on stderr, naming what the case
  says, and not an error the CLI's edge did not expect (its line ends
  "(--debug shows where)": Python's words); never a traceback or a fatal
  signal;
- the inputs (in/) byte-identical, their directory listings too;
- nothing left in its TMPDIR (but a result its stderr says it saved there)
  and no process it started left running, 10 s after it ends (found by a
  mark in the environment, tests/support/hostile_proc.py);
- the case's own checks (a result written, no escape sequence printed,
  stderr quiet under -q, ...).

tools/probe_failures.py runs the matrix against a checkout and tallies it;
run_case() runs one case and returns its Result (no problems: handled), as
a parametrized test will once the fixes land.  The cases need root where
they mount a tmpfs (skipped otherwise, saying why) and drop
CAP_DAC_OVERRIDE (an unreadable directory is readable to root).
"""

from __future__ import annotations

import dataclasses
import resource
import shlex
import signal
from collections.abc import Mapping
from pathlib import Path

from tests.support.hostile_checks import (
    Check,
    at_most_one_line,
    errs,
    gzip_or_refused,
    judge,
    made_nothing,
    never_says,
    no_escapes,
    not_written,
    quiet,
    said_once,
    says,
    says_why_unchecked,
    suggestion_works,
    written,
)
from tests.support.hostile_proc import Checkout, Interrupted, Skip
from tests.support.hostile_run import Invocation, Outcome, execute
from tests.support.hostile_setups import (
    Setup,
    cluster,
    fake_master,
    fake_valgrind,
    full_fs,
    idle_valgrind,
    killed_with_fake_valgrind,
    not_json,
    resolve,
    restart_server,
    second_writer,
    send,
    signal_after,
    stop_once_serving,
    stop_server,
    stopped_worker,
    tmpdir_at,
    undecodable_name,
    unreadable,
    zconfig_of,
)
from tests.support.hostile_work import Work, work_dir

#: The kinds in the order of issue 28's list; the controls, handled on
#: main, show that the harness sees "handled" where it is.
KINDS = (
    "data changed",
    "wrong verdict",
    "hang",
    "encoding/pipe",
    "escape sequences",
    "malformed file",
    "environment",
    "signals",
    "resource limits",
    "release paths",
    "IPv6",
    "history dirs",
    "zeoloop reconnect",
    "controls",
    "cluster peers",
)
BOUND = 90.0


@dataclasses.dataclass(frozen=True)
class Case:
    kind: str
    #: the command, as the tally groups it
    command: str
    name: str
    #: vfab-bench's arguments, shell words with {placeholders} (resolve())
    args: str
    #: exit statuses that meet the case (None: any)
    status: tuple[int, ...] | None = (2,)
    #: a regular expression the one line of a refusal (2) must match
    names: str = ""
    bound: float = BOUND
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    limits: dict[int, tuple[int, int]] = dataclasses.field(default_factory=dict)
    checks: tuple[Check, ...] = ()
    #: more set-up: helpers, a signal while it runs (changes the Invocation)
    setup: Setup | None = None
    stdout_closed: bool = False
    stdout_shut: bool = False
    cwd_deleted: bool = False
    no_dac: bool = False

    @property
    def id(self) -> str:
        return f"[{self.kind}] {self.command}: {self.name}"

    def invocation(self, work: Work) -> Invocation:
        argv = [resolve(work, word) for word in shlex.split(self.args)]
        inv = Invocation(
            work.cli(*argv),
            env={k: resolve(work, v) for k, v in self.env.items()},
            limits=dict(self.limits),
            stdout_closed=self.stdout_closed,
            stdout_shut=self.stdout_shut,
            cwd_deleted=self.cwd_deleted,
            no_dac=self.no_dac,
            checks=list(self.checks),
        )
        if self.cwd_deleted:
            inv.cwd = work.root / "gone"
            inv.cwd.mkdir()
        if self.setup is not None:
            self.setup(work, inv)
        return inv


@dataclasses.dataclass
class Result:
    case: Case
    outcome: Outcome | None
    skipped: str = ""
    #: each expectation the command missed (empty: handled), judged while
    #: the case's directory still exists
    missed: list[str] = dataclasses.field(default_factory=list)

    def problems(self) -> list[str]:
        return self.missed

    @property
    def err_tail(self) -> str:
        """The last lines the command wrote to stderr, for a failure's
        message: the line before the last is often the cause (a zeoloop's
        "error: ..." lines come before its notes)."""
        if self.outcome is None:
            return self.skipped
        return "\n".join(self.outcome.err_text.strip().splitlines()[-15:])[-3000:]

    @property
    def last_line(self) -> str:
        if self.outcome is None:
            return self.skipped
        line = (self.outcome.err_text.strip().splitlines() or [""])[-1]
        return line if len(line) <= 200 else f"{line[:100]} ... {line[-100:]}"


def run_case(
    case: Case, checkout: Checkout, bases: Mapping[str, Path], scratch: Path
) -> Result:
    """Lay the case out in a fresh directory under *scratch*, run its
    command and say what it did; everything started is stopped and the
    directory removed, whatever happens."""
    with work_dir(scratch, checkout, bases) as work:
        try:
            invocation = case.invocation(work)
        except Skip as e:
            return Result(case, None, skipped=str(e))
        outcome = execute(invocation, work, case.bound)
        return Result(
            case, outcome, missed=judge(outcome, case.status, case.names, case.bound)
        )


# -- the matrix ------------------------------------------------------------------------
# fmt: off

ASCII = {"LC_ALL": "C", "PYTHONIOENCODING": "ascii"}
LOAD = "--clients 1 --budget 2 --no-scenarios"
SHORT = "--clients 1 --budget 2"
COUNTS = "run --counts --storage memory --rows 2000 --repeat 1 --warmups 0 -q"
QUICK = "--preset quick -q"
RELEASE = "release --quick -q --storage mapping"
SCALE1 = "scale -q --clients 1 --duration 1 --warmup 0"
NO_DATA = "data set"
MB = 1024 * 1024
CWD = "working directory|current directory"
C = Case

DATA_CHANGED = [
    C("data changed", "verify", "--target file:// of a FileStorage with no data set",
      f"verify -q --target file://{{foreign-file}}/Data.fs {SHORT}", names=NO_DATA),
    C("data changed", "verify", "--target file:// --no-scenarios, no data set",
      f"verify -q --target file://{{foreign-file}}/Data.fs {LOAD}", names=NO_DATA),
    C("data changed", "verify", "--target zlib+file:// of a zlib one, no data set",
      f"verify -q --target zlib+file://{{foreign-zlib}}/Data.fs {SHORT}",
      names=NO_DATA),
    C("data changed", "verify", "--target a ZConfig file of a FileStorage, no data set",
      f"verify -q {SHORT}", names=NO_DATA, setup=zconfig_of("foreign-file")),
    C("data changed", "verify", "--target bdb:// of a BDBStorage with no data set",
      f"verify -q --target bdb://{{foreign-bdb}}/bdb {SHORT}", names=NO_DATA),
    C("data changed", "verify", "--target sqlite:// of a history-free RelStorage",
      f"verify -q --target 'sqlite://?data_dir={{foreign-sqlite}}/relstorage' {SHORT}"),
    C("data changed", "census", "sqlite:// (history-preserving) of a history-free one",
      "census 'sqlite://?data_dir={foreign-sqlite}/relstorage'", (0, 2)),
    C("data changed", "verify", "--history inside the target's own directory",
      f"verify -q --target file://{{file}}/Data.fs {LOAD} --history {{file}}/h.jsonl",
      names="history"),
]

WRONG_VERDICT = [
    C("wrong verdict", "verify", "two verify --target of one server at once",
      "verify -q --target {served} --no-scenarios --clients 2 --budget 4", (3,),
      setup=second_writer("verify -q --target {served} --no-scenarios --clients 2 "
                          "--budget 10"),
      checks=(says("not fully checked"), never_says("WRONG"))),
    C("wrong verdict", "verify", "--target while zeoloop writes to the same server",
      "verify -q --target {served} --no-scenarios --clients 2 --budget 4", (3,),
      setup=second_writer("zeoloop --target {served} --users 2 --duration 40"),
      checks=(says("not fully checked"), never_says("WRONG"))),
    C("wrong verdict", "verify", "--target file:// of a data set (1 of 4 scenarios)",
      f"verify -q --target file://{{data/file}}/Data.fs {SHORT}", (3,),
      checks=(says("not fully checked"),)),
    C("wrong verdict", "verify", "--target '' (an empty variable)",
      f"verify -q --target '' {LOAD}", names="target"),
]

HANG = [
    # bounded: one line and exit 2, or 3 saying the data were not checked
    C("hang", "zeoloop", "--target whose runzeo is SIGSTOPped during the load",
      "zeoloop --target {served} --users 2 --duration 6", (2, 3), setup=stop_server,
      checks=(says_why_unchecked,)),
    C("hang", "verify", "--target whose runzeo is SIGSTOPped during the check",
      "verify -q --target {served} --no-scenarios --clients 2 --budget 6", (2, 3),
      setup=stop_server, checks=(says_why_unchecked,)),
    C("hang", "scale", "--target whose runzeo is SIGSTOPped during the load",
      "scale -q --target {served} --clients 2 --duration 6 --warmup 0", (2, 3),
      setup=stop_server, checks=(says_why_unchecked,)),
    C("hang", "run --counts", "a valgrind that never returns", COUNTS,
      names="valgrind", setup=fake_valgrind,
      checks=(errs("valgrind did not answer --version within 10 s"),)),
    C("environment", "run --counts", "a valgrind that does nothing (exit 0)", COUNTS,
      names="valgrind", setup=idle_valgrind,
      checks=(errs("exited 0 and the counted process wrote nothing"),)),
    C("hang", "compare", "two runs of 10,000 trials a cell, 3 cells (bound 30 s)",
      "compare {big-old.json} {big-new.json}", (0,), bound=30.0,
      checks=(says("Monte Carlo: 2,000 random splits, seed 2000"),)),
    # 30 s is the bound of a wait elsewhere; 10 s more for starting
    C("hang", "verify", "--target a listener that never answers (bound 40 s)",
      f"verify -q --target {{silent}} {SHORT}", bound=40.0),
    C("hang", "verify", "--target a silent listener, --no-scenarios (bound 40 s)",
      f"verify -q --target {{silent}} {LOAD}", bound=40.0),
    C("hang", "zeoloop", "--target a listener that never answers (bound 40 s)",
      "zeoloop --target {silent} --users 1 --duration 2", bound=40.0),
    C("hang", "scale", "--target a listener that never answers (bound 40 s)",
      f"{SCALE1} --target {{silent}}", bound=40.0),
]

ENCODING = [
    C("encoding/pipe", "report", "stdout ASCII (LC_ALL=C, PYTHONIOENCODING=ascii)",
      "report {run.json}", (0,), env=ASCII),
    C("encoding/pipe", "run", "stdout ASCII", f"run --storage mapping {QUICK}", (0,),
      env=ASCII),
    C("encoding/pipe", "run", "stdout ASCII: --json keeps the results",
      f"run --storage mapping {QUICK} --json {{out}}/run.json", (0,), env=ASCII,
      checks=(written("run.json"),)),
    C("encoding/pipe", "history", "stdout ASCII", "history {runs}", (0,), env=ASCII),
    C("encoding/pipe", "history", "--html with a non-UTF-8 file name",
      "history {runs} --html {out}/history.html", (0,), setup=undecodable_name,
      checks=(written("history.html", "text"),)),
    C("encoding/pipe", "report", "--html of a file with a lone surrogate (storage)",
      "report {storage-surrogate.json} --html {out}/page.html", (0, 2), "storage",
      checks=(written("page.html", "text", unless_refused=True),)),
    C("encoding/pipe", "run", "--json with stdout a closed pipe",
      f"run --storage mapping {QUICK} --json {{out}}/out.json", None,
      stdout_closed=True,
      checks=(written("out.json"), at_most_one_line)),
    C("encoding/pipe", "census", "--json with stdout a closed pipe",
      "census file://{file}/Data.fs --json {out}/out.json", None, stdout_closed=True,
      checks=(written("out.json"), at_most_one_line)),
    C("encoding/pipe", "history", "--json with stdout a closed pipe",
      "history {runs} --json {out}/out.json", None, stdout_closed=True,
      checks=(written("out.json"), at_most_one_line)),
    # issue 35: no stdout at all (>&-)
    C("encoding/pipe", "report", "stdout closed (>&-)", "report {run.json}", (0,),
      stdout_shut=True),
    C("encoding/pipe", "run", "--json with stdout closed (>&-)",
      f"run --storage mapping {QUICK} --json {{out}}/run.json", (0,),
      stdout_shut=True, checks=(written("run.json"),)),
    C("encoding/pipe", "populate", "stdout closed (>&-)",
      "populate -q --storage file --size small --path {out}/p", (0,),
      stdout_shut=True),
]

ESCAPES = [
    C("escape sequences", "report", "a storage name with terminal escape sequences",
      "report {storage-escapes.json}", (0, 2), "storage", checks=(no_escapes,)),
    C("escape sequences", "history", "a storage name with terminal escape sequences",
      "history {runs=storage-escapes.json}", (0, 2), "storage", checks=(no_escapes,)),
    C("escape sequences", "compare", "a storage name with terminal escape sequences",
      "compare {storage-escapes.json} {storage-escapes.json}", (0, 2), "storage",
      checks=(no_escapes,)),
]

MALFORMED = [
    C("malformed file", "report", "scale file: HdrHistogram not base64",
      "report {hist-not-base64.json}", names="hists|browse"),
    C("malformed file", "report", "scale file: base64 that is no HdrHistogram",
      "report {hist-not-hdr.json}", names="hists|browse"),
    C("malformed file", "compare", "scale file: HdrHistogram not base64",
      "compare {scale.json} {hist-not-base64.json}", names="hists|browse"),
    C("malformed file", "report", "run file: a sample time of 10**400",
      "report {time-10e400.json}", names="wall_s"),
    C("malformed file", "compare", "run file: a sample time of 10**400",
      "compare {run.json} {time-10e400.json}", names="wall_s"),
    C("malformed file", "report", "run file: schema_version true",
      "report {schema-true.json}", names="schema_version"),
    C("malformed file", "report", "counts file: negative instructions",
      "report {counts-negative.json}", names="instructions"),
    C("malformed file", "compare", "counts file: negative instructions",
      "compare {counts.json} {counts-negative.json}", names="instructions"),
    C("malformed file", "report --pyperf", "a run with a result listed twice",
      "report {result-twice.json} --pyperf {out}/p.json",
      names="results|twice|more than once|duplicate", checks=(not_written("p.json"),)),
    C("malformed file", "report --pyperf", "an empty storage name",
      "report {storage-empty.json} --pyperf {out}/p.json", names="storage",
      checks=(not_written("p.json"),)),
    C("malformed file", "report --pyperf", "a multi-line storage name",
      "report {storage-lines.json} --pyperf {out}/p.json", names="storage",
      checks=(not_written("p.json"),)),
    C("malformed file", "report", "an empty storage name",
      "report {storage-empty.json}", names="storage"),
]

ENVIRONMENT = [
    C("environment", "run", "TMPDIR a read-only file system",
      f"run --storage file {QUICK}", (0, 2), "TMPDIR|temporary",
      setup=tmpdir_at("read-only")),
    C("environment", "run", "a 4000-character TMPDIR (bdb)",
      f"run --storage bdb {QUICK}", (0, 2), "TMPDIR|temporary",
      setup=tmpdir_at("long")),
    C("environment", "scale", "relstorage-pg, a 74-character TMPDIR",
      f"{SCALE1} --storage relstorage-pg", (0,), setup=tmpdir_at("74")),
    C("environment", "scale", "relstorage-mysql, a 74-character TMPDIR",
      f"{SCALE1} --storage relstorage-mysql", (0,), setup=tmpdir_at("74")),
    C("environment", "verify", "--history a 300-character file name",
      f"verify -q --storage zeo {LOAD} --history {{long-name}}.jsonl",
      checks=(made_nothing,)),
    C("environment", "history", "--json a 300-character file name",
      "history {runs} --json {long-name}.json", checks=(made_nothing,)),
    C("environment", "report --pyperf", "a 300-character file name",
      "report {run.json} --pyperf {long-name}.json", checks=(made_nothing,)),
    C("environment", "release", "--out a 300-character directory name",
      f"{RELEASE} --out {{long-name}}", checks=(made_nothing,)),
    C("environment", "run --counts", "--json a 300-character file name",
      f"{COUNTS} --json {{long-name}}.json", checks=(made_nothing,)),
    C("environment", "history", "a 300-character input name",
      "history {long-name}.json"),
    C("environment", "verify", "--target file:// a 4096-character path",
      f"verify -q --target file://{{long-path}}/Data.fs {SHORT}",
      checks=(made_nothing,)),
    C("environment", "run", "--profile with a 300-character storage name",
      f"run --storage-uri {'n' * 300}=memory:// {QUICK} --profile {{out}}/prof"),
    C("environment", "history", "--html a 4096-character path",
      "history {runs} --html {long-path}.html", checks=(made_nothing,)),
    C("environment", "release", "--out a 4096-character path",
      f"{RELEASE} --out {{long-path}}", checks=(made_nothing,)),
    C("environment", "verify", "the working directory deleted",
      f"verify -q --storage zeo {LOAD}", (0, 2), CWD, cwd_deleted=True),
    C("environment", "scale", "the working directory deleted",
      f"{SCALE1} --storage zeo", (0, 2), CWD, cwd_deleted=True),
    C("environment", "serve", "--host a name that does not resolve",
      "serve --host no-such-host.invalid --port 0", names="no-such-host"),
    C("environment", "run --counts", "HOME under /proc", COUNTS, (0, 2), "cache",
      env={"HOME": "/proc/vfab-nothing"}),
    C("environment", "run --counts", "VFAB_CACHE_DIR under /proc", COUNTS, (0, 2),
      "cache", env={"VFAB_CACHE_DIR": "/proc/vfab-nothing"}),
    C("environment", "sweep", "--plot with HOME under /proc",
      f"sweep --storage mapping --objects 10 {QUICK} --plot {{out}}/plot.svg", (0,),
      env={"HOME": "/proc/vfab-nothing"}),
]

VERIFY_LONG = "verify -q --storage zeo --clients 2 --budget 20"
# Not -q: its progress says which part runs (one line is for bad input).
RELEASE_LONG = "release --quick --storage mapping,zeo --out {out}/rel"
SIGNALS = [
    C("signals", "verify", "SIGTERM", VERIFY_LONG, (143,), setup=send(signal.SIGTERM)),
    C("signals", "verify", "SIGHUP", VERIFY_LONG, (129,), setup=send(signal.SIGHUP)),
    C("signals", "release", "SIGTERM in its 2000-table part", RELEASE_LONG, (143,),
      setup=send(signal.SIGTERM)),
    C("signals", "release", "SIGTERM in its concurrency part", RELEASE_LONG, (143,),
      setup=send(signal.SIGTERM, "1 client (")),
    C("signals", "release", "SIGHUP in its concurrency part", RELEASE_LONG, (129,),
      setup=send(signal.SIGHUP, "1 client (")),
    C("signals", "run --counts", "a run that ends leaves nothing in TMPDIR", COUNTS,
      (0,)),
    C("signals", "run --counts", "-q: nothing on stderr", COUNTS, (0,),
      checks=(quiet,)),
    C("signals", "run --counts", "SIGKILLed while valgrind never returns",
      COUNTS, None, setup=killed_with_fake_valgrind),
    C("signals", "run", "a CPU-time limit (SIGXCPU) on file and zeo",
      "run --storage file,zeo --size medium --repeat 5 -q", None,
      limits={resource.RLIMIT_CPU: (3, 60), resource.RLIMIT_CORE: (0, 0)}),
]

RESOURCE_LIMITS = [
    C("resource limits", "report", "ulimit -s 128 and a 100,000-deep JSON",
      "report {deep.json}", names="deep|nested",
      limits={resource.RLIMIT_STACK: (128 * 1024, 128 * 1024)}),
    C("resource limits", "report", "ulimit -v 40 MB", "report {run.json}",
      names="memory",
      limits={resource.RLIMIT_AS: (40 * MB, 40 * MB)}),
    C("resource limits", "census", "ulimit -v 100 MB: a healthy Berkeley DB data set",
      "census bdb://{bdb}/bdb", (0, 2), "memory",
      limits={resource.RLIMIT_AS: (100 * MB, 100 * MB)},
      checks=(never_says("damaged"), never_says("db_recover"))),
]

# issue 35: a file-size limit is named, and leaves nothing half-written
RESOURCE_LIMITS += [
    C("resource limits", "populate", "ulimit -f 64 KiB",
      "populate -q --storage file --size small --path {out}/p",
      names="file-size limit", limits={resource.RLIMIT_FSIZE: (64 * 1024, 64 * 1024)}),
    C("resource limits", "run", "--json under ulimit -f 8 KiB",
      f"run --storage mapping {QUICK} --json {{out}}/r.json",
      names="File too large|file-size limit",
      limits={resource.RLIMIT_FSIZE: (8 * 1024, 8 * 1024)}),
    C("resource limits", "zeoloop", "ulimit -n 64, --users 300",
      "zeoloop --target {served} --users 300 --duration 2", names="ulimit -n",
      limits={resource.RLIMIT_NOFILE: (64, 64)}),
]

RELEASE_PATHS = [
    C("release paths", "release", "--out a relative path", f"{RELEASE} --out rel", (0,),
      checks=(written("rel/micro.json"),)),
    C("release paths", "release", "--out on a full file system", RELEASE,
      setup=full_fs),
    C("release paths", "run --pyperf", "FILE.json.gz",
      f"run --storage mapping {QUICK} --pyperf {{out}}/p.json.gz", (0, 2),
      checks=(gzip_or_refused("p.json.gz"),)),
    C("release paths", "report --pyperf", "FILE.json.gz",
      "report {run.json} --pyperf {out}/p.json.gz", (0, 2),
      checks=(gzip_or_refused("p.json.gz"),)),
]

IPV6 = [
    C("IPv6", "verify", "--target [::1]:PORT", f"verify -q --target {{zeo6}} {LOAD}",
      (0, 3)),
    C("IPv6", "scale", "--target [::1]:PORT", f"{SCALE1} --target {{zeo6}}", (0,)),
    C("IPv6", "zeoloop", "--target [::1]:PORT",
      "zeoloop --target {zeo6} --users 1 --duration 2", (0,)),
    C("IPv6", "census", "--zeo-address [::1]:PORT", "census --zeo-address {zeo6}",
      (0,)),
    C("IPv6", "serve", "--host ::1", "serve --host ::1 --port 0", (0,),
      setup=stop_once_serving, checks=(says("serving "),)),
]

HISTORY_DIRS = [
    C("history dirs", "history", "a pyperf export beside the runs",
      "history {runs+pyperf.json}", (0,)),
    C("history dirs", "history", "a release's micro.json beside the runs",
      "history {runs+micro.json}", (0,)),
    C("history dirs", "history", "an unreadable directory", "history",
      names="permission|cannot be read|not readable|unreadable", setup=unreadable,
      no_dac=True),
    C("history dirs", "compare", "a verify file: the command it suggests works",
      "compare {verify.json} {verify.json}", checks=(suggestion_works,)),
]

ZEOLOOP_RECONNECT = [
    C("zeoloop reconnect", "zeoloop", "runzeo SIGKILLed, then served again on its port",
      "zeoloop --target {served} --users 2 --duration 12", (0,), setup=restart_server),
]

CONTROLS = [
    C("controls", "report", "a missing file", "report {in}/missing.json",
      names="missing.json"),
    C("controls", "report", "a file that is not JSON", "report", names="notes.json",
      setup=not_json),
    C("controls", "report", "a 100,000-deep JSON (no limit)", "report {deep.json}",
      names="deep|nested"),
    C("controls", "report", "a run file", "report {run.json}", (0,)),
    C("controls", "compare", "a run file with itself", "compare {run.json} {run.json}",
      (0,)),
    C("controls", "history", "two runs", "history {runs}", (0,)),
    C("controls", "census", "file:// of a data set, read-only",
      "census file://{file}/Data.fs", (0,)),
    C("controls", "census", "sqlite://...&keep_history=false of a history-free one",
      "census 'sqlite://?data_dir={foreign-sqlite}/relstorage&keep_history=false'",
      (0,)),
    C("controls", "verify", "--target 127.0.0.1:PORT",
      f"verify -q --target {{served}} {LOAD}", (0, 3)),
    C("controls", "census", "--zeo-address 127.0.0.1:PORT",
      "census --zeo-address {served}", (0,)),
    C("controls", "zeoloop", "--target 127.0.0.1:PORT",
      "zeoloop --target {served} --users 1 --duration 2", (0,)),
    C("controls", "serve", "--host 127.0.0.1", "serve --host 127.0.0.1 --port 0", (0,),
      setup=stop_once_serving, checks=(says("serving "),)),
    C("controls", "run", "SIGTERM (file, zeo)",
      "run --storage file,zeo --size medium --repeat 5 -q", (143,),
      setup=send(signal.SIGTERM, delay=1.0)),
]
# Issue 35: the master hears only this run's workers, a worker only its
# master; neither breaks on what it is sent; a stop signal is its status.
SCALE_W = "scale --storage zeo --clients 1 --duration 1 --warmup 0 --windows 1"
IGNORED = "ignoring"
CLUSTER_PEERS = [
    C("cluster peers", "scale --workers", "a locust client forges stats and a result",
      SCALE_W, (0,), setup=cluster("forge"), checks=(said_once(IGNORED),)),
    C("cluster peers", "scale --workers", "cut msgpack, 2-arrays, an int version, TCP",
      SCALE_W, (0,), setup=cluster("junk"), checks=(said_once(IGNORED),)),
    C("cluster peers", "scale --workers", "sealed: an empty hello, a clock of strings",
      SCALE_W, (0,), setup=cluster("sealed"), checks=(said_once(IGNORED),)),
    C("cluster peers", "scale --workers", "--master-bind-host ''",
      f"{SCALE_W} --master-bind-host ''", names="master-bind-host", bound=30.0,
      setup=cluster(worker=False)),
    C("cluster peers", "scale --workers", "VFAB_WORKER_TOKEN too short",
      f"{SCALE_W} --workers 1", names="VFAB_WORKER_TOKEN", bound=30.0,
      env={"VFAB_WORKER_TOKEN": "short"}),
    C("cluster peers", "worker", "no --token", "worker -q --master-port 5557",
      names="token", bound=30.0),
    C("cluster peers", "worker", "a master that answers garbage",
      "worker -q --connect-timeout 5", names="no master answered", bound=40.0,
      setup=fake_master("garbage")),
    C("cluster peers", "worker", "its master's PLAN {'point': 'x'}",
      "worker -q --connect-timeout 20", names="plan", bound=40.0,
      setup=fake_master("plan-x")),
    C("cluster peers", "worker", "its master's PLAN of a junk process plan",
      "worker -q --connect-timeout 20", names="plan", bound=40.0,
      setup=fake_master("plan-bad")),
    C("cluster peers", "scale --workers", "SIGTERM while it waits for workers",
      SCALE_W, (143,), setup=signal_after(signal.SIGTERM, "waiting for",
                                          cluster(worker=False))),
    C("cluster peers", "scale --workers", "SIGHUP mid-point", SCALE_W + " --duration 8",
      (129,), setup=signal_after(signal.SIGHUP, "zeo: 1 client", cluster())),
    C("cluster peers", "scale --workers", "SIGINT mid-point", SCALE_W + " --duration 8",
      (130,), setup=signal_after(signal.SIGINT, "zeo: 1 client", cluster())),
    C("cluster peers", "scale --workers", "its worker SIGSTOPped 1 s into the point",
      SCALE_W, (3,), setup=stopped_worker,
      checks=(says("incomplete"), says_why_unchecked)),
    C("cluster peers", "worker", "SIGINT while it waits for its master",
      "worker --connect-timeout 30", (130,),
      setup=signal_after(signal.SIGINT, "connecting", fake_master(""))),
    C("cluster peers", "worker", "SIGTERM while it waits for its master",
      "worker --connect-timeout 30", (143,),
      setup=signal_after(signal.SIGTERM, "connecting", fake_master(""))),
]
# fmt: on


def cases() -> list[Case]:
    every = (
        DATA_CHANGED + WRONG_VERDICT + HANG + ENCODING + ESCAPES + MALFORMED
        + ENVIRONMENT + SIGNALS + RESOURCE_LIMITS + RELEASE_PATHS + IPV6
        + HISTORY_DIRS + ZEOLOOP_RECONNECT + CONTROLS + CLUSTER_PEERS
    )  # fmt: skip
    assert {c.kind for c in every} <= set(KINDS)
    assert len({c.id for c in every}) == len(every), "two cases of one name"
    return every


__all__ = ["KINDS", "Case", "Interrupted", "Result", "cases", "run_case"]
