"""The wire schema: the shape polars' JSON reader reads a page as, derived from txkit.schema.

Each :class:`~txkit.schema.Field` says where it lives in a record (its path) and what polars
reads it as (:attr:`~txkit.schema.Field.wire_dtype`); this module nests them into the record
struct, and lists the flattened leaves the fast path works on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

import polars as pl

from txkit.schema import FIELDS

# float64 represents every decimal of at most 15 significant digits exactly enough to recover
# it; with two decimals that is any magnitude below 1e13.
MAX_EXACT_MONEY: Final = 1e13
MAX_EXACT_INT: Final = float(2**53)
ISO_FORMAT: Final = "%Y-%m-%dT%H:%M:%S%.3fZ"
#: Epoch milliseconds of 0001-01-01 and of 9999-12-31 23:59:59.999 (the range both paths accept).
MIN_EPOCH_MS: Final = -62_135_596_800_000
MAX_EPOCH_MS: Final = 253_402_300_799_999

#: Pages verified and converted together: polars works faster on larger frames, and the raw
#: bytes are released after each batch, which bounds memory.
BATCH_PAGES: Final = 32

#: Prefix of helper columns that never reach the caller.
AUX: Final = "__"


def _nest() -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for field in FIELDS:
        node = tree
        *parents, leaf = field.path
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = field.wire_dtype
    return tree


def _to_struct(tree: dict[str, Any]) -> pl.Struct:
    return pl.Struct({k: _to_struct(v) if isinstance(v, dict) else v for k, v in tree.items()})


#: One record as polars reads it.
RECORD: Final = _to_struct(_nest())


def _leaves(dtype: pl.Struct, prefix: str = "") -> Iterable[tuple[str, list[str], pl.DataType]]:
    for field in dtype.fields:
        path = f"{prefix}{field.name}"
        if isinstance(field.dtype, pl.Struct):
            yield from ((p, [field.name, *f], d) for p, f, d in _leaves(field.dtype, f"{path}."))
        else:
            yield path, [field.name], field.dtype


#: (flattened name, path parts, wire type) of every leaf of :data:`RECORD`.
WIRE_LEAVES: Final = list(_leaves(RECORD))
LEAF_NAMES: Final = [n for n, _, _ in WIRE_LEAVES]
#: Objects that hold leaves (``meta``, ``meta.customerActivity`` ...).
PARENTS: Final = sorted(
    {".".join(n.split(".")[:i]) for n, _, _ in WIRE_LEAVES for i in range(1, n.count(".") + 1)}
)
#: Leaves read as text: each non-null one is a string value in the page's bytes.
STRING_COLS: Final = [n for n, _, d in WIRE_LEAVES if isinstance(d, pl.String)]
#: Lists of strings: each element is a string value in the page's bytes.
LIST_COLS: Final = [
    n for n, _, d in WIRE_LEAVES if isinstance(d, pl.List) and isinstance(d.inner, pl.String)
]

#: Every list leaf (of strings or of objects): each non-null one is a ``[`` in the bytes.
ALL_LIST_COLS: Final = [n for n, _, d in WIRE_LEAVES if isinstance(d, pl.List)]
#: Boolean leaves: each non-null one is a ``true`` or ``false`` in the bytes.
BOOL_COLS: Final = [n for n, _, d in WIRE_LEAVES if isinstance(d, pl.Boolean)]


def field_expr(parts: Sequence[str], base: pl.Expr) -> pl.Expr:
    """``base.struct.field(parts[0]).struct.field(parts[1]) ...``."""
    expr = base
    for part in parts:
        expr = expr.struct.field(part)
    return expr
