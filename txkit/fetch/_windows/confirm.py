"""The set, not the count: the confirming re-read of every window (see
:mod:`txkit.fetch._windows`)."""

from __future__ import annotations

import concurrent.futures as cf
import enum
import logging
from typing import Any

import polars as pl

from txkit.decode import decode_page, read_page
from txkit.fetch._ties import cut_groups, mark_from_columns
from txkit.fetch._windows.span import (
    FetchMode,
    Piece,
    RecordsMovingError,
    Span,
    _describe,
    union_ids,
)
from txkit.fetch.pages import digest, split_group

__all__ = ["SetConfirmation", "Verdict"]

log = logging.getLogger("txkit")

#: What the confirming read parses of a page whose bytes changed: the set's keys and the
#: timestamp that places ties.
_KEYS_SCHEMA = {
    "data": pl.Struct(
        {
            "transactions": pl.List(
                pl.Struct({"id": pl.String, "createdAt": pl.String, "updatedAt": pl.String})
            ),
            "total": pl.Int64,
        }
    )
}


class Verdict(enum.Enum):
    """What the confirming re-read of a window found."""

    #: The same records (ids with ``updatedAt``), whatever their order.
    SAME = "same"
    #: Another total, or a record not fetched before (or updated since): the set changed.
    MOVED = "moved"
    #: Only records fetched before, but fewer of them: the order moved under the pages.
    LOST = "lost"


