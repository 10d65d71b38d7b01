"""MT940 and camt.053 as banks write them: each construct met in real files (issue 36), in a
small statement of its own, read with its balances proven; and what stays refused."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from txkit.analysis.settlements import match_settlements
from txkit.errors import DataFileError
from txkit.inputs import read_statement

BODY = """:20:STMT1
:25:NL00BANK0123456789
:28C:1/1
:60F:C261030EUR1000,00
:61:2610311031C250,00NTRFTXK-ONE//B1
:86:/EREF/TXK-ONE/REMI/SETTLEMENT
:61:2610311031D50,00NCHGNONREF//B2
:86:BANK CHARGES
:62F:C261031EUR1200,00
-
"""


def _write(tmp_path: Path, text: str, name: str = "s.sta", raw: bytes | None = None) -> Path:
    path = tmp_path / name
    path.write_bytes(raw if raw is not None else text.encode())
    return path


def _read(tmp_path: Path, text: str) -> pl.DataFrame:
    return read_statement(_write(tmp_path, text)).entries


def _amounts(entries: pl.DataFrame) -> list[str]:
    return [str(a) for a in entries["amount"]]


def test_several_statements_sharing_their_reference_are_each_proven_in_file_order(
    tmp_path: Path,
) -> None:
    # Sparkasse: every statement of the file is :20:STARTUMSE on the same :25:.
    second = BODY.replace(":60F:C261030EUR1000,00", ":60F:C261031EUR1200,00").replace(
        ":62F:C261031EUR1200,00", ":62F:C261101EUR1400,00"
    )
    statement = read_statement(_write(tmp_path, BODY + second))
    assert statement.entries.height == 4
    assert [
        (str(o), str(c)) for o, c in statement.balances.select("opening", "closing").rows()
    ] == [
        ("1000.00", "1200.00"),
        ("1200.00", "1400.00"),
    ]
    assert statement.balances["entries"].to_list() == [2, 2]


def test_a_statement_that_does_not_add_up_among_others_is_refused_at_its_closing_line(
    tmp_path: Path,
) -> None:
    second = BODY.replace(":60F:C261030EUR1000,00", ":60F:C261031EUR1200,00")
    with pytest.raises(DataFileError, match=r"line 19: .*closing balance says 1,200.00"):
        read_statement(_write(tmp_path, BODY + second))


@pytest.mark.parametrize(
    "header",
    [
        ":940:\n",  # Rabobank
        "0000 01INGBNL2AXXXX00001\n0000 78INGBNL2AXXXX00001\n940 00\n",  # ING, Van Lanschot
        "ABNANL2A\n940\nABNANL2A\n",  # ABN AMRO, bunq
        "\x01\n",  # SOH (mBank)
        "This is an example file\n\n",  # Danske Bank's samples
    ],
    ids=["rabobank", "ing", "abn-amro", "soh", "danske"],
)
def test_bank_header_lines_before_a_message_are_skipped(header: str, tmp_path: Path) -> None:
    entries = _read(tmp_path, header + BODY + header + BODY.replace("STMT1", "STMT2"))
    assert _amounts(entries) == ["250.00", "-50.00"] * 2


def test_trailing_control_characters_and_a_message_ending_blank_dash(tmp_path: Path) -> None:
    text = BODY.replace(":62F:C261031EUR1200,00\n-\n", ":62F:C261031EUR1200,00 -\n") + "\x03\x1a"
    assert _amounts(_read(tmp_path, text)) == ["250.00", "-50.00"]
    assert _amounts(_read(tmp_path, BODY.replace("-\n", " -\n") + "\x1a")) == ["250.00", "-50.00"]


def test_a_tag_written_with_a_blank(tmp_path: Path) -> None:
    entries = _read(tmp_path, BODY.replace(":86:/EREF/", ":86 :/EREF/"))
    assert entries["reference"].to_list()[0] == "TXK-ONE"


def test_a_type_with_a_blank_and_a_long_customer_reference(tmp_path: Path) -> None:
    text = BODY.replace("NTRFTXK-ONE//B1", "NIT NL47INGB9999999999XY//B1")
    entries = _read(tmp_path, text)
    assert entries["reference"][0] == "TXK-ONE"  # the :86:'s structured reference wins
    assert _read(tmp_path, text.replace("/EREF/TXK-ONE", ""))["reference"][0] == (
        "NL47INGB9999999999XY"
    )


def test_a_line_without_a_transaction_type_as_zenith_bank_writes_it(tmp_path: Path) -> None:
    text = (
        ":20:ZENITH\n:25:1234567890\n:28C:1\n:60F:C201130NGN621305,00\n"
        ":61:2011301130CN220000,00//19239782213\n:86:TRANSFER FROM MERCHANT\n"
        ":61:2011301130DN594391,00//19239782214\n:86:TRANSFER\n"
        ":62F:C201130NGN246914,00\n"
    )
    entries = _read(tmp_path, text)
    assert _amounts(entries) == ["220000.00", "-594391.00"]
    assert entries["bank_reference"].to_list() == ["19239782213", "19239782214"]


def test_supplementary_details_over_several_lines(tmp_path: Path) -> None:
    text = BODY.replace("TXK-ONE//B1\n", "TXK-ONE//B1\n/TRCD/010\n16\n/\n")
    entries = _read(tmp_path, text)
    assert entries["narration"][0].endswith("/TRCD/010 16 /")


def test_the_whole_86_text_is_kept_and_searched_for_references(tmp_path: Path) -> None:
    narration = (
        ":86:BETALING VAN KLANT\n:00:00/ ORDER 12\n:12:11 FACTUUR\n-\n"
        "OMSCHRIJVING /EREF/TXK-LATE/\n"
    )
    text = BODY.replace(":86:/EREF/TXK-ONE/REMI/SETTLEMENT\n", narration)
    entries = _read(tmp_path, text)
    assert entries["narration"][0] == (
        "BETALING VAN KLANT :00:00/ ORDER 12 :12:11 FACTUUR - OMSCHRIJVING /EREF/TXK-LATE/"
    )
    assert entries["reference"][0] == "TXK-LATE"


def test_several_86_after_one_line_are_all_kept(tmp_path: Path) -> None:
    # Rabobank's older format and Danske Bank: one :86: per line of text.
    text = BODY.replace(
        ":86:/EREF/TXK-ONE/REMI/SETTLEMENT\n",
        ":86:PAYOUT\n:86:MERCHANT LTD\n:86:/EREF/TXK-THIRD/\n",
    )
    entries = _read(tmp_path, text)
    assert entries["narration"][0] == "PAYOUT MERCHANT LTD /EREF/TXK-THIRD/"
    assert entries["reference"][0] == "TXK-THIRD"


def test_a_value_date_of_30_february_is_the_months_last_day(tmp_path: Path) -> None:
    text = BODY.replace(":60F:C261030EUR1000,00", ":60F:C160229EUR1000,00").replace(
        ":61:2610311031D50,00", ":61:1602300301D50,00"
    )
    entries = _read(tmp_path, text)
    assert entries["value_date"][1] == date(2016, 2, 29)
    assert entries["date"][1] == date(2016, 3, 1)


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (":61:2610311031C250,00", ":61:2610311031C25O,00", "is not a statement line"),
        (":61:2610311031D50,00", ":6l:2610311031D50,00", "unknown tag '6l'"),
        (":61:2610311031D50,00", ":61:2610311031D50.00", "is not a statement line"),
        (":62F:C261031EUR1200,00\n-\n", "", "cut short"),
        (":61:2610311031D50,00NCHGNONREF//B2\n:86:BANK CHARGES\n", "", "closing balance says"),
        (":60F:C261030EUR1000,00", ":60F:C261030EUR1000,00\nGARBAGE", "text outside any tag"),
        (":62F:C261031EUR1200,00", ":62F:C261031USD1200,00", "closing balance in USD"),
    ],
    ids=["letter-o", "letter-l-tag", "decimal-point", "cut-short", "line-lost", "garbage", "ccy"],
)
def test_what_protects_the_money_is_still_refused_naming_the_line(
    old: str, new: str, problem: str, tmp_path: Path
) -> None:
    assert old in BODY
    with pytest.raises(DataFileError) as caught:
        read_statement(_write(tmp_path, BODY.replace(old, new)))
    message = str(caught.value)
    assert "\n" not in message and problem in message and ", line " in message, message


CAMT_HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08">
<BkToCstmrStmt><GrpHdr><MsgId>M1</MsgId><CreDtTm>2026-11-02T08:00:00</CreDtTm></GrpHdr>
<Stmt><Id>S1</Id><Acct><Id><IBAN>CH1111000000123456789</IBAN></Id><Ccy>CHF</Ccy></Acct>
"""
BALANCES = """<Bal><Tp><CdOrPrtry><Cd>OPBD</Cd></CdOrPrtry></Tp><Amt Ccy="CHF">1000.00</Amt>
<CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2026-10-31</Dt></Dt></Bal>
<Bal><Tp><CdOrPrtry><Cd>CLBD</Cd></CdOrPrtry></Tp><Amt Ccy="CHF">4483.00</Amt>
<CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2026-11-01</Dt></Dt></Bal>
"""


