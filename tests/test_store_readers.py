"""Other engines read the store as txkit writes it: DuckDB (its delta extension from PyPI,
loaded by file path: nothing downloaded), Daft and deltalake/pyarrow, on a folder and on S3,
agree with :func:`txkit.scan_store` on rows and sums per month and currency; and the table
keeps to features they all read."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from txkit import Client
from txkit.store import read_state, scan_store, sync
from txkit.store._read import reader_problems
from txkit.store._retention import RetentionPolicy, vacuum_store
from txkit.store._table import log_versions, open_table

pytestmark = pytest.mark.slow

FIRST = date(2026, 9, 25)
SYNCS = 12  # past the checkpoint of version 10, with months refreshed (removes in the log)

Row = tuple[str, str, int, Decimal, int, Decimal]


def build(client: Client, store: str | Path) -> None:
    """Daily look-back syncs across a month end, then the retention policy with nothing kept
    but the newest: the log starts at a checkpoint, as a store's does after a year."""
    for i in range(SYNCS):
        day = FIRST + timedelta(days=i)
        sync(client, start="2026-08-01", end=day, store=store, today=day, retention=False,
             progress=False)  # fmt: skip
    vacuum_store(store, policy=RetentionPolicy(keep_days=0, reports=None),
                 grace=timedelta(0))  # fmt: skip
    assert log_versions(store) == [SYNCS - 1]


def expected(store: str | Path) -> list[Row]:
    """Rows, ``toAmount`` sum, records with ``amount`` and its sum, per month and currency."""
    return normalise(
        scan_store(store)
        .group_by("month", "toCurrency")
        .agg(
            pl.len().alias("rows"),
            pl.col("toAmount").sum().alias("to_amount"),
            pl.col("amount").count().alias("with_amount"),
            pl.col("amount").sum().alias("amount"),
        )
        .collect()
        .rows()
    )


def normalise(rows: list[tuple[Any, ...]]) -> list[Row]:
    """Sorted, counts as int, sums as Decimal (no sum where nothing was summed: 0)."""
    return sorted(
        (str(m), str(c), int(n), Decimal(t or 0), int(k), Decimal(a or 0))
        for m, c, n, t, k, a in rows
    )


SQL = (
    "SELECT month, toCurrency, count(*), sum(toAmount), count(amount), sum(amount) "
    "FROM delta_scan('{uri}') GROUP BY ALL"
)


def duckdb_rows(uri: str, aws_env: dict[str, str] | None = None) -> list[Row]:
    import duckdb
    import duckdb_extension_delta
    import duckdb_extension_httpfs

    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    for package, name in ((duckdb_extension_delta, "delta"), (duckdb_extension_httpfs, "httpfs")):
        path = next(Path(package.__file__).parent.glob(f"extensions/*/{name}.duckdb_extension"))
        con.execute(f"LOAD '{path}'")
    if aws_env is not None:
        endpoint = aws_env["AWS_ENDPOINT_URL"].removeprefix("http://")
        con.execute(
            f"CREATE SECRET (TYPE s3, KEY_ID '{aws_env['AWS_ACCESS_KEY_ID']}', SECRET "
            f"'{aws_env['AWS_SECRET_ACCESS_KEY']}', REGION '{aws_env['AWS_REGION']}', ENDPOINT "
            f"'{endpoint}', URL_STYLE 'path', USE_SSL false)"
        )
    # The timestamps come back with their time zone.
    kind = con.sql(f"SELECT typeof(createdAt) FROM delta_scan('{uri}') LIMIT 1").fetchone()
    assert kind == ("TIMESTAMP WITH TIME ZONE",)
    return normalise(con.sql(SQL.format(uri=uri)).fetchall())


def daft_rows(uri: str, aws_env: dict[str, str] | None = None) -> list[Row]:
    import daft
    from daft.io import IOConfig, S3Config

    io = None
    if aws_env is not None:
        io = IOConfig(
            s3=S3Config(
                endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                key_id=aws_env["AWS_ACCESS_KEY_ID"],
                access_key=aws_env["AWS_SECRET_ACCESS_KEY"],
                region_name=aws_env["AWS_REGION"],
                use_ssl=False,
            )
        )
    df = daft.read_deltalake(uri, io_config=io)
    out = (
        df.groupby("month", "toCurrency")
        .agg(
            daft.col("id").count().alias("rows"),
            daft.col("toAmount").sum().alias("to_amount"),
            daft.col("amount").count().alias("with_amount"),
            daft.col("amount").sum().alias("amount"),
        )
        .to_pydict()
    )
    names = ["month", "toCurrency", "rows", "to_amount", "with_amount", "amount"]
    return normalise(list(zip(*(out[n] for n in names), strict=True)))


def pyarrow_rows(uri: str, aws_env: dict[str, str] | None = None) -> list[Row]:
    from deltalake import DeltaTable

    options = None
    if aws_env is not None:
        options = {"AWS_ENDPOINT_URL": aws_env["AWS_ENDPOINT_URL"], "AWS_ALLOW_HTTP": "true"}
    table = DeltaTable(uri, storage_options=options).to_pyarrow_table(
        columns=["month", "toCurrency", "toAmount", "amount"]
    )
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return normalise(
        frame.group_by("month", "toCurrency")
        .agg(
            pl.len(),
            pl.col("toAmount").sum(),
            pl.col("amount").count().alias("n"),
            pl.col("amount").sum().alias("a"),
        )
        .rows()
    )


READERS = {"duckdb": duckdb_rows, "daft": daft_rows, "deltalake-pyarrow": pyarrow_rows}


@pytest.fixture(scope="module")
def folder_store(tmp_path_factory: pytest.TempPathFactory, sandboxes) -> Iterator[Path]:
    store = tmp_path_factory.mktemp("readers") / "store"
    box = sandboxes.get(seed=21, records=3_000)
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        build(client, store)
    yield store


@pytest.mark.parametrize("reader", sorted(READERS))
def test_readers_agree_with_scan_store_on_a_folder(folder_store: Path, reader: str) -> None:
    want = expected(folder_store)
    assert {r[0] for r in want} == {"2026-08", "2026-09", "2026-10"}
    assert any(r[4] for r in want) and any(r[4] < r[2] for r in want)  # amount: on some only
    assert READERS[reader](str(folder_store)) == want


def test_the_table_keeps_to_features_every_reader_reads(folder_store: Path, tmp_path) -> None:
    assert reader_problems(open_table(folder_store)) == []
    # The check fails when a feature they cannot read is enabled (deletion vectors here).
    from deltalake import DeltaTable

    copy = shutil.copytree(folder_store, tmp_path / "copy")
    DeltaTable(str(copy)).alter.set_table_properties({"delta.enableDeletionVectors": "true"})
    problems = reader_problems(open_table(copy))
    assert any("deletionVectors" in p for p in problems), problems


@pytest.mark.s3
def test_readers_agree_with_scan_store_on_s3(aws: dict[str, str], sandboxes) -> None:
    store = "s3://txkit/readers"
    box = sandboxes.get(seed=21, records=3_000)
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        build(client, store)
    assert read_state(store).version == SYNCS - 1
    assert reader_problems(open_table(store)) == []
    want = expected(store)
    for name, reader in sorted(READERS.items()):
        assert reader(store, aws) == want, name
