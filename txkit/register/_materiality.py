"""Materiality: which exceptions turn a headline to "look at this".

One file in the project folder, ``materiality.toml`` (the folder ``txkit`` runs in)::

    relative = "0.05"          # share of the section's listed items' total at stake

    [absolute]                 # per currency, in its own units
    NGN = "50000.00"
    USD = "100.00"

An item is material when its absolute amount reaches the greater of its currency's absolute
threshold and ``relative`` x the section's volume that month in that currency (the sum of the
absolute amounts of the section's items listed that month). Amounts are exact decimals: the
file's values are strings (a TOML float would be binary). Without the file the built-in
defaults below apply, and the report says so.

The flux review (each close-summary figure against the previous month's) has its own
thresholds in the same file::

    [flux]
    relative = "0.10"          # the change's share of the previous month's figure

    [flux.absolute]            # per currency, in its own units
    NGN = "500000.00"

A figure's change is a breach when it reaches both its currency's amount (0 when not set) and
``relative`` x the previous month's figure (its absolute value; any change of a figure that
was 0). Without a ``[flux]`` table the built-in defaults below apply.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Final

from txkit.config import read_settings_toml
from txkit.money import format_money

__all__ = ["CONFIG_FILE", "Materiality", "load_materiality"]

#: The file's name, in the project folder.
CONFIG_FILE: Final = "materiality.toml"

_DEFAULT_ABSOLUTE: Final[dict[str, Decimal]] = {
    "NGN": Decimal("50000.00"),
    "USD": Decimal("100.00"),
    "GHS": Decimal("1000.00"),
    "KES": Decimal("10000.00"),
    "USDT": Decimal("100.00"),
}
_DEFAULT_RELATIVE: Final = Decimal("0.05")
_DEFAULT_FLUX_ABSOLUTE: Final[dict[str, Decimal]] = {
    "NGN": Decimal("500000.00"),
    "USD": Decimal("1000.00"),
    "GHS": Decimal("10000.00"),
    "KES": Decimal("100000.00"),
    "USDT": Decimal("1000.00"),
}
_DEFAULT_FLUX_RELATIVE: Final = Decimal("0.10")
_NUMBER = re.compile(r"[0-9]{1,20}(\.[0-9]{1,6})?")


@dataclass(frozen=True)
class Materiality:
    """Thresholds per currency (absolute) and one relative share of the section's volume."""

    absolute: dict[str, Decimal] = field(default_factory=lambda: dict(_DEFAULT_ABSOLUTE))
    relative: Decimal = _DEFAULT_RELATIVE
    source: str = "built-in defaults (no materiality.toml in the project folder)"
    flux_absolute: dict[str, Decimal] = field(default_factory=lambda: dict(_DEFAULT_FLUX_ABSOLUTE))
    flux_relative: Decimal = _DEFAULT_FLUX_RELATIVE

    def flux_breach(self, currency: str, before: Decimal, now: Decimal) -> bool:
        """Whether a figure's change from ``before`` to ``now`` reaches both thresholds of the
        flux review (the module docstring)."""
        change = abs(now - before)
        if change == 0:
            return False
        amount = self.flux_absolute.get(currency, Decimal(0))
        return change >= amount and change >= self.flux_relative * abs(before)

    def describe_flux(self) -> str:
        """One line: the flux review's thresholds and where they come from."""
        per = ", ".join(format_money(v, c) for c, v in sorted(self.flux_absolute.items()))
        share = (self.flux_relative * 100).normalize()
        return (
            f"Flux: a change from the previous month is a breach when it reaches both "
            f"{per or 'no amount'} (per currency) and {share:f} % of the previous month's "
            f"figure; from {self.source}."
        )

    def threshold(self, currency: str | None, volume: Decimal) -> Decimal:
        """The greater of the currency's absolute threshold (0 when not set) and the share of
        ``volume``."""
        absolute = self.absolute.get(currency or "", Decimal(0))
        return max(absolute, (self.relative * volume).quantize(Decimal("0.01")))

    def describe(self) -> str:
        """One line for the report: the thresholds and where they come from."""
        per = ", ".join(format_money(v, c) for c, v in sorted(self.absolute.items())) or "none"
        share = (self.relative * 100).normalize()
        return (
            f"Material: an item whose amount at stake (its absolute value) reaches the greater "
            f"of {per} (per currency) and {share:f} % of the total at stake of the same "
            f"section's items listed in the month in that currency (not of the month's volume "
            f"of payments); from {self.source}."
        )


