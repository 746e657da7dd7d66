"""SQLite connections commit without an fsync each (synchronous=NORMAL in WAL mode) unless the
database URL says otherwise; PostgreSQL URLs are left alone."""

from __future__ import annotations

from pathlib import Path

from tortoise import Tortoise

from gpupaas import db
from gpupaas.settings import Settings


def test_sqlite_urls_get_synchronous_normal_unless_they_set_it() -> None:
    assert db.connection_url("sqlite:///tmp/a.db") == "sqlite:///tmp/a.db?synchronous=NORMAL"
    assert db.connection_url("sqlite:///tmp/a.db?foo=1") == "sqlite:///tmp/a.db?foo=1&synchronous=NORMAL"
    assert db.connection_url("sqlite:///tmp/a.db?synchronous=FULL") == "sqlite:///tmp/a.db?synchronous=FULL"
    assert db.connection_url("postgres://u@h:5432/d") == "postgres://u@h:5432/d"


async def _pragmas(url: str) -> tuple[int, str]:
    await db.connect(url)
    try:
        conn = Tortoise.get_connection("default")
        [sync] = await conn.execute_query_dict("PRAGMA synchronous")
        [journal] = await conn.execute_query_dict("PRAGMA journal_mode")
        return int(sync["synchronous"]), str(journal["journal_mode"])
    finally:
        await db.close()


async def test_the_connection_really_uses_them(tmp_path: Path) -> None:
    assert await _pragmas(f"sqlite://{tmp_path / 'a.db'}") == (1, "wal")  # 1: NORMAL
    assert await _pragmas(f"sqlite://{tmp_path / 'b.db'}?synchronous=FULL") == (2, "wal")


def test_a_url_with_pragmas_keeps_its_secret_key_beside_the_file(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'g.db'}?synchronous=FULL"
    first = Settings.from_env({"GPUPAAS_DATABASE_URL": url})
    assert (tmp_path / "g.db.secret").read_text().strip() == first.secret_key
    assert Settings.from_env({"GPUPAAS_DATABASE_URL": url}).secret_key == first.secret_key