def _tx(amount: str, ref: str, e2e: str, text: str) -> str:
    return (
        f"<TxDtls><Refs><EndToEndId>{e2e}</EndToEndId></Refs>"
        f'<Amt Ccy="CHF">{amount}</Amt><CdtDbtInd>CRDT</CdtDbtInd>'
        f"<RmtInf><Ustrd>{text}</Ustrd><Strd><CdtrRefInf><Ref>{ref}</Ref></CdtrRefInf></Strd>"
        "</RmtInf></TxDtls>\n"
    )


def _batch(total: str = "3483.00", balances: str = BALANCES) -> str:
    return (
        CAMT_HEAD
        + balances
        + f'<Ntry><Amt Ccy="CHF">{total}</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts>'
        "<BookgDt><Dt>2026-11-01</Dt></BookgDt><ValDt><Dt>2026-11-01</Dt></ValDt>"
        "<AcctSvcrRef>BATCH-1</AcctSvcrRef><NtryDtls>\n"
        + _tx("2187.00", "TXK-AAAA", "E2E-1", "PAYOUT ONE")
        + _tx("1296.00", "TXK-BBBB", "E2E-2", "PAYOUT TWO")
        + "</NtryDtls><AddtlNtryInf>CREDIT GROUPE</AddtlNtryInf></Ntry>\n"
        "</Stmt></BkToCstmrStmt></Document>\n"
    )


