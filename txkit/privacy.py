"""Masking customers' personal data for display: e-mails, names, account numbers.

This module owns the maskers; which columns hold personal data, and which masker each gets, is
declared once in :mod:`txkit.schema` (each :class:`~txkit.schema.Field`'s ``pii``).

Reports and notebooks show masked data by default; the local store keeps raw data (it is the
analyst's own). Masking is for what people see, not a security boundary for the store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from txkit.schema import PII_FIELDS

__all__ = ["PII_COLUMNS", "mask_pii", "mask_sentences", "mask_text"]

#: Columns holding customer e-mails, names or account numbers, and how each is masked
#: (derived from :data:`txkit.schema.FIELDS`: each field's ``pii``).
PII_COLUMNS: dict[str, str] = dict(PII_FIELDS)

# An e-mail anywhere in text; a run of 6+ digits standing alone (account numbers, phone
# numbers) in text: never one glued to letters, a hyphen or an underscore (a transaction
# reference such as TXK-54E878000240 inside a narration stays whole), nor an amount's digits
# (1234567.89). polars' regex has no look-around: the boundaries are captured and put back.
_EMAIL_RE = r"([A-Za-z0-9])[A-Za-z0-9._%+\-]*@([A-Za-z0-9.\-]+\.[A-Za-z]{2,})"
_DIGITS_RE = r"(^|[^A-Za-z0-9_\-.,])\d{2,}(\d{4})($|[^A-Za-z0-9_\-.,]|[.,]$|[.,][^0-9])"


def _mask_email(expr: pl.Expr) -> pl.Expr:
    return expr.str.replace_all(_EMAIL_RE, "${1}***@${2}")


def _mask_number(expr: pl.Expr) -> pl.Expr:
    length = expr.str.len_chars()
    return (
        pl.when(expr.is_null())
        .then(pl.lit(None, dtype=pl.String))
        .when(length > 4)
        .then(pl.lit("*").repeat_by(length - 4).list.join("") + expr.str.slice(-4))
        .otherwise(pl.lit("****"))
    )


def _mask_name(expr: pl.Expr) -> pl.Expr:
    return (
        expr.str.strip_chars()
        .str.split(" ")
        .list.eval(pl.element().filter(pl.element() != "").str.slice(0, 1).str.to_uppercase() + ".")
        .list.join(" ")
    )


def _mask_text(expr: pl.Expr) -> pl.Expr:
    # Twice: two numbers one character apart share the boundary between them.
    digits = expr
    for _ in range(2):
        digits = digits.str.replace_all(_DIGITS_RE, "${1}******${2}${3}")
    return _mask_email(digits)


_MASKERS = {
    "email": _mask_email,
    "name": _mask_name,
    "number": _mask_number,
    "text": _mask_text,
    "email_list": lambda e: e.list.eval(_mask_email(pl.element())),
}


def mask_pii(df: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Mask customer e-mails, names and account numbers for display.

    * ``customerEmail`` and ``customNotifyEmails``: first letter and the domain
      (``ada.test@example.test`` -> ``a***@example.test``);
    * ``meta.accountName``, ``recipient.recipientName``: initials (``T. C. A.``);
    * ``meta.accountNumber``, ``recipient.institutionNumber``: the last 4 digits
      (``******2345``);
    * narration text: any run of 6+ digits keeps its last 4, any e-mail is masked.

    Columns that are absent are skipped; nulls stay null; the input is not modified.

    Args:
        df: a frame from :func:`txkit.load_transactions` or derived from it (eager or lazy).

    Returns:
        The same kind of frame with the columns above masked.

    Example:
        >>> txkit.mask_pii(df).select("customerEmail", "meta.accountNumber").head()
    """
    names = df.collect_schema().names() if isinstance(df, pl.LazyFrame) else df.columns
    exprs = [
        _MASKERS[kind](pl.col(name)).alias(name)
        for name, kind in PII_COLUMNS.items()
        if name in names
    ]
    return df.with_columns(exprs) if exprs else df


# In free sentences: an e-mail, or a run of 6+ digits standing alone (an account or phone
# number; amounts and counts are written with thousands separators, references and ids are
# glued to letters and stay readable).
_LONE_DIGITS_RE = re.compile(
    r"(?<![A-Za-z0-9_\-])(?<!\d[.,])\d{2,}(\d{4})(?![A-Za-z0-9_\-])(?![.,]\d)"
)
_EMAIL_TEXT_RE = re.compile(_EMAIL_RE)


def mask_text(text: str) -> str:
    """Mask e-mails and lone account-number-like digit runs in a sentence.

    ``"... (ada.test@example.test), account 0000012345"`` becomes
    ``"... (a***@example.test), account ******2345"``. Names cannot be recognised in free text:
    sentences shown to people must not put them there (the analyses' findings do not).
    """
    text = _EMAIL_TEXT_RE.sub(r"\1***@\2", text)
    return _LONE_DIGITS_RE.sub(lambda m: "*" * (len(m.group(0)) - 4) + m.group(1), text)


def mask_sentences(sentences: Iterable[str], *, show_pii: bool = False) -> list[str]:
    """The one masking point for sentences that reach people (findings, the report's index).

    Args:
        sentences: plain-language lines, e.g. from :mod:`txkit.notebook.findings`.
        show_pii: leave them as they are (the analyst asked for unmasked output).

    Returns:
        The sentences, masked with :func:`mask_text` unless ``show_pii``.
    """
    lines = [str(s) for s in sentences]
    return lines if show_pii else [mask_text(s) for s in lines]


def looks_unmasked(text: str) -> list[str]:
    """Sandbox e-mails or account numbers that appear unmasked in ``text`` (for CI checks)."""
    found = re.findall(r"[A-Za-z0-9._%+\-]{2,}@example\.test", text)
    found += re.findall(r"\b0000\d{6}\b", text)
    return found
