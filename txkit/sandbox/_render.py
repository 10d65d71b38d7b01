"""Rendering of sandbox records to JSON bytes (private to :mod:`txkit.sandbox`).

Records are rendered once, at generation time, from column lists into compact JSON bytes with
f-string templates, much faster than a dict per record and ``orjson.dumps``
(docs/benchmarks.md). This is safe because every string value comes from fixed vocabularies
without characters that JSON must escape; pooled nested objects (customer bank details,
transfer recipients, activity histories) are rendered once through ``orjson``. Money is
rendered from integer minor units, never through a float.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NamedTuple

import orjson
import polars as pl

MERCHANT_NAME: Final = "Sandbox Merchant Ltd"
MERCHANT_EMAIL: Final = "finance@sandbox-merchant.example.test"
NOTIFY_EMAIL: Final = "alerts@sandbox-merchant.example.test"

_BANKS: Final = (
    ("000013", "Sandbox Bank"),
    ("000014", "Example Trust Bank"),
    ("000015", "Placeholder Commercial Bank"),
    ("090267", "Demo Microfinance Bank"),
    ("000016", "Fixture Savings Bank"),
)
_RECIPIENT_INSTITUTIONS: Final = {
    "NGN": ("bank", ("Sandbox Bank", "Example Trust Bank", "Demo Microfinance Bank")),
    "GHS": ("mobile_money", ("Sandbox Mobile Money GH", "Example MoMo")),
    "KES": ("mobile_money", ("Sandbox M-Wallet KE", "Example Mobile Money")),
    "USD": ("bank", ("Sandbox Bank USD", "Example Correspondent Bank")),
    "USDT": ("wallet", ("Sandbox Crypto Custody",)),
}
_NARRATIONS: Final = (
    "NIP TRF FROM {name} TO SANDBOX MERCHANT LTD",
    "TRANSFER FROM {name}",
    "{name} PAYMENT FOR ORDER",
    "MOBILE TRF FROM {name}",
)

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ISO_FORMAT: Final = "%Y-%m-%dT%H:%M:%S%.3fZ"


def money(minor: int) -> str:
    """Render integer minor units as a decimal with two places (``150000`` -> ``1500.00``)."""
    if minor < 0:
        return "-" + money(-minor)
    return f"{minor // 100}.{minor % 100:02d}"


def money_or_int(minor: int) -> str:
    """Like :func:`money`, but a whole amount is rendered as an integer (``3000`` -> ``30``)."""
    if minor % 100 == 0:
        return str(minor // 100)
    return money(minor)


def iso_ms(ms: int) -> str:
    """Render epoch milliseconds as ``2026-01-02T03:04:05.678Z``."""
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def iso_column(values: list[int] | list[int | None]) -> list[str | None]:
    """Render a column of epoch milliseconds (``None`` allowed) to ISO strings, vectorised."""
    series = pl.Series(values, dtype=pl.Int64).cast(pl.Datetime("ms", "UTC"))
    return series.dt.strftime(_ISO_FORMAT).to_list()


def _seconds_text(centiseconds: int) -> str:
    whole, frac = divmod(centiseconds, 100)
    if frac == 0:
        return str(whole)
    if frac % 10 == 0:
        return f"{whole}.{frac // 10}"
    return f"{whole}.{frac:02d}"


@dataclass(slots=True)
class Columns:
    """Column lists of records in chronological order, everything the renderer needs.

    Money is in integer minor units. ``None`` marks an absent value (no balance fields on a
    non-successful record, no ``paidAt`` before payment, ...).
    """

    created: list[int] = field(default_factory=list)
    oid: list[str] = field(default_factory=list)
    ttype: list[str] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    cur: list[str] = field(default_factory=list)
    fcur: list[str | None] = field(default_factory=list)
    amt: list[int] = field(default_factory=list)
    famt: list[int | None] = field(default_factory=list)
    fee: list[int] = field(default_factory=list)
    tax: list[int] = field(default_factory=list)
    chan: list[str | None] = field(default_factory=list)
    party: list[int] = field(default_factory=list)
    reserve: list[int] = field(default_factory=list)
    to_l: list[int | None] = field(default_factory=list)
    to_a: list[int | None] = field(default_factory=list)
    from_l: list[int | None] = field(default_factory=list)
    from_a: list[int | None] = field(default_factory=list)
    ref: list[str] = field(default_factory=list)
    #: sparse: record index -> (existing reference, expected minor units, "UNDERPAYMENT"|...)
    existing: dict[int, tuple[str, int, str]] = field(default_factory=dict)
    #: sparse: record index -> ids of child transactions
    children: dict[int, list[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.created)


@dataclass(slots=True)
class Context:
    """Pools and thresholds shared by every record of one ledger."""

    merchant_id: str
    v2_from_ms: int
    merchant_id_from_ms: int
    end_ms: int
    reserve_ms: int
    #: (name, e-mail, rendered bank members, 6-digit NIP code of the customer's bank)
    customers: list[tuple[str, str, str, str]]
    recipients: dict[str, list[str]]
    histories: dict[tuple[str, str, int], str]


def build_context(
    rng: random.Random, *, n_customers: int, start_ms: int, end_ms: int, reserve_ms: int
) -> Context:
    """Build the customer and recipient pools and the activity-history templates.

    Args:
        rng: the generator's random source (consumed deterministically).
        n_customers: size of the customer pool.
        start_ms: start of the calendar (epoch ms).
        end_ms: end of the calendar, exclusive (epoch ms).
        reserve_ms: how long a rolling reserve is held.

    Returns:
        The rendering :class:`Context`.
    """
    customers = []
    for k in range(n_customers):
        code, bank = _BANKS[int(rng.random() * len(_BANKS))]
        name = f"TEST CUSTOMER {k:05d}"
        account = f"00000{int(rng.random() * 100_000):05d}"
        bank_part = orjson.dumps({"bankName": bank, "accountName": name, "accountNumber": account})
        customers.append((name, f"customer{k:05d}@example.test", bank_part.decode()[1:-1], code))
    recipients: dict[str, list[str]] = {}
    for currency, (kind, names) in _RECIPIENT_INSTITUTIONS.items():
        pool = []
        for k in range(40):
            rid = f"{(start_ms // 1000 - 86_400 * (k + 1)):08x}{rng.getrandbits(64):016x}"
            pool.append(
                orjson.dumps(
                    {
                        "recipientName": f"TEST RECIPIENT {currency} {k:03d}",
                        "currency": currency,
                        "institutionType": kind,
                        "institutionName": names[k % len(names)],
                        "institutionNumber": f"00000{int(rng.random() * 100_000):05d}",
                        "_id": rid,
                    }
                ).decode()
            )
        recipients[currency] = pool
    span = end_ms - start_ms
    return Context(
        merchant_id=f"{start_ms // 1000 - 400 * 86_400:08x}{rng.getrandbits(64):016x}",
        v2_from_ms=start_ms + span * 2 // 5,
        merchant_id_from_ms=start_ms + span // 2,
        end_ms=end_ms,
        reserve_ms=reserve_ms,
        customers=customers,
        recipients=recipients,
        histories=_history_templates(),
    )


def _history_templates() -> dict[tuple[str, str, int], str]:
    out: dict[tuple[str, str, int], str] = {}
    steps = {
        "VA": (
            ["Viewed bank transfer details", "Copied account number"],
            "Transfer not received yet",
            {
                "paid": "Confirmed bank transfer",
                "failed": "Transfer could not be matched",
                "gone": "Closed checkout",
                "open": "Waiting for transfer",
            },
        ),
        "CARD": (
            ["Entered card details", "Submitted card"],
            "Incorrect OTP entered",
            {
                "paid": "Submitted OTP",
                "failed": "Card declined by issuer",
                "gone": "Closed checkout",
                "open": "Awaiting OTP",
            },
        ),
    }
    for channel, (first, error, last) in steps.items():
        for outcome, final in last.items():
            for errors in range(4):
                items = [{"type": "action", "message": "Opened checkout", "time": None}]
                items += [{"type": "action", "message": m, "time": None} for m in first]
                items += [{"type": "error", "message": error, "time": None}] * errors
                kind = "error" if outcome == "failed" else "action"
                items.append({"type": kind, "message": final, "time": None})
                out[(channel, outcome, errors)] = orjson.dumps(items).decode()
    return out


_OUTCOME: Final = {
    "successful": "paid",
    "verified": "paid",
    "reversed": "paid",
    "failed": "failed",
    "declined": "failed",
    "abandoned": "gone",
    "expired": "gone",
}
_PAID: Final = frozenset({"successful", "verified", "reversed"})


def money_column(
    values: list[int] | list[int | None], *, whole_as_int: list[bool] | None = None
) -> list[str | None]:
    """Render a column of minor units (``None`` allowed) with :func:`money`, vectorised.

    Args:
        values: amounts in minor units.
        whole_as_int: per row, render a whole amount as an integer (see :func:`money_or_int`).

    Returns:
        The rendered texts (``None`` where the value is ``None``).
    """
    v = pl.col("v")
    text = pl.concat_str(
        [
            pl.when(v < 0).then(pl.lit("-")).otherwise(pl.lit("")),
            (v.abs() // 100).cast(pl.String),
            pl.lit("."),
            (v.abs() % 100).cast(pl.String).str.zfill(2),
        ]
    )
    frame = pl.DataFrame({"v": pl.Series(values, dtype=pl.Int64)})
    if whole_as_int is not None:
        frame = frame.with_columns(w=pl.Series(whole_as_int, dtype=pl.Boolean))
        text = (
            pl.when(pl.col("w") & (v % 100 == 0)).then((v // 100).cast(pl.String)).otherwise(text)
        )
    return frame.select(text).to_series().to_list()


class _Row(NamedTuple):
    """One record's values as :func:`render_rows` writes them: money and times as text."""

    i: int
    oid: str
    ttype: str
    status: str
    cur: str
    created: int
    party: int
    fcur: str | None
    chan: str | None
    ref: str
    reserve: int
    release: int | None
    amt: str
    famt: str | None
    fee: str
    tax: str
    to_l: str | None
    to_a: str | None
    from_l: str | None
    from_a: str | None
    reserve_t: str | None
    created_iso: str
    updated_iso: str
    paid_iso: str | None
    release_iso: str | None


