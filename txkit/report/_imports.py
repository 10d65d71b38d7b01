"""The report's imports of nbformat (papermill's and nbconvert's), without what jsonschema
builds and the report never uses.

``jsonschema`` (which nbformat imports) checks the ``iri`` string formats with
``rfc3987_syntax`` when it is installed (JupyterLab's dependencies install it), and that
package compiles 38 grammars when imported: 1.4 s of CPU, a tenth of a whole report, in every
report's process. Nothing the report does checks an IRI. :func:`import_jsonschema` imports
jsonschema with a stand-in for that module's one function, which imports the real module the
first time it is called: the ``iri`` checks still answer as before, and only a process that
uses them pays for the grammars.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

__all__ = ["import_jsonschema"]

_GRAMMARS = "rfc3987_syntax"


def _stand_in() -> types.ModuleType:
    """A module whose ``is_valid_syntax`` is the real one's, imported at its first call."""
    module = types.ModuleType(_GRAMMARS)

    def is_valid_syntax(term: str, value: str) -> Any:
        real = sys.modules.get(_GRAMMARS)
        if real is None or real is module:
            sys.modules.pop(_GRAMMARS, None)
            real = importlib.import_module(_GRAMMARS)
        return real.is_valid_syntax(term, value)

    module.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    return module


def import_jsonschema() -> None:
    """Import jsonschema (once a process), its ``rfc3987_syntax`` grammars left until used."""
    if "jsonschema" in sys.modules:
        return
    if _GRAMMARS in sys.modules or importlib.util.find_spec(_GRAMMARS) is None:
        importlib.import_module("jsonschema")
        return
    sys.modules[_GRAMMARS] = _stand_in()
    try:
        importlib.import_module("jsonschema")
    finally:
        # Only jsonschema sees the stand-in: a later import gets the real module.
        sys.modules.pop(_GRAMMARS, None)