def test_a_camt_batch_booking_is_one_row_per_transaction_detail(tmp_path: Path) -> None:
    statement = read_statement(_write(tmp_path, _batch(), "b.xml"))
    rows = statement.entries.select("line", "amount", "reference", "narration", "bank_reference")
    assert [(str(a), r) for a, r in rows.select("amount", "reference").rows()] == [
        ("2187.00", "TXK-AAAA"),
        ("1296.00", "TXK-BBBB"),
    ]
    assert rows["narration"].to_list() == [
        "PAYOUT ONE CREDIT GROUPE E2E-1",
        "PAYOUT TWO CREDIT GROUPE E2E-2",
    ]
    assert rows["line"].to_list() == [10, 11]  # each detail's own line
    assert rows["bank_reference"].to_list() == ["BATCH-1", "BATCH-1"]
    assert statement.balances["entries"].to_list() == [2]


def test_a_camt_batch_whose_details_do_not_add_up_is_refused(tmp_path: Path) -> None:
    text = _batch("3483.00").replace("1296.00", "1269.00")
    with pytest.raises(
        DataFileError, match=r"line 9: .*3,483.00 CHF holds 2 <TxDtls> adding up to 3,456.00"
    ):
        read_statement(_write(tmp_path, text, "b.xml"))


def test_the_settlement_matcher_sees_each_payment_of_a_batch(tmp_path: Path) -> None:
    statement = read_statement(_write(tmp_path, _batch(), "b.xml"))
    at = datetime(2026, 10, 31, 12, tzinfo=UTC)
    transactions = pl.DataFrame(
        {
            "id": ["s1", "s2"],
            "createdAt": [at, at],
            "transType": ["settlement", "settlement"],
            "status": ["successful", "successful"],
            "transactionReference": ["TXK-AAAA", "TXK-BBBB"],
            "toAmount": [Decimal("2187.00"), Decimal("1296.00")],
            "toCurrency": ["CHF", "CHF"],
        }
    )
    result = match_settlements(transactions, statement)
    assert sorted(result.select("reference", "category").rows()) == [
        ("TXK-AAAA", "matched"),
        ("TXK-BBBB", "matched"),
    ]


