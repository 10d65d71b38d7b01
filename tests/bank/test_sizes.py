"""Hostile sizes (issue 36): the statement readers take time linear in the file's size and a
bounded memory, measured in a fresh process (CPU seconds, the process's peak resident set).

Before: 16,000 one-line MT940 statements took 10.8 s, 32,000 took 113 s and 64,000 had not
ended after 900 s (each balance was checked against every entry); one ``:86:`` of a million
lines had not ended after 600 s (string concatenation); a 205 MB camt.053 peaked at 3.9 GB
(the whole tree in memory)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.serial]  # each measures a process's time and memory


def _measure(path: Path) -> tuple[float, float, str]:
    """(CPU seconds, peak MB, what was read) of ``read_statement(path)`` in a fresh process;
    CPU time, not wall time, since the machine may be shared."""
    code = (
        "import resource, sys\n"
        "from txkit.bank import read_statement\n"
        "start = resource.getrusage(resource.RUSAGE_SELF)\n"
        "s = read_statement(sys.argv[1])\n"
        "end = resource.getrusage(resource.RUSAGE_SELF)\n"
        "cpu = end.ru_utime + end.ru_stime - start.ru_utime - start.ru_stime\n"
        "peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024\n"
        "longest = max(len(n or '') for n in s.entries['narration'])\n"
        "print(f'{cpu:.2f} {peak:.0f} {s.entries.height} {s.balances.height} {longest}')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        env=env | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cpu, peak, *counts = done.stdout.split()
    print(f"{path.name} ({path.stat().st_size / 1e6:.1f} MB): {cpu} s CPU, peak {peak} MB")
    return float(cpu), float(peak), " ".join(counts)


def _statements(count: int) -> str:
    return "".join(
        f":20:S{i}\n:25:ACC\n:28C:{i}\n:60F:C261030EUR{100_000 + i},00\n"
        f":61:2610311031C1,00NTRFREF{i}//B{i}\n:86:PAY {i}\n:62F:C261031EUR{100_001 + i},00\n-\n"
        for i in range(count)
    )


def test_an_mt940_of_64000_statements_is_read_in_linear_time(tmp_path: Path) -> None:
    small, large = tmp_path / "16000.sta", tmp_path / "64000.sta"
    small.write_text(_statements(16_000))
    large.write_text(_statements(64_000))  # 8.6 MB
    cpu_small, _, read_small = _measure(small)
    cpu_large, peak, read_large = _measure(large)
    assert read_small.startswith("16000 16000") and read_large.startswith("64000 64000")
    # Four times the file, about four times the time (entries x statements would be 16).
    assert cpu_large < 6 * cpu_small + 2, (cpu_small, cpu_large)
    assert cpu_large < 60 and peak < 800, (cpu_large, peak)


def test_an_86_of_a_million_lines_is_read_whole_in_seconds(tmp_path: Path) -> None:
    path = tmp_path / "long.sta"
    line = "CONTINUATION LINE OF TEXT\n"
    path.write_text(
        ":20:S\n:25:ACC\n:28C:1\n:60F:C261030EUR100,00\n:61:2610311031C1,00NTRFREF//B\n"
        ":86:START\n" + line * 1_000_000 + ":62F:C261031EUR101,00\n-\n"
    )  # 26 MB
    cpu, peak, read = _measure(path)
    entries, balances, longest = read.split()
    assert (entries, balances) == ("1", "1")
    assert int(longest) == len("START") + len(line) * 1_000_000  # each line kept, one blank apart
    assert cpu < 30 and peak < 900, (cpu, peak)


def _camt(entries: int) -> Iterator[bytes]:
    yield (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><BkToCstmrStmt>'
        "<GrpHdr><MsgId>M</MsgId><CreDtTm>2026-11-01T00:00:00</CreDtTm></GrpHdr>\n"
        "<Stmt><Id>S</Id><Acct><Id><IBAN>NL00BANK0123456789</IBAN></Id><Ccy>EUR</Ccy></Acct>\n"
        '<Bal><Tp><CdOrPrtry><Cd>OPBD</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">0.00</Amt>'
        "<CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2026-10-31</Dt></Dt></Bal>\n"
        f'<Bal><Tp><CdOrPrtry><Cd>CLBD</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">{entries}.00</Amt>'
        "<CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2026-11-01</Dt></Dt></Bal>\n"
    ).encode()
    for i in range(entries):
        yield (
            '<Ntry><Amt Ccy="EUR">1.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts>'
            "<BookgDt><Dt>2026-11-01</Dt></BookgDt><ValDt><Dt>2026-11-01</Dt></ValDt>"
            f"<AcctSvcrRef>BANKREF{i}</AcctSvcrRef><NtryDtls><TxDtls><Refs>"
            f"<EndToEndId>E2E-{i}</EndToEndId></Refs><RmtInf><Ustrd>PAYMENT FOR ORDER {i} "
            "FROM A CUSTOMER OF THE MERCHANT</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>\n"
        ).encode()
    yield b"</Stmt></BkToCstmrStmt></Document>\n"


def test_a_large_camt053_is_read_in_bounded_memory(tmp_path: Path) -> None:
    small, large = tmp_path / "small.xml", tmp_path / "large.xml"
    for path, entries in ((small, 15_000), (large, 60_000)):
        with path.open("wb") as out:
            out.writelines(_camt(entries))
    cpu_small, peak_small, _ = _measure(small)
    cpu_large, peak_large, read = _measure(large)  # 22 MB
    assert read.startswith("60000 1")
    # The tree is dropped entry by entry: what grows is the entries read, about 2 KB each
    # with the file's bytes (the whole tree took 19 times the file: 3.9 GB for 205 MB).
    size = large.stat().st_size / 1e6
    assert peak_large - peak_small < 5 * size, (peak_small, peak_large, size)
    assert cpu_large < 5 * cpu_small + 2 and cpu_large < 60, (cpu_small, cpu_large)
