"""The project's imports form no cycle and go down the floors only, and no
module grows past 500 lines.

Read from the source (ast), not by importing: every import statement of
vfab, storages, scenarios and locustfile.py, at module level and inside
functions alike (a function-level import only delays a cycle to the first
call), except those under ``if TYPE_CHECKING:`` (never executed).  A
package's __init__ is a module of the graph: `from P import x` reads P
(x a submodule or not), and importing a module runs the __init__ of each
package above it that the importer is not in.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("vfab", "storages", "scenarios")
#: Modules allowed past the size limit, with the reason.
LONG = {"storages.bdb.storage": "one ZODB storage, every IStorage method"}
MAX_LINES = 500


def modules() -> dict[str, Path]:
    """Module name -> file, for every module of the project."""
    found = {"locustfile": ROOT / "locustfile.py"}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            yield from (n for n in node.orelse for n in import_nodes_of(n))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from import_nodes(node)


def import_nodes_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    yield from import_nodes(node)


def graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (read once a session: the
    tests that read the whole graph share it; each gets its own copy)."""
    return {name: set(targets) for name, targets in _graph().items()}


@functools.cache
def _trees() -> dict[str, ast.AST]:
    return {
        name: ast.parse(path.read_text(), str(path)) for name, path in modules().items()
    }


