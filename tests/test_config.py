"""Configuration: the key and base URL checked before any request, and ``.env`` read by
python-dotenv (comments, quotes, a BOM, ``export<TAB>``; the environment wins, not silently)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.factories import page, record, run_cli
from tests.hostile import HostileServer, ok_page
from txkit import Client, config
from txkit.errors import ConfigError

# Letters and digits that no message word holds, so that any piece of the key is found.
CORE = "Zq7Xw3Kp9Vb2Jt6R"
KEY = f"sk_test_{CORE}"
URL = "https://api.example.test"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TXKIT_BASE_URL", raising=False)
    monkeypatch.delenv("TXKIT_SECRET_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    import txkit.config

    monkeypatch.setattr(txkit.config, "_shadowed_warned", set())


def recording() -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=page([record(0)]))

    return httpx.MockTransport(handler), seen


def no_part_of_the_key(text: str) -> None:
    assert not any(CORE[i : i + 3] in text for i in range(len(CORE) - 2)), text


BAD_KEYS = [
    ("newline", f"{KEY}\n", "ends with a line break"),
    ("crlf", f"{KEY}\r\n", "ends with a line break"),
    ("trailing space", f"{KEY} ", "ends with a space"),
    ("leading space", f" {KEY}", "starts with a space"),
    ("tab inside", f"sk_test_\t{CORE}", "holds a tab inside"),
    ("control", f"sk_test_{CORE}\x07", "U+0007"),
    ("zero-width space", f"{KEY}\u200b", "U+200B"),
    ("no-break space", f"{KEY}\u00a0", "U+00A0"),
    ("non-ASCII", f"sk_test_\u2019{CORE}", "non-ASCII character"),
    ("full-width", f"sk_test_{CORE}\uff11", "non-ASCII character"),
    ("quoted", f'"{KEY}"', "wrapped in quote marks"),
    ("blank", " \n", "empty or only whitespace"),
]


@pytest.mark.parametrize(("label", "key", "what"), BAD_KEYS, ids=[c[0] for c in BAD_KEYS])
@pytest.mark.parametrize("where", ["environment", ".env", "argument"])
def test_a_bad_key_is_a_config_error_naming_the_variable_and_where_it_came_from(
    label: str, key: str, what: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    transport, seen = recording()
    if where == "environment":
        monkeypatch.setenv("TXKIT_SECRET_KEY", key)
        given = None
    elif where == ".env":
        # Single quotes keep the value exactly as written (a line break included).
        Path(".env").write_text(f"TXKIT_SECRET_KEY='{key}'\n", encoding="utf-8")
        given = None
    else:
        given = key
    with pytest.raises(ConfigError) as info:
        Client(URL, given, transport=transport)
    message = str(info.value)
    assert message.startswith("TXKIT_SECRET_KEY (from ") and what in message, message
    origin = {
        "environment": "from the environment",
        ".env": f"from the .env file {Path('.env').absolute()}",
        "argument": "from the secret_key argument",
    }[where]
    assert origin in message and "\n" not in message
    assert "the key is not shown" in message
    no_part_of_the_key(message + repr(info.value))
    assert seen == []


@pytest.mark.parametrize(
    ("url", "what"),
    [
        (f"{URL}\n", "ends with a line break"),
        (f" {URL}", "starts with a space"),
        ("https://api.ex\u00e4mple.test", "U+00E4 (LATIN SMALL LETTER A WITH DIAERESIS)"),
        ("https://api.example.test/\x7f", "U+007F"),
        ("https://api example.test", "holds a space inside"),
    ],
)
def test_a_bad_base_url_is_a_config_error_naming_the_variable(
    url: str, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXKIT_BASE_URL", url)
    transport, seen = recording()
    with pytest.raises(ConfigError) as info:
        Client(secret_key=KEY, transport=transport)
    message = str(info.value)
    assert message.startswith("TXKIT_BASE_URL (from the environment) ") and what in message
    assert "e.g. https://api.example.com" in message and seen == []


@pytest.mark.slow  # processes of its own: seconds, out of the quick loop
@pytest.mark.parametrize("key", [f"{KEY}\n", f"sk_test_\u00e9{CORE}", f"{KEY} "])
def test_the_cli_stops_before_any_request_and_never_retries(key: str, tmp_path: Path) -> None:
    """Before: a trailing newline was retried for 25 s and reported as a network failure;
    a non-ASCII character ended with a bare ``'ascii' codec`` message."""
    with HostileServer(lambda seen: ok_page(3)) as server:
        started = time.monotonic()
        done = run_cli(
            "export", "-o", "x.parquet", cwd=tmp_path,
            env={"TXKIT_BASE_URL": server.base_url, "TXKIT_SECRET_KEY": key}, timeout=120,
        )  # fmt: skip
        took = time.monotonic() - started
        assert server.seen == []
    assert done.returncode == 2, done.stderr  # the user's setting (issue 48)
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith("txkit: error: ConfigError: ")
    assert "TXKIT_SECRET_KEY (from the environment)" in line
    assert "codec" not in line and "NetworkError" not in line and "retr" not in line
    no_part_of_the_key(done.stdout + done.stderr)
    assert took < 20, "no retry, no backoff"
    assert not (tmp_path / "x.parquet").exists()


# ---------------------------------------------------------------------------------------------
# .env, read by python-dotenv


def sent_key(**kw: object) -> str:
    """The Authorization header the client sends, configured from ``.env``/the environment."""
    transport, seen = recording()
    with Client(transport=transport, **kw) as client:  # type: ignore[arg-type]
        client.get_transactions({})
    return seen[0].headers["authorization"].removeprefix("Bearer ")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        (f"TXKIT_SECRET_KEY={KEY} # the test key\n", "inline comment"),
        (f"TXKIT_SECRET_KEY={KEY}\t# the test key\n", "inline comment after a tab"),
        (f'TXKIT_SECRET_KEY="{KEY}" # the test key\n', "double quotes, then a comment"),
        (f"TXKIT_SECRET_KEY='{KEY}'  # the test key\n", "single quotes, then a comment"),
        (f"export\tTXKIT_SECRET_KEY={KEY}\n", "export and a tab"),
        (f"export  TXKIT_SECRET_KEY = {KEY}\n", "export, spaces around ="),
        (f"\ufeffTXKIT_SECRET_KEY={KEY}\n", "UTF-8 BOM on the first line"),
        (f"# settings\r\nTXKIT_SECRET_KEY={KEY}\r\n", "CRLF line ends"),
        (f"TXKIT_SECRET_KEY=\n# comment\nTXKIT_SECRET_KEY={KEY}\n", "set twice: the last wins"),
    ],
)
def test_dotenv_lines_parse_as_users_expect(text: str, label: str) -> None:
    Path(".env").write_bytes(f"TXKIT_BASE_URL={URL}\n{text}".encode() if "\ufeff" not in text
                             else f"{text}TXKIT_BASE_URL={URL}\n".encode())  # fmt: skip
    assert sent_key() == KEY, label


@pytest.mark.parametrize("quote", ["'", '"', ""])
def test_dollars_are_taken_as_written(quote: str) -> None:
    """No ``${VAR}`` expansion: python-dotenv would expand it even between single quotes, and a
    key is a value to send as written."""
    odd = "sk_test_$HOME+x${PATH}"
    Path(".env").write_text(f"TXKIT_BASE_URL={URL}\nTXKIT_SECRET_KEY={quote}{odd}{quote}\n")
    assert sent_key() == odd


def test_a_bom_no_longer_hides_the_only_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the BOM made the first name ``\\ufeffTXKIT_SECRET_KEY``, so a ``.env`` holding
    only the key looked unconfigured and the sandbox started silently."""
    from txkit.config import default_store, key_configured

    Path(".env").write_bytes(f"\ufeffTXKIT_SECRET_KEY={KEY}\n".encode())
    assert key_configured()
    Path(".env").write_bytes(
        f"\ufeffTXKIT_BASE_URL={URL} # prod\nTXKIT_SECRET_KEY={KEY}\n".encode()
    )
    assert default_store().name == "api.example.test"


