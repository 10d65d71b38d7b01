"""The local (or object-storage) copy of the export: one Delta Lake table, synced incrementally.

Layout: the store *is* a Delta table (``deltalake``/delta-rs), partitioned by the month of
``createdAt``::

    STORE/_delta_log/00000000000000000007.json     one commit per sync
    STORE/month=2026-10/part-...parquet             data files
    STORE/_txkit.lock                               while a sync runs: who holds it (local stores)

``STORE`` is a folder (default :func:`default_store`: ``data/store/sandbox`` without a key,
``data/store/<host>`` with one; the CLI, the notebooks and the report use the same) or a
URI such as ``s3://bucket/prefix`` (credentials and endpoint from the standard AWS variables).
Readers: :func:`scan_store` (``version=`` reads an earlier version), or any Delta reader:
``polars.scan_delta``, DuckDB's ``delta_scan``, Spark.

Every sync is one commit: the months it touched are rewritten (stored records merged with the
re-fetched ones by ``id``: newest ``updatedAt`` wins, then the later fetch) and, in the same
commit's metadata, the store's source and each month's coverage (:mod:`txkit.store._coverage`: the
windows fetched, when, with which queries and totals). A sync that is killed or fails before
its commit leaves the table at its previous version (its unreferenced files are ignored by
every reader). Two syncs on one local store exclude each other with a lock file; on object
storage, the second commit fails Delta's conflict check and says so.

Writing never changes a value (:mod:`txkit.store._write` widens a narrower column, proven by
casting back). Each commit also records every data file's digest; every read here checks it
before parsing the same bytes (:mod:`txkit.store._read`), and :func:`verify_store` checks a whole
version. The store belongs to one account of one service: a new key of the same account is
recognised by the records it returns (:mod:`txkit.store._sync`).

The store keeps raw data, customer e-mails and account numbers included: it is the analyst's
own copy (mask it for display with :func:`txkit.mask_pii`). It never holds the secret key, only
a salted hash of it that tells which key wrote it.

After its commit a sync compacts a month held in several files and applies the retention
policy (:mod:`txkit.store._retention`: the newest version, the last ``TXKIT_STORE_KEEP_DAYS``
days of versions, every version a report under ``reports/`` cites; the rest is removed);
``txkit store vacuum`` applies it on demand. The log gets a checkpoint every 10 commits.

Modules (private; everything public is exported here): ``_sync`` (the sync and its plan),
``_read`` (verified reads), ``_state`` (the commit metadata: source, coverage, digests),
``_verify`` (``txkit store verify``), ``_write`` (the one-commit write), ``_coverage`` (per
month coverage and planning), ``_location`` (folders and URIs, data files' bytes and digests,
the lock), ``_retention`` (the retention policy, ``txkit store vacuum``), ``_lease`` (the
versions running reports hold against it) and ``_compact`` (compaction; checkpoints).
"""

from txkit.config import default_store
from txkit.errors import StoreDamagedError, StoreError, StoreLockedError, StoreVersionError
from txkit.store._compact import compact_months
from txkit.store._lease import Lease
from txkit.store._location import (
    DIGEST_ALGORITHM,
    check_store,
    check_version,
    digest_of,
    is_remote,
    objects,
    storage_options,
    store_name,
    table_uri,
)
from txkit.store._read import read_months, reader_problems, scan_store
from txkit.store._retention import (
    RetentionPolicy,
    VacuumResult,
    format_vacuum,
    vacuum_store,
)
from txkit.store._state import (
    MonthManifest,
    SourceIdentity,
    StoreState,
    format_status,
    read_manifests,
    read_state,
)
from txkit.store._sync import SyncResult, sync, sync_needed
from txkit.store._table import open_table, refuse_foreign_folder, table_files
from txkit.store._verify import REGISTER, FileCheck, format_verify, verify_store

__all__ = [
    "DIGEST_ALGORITHM",
    "REGISTER",
    "FileCheck",
    "Lease",
    "MonthManifest",
    "RetentionPolicy",
    "SourceIdentity",
    "StoreDamagedError",
    "StoreError",
    "StoreLockedError",
    "StoreState",
    "StoreVersionError",
    "SyncResult",
    "VacuumResult",
    "check_store",
    "check_version",
    "compact_months",
    "default_store",
    "digest_of",
    "format_status",
    "format_vacuum",
    "format_verify",
    "is_remote",
    "objects",
    "open_table",
    "read_manifests",
    "read_months",
    "read_state",
    "reader_problems",
    "refuse_foreign_folder",
    "scan_store",
    "storage_options",
    "store_name",
    "sync",
    "sync_needed",
    "table_files",
    "table_uri",
    "vacuum_store",
    "verify_store",
]
