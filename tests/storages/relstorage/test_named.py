"""A census of a postgres:// or mysql:// URI opens the database read-only
(docs/census.md says so; it opened them read-write): the scheme table of
storages.named says which schemes open read-only, and RelStorage's schemes
open through the suite's opener with RelStorage's read_only option."""

from __future__ import annotations

from pathlib import Path

import pytest
from persistent.mapping import PersistentMapping

from scenarios.census import runner, sources
from scenarios.load.target import open_store
from storages import registry
from tests.conftest import factory_or_skip


def test_the_scheme_table_says_which_schemes_open_read_only() -> None:
    table = registry.schemes()
    assert {"postgres", "mysql", "sqlite", "file", "zeo"} <= {
        name for name, (scheme, _) in table.items() if scheme.read_only
    }
    assert table["postgres"][0].default_port == 5432
    assert table["mysql"][0].default_port == 3306


@pytest.mark.server
@pytest.mark.parametrize("name", ["relstorage-pg", "relstorage-mysql"])
def test_census_of_a_server_uri_opens_read_only(name: str, tmp_path: Path) -> None:
    from ZODB.POSException import ReadOnlyError

    factory = factory_or_skip(name)
    with factory.running(), factory.share(tmp_path) as shared:
        store = open_store(shared.client)
        try:
            store.root()["x"] = PersistentMapping(v=1)
            store.commit()
        finally:
            store.close()
        source = sources.open_uri(shared.client)
        try:
            assert source.storage.isReadOnly()
            census = runner.take(source.storage, source.name, source.directory)
            assert census.to_json()["classes"]
            with pytest.raises(ReadOnlyError):
                source.storage.tpc_begin(object())
        finally:
            source.close()


@pytest.mark.server
def test_census_of_a_postgres_zconfig_section_opens_read_only(tmp_path: Path) -> None:
    """--storage-config and zconfig:// (issue 21): the <relstorage> section
    is opened read-only, as a postgres:// URI is."""
    from urllib.parse import unquote, urlsplit

    from ZODB.POSException import ReadOnlyError

    factory = factory_or_skip("relstorage-pg")
    with factory.running(), factory.share(tmp_path) as shared:
        store = open_store(shared.client)
        try:
            store.root()["x"] = PersistentMapping(v=1)
            store.commit()
        finally:
            store.close()
        url = urlsplit(shared.client)
        dsn = {
            "host": url.hostname,
            "port": url.port,
            "user": unquote(url.username or ""),
            "dbname": unquote(url.path.lstrip("/")),
        }
        dsn_text = " ".join(f"{k}={v}" for k, v in dsn.items() if v)
        section = (
            "<relstorage>\n  keep-history false\n"
            f"  <postgresql>\n    dsn {dsn_text}\n  </postgresql>\n</relstorage>\n"
        )
        conf = tmp_path / "db.conf"
        conf.write_text(f"%import relstorage\n<zodb>\n{section}</zodb>\n")
        bare = tmp_path / "bare.conf"
        bare.write_text(f"%import relstorage\n{section}")
        for source in (
            sources.open_config(conf),
            sources.open_uri(f"zconfig://{bare}"),
        ):
            try:
                assert source.storage.isReadOnly()
                census = runner.take(source.storage, source.name, source.directory)
                assert census.to_json()["classes"]
                with pytest.raises(ReadOnlyError):
                    source.storage.tpc_begin(object())
            finally:
                source.close()


@pytest.mark.parametrize("mode", ["free", "preserving"])
def test_a_sqlite_database_is_opened_in_its_own_history_mode_or_refused(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """census of sqlite:// (documented read-only) on a history-free
    database opened it history-preserving, which added that mode's tables
    to main.sqlite3 before failing (issue 28).  Without keep_history the
    database's own mode is used; the other mode is refused, one line,
    nothing opened; an empty data_dir is refused read-only (RelStorage
    would create a database there)."""
    from tests.storages.test_composites import snapshot
    from tests.support.cli_helpers import assert_bad_input, run_cli

    name = "relstorage-sqlite" + ("-hp" if mode == "preserving" else "")
    factory_or_skip(name)
    data = tmp_path / "data"
    made = run_cli(capsys, "populate", "--storage", name, "--path", str(data), "-q")
    assert made.status == 0, made
    files = data / "relstorage"
    before = snapshot(files)
    other = "true" if mode == "free" else "false"
    mine = "false" if mode == "free" else "true"
    for uri in (
        f"sqlite://?data_dir={files}",
        f"sqlite://?data_dir={files}&keep_history={mine}",
    ):
        census = run_cli(capsys, "census", uri)
        assert census.status == 0, census
        assert "vfab.model" in census.out
    wrong = run_cli(
        capsys, "census", f"sqlite://?data_dir={files}&keep_history={other}"
    )
    assert_bad_input(wrong, f"holds a history-{mode} RelStorage database")
    assert snapshot(files) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_bad_input(
        run_cli(capsys, "census", f"sqlite://?data_dir={empty}"),
        "no RelStorage database in",
    )
    assert list(empty.iterdir()) == []