def _decimal(value: Any, where: str, path: Path) -> Decimal:
    text = value if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    if text is None or not _NUMBER.fullmatch(text.strip()):
        raise ValueError(
            f'{path}: {where} must be a plain decimal written as a string such as "50000.00" '
            f"(0 or more, at most 6 decimals), got {value!r}"
        )
    try:
        return Decimal(text.strip())
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        raise ValueError(f"{path}: {where} is not a decimal: {value!r}") from None


def load_materiality(folder: str | os.PathLike[str] | None = None) -> Materiality:
    """Read ``materiality.toml`` from ``folder`` (default: the working folder); the built-in
    defaults when there is none.

    Raises:
        ConfigError: the file cannot be read, is not TOML or is out of bounds
            (:func:`~txkit.config.read_settings_toml`).
        ValueError: the file has unknown keys, or a value is not a decimal string
            (one line naming the file, the key and what is accepted).
    """
    path = Path(folder or ".") / CONFIG_FILE
    if not path.is_file():
        return Materiality()
    doc = read_settings_toml(
        path, 'relative = "0.05", an [absolute] table of CURRENCY = "amount" and a [flux] table'
    )
    unknown = sorted(set(doc) - {"relative", "absolute", "flux"})
    if unknown:
        raise ValueError(
            f"{path}: unknown keys {', '.join(unknown)}; accepted: relative, [absolute], [flux]"
        )
    relative = _decimal(doc.get("relative", str(_DEFAULT_RELATIVE)), "relative", path)
    if relative > 1:
        raise ValueError(
            f"{path}: relative is a share between 0 and 1 (0.05 = 5 %), got {relative}"
        )
    absolute = _amounts(doc.get("absolute", {}), "absolute", path)
    flux_relative, flux_absolute = _flux(doc.get("flux", {}), path)
    return Materiality(absolute=absolute, relative=relative, source=str(path.name),
                       flux_absolute=flux_absolute, flux_relative=flux_relative)  # fmt: skip


def _flux(table: Any, path: Path) -> tuple[Decimal, dict[str, Decimal]]:
    if not isinstance(table, dict):
        raise ValueError(f'{path}: [flux] must be a table (relative = "0.10", [flux.absolute])')
    unknown = sorted(set(table) - {"relative", "absolute"})
    if unknown:
        raise ValueError(
            f"{path}: unknown keys in [flux]: {', '.join(unknown)}; accepted: relative, "
            "[flux.absolute]"
        )
    relative = _decimal(table.get("relative", str(_DEFAULT_FLUX_RELATIVE)), "flux.relative", path)
    amounts = table.get("absolute", {k: str(v) for k, v in _DEFAULT_FLUX_ABSOLUTE.items()})
    return relative, _amounts(amounts, "flux.absolute", path)


def _amounts(table: Any, name: str, path: Path) -> dict[str, Decimal]:
    """A ``[name]`` table of ``CURRENCY = "amount"`` lines (``[absolute]``,
    ``[flux.absolute]``), each amount read by :func:`_decimal`."""
    if not isinstance(table, dict):
        raise ValueError(f'{path}: [{name}] must be a table of CURRENCY = "amount" lines')
    amounts = {}
    for currency, value in table.items():
        if not re.fullmatch(r"[A-Z]{3,4}", currency):
            raise ValueError(
                f"{path}: [{name}] key {currency!r} is not a currency code (3 or 4 capitals)"
            )
        amounts[currency] = _decimal(value, f"{name}.{currency}", path)
    return amounts