def test_a_camt_statement_with_a_closing_balance_only_is_read_and_said_unproven(
    tmp_path: Path,
) -> None:
    closing_only = BALANCES.split("</Bal>\n", 1)[1]
    statement = read_statement(_write(tmp_path, _batch(balances=closing_only), "w.xml"))
    assert statement.entries.height == 2
    row = statement.balances.row(0, named=True)
    assert row["opening"] is None and str(row["closing"]) == "4483.00"
    assert any("no opening one" in n and "could not be proven" in n for n in statement.notes)


def test_a_camt_closing_balance_in_a_currency_without_its_opening_is_refused(
    tmp_path: Path,
) -> None:
    usd = BALANCES.split("</Bal>\n", 1)[1].replace("CLBD", "CLBD").replace('Ccy="CHF"', 'Ccy="EUR"')
    text = _batch(balances=BALANCES + usd).replace("<Ccy>CHF</Ccy>", "")
    with pytest.raises(
        DataFileError, match="a closing balance \\(CLBD\\) in EUR without an opening"
    ):
        read_statement(_write(tmp_path, text, "b.xml"))


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("billion-laughs", "DOCTYPE"),
        ("deep-nesting", "is not well-formed XML"),
        ("huge-text", "is not well-formed XML"),
    ],
)
def test_hostile_xml_is_refused_in_one_line_by_the_streaming_reader(
    case: str, problem: str, tmp_path: Path
) -> None:
    if case == "billion-laughs":
        entities = '<!ENTITY a "lol">' + "".join(
            f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9)
        )
        text = (
            _batch()
            .replace(
                '<?xml version="1.0" encoding="UTF-8"?>\n',
                f'<?xml version="1.0"?><!DOCTYPE Document [{entities}]>\n',
            )
            .replace("PAYOUT ONE", "&j;")
        )
    elif case == "deep-nesting":
        text = _batch().replace(
            "<AddtlNtryInf>", "<X>" * 100_000 + "</X>" * 100_000 + "<AddtlNtryInf>"
        )
    else:
        text = _batch().replace("PAYOUT ONE", "A" * 11_000_000)
    with pytest.raises(DataFileError) as caught:
        read_statement(_write(tmp_path, text, "h.xml"))
    message = str(caught.value)
    assert "\n" not in message and problem in message, message


def test_an_xinclude_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-CONTENT")
    include = (
        f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{secret}" parse="text"/>'
    )
    text = _batch().replace("PAYOUT ONE", include)
    entries = read_statement(_write(tmp_path, text, "x.xml")).entries
    assert not any("SECRET" in (n or "") for n in entries["narration"])
