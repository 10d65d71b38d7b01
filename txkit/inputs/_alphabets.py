"""Which 8-bit encoding a file's letters are a language's in (private).

Windows-1250 and Windows-1252 give a letter for most of the same bytes: a Czech export read
as Windows-1252 shows ``Pøevod z úètu`` for ``Převod z účtu``, a Hungarian one ``Gyõzõ`` for
``Győző``, letters no reader catches by eye in a message and no byte refuses. A text's
non-ASCII letters come from its language's alphabet: a file is read as Windows-1250 when its
letters, so read, are all of one Central European alphabet and, read as Windows-1252, are
all of no Western one. Any other file is left to the caller's rule (Windows-1252, said).
"""

from __future__ import annotations

from typing import Final

__all__ = ["central_alphabet"]

#: The non-ASCII lower-case letters of the languages Windows-1250 is written in.
CENTRAL: Final[dict[str, frozenset[str]]] = {
    "Czech": frozenset("áčďéěíňóřšťúůýž"),
    "Slovak": frozenset("áäčďéíĺľňóôŕšťúýž"),
    "Hungarian": frozenset("áéíóöőúüű"),
    "Polish": frozenset("ąćęłńóśźż"),
    "Slovenian": frozenset("čšž"),
    "Croatian": frozenset("čćđšž"),
    "Romanian": frozenset("ăâîşţșț"),
}
#: ... and of the languages Windows-1252 is written in.
WESTERN: Final[dict[str, frozenset[str]]] = {
    "French": frozenset("àâæçéèêëîïôœùûüÿ"),
    "German": frozenset("äöüß"),
    "Spanish": frozenset("áéíñóúü"),
    "Catalan": frozenset("àçéèíïòóúü"),
    "Italian": frozenset("àèéìíîòóùú"),
    "Portuguese": frozenset("áâãàçéêíóôõú"),
    "Dutch": frozenset("áéíóúàèëïöü"),
    "Danish and Norwegian": frozenset("æøåéóèêòô"),
    "Swedish": frozenset("åäöé"),
    "Finnish": frozenset("åäöšž"),
    "Icelandic": frozenset("áðéíóúýþæö"),
}


def _letters(text: str) -> frozenset[str]:
    return frozenset(c for c in text.lower() if c.isalpha() and not c.isascii())


def _one_of(letters: frozenset[str], alphabets: dict[str, frozenset[str]]) -> str | None:
    return next((name for name, a in alphabets.items() if letters <= a), None)


def central_alphabet(central: str, western: str) -> str | None:
    """The Central European language whose alphabet holds every letter of ``central`` (the
    bytes read as Windows-1250) when no Western alphabet holds those of ``western`` (the same
    bytes read as Windows-1252); None otherwise."""
    mine, theirs = _letters(central), _letters(western)
    if not mine or mine == theirs or _one_of(theirs, WESTERN) is not None:
        return None
    return _one_of(mine, CENTRAL)
