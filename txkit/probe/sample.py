"""What a sample of records shows: sort order, tie groups, totals, undocumented fields.

Pure functions over parsed records (no requests), used by :mod:`txkit.probe.run`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Final

from txkit.fetch.profile import Finding, unknown
from txkit.probe.dates import parse_ms, record_id, timestamp_fields
from txkit.schema import COLUMNS

__all__ = ["beyond_document", "order", "tie_groups", "totals"]


def order(records: Sequence[dict[str, Any]]) -> Finding:
    """The ``order`` finding: the timestamp the consecutive ``records`` are sorted by, and
    which way (``createdAt desc``), with how their ties were ordered."""
    fields = timestamp_fields(records)
    if len(records) < 2:
        return unknown(f"only {len(records)} record(s) listed")
    for name in fields:
        values = [parse_ms(r.get(name)) for r in records]
        if any(v is None for v in values) or len(set(values)) < 2:
            continue
        pairs = list(itertools.pairwise(values))
        descending = all(a >= b for a, b in pairs)  # type: ignore[operator]
        ascending = all(a <= b for a, b in pairs)  # type: ignore[operator]
        for direction, ok in (("desc", descending), ("asc", ascending)):
            if ok:
                ties = tie_groups(records, name)
                by_id = sum(ids == sorted(ids) for ids in ties.values())
                tie_note = f"; {by_id} of {len(ties)} tie groups by id ascending" if ties else ""
                return Finding(
                    f"{name} {direction}",
                    "measured",
                    f"{len(records):,} consecutive records{tie_note}",
                )
    return unknown(
        f"the {len(records):,} newest records are not sorted by any timestamp "
        f"({', '.join(fields) or 'none found'})"
    )


def tie_groups(records: Sequence[dict[str, Any]], name: str = "createdAt") -> dict[str, list[str]]:
    """Ids of the records sharing a value of ``name``, in listing order, per value (2 or more)."""
    groups: dict[str, list[str]] = {}
    for record in records:
        groups.setdefault(str(record.get(name)), []).append(record_id(record))
    return {k: v for k, v in groups.items() if len(v) > 1}


def totals(ok: list[str], bad: list[str]) -> Finding:
    """The ``total_counts_all_matching`` finding from the windows whose full listing matched
    their total (``ok``) and those that did not (``bad``), each described in a few words."""
    if bad:
        return Finding(False, "measured", "; ".join(bad))
    if ok:
        return Finding(
            True,
            "measured",
            f"total equalled the full listing of {len(ok)} window(s): " + ", ".join(ok),
        )
    return unknown("no filtered query was listed in full")


_DOCUMENTED: Final = frozenset(COLUMNS)
_DOCUMENTED_PARENTS: Final = frozenset(
    ".".join(name.split(".")[:k]) for name in COLUMNS for k in range(1, name.count(".") + 1)
)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def beyond_document(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each undocumented field (flattened with ``.``): JSON types and share of records."""
    seen: dict[str, tuple[set[str], int]] = {}

    def walk(obj: dict[str, Any], prefix: str, found: dict[str, str]) -> None:
        for key, value in obj.items():
            path = prefix + key
            if path in _DOCUMENTED:
                continue
            if isinstance(value, dict) and value:
                walk(value, path + ".", found)
            elif path not in _DOCUMENTED_PARENTS:
                found[path] = _json_type(value)

    for record in records:
        found: dict[str, str] = {}
        walk(record, "", found)
        for path, kind in found.items():
            types, count = seen.get(path, (set(), 0))
            types.add(kind)
            seen[path] = (types, count + 1)
    return {
        path: {
            "types": sorted(types),
            "share": round(count / len(records), 4),
            "records": count,
        }
        for path, (types, count) in sorted(seen.items())
    }
