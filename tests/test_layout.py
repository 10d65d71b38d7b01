"""The package's shape: one configuration module, no import cycles, a pinned public API (and
make test's serial pass names every file with a serial test)."""

from __future__ import annotations

import ast
import functools
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import txkit
from txkit import config

PACKAGE = Path(txkit.__file__).resolve().parent
_TXKIT_NAME = re.compile(r"TXKIT_[A-Z]")


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


@functools.cache
def _parse(source: str) -> ast.Module:
    """The tree of a source, parsed once per process (six tests walk every module, some more
    than once). Keyed by the text, not the path: two tests feed a module an extra import.
    Nothing may change a returned tree: it is shared."""
    return ast.parse(source)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings (documentation may name a variable)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_every_txkit_variable_is_named_only_in_the_config_module() -> None:
    # A name written twice drifts (issue 21 found TXKIT_* names in seven modules): messages,
    # help texts and readers take it from txkit.config. Docstrings may mention it.
    offenders = []
    for name, path in _modules().items():
        if name == "txkit.config":
            continue
        tree = _parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and _TXKIT_NAME.search(node.value)
            ):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, f"TXKIT_* names outside txkit/config.py: {offenders}"


def test_the_config_module_names_every_variable_once() -> None:
    source = (PACKAGE / "config.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    assigned = [
        node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and node.value.value.startswith("TXKIT_")
    ]
    assert sorted(assigned) == sorted(set(assigned)) == sorted(config.VARIABLES)
    assert {
        "TXKIT_BASE_URL",
        "TXKIT_SECRET_KEY",
        "TXKIT_DATA_DIR",
        "TXKIT_CACHE_DIR",
        "TXKIT_MAX_BODY_MB",
        "TXKIT_MAX_RETRIES",
        "TXKIT_BACKOFF_BASE",
        "TXKIT_MAX_TOTAL",
        "TXKIT_PROGRESS",
        "TXKIT_RESPONSE_DEADLINE",
        "TXKIT_BANK_COLUMNS",
        "TXKIT_ORDERS_COLUMNS",
        "TXKIT_STORE_KEEP_DAYS",
        "TXKIT_REPORT_CACHE",
        "TXKIT_MAX_INPUT_MB",
        "TXKIT_PDF_PASSWORD",
        "TXKIT_KEY_PASSPHRASE",
    } == set(config.VARIABLES)


def _imports(
    name: str, path: Path, modules: dict[str, Path], *, typing: bool = False
) -> list[tuple[str, int, bool]]:
    """The txkit modules ``name`` imports: (module, line, inside a function). Imports under
    ``if TYPE_CHECKING:`` are left out (they never run) unless ``typing``."""
    source = path.read_text(encoding="utf-8")
    return list(_imports_in(name, path.name == "__init__.py", source, frozenset(modules), typing))


@functools.cache
def _imports_in(
    name: str, is_package: bool, source: str, modules: frozenset[str], typing: bool
) -> tuple[tuple[str, int, bool], ...]:
    """``_imports`` of one text, once per process (walking every node of a module costs more
    than parsing it; five tests ask for every module's imports)."""
    found: list[tuple[str, int, bool]] = []

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = node.module or ""
        if node.level:
            parts = name.split(".") if is_package else name.split(".")[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, *([node.module] if node.module else [])])
        # ``from package import module`` imports the module; ``from module import name`` the
        # module itself.
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                not typing
                and isinstance(child, ast.If)
                and "TYPE_CHECKING" in ast.unparse(child.test)
            ):
                continue
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in targets(child):
                    resolved = resolve(target) if target.startswith("txkit") else None
                    if resolved and resolved != name:
                        found.append((resolved, child.lineno, inner))
            visit(child, inner)

    visit(_parse(source), False)
    return tuple(found)


def _import_graph(*, typing: bool = False) -> dict[str, set[str]]:
    """Module -> the modules importing it runs, counting imports inside functions (and, with
    ``typing``, the imports under ``if TYPE_CHECKING:``).

    Importing ``txkit.a.b`` also runs the package ``txkit.a`` (its ``__init__``), unless the
    importer is inside ``txkit.a`` already (then the package is being initialised anyway):
    the sandbox importing ``txkit.fetch.client`` depends on everything ``txkit/fetch/__init__``
    imports. The root package is left out: every module is inside it.
    """
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, _, _ in _imports(name, path, modules, typing=typing):
            parts = target.split(".")
            for end in range(2, len(parts) + 1):
                step = ".".join(parts[:end])
                if step in modules and step != name and not name.startswith(step + "."):
                    graph[name].add(step)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_txkit_modules() -> None:
    # Imports inside functions count: they run too, and used to hide a cycle through cli,
    # report, the probe's and the sandbox's commands.
    assert _cycles(_import_graph()) == []


