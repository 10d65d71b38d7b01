"""Where a store lives: :class:`StoreLocation`, a folder or an ``s3://`` URI, checked once,
with what follows from it (remote or not, the URI delta-rs opens, its storage options, the name
pages give it) and its files through one declared protocol (:class:`ObjectStore`: a folder's or
a bucket's); the data files' digests (:func:`digest_of`). The lock of local stores is
:mod:`._lock`'s, the one-line messages for unreachable, damaged, full or read-only stores
:mod:`._problems`', the Delta table and its versions :mod:`._table`'s.

A store URI is checked here (:func:`check_store`) before delta-rs sees it: delta-rs answers a
malformed one (``s3://``, ``s3:///x``) only after the AWS SDK has looked for a region and
credentials, which includes asking the network for EC2 instance metadata, and an unknown
scheme (``foo://x``) comes back as "no table yet", which a sync would then try to create.
"""

from __future__ import annotations

import contextlib
import operator
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from txkit import config

__all__ = [
    "ACCEPTED_STORES",
    "DIGEST_ALGORITHM",
    "LOCK_NAME",
    "ObjectStore",
    "StoreLike",
    "StoreLocation",
    "StoredObject",
    "check_store",
    "check_version",
    "digest_of",
    "is_remote",
    "objects",
    "storage_options",
    "store_location",
    "store_name",
    "table_uri",
]


LOCK_NAME = "_txkit.lock"

#: A store as the functions of :mod:`txkit.store` take it: a folder, a URI, or None for the
#: default store (:func:`txkit.config.default_store`).
StoreLike = str | os.PathLike[str] | None


def store_name(store: StoreLike) -> str:
    """The store as pages and "as run" lines name it: a URI as given; a folder by its path
    inside the working folder, else by its last parts (``data/store/sandbox``), never the
    analyst's absolute local path (pages are forwarded and printed).

    Examples: ``/home/ana/txkit/data/store/sandbox`` -> ``data/store/sandbox``;
    ``/mnt/share/ledger`` -> ``ledger``.
    """
    where = store_location(store)
    if is_remote(where):
        return str(where)
    path = Path(where).absolute()
    with contextlib.suppress(ValueError):
        inside = path.relative_to(Path.cwd())
        if inside.parts:
            return inside.as_posix()
    parts = path.parts
    if len(parts) >= 3 and parts[-3:-1] == ("data", "store"):
        return "/".join(parts[-3:])
    return path.name or str(path)


def store_location(store: StoreLike) -> str | os.PathLike[str]:
    """``store`` itself, or the one default store when it is None or empty:
    ``data/store/<source>`` (:func:`txkit.config.default_store`), as the CLI, the notebooks
    and the report use.

    Raises:
        ConfigError: no store given, and ``TXKIT_BASE_URL`` is set without a key.
    """
    return config.default_store() if store is None or store == "" else store


#: How txkit proves a data file's bytes: recorded per file in the commit that adds it.
#: xxHash's XXH3 (128 bits) detects any change of a file (it is not a defence against someone
#: who can also rewrite the log) at memory speed, several times faster than SHA-256
#: (docs/benchmarks.md).
DIGEST_ALGORITHM = "xxh3_128"


def digest_of(data: bytes | memoryview) -> str:
    """The digest txkit records for a data file's bytes (``xxh3_128:<32 hex digits>``)."""
    import xxhash

    return f"{DIGEST_ALGORITHM}:{xxhash.xxh3_128_hexdigest(data)}"


#: The object-storage URIs a store may be given as (besides a folder), for messages.
ACCEPTED_STORES = (
    "a folder, s3://bucket/prefix, gs://bucket/prefix, az://container/prefix or "
    "abfss://container@account.dfs.core.windows.net/prefix"
)
# Bucket (S3, GCS) or container (Azure, optionally @account host) names: letters, digits, '.',
# '-', '_' (legacy S3 buckets may hold upper case and '_'; delta-rs's path-style requests reach
# them). Anything else (a space, ':', '@' in a bucket, credentials) is a typo, refused here.
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}"
_BUCKETS = {
    "s3": re.compile(_NAME),
    "gs": re.compile(_NAME),
    "az": re.compile(_NAME),
    "abfs": re.compile(rf"{_NAME}(?:@[A-Za-z0-9][A-Za-z0-9.-]*)?"),
    "abfss": re.compile(rf"{_NAME}(?:@[A-Za-z0-9][A-Za-z0-9.-]*)?"),
}
# Schemes delta-rs or a user might write that txkit does not take, refused with the accepted forms
# rather than read as a folder name ("s3:bucket" would otherwise be a local folder "s3:bucket").
_OTHER_SCHEMES = {"s3a", "gcs", "azure", "adl", "file", "http", "https", "memory", "hdfs"}
_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)", re.S)
_SCHEME_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?!//)")
_BAD_CHAR = re.compile(r"[\x00-\x20\x7f-\x9f\u00a0\u2000-\u200b\u2028\u2029\u3000\ufeff]")