class _Shared(NamedTuple):
    ctx: Context
    children: dict[int, list[str]]
    existing: dict[int, tuple[str, int, str]]
    merchant_id_part: str
    tail: str


def render_rows(cols: Columns, ctx: Context, rng: random.Random) -> list[bytes]:
    """Render every row of ``cols`` to compact JSON bytes.

    Args:
        cols: the records, chronological, with final (reported) values.
        ctx: the ledger's pools and thresholds.
        rng: random source for cosmetic details (session ids, activity timings, ...).

    Returns:
        One ``bytes`` object per row, in the order of ``cols``.
    """
    # Every row's timestamps draw from rng before any row is rendered (they are rendered in
    # one batch): the order of the draws is part of the output.
    updated, paid, releases = _status_times(cols, ctx.reserve_ms, rng.random)
    shared = _Shared(
        ctx,
        cols.children,
        cols.existing,
        f'"merchantId":"{ctx.merchant_id}",',
        f'"merchantInfo":{{"name":"{MERCHANT_NAME}"}},"meta":',
    )
    rows = map(_Row._make, _row_values(cols, updated, paid, releases))
    return [_render_row(row, shared, rng).encode() for row in rows]


def _status_times(
    cols: Columns, reserve_ms: int, rand: Callable[[], float]
) -> tuple[list[int], list[int | None], list[int | None]]:
    updated: list[int] = []
    paid: list[int | None] = []
    releases: list[int | None] = []
    for created, status, reserve in zip(cols.created, cols.status, cols.reserve, strict=True):
        if status in _PAID:
            paid_at = created + 2_000 + int(rand() * 240_000)
            paid.append(paid_at)
            upd = paid_at + int(rand() * 600_000) + (86_400_000 if status == "reversed" else 0)
        else:
            paid.append(None)
            if status == "abandoned":
                upd = created + 3_600_000 + int(rand() * 3_600_000)
            elif status == "expired":
                upd = created + 1_800_000 + int(rand() * 84_600_000)
            elif status in ("failed", "declined"):
                upd = created + 1_000 + int(rand() * 120_000)
            else:
                upd = created + int(rand() * 30_000)
        updated.append(upd)
        releases.append(created + reserve_ms if reserve else None)
    return updated, paid, releases


