"""Empty: kept only so that command lines written during the session of 2026-11-27 with
``-p tests._early`` still run. It imported jsonschema without its IRI grammars; the package that
builds them is now left out of the install (``tools/uv-overrides.txt``). Remove after that
session."""