def _describe_char(char: str) -> str:
    names = {" ": "a space", "\n": "a line break", "\r": "a carriage return", "\t": "a tab"}
    return names.get(char, f"the character U+{ord(char):04X}")


def check_store(store: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """Refuse a malformed store before anything opens it; returns ``store`` unchanged.

    A URI must be ``s3://``, ``gs://``, ``az://``, ``abfs://`` or ``abfss://`` (lower case)
    with a bucket or container (letters, digits, ``.``, ``-``, ``_``), a path without empty,
    ``.`` or ``..`` parts, and no whitespace (a pasted space or line break), control
    character, query or fragment. A folder may not start or end with
    whitespace or hold a control character (a pasted line break would make a folder of it).

    Raises:
        ValueError: one line naming what is wrong and the accepted forms.
    """
    text = os.fspath(store)
    if not isinstance(text, str):
        raise ValueError(f"--store must be text, got {text!r}")

    def refuse(why: str) -> ValueError:
        return ValueError(f"--store {text!r} {why}; accepted: {ACCEPTED_STORES}")

    match = _URI.fullmatch(text)
    if match is None:
        prefix = _SCHEME_PREFIX.match(text)
        if prefix and prefix.group(1).lower() in {*_BUCKETS, *_OTHER_SCHEMES}:
            raise refuse(f"looks like a URI ({prefix.group(1)}:) without '//'")
        bad = re.search(r"[\x00-\x1f\x7f]", text)
        if bad:
            raise refuse(f"holds {_describe_char(bad.group(0))}")
        if text != text.strip():
            raise refuse("starts or ends with whitespace")
        return store
    scheme, rest = match.group(1), match.group(2)
    if scheme not in _BUCKETS:
        if scheme.lower() in _BUCKETS:
            raise refuse(f"has an upper-case scheme: write {scheme.lower()}://")
        if scheme.lower() == "file":
            raise refuse("is a file:// URI: give the folder's path instead")
        raise refuse(f"has an unknown scheme {scheme!r}")
    bad = _BAD_CHAR.search(rest)
    if bad:
        raise refuse(f"holds {_describe_char(bad.group(0))}")
    if "?" in rest or "#" in rest:
        raise refuse("holds a query or fragment ('?', '#')")
    bucket, _, path = rest.partition("/")
    what = "container" if scheme.startswith(("az", "abfs")) else "bucket"
    if not bucket:
        raise refuse(f"names no {what}")
    if not _BUCKETS[scheme].fullmatch(bucket):
        raise refuse(f"has an invalid {what} name {bucket!r} (letters, digits, '.', '-', '_')")
    parts = path.rstrip("/").split("/") if path.rstrip("/") else []
    if any(part in ("", ".", "..") for part in parts):
        raise refuse("has an empty, '.' or '..' part in its path")
    return store


def check_version(version: object) -> int | None:
    """A table version argument as an int, or None; refuses what no table can have.

    Raises:
        ValueError: not a whole number (a bool, a float, text) or below 0.
    """
    if version is None:
        return None
    try:
        if isinstance(version, bool):
            raise TypeError
        number = operator.index(version)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(f"version must be a whole number, 0 or more, got {version!r}") from None
    if number < 0:
        raise ValueError(f"version must be a whole number, 0 or more, got {number}")
    return number


def is_remote(store: str | os.PathLike[str]) -> bool:
    """True for an object-storage URI (``s3://...``), False for a folder."""
    return StoreLocation(store).is_remote


def table_uri(store: str | os.PathLike[str]) -> str:
    """The URI delta-rs opens: the URI as given, or the folder's absolute path.

    Raises:
        ValueError: a malformed store (see :func:`check_store`).
    """
    return StoreLocation.of(store).uri


def storage_options(store: str | os.PathLike[str]) -> dict[str, str] | None:
    """delta-rs storage options for ``store``: None for a folder; for ``s3://``, the standard
    AWS variables are read by delta-rs itself, plus plain-http endpoints allowed when
    ``AWS_ENDPOINT_URL`` is ``http://`` (a local S3 such as MinIO or moto).

    Raises:
        ValueError: a malformed store (see :func:`check_store`).
    """
    check_store(store)
    if not str(store).startswith("s3://"):
        return None
    options: dict[str, str] = {}
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        # delta-rs reads them itself, and panics (a Rust backtrace on the terminal) on an empty
        # or relative one.
        value = os.environ.get(name)
        if value is not None and not re.fullmatch(r"https?://[^\s/?#]+(/\S*)?", value):
            raise ValueError(
                f"{name} must be the S3 API's address, such as http://localhost:9000 (MinIO) "
                f"or https://s3.eu-west-1.amazonaws.com, got {value!r}: set it so, or unset it"
            )
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
    # S3 has no atomic rename: commits rely on conditional writes (If-None-Match).
    options.setdefault("conditional_put", "etag")
    return options


@dataclass(frozen=True, order=True)
class StoredObject:
    """A file of a store: its path relative to the store, size in bytes, last modification."""

    rel: str
    size: int
    modified: datetime


class ObjectStore(Protocol):
    """A store's files by path relative to the store: a folder's (:class:`_Folder`) or a
    bucket's (:class:`_Bucket`)."""

    def get(self, rel: str) -> bytes: ...

    def put(self, rel: str, data: bytes) -> None: ...

    def delete(self, rel: str) -> None: ...

    def list(self, prefix: str = "") -> list[StoredObject]:
        """Every file under ``prefix`` (relative paths, sizes, modification times)."""
        ...


class _Folder(ObjectStore):
    """A local store's files by path relative to the store."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def put(self, rel: str, data: bytes) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # on disk before the commit that references it

    def delete(self, rel: str) -> None:
        with contextlib.suppress(OSError):
            (self.root / rel).unlink()

    def list(self, prefix: str = "") -> list[StoredObject]:
        """Every file under ``prefix`` (relative paths, sizes, modification times)."""
        base = self.root / prefix if prefix else self.root
        if not base.is_dir():
            return []
        out = []
        for path in base.rglob("*"):
            with contextlib.suppress(OSError):
                if path.is_file():
                    info = path.stat()
                    modified = datetime.fromtimestamp(info.st_mtime, UTC)
                    rel = path.relative_to(self.root).as_posix()
                    out.append(StoredObject(rel, info.st_size, modified))
        return sorted(out)


class _Bucket(ObjectStore):
    """An object store's objects by key relative to the store's prefix (obstore: the same
    ``object_store`` crate and AWS/Google/Azure variables as delta-rs)."""

    def __init__(self, store: str) -> None:
        from obstore.store import from_url

        url = table_uri(store)
        config: dict[str, str] = {}
        client: dict[str, Any] = {}
        options = storage_options(store) or {}
        if "AWS_ENDPOINT_URL" in options:
            config["aws_endpoint"] = options["AWS_ENDPOINT_URL"]
        if options.get("AWS_ALLOW_HTTP") == "true":
            client["allow_http"] = True
        self._store = from_url(url, config=config or None, client_options=client or None)

    def get(self, rel: str) -> bytes:
        import obstore

        return bytes(obstore.get(self._store, rel).bytes())

    def put(self, rel: str, data: bytes) -> None:
        import obstore

        obstore.put(self._store, rel, data)

    def delete(self, rel: str) -> None:
        import obstore

        with contextlib.suppress(Exception):
            obstore.delete(self._store, rel)

    def list(self, prefix: str = "") -> list[StoredObject]:
        """Every object under ``prefix`` (keys relative to the store, sizes, times)."""
        import obstore

        out = []
        for batch in obstore.list(self._store, prefix=prefix or None):
            for meta in batch:
                out.append(StoredObject(str(meta["path"]), int(meta["size"]),
                                        meta["last_modified"]))  # fmt: skip
        return sorted(out)


def objects(store: str | os.PathLike[str]) -> ObjectStore:
    """The store's files (``get``/``put``/``delete``/``list`` by path relative to the store)."""
    return StoreLocation(store).objects()


@dataclass(frozen=True)
class StoreLocation:
    """A store's place: a folder or an object-storage URI (:data:`ACCEPTED_STORES`)."""

    where: str | os.PathLike[str]

    @classmethod
    def of(cls, store: StoreLike) -> StoreLocation:
        """``store`` (None: the default store), checked (:func:`check_store`).

        Raises:
            ValueError: a malformed store (names it and what is accepted).
        """
        return cls(check_store(store_location(store)))

    @property
    def is_remote(self) -> bool:
        return _URI.match(str(self.where)) is not None

    @property
    def uri(self) -> str:
        """What delta-rs opens: the URI as given, or the folder's absolute path."""
        if self.is_remote:
            return str(self.where).rstrip("/")
        return str(Path(self.where).absolute())

    @property
    def name(self) -> str:
        return store_name(self.where)

    def objects(self) -> ObjectStore:
        return _Bucket(str(self.where)) if self.is_remote else _Folder(Path(self.where))