def _row_values(
    cols: Columns, updated: list[int], paid: list[int | None], releases: list[int | None]
) -> Iterator[tuple[Any, ...]]:
    kes = [c == "KES" for c in cols.cur]
    return zip(
        range(len(cols)),
        cols.oid,
        cols.ttype,
        cols.status,
        cols.cur,
        cols.created,
        cols.party,
        cols.fcur,
        cols.chan,
        cols.ref,
        cols.reserve,
        releases,
        money_column(cols.amt),
        money_column(cols.famt),
        money_column(cols.fee, whole_as_int=kes),
        money_column(cols.tax, whole_as_int=kes),
        money_column(cols.to_l),
        money_column(cols.to_a),
        money_column(cols.from_l),
        money_column(cols.from_a),
        money_column(cols.reserve),
        iso_column(cols.created),
        iso_column(updated),
        iso_column(paid),
        iso_column(releases),
        strict=True,
    )


def _render_row(row: _Row, shared: _Shared, rng: random.Random) -> str:
    # The steps run in this order: each draws its random numbers from rng in turn.
    rand = rng.random
    parts = [_head(row)]
    collection = row.ttype == "collection"
    if collection:
        name, email, bank_part, bank_code = shared.ctx.customers[row.party]
        if rand() < 0.3:
            parts.append(
                f'"userTransactionReference":"ORD-{row.created // 1000 % 10_000_000:07d}",'
            )
    else:
        email = MERCHANT_EMAIL
    parts.append(_flags(row, email, shared.ctx.v2_from_ms, rand))
    parts.append(_lists_and_charges(row, shared.children.get(row.i), rng))
    if row.created >= shared.ctx.merchant_id_from_ms:
        parts.append(shared.merchant_id_part)
    parts.append(_card_and_narration(row, rng.getrandbits))
    parts.append(_times_balances_and_reserve(row, shared.ctx.end_ms))
    if row.ttype == "transfer":
        parts.append(f'"recipient":{shared.ctx.recipients[row.cur][row.party]},')
    parts.append(shared.tail)
    if collection:
        meta = _collection_meta(
            row.chan,
            row.status,
            row.created,
            (name, bank_part, bank_code),
            shared.existing.get(row.i),
            row.created_iso,
            shared.ctx.histories,
            rng,
        )
        parts.append(f'{{{meta}}},"id":"{row.oid}"}}')
    else:
        parts.append(f'{{}},"id":"{row.oid}"}}')
    return "".join(parts)


