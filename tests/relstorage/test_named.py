"""A census of a postgres:// or mysql:// URI opens the database read-only
(docs/census.md says so; it opened them read-write): the scheme table of
storages.named says which schemes open read-only, and RelStorage's schemes
open through the suite's opener with RelStorage's read_only option."""

from __future__ import annotations

from pathlib import Path

import pytest
from persistent.mapping import PersistentMapping

from scenarios.census import sources, walk
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
            census = walk.take(source.storage, source.name, source.directory)
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
                census = walk.take(source.storage, source.name, source.directory)
                assert census.to_json()["classes"]
                with pytest.raises(ReadOnlyError):
                    source.storage.tpc_begin(object())
            finally:
                source.close()