def test_the_environment_wins_over_dotenv_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    Path(".env").write_text(f"TXKIT_BASE_URL={URL}\nTXKIT_SECRET_KEY=sk_test_fromfile_{CORE}\n")
    monkeypatch.setenv("TXKIT_SECRET_KEY", KEY)
    with caplog.at_level(logging.WARNING, logger="txkit"):
        assert sent_key() == KEY
        assert sent_key() == KEY
    warnings = [r.getMessage() for r in caplog.records if "TXKIT_SECRET_KEY" in r.getMessage()]
    assert len(warnings) == 1, warnings  # once per process
    assert "environment's value is used" in warnings[0]
    assert str(Path(".env").absolute()) in warnings[0]
    no_part_of_the_key(warnings[0])
    # The same value in both places is no conflict.
    caplog.clear()
    monkeypatch.setenv("TXKIT_BASE_URL", URL)
    with caplog.at_level(logging.WARNING, logger="txkit"):
        sent_key()
    assert not [r for r in caplog.records if "TXKIT_BASE_URL" in r.getMessage()]


def test_a_dotenv_that_is_not_utf8_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    Path(".env").write_bytes(
        f"TXKIT_BASE_URL={URL}\nTXKIT_SECRET_KEY=sk_\xe9{CORE}\n".encode("cp1252")
    )
    with pytest.raises(ConfigError, match=r"\.env is not UTF-8 text \(line 2\): save it as UTF-8"):
        Client()


@pytest.mark.slow  # processes of its own: seconds, out of the quick loop
def test_cli_sends_the_key_without_its_dotenv_comment(tmp_path: Path) -> None:
    """Before: ``KEY=value # comment`` sent ``value # comment`` as the key."""
    with HostileServer(lambda seen: ok_page(3)) as server:
        (tmp_path / ".env").write_text(
            f"export\tTXKIT_BASE_URL={server.base_url}  # the sandbox\n"
            f'TXKIT_SECRET_KEY="{KEY}" # rotated monthly\n'
        )
        done = run_cli("export", "-o", "x.parquet", "--no-confirm", cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stderr
        assert {s.headers["authorization"] for s in server.seen} == {f"Bearer {KEY}"}


@pytest.fixture
def fresh_generator_digest() -> Iterator[None]:
    config._generator_digest.cache_clear()
    yield
    config._generator_digest.cache_clear()


@pytest.mark.parametrize("module", ["ledger/_orders.py", "_render.py"])
def test_the_sandbox_cache_key_changes_with_the_generator_and_its_rendering(
    module: str, monkeypatch: pytest.MonkeyPatch, fresh_generator_digest: None
) -> None:
    # The cached orders, ground truth and bank files must match the records served: a change
    # to how they are rendered (money, times: sandbox/_render.py) is a new ledger too.
    before = config.SANDBOX.key
    changed = Path(config.__file__).resolve().parent / "sandbox" / module
    original = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        return original(self) + (b"\n# changed\n" if self == changed else b"")

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    config._generator_digest.cache_clear()
    assert config.SANDBOX.key != before