def _head(row: _Row) -> str:
    head = (
        f'{{"_id":"{row.oid}","transType":"{row.ttype}","status":"{row.status}",'
        f'"toAmount":{row.amt},"toCurrency":"{row.cur}",'
    )
    if row.fcur is not None:
        head += f'"fromAmount":{row.famt},"fromCurrency":"{row.fcur}",'
    if row.chan == "CARD":
        head += f'"amount":{row.amt},"currency":"{row.cur}",'
    return head + f'"transactionReference":"{row.ref}",'


def _flags(row: _Row, email: str, v2_from_ms: int, rand: Callable[[], float]) -> str:
    recurrent = "true" if row.chan == "CARD" and rand() < 0.05 else "false"
    manual = "true" if row.ttype == "settlement" and rand() < 0.1 else "false"
    if row.created >= v2_from_ms:
        return (
            f'"customerEmail":"{email}","isRecurrent":{recurrent},"postProcess":null,'
            f'"isManual":{manual},"source":null,'
        )
    return f'"customerEmail":"{email}","isRecurrent":{recurrent},"isManual":{manual},'


def _lists_and_charges(row: _Row, kids: list[str] | None, rng: random.Random) -> str:
    rand = rng.random
    notify = f'"{NOTIFY_EMAIL}"' if rand() < 0.05 else ""
    kids_text = ",".join(f'"{k}"' for k in kids) if kids else ""
    disputes = dispute_refs = ""
    if row.status == "reversed" and row.chan == "CARD" and rand() < 0.5:
        dref = f"DSP-{rng.getrandbits(32):08X}"
        dispute_refs = f'"{dref}"'
        verdict = "lost" if rand() < 0.7 else "won"
        disputes = f'{{"reference":"{dref}","reason":"fraudulent","status":"{verdict}"}}'
    has_reserve = "true" if row.reserve else "false"
    return (
        f'"customNotifyEmails":[{notify}],"childTransactionIds":[{kids_text}],'
        f'"disputeReferences":[{dispute_refs}],"disputes":[{disputes}],'
        f'"hasRollingReserve":{has_reserve},"feeAmount":{row.fee},"taxAmount":{row.tax},'
    )


