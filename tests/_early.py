"""Loaded first by ``make test`` (``-p tests._early``), before the plugins pytest finds through
entry points: nbval imports nbformat, nbformat jsonschema, and jsonschema builds
``rfc3987_syntax``'s 38 grammars as it loads (1.2 s of CPU in each pytest process, the main one
and every xdist worker), though no test checks an IRI. Imported here as the report imports it
(:mod:`txkit.report._imports`): the grammars are built only if an IRI is checked.

Not in ``addopts``: a bare ``pytest`` started from elsewhere than the checkout could not import
``tests`` before ``pythonpath`` applies, and would stop at this plugin.
"""

from txkit.report._imports import import_jsonschema

import_jsonschema()
