"""Hostile sizes (issues 36 and 46): the statement readers take time linear in the file's size
and a bounded memory, measured in a fresh process (CPU seconds, the process's peak resident
set); hostile OFX and PDF files are refused in one line within those bounds.

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

from tests.bank.pdf_files import bomb_pdf, deep_array_pdf, deep_pages_pdf, many_pages_pdf

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.serial]  # each measures a process's time and memory


def _measure(path: Path) -> tuple[float, float, str]:
    """(CPU seconds, peak MB, what was read) of ``read_statement(path)`` in a fresh process;
    CPU time, not wall time, since the machine may be shared."""
    code = (
        "import resource, sys\n"
        "from txkit.inputs import read_statement\n"
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


# Hostile OFX and PDF files (issue 46): refused in one line within bounds, in a fresh process
# (the PDFs are written byte by byte by tests/bank/pdf_files.py).
_REFUSAL_CODE = (
    "import resource, sys\n"
    "from txkit.inputs import read_statement\n"
    "from txkit.errors import DataFileError\n"
    "try:\n"
    "    s = read_statement(sys.argv[1])\n"
    "    said = f'read {s.entries.height} {s.balances.height}'\n"
    "except DataFileError as exc:\n"
    "    said = f'refused {exc}'\n"
    "use = resource.getrusage(resource.RUSAGE_SELF)\n"
    "peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024\n"
    "print(f'{use.ru_utime + use.ru_stime:.2f} {peak:.0f} {said}')\n"
)


def _measure_refusal(path: Path, **env: str) -> tuple[float, float, str]:
    """(CPU seconds, peak MB, what was said) of ``read_statement(path)`` in a fresh process
    (CPU time, not wall time: the machine may be shared; the import of txkit included)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
    done = subprocess.run(
        [sys.executable, "-c", _REFUSAL_CODE, str(path)],
        env=clean | {"PYTHONPATH": str(ROOT)} | env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cpu, peak, said = done.stdout.split(" ", 2)
    print(f"{path.name} ({path.stat().st_size / 1e6:.2f} MB): {cpu} s CPU, peak {peak} MB")
    assert "\n" not in said.strip(), said
    return float(cpu), float(peak), said.strip()


def test_a_pdf_whose_stream_inflates_to_gigabytes_is_refused_at_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "bomb.pdf"
    path.write_bytes(bomb_pdf(2 << 30))  # 2 GB of blanks in a 2 MB file
    assert path.stat().st_size < 4 << 20
    cpu, peak, said = _measure_refusal(path, TXKIT_MAX_INPUT_MB="4")
    assert said.startswith("refused") and "inflate past 32 MB (TXKIT_MAX_INPUT_MB x 8)" in said
    assert cpu < 20 and peak < 400, (cpu, peak)


def test_a_pdf_of_thousands_of_pages_is_refused_before_a_page_is_read(tmp_path: Path) -> None:
    path = tmp_path / "pages.pdf"
    path.write_bytes(many_pages_pdf(5_000))
    cpu, peak, said = _measure_refusal(path)
    assert "says it has 5,000 pages, over the 1,000 read" in said
    assert cpu < 20 and peak < 400, (cpu, peak)


def test_a_pdf_whose_page_count_lies_is_refused_at_the_thousandth_page(tmp_path: Path) -> None:
    path = tmp_path / "lying.pdf"
    path.write_bytes(many_pages_pdf(3_000, says=1))
    cpu, peak, said = _measure_refusal(path)
    assert "has over 1,000 pages (it says 1)" in said
    assert cpu < 60 and peak < 600, (cpu, peak)


@pytest.mark.parametrize(
    ("build", "problem"),
    [
        (lambda: deep_pages_pdf(20_000), "nests its objects too deep to be read"),
        (lambda: deep_array_pdf(200_000), "is a PDF statement of a layout not known"),
    ],
    ids=["page-tree-20000-deep", "array-200000-deep"],
)
def test_a_deeply_nested_pdf_is_refused_in_one_line(tmp_path: Path, build, problem: str) -> None:
    path = tmp_path / "deep.pdf"
    path.write_bytes(build())
    cpu, peak, said = _measure_refusal(path)
    assert said.startswith("refused") and problem in said, said
    assert cpu < 20 and peak < 600, (cpu, peak)


_OFX_HEAD = (
    "OFXHEADER:100\nDATA:OFXSGML\nVERSION:102\nSECURITY:NONE\nENCODING:USASCII\nCHARSET:1252\n"
    "COMPRESSION:NONE\nOLDFILEUID:NONE\nNEWFILEUID:NONE\n\n"
)


def _ofx_of(entries: int) -> str:
    rows = "".join(
        f"<STMTTRN><TRNTYPE>CREDIT<DTPOSTED>20261015<TRNAMT>{i}.25<FITID>F{i}"
        f"<NAME>PAYSTACK PAYOUT {i}</STMTTRN>\n"
        for i in range(entries)
    )
    total = sum(range(entries)) + entries * 0.25  # exact: quarters sum exactly in binary
    return (
        f"{_OFX_HEAD}<OFX><BANKMSGSRSV1><STMTTRNRS><TRNUID>1<STATUS><CODE>0<SEVERITY>INFO"
        "</STATUS><STMTRS><CURDEF>NGN<BANKACCTFROM><BANKID>058<ACCTID>0123456789<ACCTTYPE>"
        f"CHECKING</BANKACCTFROM><BANKTRANLIST><DTSTART>20261001<DTEND>20261031\n{rows}"
        f"</BANKTRANLIST><LEDGERBAL><BALAMT>{total:.2f}<DTASOF>20261031</LEDGERBAL></STMTRS>"
        "</STMTTRNRS></BANKMSGSRSV1></OFX>\n"
    )


def test_a_huge_ofx_is_refused_by_its_size_and_a_large_one_read_in_bounds(
    tmp_path: Path,
) -> None:
    large = tmp_path / "large.ofx"
    large.write_text(_ofx_of(100_000))  # 10 MB
    cpu, peak, said = _measure_refusal(large)
    assert said == "read 100000 1", said
    assert cpu < 60 and peak < 1_500, (cpu, peak)
    cpu, peak, said = _measure_refusal(large, TXKIT_MAX_INPUT_MB="2")
    assert said.startswith("refused") and "over the 2.0 MB read (TXKIT_MAX_INPUT_MB)" in said
    assert cpu < 10 and peak < 400, (cpu, peak)


def test_an_ofx_with_entities_is_refused_before_any_is_expanded(tmp_path: Path) -> None:
    laughs = '<!ENTITY l0 "lol">\n' + "".join(
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">\n' for i in range(1, 10)
    )
    path = tmp_path / "laughs.ofx"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<?OFX OFXHEADER="200" VERSION="220" SECURITY="NONE" OLDFILEUID="NONE" '
        'NEWFILEUID="NONE"?>\n'
        f"<!DOCTYPE OFX [\n{laughs}]>\n<OFX><SIGNONMSGSRSV1><SONRS><STATUS><CODE>0</CODE>"
        "<SEVERITY>INFO</SEVERITY></STATUS><LANGUAGE>&l9;</LANGUAGE></SONRS>"
        "</SIGNONMSGSRSV1></OFX>\n"
    )
    cpu, peak, said = _measure_refusal(path)
    assert "declares a DOCTYPE or entities, which an OFX statement never has" in said
    assert cpu < 10 and peak < 400, (cpu, peak)
