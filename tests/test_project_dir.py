"""One project folder for every path a notebook reads or writes (issue 35): data, reports,
``.env`` and ``materiality.toml`` are found the same way from the project folder, from
``notebooks/`` (JupyterLab's kernel), from the report's staging folder and from any subfolder."""

from __future__ import annotations

from pathlib import Path

import pytest

from txkit import config


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in config.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "01_explore.ipynb").write_text("{}")
    (root / "reports" / ".2026-10.abc123").mkdir(parents=True)
    (root / "data").mkdir()
    return root


@pytest.mark.parametrize(
    "where", [".", "notebooks", "reports", "reports/.2026-10.abc123", "data"], ids=str
)
def test_every_folder_of_the_project_finds_the_same_data_reports_and_env(
    project: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / ".env").write_text(
        "TXKIT_BASE_URL=https://api.example.com\nTXKIT_SECRET_KEY=sk_test_abcdefghijklmnop\n"
    )
    monkeypatch.chdir(project / where)
    assert (Path.cwd() / config.project_dir()).resolve() == project.resolve()
    assert (Path.cwd() / config.data_dir()).resolve() == (project / "data").resolve()
    assert (Path.cwd() / config.reports_dir()).resolve() == (project / "reports").resolve()
    assert config.key_configured()  # the project's .env, also from notebooks/
    assert config.default_store().resolve() == (project / "data/store/api.example.com").resolve()


def test_the_project_folder_itself_keeps_relative_paths(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert config.data_dir() == Path("data")  # messages keep naming data/...
    assert config.reports_dir() == Path("reports")


def test_a_folder_outside_any_project_is_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in config.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "loose").mkdir()
    monkeypatch.chdir(tmp_path / "loose")
    assert config.project_dir() == Path(".")
    assert config.data_dir() == Path("data")


def test_txkit_data_dir_still_moves_the_data_alone(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "notebooks")
    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "elsewhere"))
    assert config.data_dir() == tmp_path / "elsewhere"
    assert (Path.cwd() / config.reports_dir()).resolve() == (project / "reports").resolve()


# One project rule (issue 45): a txkit.toml marks the project, every relative path is read from
# it, and every "no such file" names the folder it looked in.


@pytest.fixture
def initialised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project as `txkit init` lays it out: only txkit.toml marks it."""
    for name in config.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "acme"
    for folder in ("notebooks", "inputs/2026-10"):
        (root / folder).mkdir(parents=True)
    (root / "txkit.toml").write_text("[orders]\n")
    return root


@pytest.mark.parametrize("where", ["inputs", "inputs/2026-10"], ids=str)
def test_txkit_toml_marks_the_project(
    initialised: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(initialised / where)
    assert (Path.cwd() / config.project_dir()).resolve() == initialised.resolve()


def test_a_notebook_parameter_is_read_from_the_project_folder(
    initialised: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (initialised / "inputs" / "orders.csv").write_text("reference,amount,currency\n")
    monkeypatch.chdir(initialised / "notebooks")  # JupyterLab's kernel
    resolved = Path(config.resolve_orders("inputs/orders.csv"))
    assert resolved.resolve() == (initialised / "inputs" / "orders.csv").resolve()
    assert config.resolve_orders("sandbox") == "sandbox"
    absolute = str(initialised / "elsewhere.csv")
    assert config.resolve_orders(absolute) == absolute


def test_a_relative_txkit_data_dir_is_read_from_the_project_folder(
    initialised: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXKIT_DATA_DIR", "shared-data")
    monkeypatch.setenv("TXKIT_CACHE_DIR", "cache")
    for where in (".", "notebooks"):
        monkeypatch.chdir(initialised / where)
        assert config.data_dir().resolve() == (initialised / "shared-data").resolve()
        assert config.cache_dir().resolve() == (initialised / "cache").resolve()


def test_no_such_file_names_the_folder_it_looked_in(
    initialised: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txkit.errors import DataFileError
    from txkit.inputs import check_input

    monkeypatch.chdir(initialised / "notebooks")
    with pytest.raises(DataFileError) as caught:
        check_input(config.resolve_orders("inputs/orders.csv"), what="orders file")
    assert f"looked in {(initialised / 'inputs').resolve()}" in str(caught.value)


def test_the_cli_reads_relative_flags_from_the_project_folder(initialised: Path) -> None:
    from tests.factories import invoke_cli

    (initialised / "notebooks" / "01_explore.ipynb").write_text("{}")
    done = invoke_cli(
        "report", "--month", "2026-10", "--orders", "inputs/none.csv", cwd=initialised / "inputs"
    )
    assert done.returncode == 2, done.stderr
    assert "no orders file" in done.stderr
    assert f"looked in {(initialised / 'inputs').resolve()}" in done.stderr