def test_no_import_cycle_even_through_type_only_imports() -> None:
    # Modules of one package count as much as packages (a cycle of nine phase modules and
    # their generator inside sandbox/ledger hid behind TYPE_CHECKING): a type a module needs
    # lives below it, in a module both sides import.
    assert _cycles(_import_graph(typing=True)) == []


def test_the_cycle_test_sees_modules_inside_one_package(monkeypatch: pytest.MonkeyPatch) -> None:
    phase = PACKAGE / "sandbox" / "ledger" / "_fees.py"
    text = phase.read_text(encoding="utf-8") + (
        "\nif TYPE_CHECKING:\n    from txkit.sandbox.ledger._generator import _Generator\n"
    )
    original = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        return text if self == phase else original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    assert _cycles(_import_graph()) == []
    [cycle] = _cycles(_import_graph(typing=True))
    assert {"txkit.sandbox.ledger._fees", "txkit.sandbox.ledger._generator"} <= set(cycle)


def _private_imports() -> list[str]:
    """Imports of another package's private module (``txkit.X._y`` from outside ``txkit.X``):
    what a package offers the others is in its ``__init__``."""
    modules = _modules()
    found = []
    for name, path in modules.items():
        for target, line, _ in _imports(name, path, modules):
            parts = target.split(".")
            private = next((i for i in range(2, len(parts)) if parts[i].startswith("_")), None)
            if private is None:
                continue
            owner = ".".join(parts[:private])
            if name != owner and not name.startswith(owner + "."):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    return found


def test_no_package_imports_another_packages_private_module() -> None:
    assert _private_imports() == []


def test_the_private_import_finder_finds_one(monkeypatch: pytest.MonkeyPatch) -> None:
    module = PACKAGE / "report" / "_run.py"
    text = module.read_text(encoding="utf-8") + "\nfrom txkit.store._location import store_name\n"
    original = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        return text if self == module else original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    [found] = _private_imports()
    assert found.startswith("txkit/report/_run.py:") and found.endswith("txkit.store._location")


def test_the_top_level_holds_at_most_twelve_modules() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 60


def _sources() -> dict[str, str]:
    return {
        path.relative_to(PACKAGE.parent).as_posix(): path.read_text(encoding="utf-8")
        for path in _modules().values()
    }


