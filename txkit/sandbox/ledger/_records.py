"""The generated ledger as an object: :class:`Ledger`, arrivals and record parsing.

:class:`Ledger` holds the rendered records, the merchant's orders and the ground truth, and
writes ``orders.csv`` and ``ground_truth.json``; it also makes the records that arrive during
an export (the ``arrivals`` fault). :func:`parse_record` and :func:`decimal_money` read served
bytes back with exact ``Decimal`` money.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final, NamedTuple

import orjson
import polars as pl

from txkit.sandbox._render import (
    MERCHANT_NAME,
    Columns,
    Context,
    render_rows,
)
from txkit.sandbox.ledger import _bank
from txkit.sandbox.ledger._fees import (
    schedule_fee,
    schedule_tax,
)
from txkit.sandbox.ledger._model import (
    ANOMALY_KINDS,
    MONEY_PATHS,
    _draw_amount,
)

#: Arrivals (a fault) are generated in blocks of this size, each from its own seed.
_ARRIVAL_BLOCK: Final = 64
#: The bank statements' file names end so, by format (``bank/statement_2026-10.mt940``).
STATEMENT_SUFFIXES: Final = {"csv": ".csv", "mt940": ".mt940", "camt053": ".camt053.xml"}


class Arrival(NamedTuple):
    """A record that arrives after the ledger was generated (the ``arrivals`` fault)."""

    created_ms: int
    id: str
    trans_type: str
    status: str
    currency: str
    body: bytes


@dataclass(eq=False)
class Ledger:
    """A generated ledger: rendered records, merchant orders and the ground truth.

    Attributes:
        seed, records, start_month, months, anomaly_rate, balance_model, zero_balance_rate,
            late_payments_per_month, repeat_underpayers: the generation arguments.
        start_ms, end_ms: the calendar, epoch milliseconds (end exclusive).
        index: one row per record (chronological: ``createdAt`` then ``id``) with ``id``,
            ``createdAt`` (epoch ms), ``transType``, ``status``, ``toCurrency``, ``toAmount``
            (minor units), ``transactionReference`` and ``hidden`` (not served).
        orders: merchant-side orders: ``reference``, ``amount`` (Decimal), ``currency``,
            ``status``, ``date``.
        ground_truth: one dict per planted anomaly (``kind``, ``id``, ``reference``,
            ``currency``, ``createdAt``, plus kind-specific details; money as strings).
        late_payments: one dict per planted late payment (``kind`` ``late_payment``, ``id``,
            ``reference``, ``currency``, ``createdAt``, ``transType``, ``amount``,
            ``order_date``, ``ordered_at``), by ``createdAt``. Not anomalies: the order and
            the record agree, only their months differ.
        zero_balances: one dict per successful transfer whose four balance-after fields are
            reported as ``0`` (``kind`` ``zero_balance``, ``id``, ``reference``, ``currency``,
            ``createdAt``, ``transType``, and the true ``fromBalanceAfterLedger`` and
            ``fromBalanceAfterAvailable``), by ``createdAt``. Not anomalies either.
        repeaters: one dict per customer given several underpayments by
            ``repeat_underpayers`` (``kind`` ``repeat_underpayer``, ``customerEmail``,
            ``currency``, and the underpayments' ``ids``, ``references`` and ``createdAt``).
    """

    seed: int
    records: int
    start_month: str
    months: int
    anomaly_rate: float
    start_ms: int
    end_ms: int
    index: pl.DataFrame
    orders: pl.DataFrame
    ground_truth: list[dict[str, Any]]
    late_payments: list[dict[str, Any]]
    zero_balances: list[dict[str, Any]]
    balance_model: str
    zero_balance_rate: float
    late_payments_per_month: int
    repeat_underpayers: int
    repeaters: list[dict[str, Any]]
    _bodies: list[bytes] = field(repr=False)
    _context: Context = field(repr=False)
    _final_ledger: dict[str, int] = field(repr=False)
    _open_reserves: dict[str, list[tuple[int, int]]] = field(repr=False)
    _id_proc: int = field(repr=False)
    _id_counter: int = field(repr=False)
    _export_rows: list[int] | None = field(default=None, repr=False)
    order_groups: list[dict[str, Any]] = field(default_factory=list)
    bank: Any = field(default=None, repr=False)

    def __repr__(self) -> str:
        return (
            f"Ledger(seed={self.seed}, records={self.records}, start_month={self.start_month!r},"
            f" months={self.months}, anomaly_rate={self.anomaly_rate},"
            f"{self._options_repr()} anomalies={len(self.ground_truth)})"
        )

    def _options_repr(self) -> str:
        options = ""
        if self.balance_model != "net":
            options += f" balance_model={self.balance_model!r},"
        if self.zero_balance_rate:
            options += f" zero_balance_rate={self.zero_balance_rate},"
        if self.late_payments_per_month != 3:
            options += f" late_payments_per_month={self.late_payments_per_month},"
        if self.repeat_underpayers:
            options += f" repeat_underpayers={self.repeat_underpayers},"
        return options

    @property
    def merchant_name(self) -> str:
        """The merchant's ``merchantInfo.name``."""
        return MERCHANT_NAME

    def export_rows(self) -> list[int]:
        """Chronological row numbers of the served records, in export order.

        Export order is the sandbox's sort: ``createdAt`` descending, ties by ``id`` ascending.
        """
        if self._export_rows is None:
            self._export_rows = (
                self.index.with_row_index("row")
                .filter(~pl.col("hidden"))
                .sort(["createdAt", "id"], descending=[True, False])
                .get_column("row")
                .to_list()
            )
        return self._export_rows

    def export_bodies(self) -> list[bytes]:
        """The served records' JSON bytes, in export order."""
        bodies = self._bodies
        return [bodies[r] for r in self.export_rows()]

    def body(self, row: int) -> bytes:
        """The JSON bytes of the record at chronological row ``row``."""
        return self._bodies[row]

    def exported_records(self) -> list[dict[str, Any]]:
        """The served records as dicts, in export order, with ``Decimal`` money.

        Returns:
            One dict per served record (parsed from the served bytes: money fields are
            :class:`decimal.Decimal`, including those rendered as integers).
        """
        return [parse_record(b) for b in self.export_bodies()]

    def all_records(self) -> list[dict[str, Any]]:
        """Every record, hidden ones included, in export order, with ``Decimal`` money."""
        rows = (
            self.index.with_row_index("row")
            .sort(["createdAt", "id"], descending=[True, False])
            .get_column("row")
            .to_list()
        )
        return [parse_record(self._bodies[r]) for r in rows]

    def orders_csv(self) -> bytes:
        """``orders.csv``: ``reference,amount,currency,status,date,customer``, one order a
        line (``customer``: the customer's e-mail, which links an order paid in parts)."""
        lines = ["reference,amount,currency,status,date,customer"]
        for ref, amount, cur, status, day, customer in self.orders.iter_rows():
            lines.append(f"{ref},{amount:.2f},{cur},{status},{day.isoformat()},{customer}")
        return ("\n".join(lines) + "\n").encode()

    @property
    def bank_cases(self) -> list[dict[str, Any]]:
        """Every planted (or natural) settlement and bank credit that does not simply match,
        with its category (``kind``): see :mod:`txkit.sandbox.ledger._bank`."""
        return list(self.bank.cases) if self.bank is not None else []

    def statement_months(self) -> list[str]:
        """The months the merchant's bank statements cover (the calendar and the month after
        it, where the last settlements arrive)."""
        return list(self.bank.months) if self.bank is not None else []

    def bank_statement(self, month: str, fmt: str = "camt053") -> bytes:
        """The merchant's bank statement of ``month`` as ``csv``, ``mt940`` or ``camt053``."""
        return self.bank.statement(month, fmt)

    def ground_truth_json(self) -> bytes:
        """``ground_truth.json``: the generation arguments, the planted anomalies, the late
        payments and the zero-balance records (see the package docstring for the keys)."""
        doc = {
            "generator": {
                "seed": self.seed,
                "records": self.records,
                "start_month": self.start_month,
                "months": self.months,
                "anomaly_rate": self.anomaly_rate,
                "balance_model": self.balance_model,
                "zero_balance_rate": self.zero_balance_rate,
                "late_payments_per_month": self.late_payments_per_month,
                "repeat_underpayers": self.repeat_underpayers,
            },
            "anomaly_kinds": dict(ANOMALY_KINDS),
            "anomalies": self.ground_truth,
            "late_payments": self.late_payments,
            "zero_balances": self.zero_balances,
            "repeat_underpayers": self.repeaters,
            "order_groups": self.order_groups,
            "bank": {
                "account": _bank.ACCOUNT,
                "csv_columns": _bank.CSV_COLUMNS,
                "cases": self.bank_cases,
            },
        }
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"

    def write_files(self, directory: str | Path) -> tuple[Path, Path]:
        """Write ``orders.csv`` and ``ground_truth.json`` into ``directory`` (created).

        Returns:
            The paths of the two files.
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        orders = out / "orders.csv"
        truth = out / "ground_truth.json"
        orders.write_bytes(self.orders_csv())
        truth.write_bytes(self.ground_truth_json())
        if self.bank is not None:
            folder = out / "bank"
            folder.mkdir(exist_ok=True)
            for month in self.statement_months():
                for fmt, suffix in STATEMENT_SUFFIXES.items():
                    (folder / f"statement_{month}{suffix}").write_bytes(
                        self.bank_statement(month, fmt)
                    )
        return orders, truth

    def final_balances(self) -> dict[str, Decimal]:
        """Each wallet's ledger balance after the last record."""
        return {c: Decimal(v).scaleb(-2) for c, v in self._final_ledger.items()}

    def arrivals(self, count: int, fault_seed: int = 0) -> list[Arrival]:
        """Records that arrive after the ledger's last record (the ``arrivals`` fault).

        They are NGN virtual-account collections, a few seconds to a minute apart; two in three
        are successful and continue the NGN balance chain, the others are pending. The result
        is prefix-stable: ``arrivals(n)`` is the start of ``arrivals(m)`` for ``n <= m``.

        Args:
            count: how many.
            fault_seed: varies the records.

        Returns:
            The new records, oldest first.
        """
        out: list[Arrival] = []
        created = int(self.index.get_column("createdAt").max() or self.start_ms)
        balance = self._final_ledger["NGN"]
        reserves = self._open_reserves["NGN"]
        for block in range((count + _ARRIVAL_BLOCK - 1) // _ARRIVAL_BLOCK):
            rng = random.Random(f"txkit-arrivals:{self.seed}:{fault_seed}:{block}")
            cols = Columns()
            for j in range(_ARRIVAL_BLOCK):
                k = block * _ARRIVAL_BLOCK + j
                created += 1_000 + int(rng.random() * 60_000)
                status = "pending" if k % 3 == 2 else "successful"
                amount = _draw_amount(rng, "collection", "NGN")
                fee = schedule_fee("collection", "NGN", amount)
                tax = schedule_tax(fee)
                counter = (self._id_counter + k) & 0xFFFFFF
                to_l = to_a = None
                if status == "successful":
                    balance += amount - fee - (tax if self.balance_model == "net" else 0)
                    to_l = balance
                    to_a = balance - sum(a for release, a in reserves if release > created)
                _append_row(
                    cols,
                    created=created,
                    oid=f"{created // 1000:08x}{self._id_proc:010x}{counter:06x}",
                    ttype="collection",
                    status=status,
                    cur="NGN",
                    amt=amount,
                    fee=fee,
                    tax=tax,
                    chan="VA",
                    party=int(rng.random() * len(self._context.customers)),
                    ref=f"TXK-{rng.getrandbits(48):012X}",
                    to_l=to_l,
                    to_a=to_a,
                )
            bodies = render_rows(cols, self._context, rng)
            out.extend(
                Arrival(cols.created[j], cols.oid[j], "collection", cols.status[j], "NGN", body)
                for j, body in enumerate(bodies)
            )
        return out[:count]


def _append_row(
    cols: Columns,
    *,
    created: int,
    oid: str,
    ttype: str,
    status: str,
    cur: str,
    amt: int,
    fee: int,
    tax: int,
    chan: str | None,
    party: int,
    ref: str,
    to_l: int | None = None,
    to_a: int | None = None,
) -> None:
    cols.created.append(created)
    cols.oid.append(oid)
    cols.ttype.append(ttype)
    cols.status.append(status)
    cols.cur.append(cur)
    cols.fcur.append(None)
    cols.amt.append(amt)
    cols.famt.append(None)
    cols.fee.append(fee)
    cols.tax.append(tax)
    cols.chan.append(chan)
    cols.party.append(party)
    cols.reserve.append(0)
    cols.to_l.append(to_l)
    cols.to_a.append(to_a)
    cols.from_l.append(None)
    cols.from_a.append(None)
    cols.ref.append(ref)


def parse_record(body: bytes) -> dict[str, Any]:
    """Parse one record's JSON bytes into a dict with exact ``Decimal`` money.

    Numbers with a fraction become ``Decimal`` (never float); see :func:`decimal_money` for
    the money fields rendered otherwise.
    """
    return decimal_money(json.loads(body, parse_float=Decimal))


def decimal_money(record: dict[str, Any]) -> dict[str, Any]:
    """Convert a parsed record's money fields to ``Decimal`` in place, and return it.

    Integer-rendered amounts and numeric strings (as the ``drift`` fault sends) become
    ``Decimal``; parse with ``parse_float=Decimal`` so that fractional numbers already are.
    """
    for path in MONEY_PATHS:
        parent: Any = record
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            value = parent.get(path[-1])
            if isinstance(value, int | str) and not isinstance(value, bool):
                parent[path[-1]] = Decimal(value)
    return record