class SetConfirmation:
    """The confirming re-read of :class:`~txkit.fetch._windows.WindowedExport` (a mixin)."""

    client: Any
    filters: dict[str, str | int]
    page_size: int
    concurrency: int
    mode: FetchMode
    stats: Any
    outer: Span
    pieces: list[Piece]
    #: The window's filters include no field that changes (the status is applied locally):
    #: its set is its ids, a record's version may change between reads, and a page that
    #: changed is decoded whole so that its records' newer versions are kept.
    versions_move: bool

    def confirm_round(self) -> bool:
        """Re-read every window once; fetch again those whose set changed.

        Returns:
            True when every window read the same as it was fetched. After False, call again:
            a change found in one window may have touched windows already re-read.
        """
        verdicts = [(p, self._same_set(p)) for p in self.pieces]
        changed = [p for p, verdict in verdicts if verdict is not Verdict.SAME]
        if not changed:
            return True
        if any(v is Verdict.LOST for _, v in verdicts) and self.mode is not FetchMode.ONE_PAGE:
            # Fewer of the same records, every tie group whole: the order moved otherwise
            # than inside tie groups, so offset pages cannot be confirmed.
            self.mode = FetchMode.ONE_PAGE
            self.stats.note("unstable order: windows of one page")
        log.warning(
            "%d window(s) of %s changed while exported; fetching them again",
            len(changed),
            _describe(self.filters, self.outer),
        )
        same = [p for p, verdict in verdicts if verdict is Verdict.SAME]
        self.pieces = same + [q for p in changed for q in self._fetch_span(p.span)]
        return False

    def unquiet(self) -> RecordsMovingError:
        """The error for records that never held still long enough to be confirmed."""
        return RecordsMovingError(
            f"the records of {_describe(self.filters, self.outer)} kept changing: no two reads "
            "of the same windows agreed",
            expected=sum(p.total for p in self.pieces),
            got=len(union_ids(self.pieces)),
            attempts=self.stats.passes,
        )

    def final_check(self) -> None:
        """The confirmed windows' unique ids against the query's total (a count when split)."""
        total = self._outer_total(self.outer, self.pieces)
        ids = union_ids(self.pieces)
        if len(ids) != total:
            raise RecordsMovingError(
                f"the windows of {_describe(self.filters, self.outer)} do not add up after "
                "confirming them",
                expected=total,
                got=len(ids),
                attempts=self.stats.passes,
            )

    def _same_set(self, piece: Piece) -> Verdict:
        """Identical page digests, or the same (id, ``updatedAt``) set in any order with cut tie
        groups read whole (docs/completeness.md, the set, not the count)."""
        slots = list(piece.slots)
        params = piece.span.params(self.filters)

        def changed_body(slot: tuple[int, int]) -> bytes | None:
            # Compared where it was read: only the bodies that changed are kept (none on a
            # quiet service), and the digests overlap the other pages' downloads.
            body, _ = self.client.get_transactions({**params, "skip": slot[0], "limit": slot[1]})
            return None if digest(body) == piece.slots[slot].digest else body

        self.stats.proof("confirm", len(slots))
        workers = max(1, min(self.concurrency, len(slots)))
        with cf.ThreadPoolExecutor(workers, thread_name_prefix="txkit-confirm") as pool:
            bodies = list(pool.map(changed_body, slots))
        changed = {slot: body for slot, body in zip(slots, bodies, strict=True) if body is not None}
        del bodies
        if not changed:
            return Verdict.SAME
        return self._same_records(piece, params, changed)

    def _same_records(
        self, piece: Piece, params: dict[str, str | int], changed: dict[tuple[int, int], bytes]
    ) -> Verdict:
        marks = {s: r.mark for s, r in piece.slots.items() if s not in changed}
        ids: set[str] = set()
        for slot, read in piece.slots.items():
            if slot not in changed:
                if read.ids is None:
                    return Verdict.MOVED  # not decoded: nothing to compare with
                ids.update(read.ids.drop_nulls().to_list())
        keys = []
        newer: list[pl.DataFrame] = []
        for slot, body in changed.items():
            if self.versions_move:
                total, frame, whole = _records_of(body)
                newer.append(whole)
            else:
                total, frame = _keys_of(body)
            if total != piece.total:
                return Verdict.MOVED
            marks[slot] = mark_from_columns(slot[0], frame["id"], frame["createdAt"])
            keys.append(frame)
        seen = pl.concat(keys)
        ids.update(seen["id"].to_list())
        for group in cut_groups(m for m in marks.values() if m is not None):
            if group.whole:
                continue
            whole = self._whole_group(params, group, piece)
            if whole is None:
                return Verdict.MOVED
            ids.update(whole["id"].to_list())
            seen = pl.concat([seen, whole], how="diagonal_relaxed")
        if self.versions_move:
            if not set(seen["id"].to_list()) <= piece.ids:
                return Verdict.MOVED  # a record entered the window
            if len(ids) == piece.total:
                # The same records; their versions as this read found them (newest wins).
                piece.frames.extend(newer)
                return Verdict.SAME
            return Verdict.LOST
        if _unknown(seen, piece.frames):
            return Verdict.MOVED
        return Verdict.SAME if len(ids) == piece.total else Verdict.LOST

    def _whole_group(self, params: dict[str, str | int], group: Any, piece: Piece) -> Any:
        """None: the total moved."""
        stride, total = piece.stride or self.page_size, piece.total
        if group.size <= stride:
            self.stats.proof("ties")
            body, _ = self.client.get_transactions(
                {**params, "skip": group.start, "limit": group.size}
            )
            got, frame = _keys_of(body)
            return frame if got == total else None
        frames = split_group(
            self.client,
            params,
            group,
            stride=stride,
            page_size=self.page_size,
            concurrency=self.concurrency,
            stats=self.stats,
        )
        return pl.concat(
            [f.select("id", "updatedAt") for f in frames], how="vertical_relaxed"
        ).with_columns(pl.col("updatedAt").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"))


def _keys_of(body: bytes) -> tuple[int, pl.DataFrame]:
    try:
        data = pl.read_json(body, schema=_KEYS_SCHEMA)["data"]
        total = int(data.struct.field("total")[0])
        frame = data.struct.field("transactions").explode().struct.unnest().drop_nulls("id")
        return total, frame
    except Exception:  # not the envelope we know: the full reader says what is wrong
        page = read_page(body)
        frame = decode_page(body).frame.select("id", "createdAt", "updatedAt")
        return page.total, frame.with_columns(
            pl.col("createdAt", "updatedAt").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        )


def _records_of(body: bytes) -> tuple[int, pl.DataFrame, pl.DataFrame]:
    total, keys = _keys_of(body)  # the text the first read's tie marks compare with
    return total, keys, decode_page(body).frame


def _unknown(seen: pl.DataFrame, frames: list[pl.DataFrame]) -> bool:
    """Whether a re-read record (id, ``updatedAt`` text) is not among those fetched."""
    fetched = (
        pl.concat([f.select("id", "updatedAt") for f in frames if f.height], how="vertical_relaxed")
        if any(f.height for f in frames)
        else pl.DataFrame(
            {"id": [], "updatedAt": []},
            schema={"id": pl.String, "updatedAt": pl.Datetime("ms", "UTC")},
        )
    )
    stamped = seen.select(
        "id",
        pl.col("updatedAt")
        .str.to_datetime("%Y-%m-%dT%H:%M:%S%.3fZ", time_unit="ms", time_zone="UTC", strict=False)
        .alias("updatedAt"),
    )
    if stamped["updatedAt"].null_count() > seen["updatedAt"].null_count():
        return True  # a timestamp written otherwise: not provably the same record
    fetched = fetched.with_columns(pl.col("updatedAt").cast(pl.Datetime("ms", "UTC")))
    return stamped.join(fetched, on=["id", "updatedAt"], how="anti", nulls_equal=True).height > 0