def _card_and_narration(row: _Row, getrandbits: Callable[[int], int]) -> str:
    text = ""
    if row.chan == "CARD":
        text += f'"gatewayReference":"GW-{getrandbits(48):012X}",'
        if row.status in _PAID:
            text += f'"authorizationCode":"AUTH_{getrandbits(40):010x}",'
    if row.ttype == "transfer":
        text += f'"narration":"Payout {row.ref}",'
    elif row.ttype == "settlement":
        text += f'"narration":"Settlement of {row.cur} balance",'
    return text


def _times_balances_and_reserve(row: _Row, end_ms: int) -> str:
    text = f'"createdAt":"{row.created_iso}","updatedAt":"{row.updated_iso}",'
    if row.paid_iso is not None:
        text += f'"paidAt":"{row.paid_iso}",'
    if row.to_l is not None:
        text += f'"toBalanceAfterAvailable":{row.to_a},"toBalanceAfterLedger":{row.to_l},'
    if row.from_l is not None:
        text += f'"fromBalanceAfterAvailable":{row.from_a},"fromBalanceAfterLedger":{row.from_l},'
    if row.reserve:
        held = "true" if row.release is not None and row.release > end_ms else "false"
        text += (
            f'"rollingReserve":{{"isInReserve":{held},"amount":{row.reserve_t},'
            f'"reserveReleaseDate":"{row.release_iso}"}},'
        )
    return text


def _collection_meta(
    chan: str | None,
    status: str,
    created: int,
    customer: tuple[str, str, str],
    existing: tuple[str, int, str] | None,
    iso: str,
    histories: dict[tuple[str, str, int], str],
    rng: random.Random,
) -> str:
    rand = rng.random
    name, bank_part, code = customer
    parts = [f'"paymentChannel":"{chan}"']
    if chan == "VA" and status in _PAID:
        # NIP session ids: sending bank code, yymmddHHMMSS, then a 12-digit serial
        stamp = iso[2:4] + iso[5:7] + iso[8:10] + iso[11:13] + iso[14:16] + iso[17:19]
        session = f"{code}{stamp}{rng.getrandbits(39):012d}"  # 2**39 < 10**12
        narration = _NARRATIONS[int(rand() * len(_NARRATIONS))].format(name=name)
        parts.append(f',{bank_part},"narration":"{narration}","sessionId":"{session}"')
    if existing is not None:
        reference, expected, kind = existing
        parts.append(
            f',"paymentCollectionType":"{kind}",'
            f'"existingTransaction":{{"reference":"{reference}","expectedAmount":{money(expected)}}}'
        )
    outcome = _OUTCOME.get(status, "open")
    errors = int(rand() * rand() * 4) if outcome != "open" else 0
    attempts = errors + (0 if outcome == "open" else 1)
    spent = 500 + int(rand() * 60_000)
    start = created - spent * 10 - int(rand() * 5_000)
    success = "true" if outcome == "paid" else "false"
    mobile = "true" if rand() < 0.6 else "false"
    history = histories[(chan or "VA", outcome, errors)]
    parts.append(
        f',"customerActivity":{{"start_time":{start},"time_spent":{_seconds_text(spent)},'
        f'"attempts":{attempts},"errors":{errors},"success":{success},"mobile":{mobile},'
        f'"input":[],"history":{history}}}'
    )
    return "".join(parts)