def _long_modules(sources: dict[str, str], limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    """The modules of more than ``limit`` lines, with their length."""
    lengths = {name: len(text.splitlines()) for name, text in sources.items()}
    return {name: length for name, length in lengths.items() if length > limit}


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of a function's body from its first statement after the docstring to its
    last (comments and blank lines between them count)."""
    body = function.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        body = body[1:]
    if not body:
        return 0
    return (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def _long_functions(sources: dict[str, str], limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """``path:Qualified.name`` -> body lines, for the functions of more than ``limit``."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef) and _body_lines(child) > limit:
                    found[f"{path}:{name}"] = _body_lines(child)
                visit(child, path, name + ".")
            else:
                visit(child, path, prefix)

    for path, text in sources.items():
        visit(_parse(text), path, "")
    return found


def test_no_module_is_over_800_lines() -> None:
    assert _long_modules(_sources()) == {}


def test_no_function_body_is_over_60_lines() -> None:
    assert _long_functions(_sources()) == {}


def _function(name: str, body_lines: int, docstring_lines: int = 0) -> str:
    doc = ['    """'] + ["    text"] * docstring_lines + ['    """'] if docstring_lines else []
    body = [f"    x{i} = {i}" for i in range(body_lines)]
    return "\n".join([f"def {name}() -> None:", *doc, *body]) + "\n"


def test_the_length_checks_find_a_long_module_and_function() -> None:
    source = (
        _function("short", 60, docstring_lines=30)
        + "class Holder:\n"
        + "".join("    " + line + "\n" for line in _function("method", 61).splitlines())
        + _function("outer", 3)
        + "    "
        + _function("inner", 61).replace("\n", "\n    ").rstrip()
        + "\n"
    )
    assert _long_functions({"m.py": source}) == {
        "m.py:Holder.method": 61,
        "m.py:outer": 65,
        "m.py:outer.inner": 61,
    }
    lines = len(source.splitlines())
    assert _long_modules({"m.py": source}, limit=lines) == {}
    assert _long_modules({"m.py": source + "x = 1\n"}, limit=lines) == {"m.py": lines + 1}


#: Imports of txkit modules allowed inside a function, each with its reason. Function-level
#: imports are for optional heavy dependencies (deltalake, papermill, matplotlib, great_tables,
#: IPython), never for txkit's own modules: they hide cycles and the order of initialisation.
FUNCTION_LEVEL_TXKIT_IMPORTS: dict[tuple[str, str], str] = {}


def test_txkit_modules_are_imported_at_the_top() -> None:
    modules = _modules()
    inside = {
        (name, target): line
        for name, path in modules.items()
        for target, line, in_function in _imports(name, path, modules)
        if in_function
    }
    unexplained = {k: v for k, v in inside.items() if k not in FUNCTION_LEVEL_TXKIT_IMPORTS}
    assert not unexplained, f"txkit imports inside functions (module, target): line {unexplained}"
    assert set(FUNCTION_LEVEL_TXKIT_IMPORTS) <= set(inside), "an allowed import is gone"


#: The top-level API (issue 21): a change here is a change of txkit's public interface.
PUBLIC = [
    "ApiError",
    "AuthError",
    "BadRequestError",
    "Client",
    "ConfigError",
    "DataFileError",
    "ExportStats",
    "IncompleteExportError",
    "IncompleteExportWarning",
    "LimitExceededError",
    "NetworkError",
    "RateLimitedError",
    "ResponseFormatError",
    "RetryPolicy",
    "SchemaError",
    "ServerError",
    "TxkitError",
    "activity_history",
    "load_transactions",
    "mask_pii",
    "read_orders",
    "scan_store",
    "sync",
]


def test_the_top_level_api_is_pinned_importable_and_documented() -> None:
    assert txkit.__all__ == PUBLIC
    for name in PUBLIC:
        value = getattr(txkit, name)
        assert (value.__doc__ or "").strip(), f"txkit.{name} has no docstring"
        assert value.__module__.startswith("txkit."), name
    namespace: dict[str, object] = {}
    exec("from txkit import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(PUBLIC)


def test_every_public_module_exports_what_it_lists() -> None:
    for name in (
        "txkit.analysis",
        "txkit.cli",
        "txkit.config",
        "txkit.decode",
        "txkit.errors",
        "txkit.fetch",
        "txkit.notebook",
        "txkit.notebook.findings",
        "txkit.notebook.plots",
        "txkit.notebook.tables",
        "txkit.probe",
        "txkit.report",
        "txkit.sandbox",
        "txkit.store",
    ):
        module = importlib.import_module(name)
        assert module.__all__ == sorted(module.__all__, key=str) or module.__all__, name
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert not missing, f"{name} lists names it does not have: {missing}"
        assert len(set(module.__all__)) == len(module.__all__), name


#: A test marked serial: a decorator, or the module's ``pytestmark``.
_SERIAL_MARK = re.compile(
    r"^(@pytest\.mark\.serial\b|pytestmark\b.*\bpytest\.mark\.serial\b)", re.M
)


def test_the_serial_pass_collects_every_file_with_a_serial_test() -> None:
    """``make test``'s serial pass (``-m serial``) may name its files rather than ``tests``
    (collecting the whole suite for 17 tests cost 4.6 s of CPU): then every file with a test
    marked serial must be named, or that test would run in neither pass (the parallel pass
    leaves out ``serial``)."""
    root = PACKAGE.parent
    makefile = (root / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    (command,) = [line for line in makefile.splitlines() if "-m serial" in line]
    named = set(re.findall(r"tests/\S+\.py", command))
    marked = {
        path.relative_to(root).as_posix()
        for path in (root / "tests").rglob("test_*.py")
        if _SERIAL_MARK.search(path.read_text(encoding="utf-8"))
    }
    assert marked, "no serial test found: the search is broken"
    if named:
        assert named == marked, (
            f"the serial pass names {sorted(named)}, serial tests are in {sorted(marked)}"
        )
    else:
        assert re.search(r"\stests(\s|$)", command), command


def test_import_txkit_loads_none_of_the_heavy_parts_until_used() -> None:
    """``import txkit`` (issue 45): the sandbox, the report, the register, the store and the
    notebook machinery load when a name that needs them is used, not before."""
    code = (
        "import sys, txkit\n"
        "before = sorted(sys.modules)\n"
        "txkit.Client\n"
        "print(' '.join(before)); print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    before, after = (set(line.split()) for line in done.stdout.splitlines())
    heavy = {"txkit.sandbox", "txkit.report", "txkit.register", "txkit.store", "txkit.fetch",
             "txkit.analysis", "polars", "papermill", "nbconvert", "nbformat", "jupyterlab",
             "ipykernel", "deltalake"}  # fmt: skip
    assert not heavy & before, sorted(heavy & before)
    # The client alone: no store, no sandbox.
    assert "txkit.fetch.client" in after and not {"txkit.sandbox", "txkit.store"} & after


#: What the inputs package may not import: it reads files into frames, and the layers above
#: it (analyses, notebooks, the report, the register, the command line) take those frames.
_ABOVE_INPUTS = ("txkit.analysis", "txkit.report", "txkit.notebook", "txkit.register", "txkit.cli")
#: Names of txkit.inputs that open or parse a file.
_READERS = frozenset(
    {"read_orders", "read_orders_file", "read_statement", "read_statements", "read_table",
     "read_csv_table", "read_text", "read_input", "read_grid", "check_input", "check_suffix"}
)  # fmt: skip


#: A call that opens or parses a file: open(), Path's readers, polars' file readers.
_OPENS = r"open|.*\.(open|read_bytes|read_text)|(pl|polars)\.(read|scan)_\w+"


def _inputs_formats() -> list[str]:
    """The format subpackages: every package directly inside txkit/inputs/."""
    root = PACKAGE / "inputs"
    return sorted(p.parent.name for p in root.glob("*/__init__.py"))


def _inputs_upward_imports() -> list[str]:
    """Imports (type-only ones too) of a layer above txkit.inputs by a module of it."""
    modules = _modules()
    return [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
        for name, path in modules.items()
        if name == "txkit.inputs" or name.startswith("txkit.inputs.")
        for target, line, _ in _imports(name, path, modules, typing=True)
        if target.startswith(_ABOVE_INPUTS)
    ]


def _analysis_file_access() -> list[str]:
    """Where a module of txkit.analysis imports a reader of txkit.inputs or opens a file (the
    package's __init__ re-exports read_orders where the docs show it: not a module's use)."""
    offenders = []
    for name, path in _modules().items():
        if not name.startswith("txkit.analysis."):
            continue
        tree = _parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("txkit.inputs")
                and (names := {a.name for a in node.names} & _READERS)
            ):
                offenders.append(f"{path.name}:{node.lineno} imports {sorted(names)}")
            if isinstance(node, ast.Call):
                func = ast.unparse(node.func)
                if re.fullmatch(_OPENS, func) or func.rpartition(".")[2] in _READERS:
                    offenders.append(f"{path.name}:{node.lineno} calls {func}")
    return offenders


def test_inputs_imports_nothing_from_the_layers_above_it() -> None:
    assert _inputs_upward_imports() == []


def test_analysis_takes_frames_and_opens_no_file() -> None:
    assert _analysis_file_access() == []


def test_the_inputs_checks_find_what_they_look_for(monkeypatch: pytest.MonkeyPatch) -> None:
    planted = {
        PACKAGE / "inputs" / "_model.py": "\nfrom txkit.analysis._common import Frame\n",
        PACKAGE / "analysis" / "fees.py": (
            "\nfrom txkit.inputs import read_statements\n"
            "def _f(path):\n    return pl.read_csv(path), open(path), path.read_bytes()\n"
        ),
    }
    original = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        text = original(self, *args, **kwargs)
        return text + planted[self] if self in planted else text

    monkeypatch.setattr(Path, "read_text", read_text)
    [upward] = _inputs_upward_imports()
    assert upward.startswith("txkit/inputs/_model.py:") and upward.endswith("analysis._common")
    found = _analysis_file_access()
    assert [f.partition(" ")[2] for f in found] == [
        "imports ['read_statements']",
        "calls pl.read_csv",
        "calls open",
        "calls path.read_bytes",
    ]


def test_every_format_subpackage_is_registered_once() -> None:
    from txkit.inputs._format import Format
    from txkit.inputs.statements import FORMATS, REGISTRY

    formats = _inputs_formats()
    assert formats == ["camt", "csv", "mt940", "ofx", "pdf", "sheets"]
    registered = []
    for sub in formats:
        module = importlib.import_module(f"txkit.inputs.{sub}")
        assert isinstance(module.FORMAT, Format), sub
        assert "FORMAT" in module.__all__, sub
        registered.append(module.FORMAT)
    assert sorted(REGISTRY, key=id) == sorted(registered, key=id)
    assert len(set(map(id, REGISTRY))) == len(REGISTRY)
    # CSV claims any text: asked last, or it would take every other text format's files.
    assert REGISTRY[-1].name == "csv"
    assert sum(len(f.kinds) for f in REGISTRY) == len(FORMATS)


def test_nothing_outside_a_format_subpackage_imports_its_private_modules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # _private_imports covers the format subpackages as it covers every package: a sibling in
    # txkit.inputs (the registry, the mapped-table reader) goes through the subpackage's
    # __init__ too. Shown on a planted import.
    assert not [f for f in _private_imports() if "txkit.inputs." in f]
    module = PACKAGE / "inputs" / "statements.py"
    text = module.read_text(encoding="utf-8") + "\nfrom txkit.inputs.pdf._read import looks_like\n"
    original = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        return text if self == module else original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    [found] = _private_imports()
    assert found.startswith("txkit/inputs/statements.py:") and found.endswith("pdf._read")