@functools.cache
def _graph() -> dict[str, set[str]]:
    found = modules()
    trees = _trees()
    edges: dict[str, set[str]] = {name: set() for name in found}

    def add(source: str, target: str) -> None:
        if target in found and target != source:
            edges[source].add(target)

    def add_with_packages(source: str, target: str) -> None:
        """*target*, and the packages above it that *source* is not in:
        importing a module runs its packages' __init__ first, and those
        *source* is in have begun before it ran."""
        parts = target.split(".")
        for i in range(1, len(parts)):
            package = ".".join(parts[:i])
            if not (source + ".").startswith(package + "."):
                add(source, package)
        add(source, target)

    for name, tree in trees.items():
        is_package = found[name].name == "__init__.py"
        for node in import_nodes(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add_with_packages(name, alias.name)
                continue
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            # `from P import x` reads P's namespace even where x is a
            # submodule: P's __init__ is imported, and a loop through it
            # holds only as long as the import order does.
            add_with_packages(name, base)
            add(name, base)
            for alias in node.names:
                add(name, f"{base}.{alias.name}")  # a submodule, or a name
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of *edges* as a path (first module repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_graph_is_read() -> None:
    edges = graph()
    assert "storages.base" in edges["storages.file"]
    # A name a package's __init__ imports: an import of the package.
    assert "storages" in edges["scenarios.cli.args"]
    assert "storages.registry" in edges["storages"]
    assert "storages.zeo.factory" in edges["storages.zeo"]
    # A function-level import counts.
    assert "storages.zlib" in edges["storages.named"]


def test_a_package_s_init_is_in_the_graph() -> None:
    """An import reads a package's __init__: `from P import sub` reads P
    (its namespace, even for a submodule), and importing a module outside
    one's own packages runs each package above it."""
    edges = graph()
    # `from storages.zeo.factory import WAIT_TIMEOUT_S`: storages' and
    # storages.zeo's __init__ run first.
    assert {"storages", "storages.zeo", "storages.zeo.factory"} <= edges[
        "scenarios.clients.zeoloop"
    ]
    # Within a package, its own __init__ has begun: not an edge...
    assert "storages" not in edges["storages.file"]


def test_find_cycle_finds_one() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(edges) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


#: The floors, lowest first: a module imports from its own floor and those
#: below, never above (a module's floor: its longest prefix here).  The
#: results keep the model and the generic parts; each command owns its
#: views; the registry lists the commands' result kinds; the CLI is the top.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("vfab",),
    ("storages",),
    ("scenarios", "scenarios.results"),
    # The libraries under the commands: the data set, the load engine, the
    # checker, the clients that drive the load, the locust glue.
    (
        "scenarios.data",
        "scenarios.load",
        "scenarios.checker",
        "scenarios.clients",
        "scenarios.clients.remote",
    ),
    (
        "scenarios.ab",
        "scenarios.bench",
        "scenarios.census",
        "scenarios.choose",
        "scenarios.counts",
        "scenarios.trend",
        "scenarios.matrix",
        "scenarios.release",
        "scenarios.scale",
        "scenarios.sweep",
        "scenarios.verify",
    ),
    ("scenarios.registry",),
    ("scenarios.cli", "locustfile"),
)

#: Imports up a floor still to move, with the reason.
UPWARD: dict[tuple[str, str], str] = {}


def floor(module: str) -> int:
    """The floor of *module*: that of its longest prefix in FLOORS."""
    best, level = -1, -1
    for i, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(
                prefix
            ) > best:
                best, level = len(prefix), i
    assert level >= 0, f"{module} is on no floor: add it to FLOORS"
    return level


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a module on a higher floor than the importer's."""
    return sorted(
        f"{source} -> {target}"
        for source, targets in edges.items()
        for target in targets
        if floor(target) > floor(source) and (source, target) not in UPWARD
    )


def test_upward_finds_an_import_up_a_floor() -> None:
    edges = {
        "scenarios.results.stats": {"scenarios.bench.phases"},
        "scenarios.bench.phases": {"scenarios.results.stats", "vfab.model"},
        "scenarios.cli.run": {"scenarios.bench.phases"},
    }
    assert upward(edges) == ["scenarios.results.stats -> scenarios.bench.phases"]
    assert floor("scenarios.errors") == floor("scenarios.results.files") == 2
    assert floor("scenarios.trend.table") == 4 and floor("scenarios.cli") == 6
    assert floor("scenarios.data.dataset") == floor("scenarios.checker") == 3


def test_no_import_goes_up_a_floor() -> None:
    """results never imports a command; results, load, storages and the
    commands never import the CLI."""
    edges = graph()
    assert upward(edges) == []
    stale = [pair for pair in UPWARD if pair[1] not in edges[pair[0]]]
    assert not stale, f"UPWARD lists imports that are gone: {stale}"


def test_no_module_over_500_lines() -> None:
    long = {
        name: n
        for name, path in modules().items()
        if (n := len(path.read_text().splitlines())) > MAX_LINES and name not in LONG
    }
    assert not long, long


#: Within the libraries' floor, the load engine, its checker and the
#: clients stand one over the other: load records, checker judges what
#: load recorded, clients drive the load (on this machine, or under
#: locust: clients.remote, whose master checks).  Lowest first.
LOAD_ROOMS = ("scenarios.load", "scenarios.checker", "scenarios.clients")


def room(module: str) -> int | None:
    """The index of *module*'s package in LOAD_ROOMS, or None."""
    for i, prefix in enumerate(LOAD_ROOMS):
        if module == prefix or module.startswith(prefix + "."):
            return i
    return None


def back_imports(edges: dict[str, set[str]]) -> list[str]:
    """Every import from load, checker or clients into one of them above."""
    return sorted(
        f"{source} -> {target}"
        for source, targets in edges.items()
        for target in targets
        if (low := room(source)) is not None
        and (high := room(target)) is not None
        and high > low
    )


def test_back_imports_finds_load_importing_the_checker() -> None:
    edges = {
        "scenarios.load.session": {"scenarios.checker.judge"},
        "scenarios.checker.index": {"scenarios.load.history"},
        "scenarios.clients.remote.plugin": {"scenarios.checker.consistency"},
    }
    assert back_imports(edges) == ["scenarios.load.session -> scenarios.checker.judge"]


def test_load_checker_and_clients_import_one_way() -> None:
    """The load engine never imports the checker or the clients, and the
    checker never imports the clients."""
    assert back_imports(graph()) == []


def folders(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """scenarios' packages -> the other packages of scenarios they import."""

    def package(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if parts[0] == "scenarios" and len(parts) > 2 else None

    found: dict[str, set[str]] = {}
    for source, targets in edges.items():
        for target in targets:
            a, b = package(source), package(target)
            if a and b and a != b:
                found.setdefault(a, set()).add(b)
                found.setdefault(b, set())
    return found


def test_folders_finds_a_loop() -> None:
    edges = {"scenarios.a.x": {"scenarios.b.y"}, "scenarios.b.y": {"scenarios.a.z"}}
    assert find_cycle(folders(edges)) == ["a", "b", "a"]


def test_no_loop_between_folders() -> None:
    """Two commands' packages never import each other, even through others
    (a command another needs is below it; what both need is a library)."""
    cycle = find_cycle(folders(graph()))
    assert cycle is None, " -> ".join(cycle or [])


def importers_of(distribution: str) -> set[str]:
    """The project's modules that import *distribution* (or a module of it)."""
    found = set()
    for name, tree in _trees().items():
        for node in import_nodes(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                targets = [] if node.level else [node.module or ""]
            if any(
                t == distribution or t.startswith(distribution + ".") for t in targets
            ):
                found.add(name)
    return found


#: The one package that imports locust (importing it patches the process
#: with gevent), and the locustfile, which locust itself loads by path.
LOCUST_PACKAGE = "scenarios.clients.remote"


def test_locust_is_imported_by_one_package() -> None:
    assert "locustfile" in importers_of("locust")
    outside = {
        name
        for name in importers_of("locust")
        if name != "locustfile" and not name.startswith(LOCUST_PACKAGE + ".")
    }
    assert not outside, f"locust imported outside {LOCUST_PACKAGE}: {outside}"


def test_local_clients_never_import_the_remote_ones() -> None:
    """What drives clients on this machine never reaches locust: no module
    of scenarios.clients outside its remote part imports that part."""
    edges = graph()
    local = [
        name
        for name in edges
        if name.startswith("scenarios.clients.") and not name.startswith(LOCUST_PACKAGE)
    ]
    reaching = {
        name: sorted(t for t in edges[name] if t.startswith(LOCUST_PACKAGE))
        for name in local
    }
    assert not {k: v for k, v in reaching.items() if v}


def reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    """Every module *start* imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in edges.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


#: What every command module may use of the CLI: the shared option groups,
#: the output block and the error edge (never another command's module).
CLI_SHARED = frozenset(
    {"scenarios.cli.args", "scenarios.cli.outputs", "scenarios.cli.edge"}
)
#: The libraries below `release` and `verify` that import another command's
#: report module, with the reason.
REPORT_USERS: dict[tuple[str, str], str] = {
    **{
        ("scenarios.release.parts", f"scenarios.{cmd}.report"): "a part's text file"
        for cmd in ("bench", "counts", "scale")
    },
    ("scenarios.release.page", "scenarios.counts.report"): "the counts' table",
    ("scenarios.release.page", "scenarios.bench.report"): "the million run's table",
    ("scenarios.release.paired", "scenarios.ab.report"): "the paired cells' table",
    # To move to their models (helpers models and choose own those files).
    ("scenarios.release.measures", "scenarios.bench.report"): "cost_per_object",
    ("scenarios.release.trend", "scenarios.bench.report"): "cost_per_object",
    ("scenarios.release.plan", "scenarios.scale.report"): "WINDOW_STATISTIC",
}


def other_commands(edges: dict[str, set[str]], command: str) -> list[str]:
    """Where command *command*'s module, or a module it reaches, imports
    another command's cli module or another package's report module
    (REPORT_USERS apart)."""
    found = []
    for module in sorted(
        {f"scenarios.cli.{command}"} | reachable(edges, f"scenarios.cli.{command}")
    ):
        for target in sorted(edges.get(module, ())):
            cli = target.startswith("scenarios.cli.") and target not in CLI_SHARED
            # A package's own report is its business; another's is not.
            owner = target.rsplit(".", 1)[0]
            report = target.endswith(".report") and owner not in (
                module.rsplit(".", 1)[0],
                f"scenarios.{command}",
            )
            if (cli or report) and (module, target) not in REPORT_USERS:
                found.append(f"{module} -> {target}")
    return found


def test_other_commands_finds_a_command_reaching_another_s_cli() -> None:
    edges = {
        "scenarios.cli.verify": {"scenarios.cli.args", "scenarios.verify.runner"},
        "scenarios.verify.runner": {"scenarios.cli.scale", "scenarios.verify.report"},
        "scenarios.cli.scale": {"scenarios.scale.report"},
    }
    assert other_commands(edges, "verify") == [
        "scenarios.cli.scale -> scenarios.scale.report",
        "scenarios.verify.runner -> scenarios.cli.scale",
    ]


def test_release_and_verify_build_on_libraries() -> None:
    """`release` and `verify` reach no other command's cli module, and no
    other command's report module but where a release part writes that
    command's text file (issue 43)."""
    edges = graph()
    for command in ("release", "verify"):
        assert other_commands(edges, command) == [], command
