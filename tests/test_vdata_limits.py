"""Variable-data files whose reading must stay bounded by what they hold: a CSV's first
line, an XLSX's declared size, row numbers and shared strings, cells openpyxl cannot parse,
and error messages about very wide headers. Each test checks the bound, not a time."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from api_support import assert_error, snapshot
from conftest import ApiClient
from openpyxl import Workbook
from openpyxl.styles import PatternFill
from vdata_support import ROOT, card_draft, card_template, csv_bytes, multipart, xlsx_by_hand

from pps.platform.models import Client, Draft
from pps.platform.repository.sql import SqlRepository
from pps.uploads.sheet_rows import MAX_ROW_CELLS, MAX_ROW_ELEMENTS, MAX_WORKBOOK_CELLS
from pps.uploads.workbook import MAX_SHARED_STRINGS_UNPACKED, workbook_problem
from pps.vdata import tabular
from pps.vdata.tabular import (
    LISTED_COLUMNS,
    MAX_BLANK_ROWS,
    MAX_COLUMNS,
    SNIFF_SAMPLE,
    TableError,
    read_table,
    resolve_mapping,
    sniff_sample,
)

HEADER = '<row r="1"><c r="A1" t="inlineStr"><is><t>Name</t></is></c></row>'


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client) -> Draft:
    return card_draft(repo, tenant, card_template(repo, tenant))


def path(draft: Draft) -> str:
    return f"/api-ext/draft/{draft.draft_hash}/variable-data"


def post_file(api: ApiClient, draft: Draft, name: str, data: bytes, mapping: Any) -> Any:
    return api.post(
        path(draft),
        data=multipart(name, data, columnMapping=json.dumps(mapping)),
        content_type="multipart/form-data",
    )


def post_stored(api: ApiClient, draft: Draft, name: str, data: bytes, mapping: Any) -> Any:
    upload = api.post(
        "/api-ext/file", data=multipart(name, data), content_type="multipart/form-data"
    )
    assert upload.status_code == 201, upload.get_data(as_text=True)
    return api.post(path(draft), json={"file": upload.get_json()["identifier"], **mapping})


def rows_stored(api: ApiClient, draft: Draft) -> int:
    return int(api.get(path(draft)).get_json()["_meta"]["amountOfRows"])


@pytest.mark.parametrize(
    "data", [b'",' * 24000 + b"\r\nx\r\n", b"Name,Mail\r" + b"A,b\r" * 5000, b"a;" * 100_000]
)
def test_the_sniffer_sees_a_bounded_prefix_of_the_first_line(
    monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    """``csv.Sniffer`` is quadratic in its input: it only ever gets SNIFF_SAMPLE characters,
    whatever the first line's length or line ends."""
    seen: list[int] = []
    sniff = csv.Sniffer.sniff

    def spy(self: csv.Sniffer, sample: str, delimiters: str | None = None) -> Any:
        seen.append(len(sample))
        return sniff(self, sample, delimiters)

    monkeypatch.setattr(csv.Sniffer, "sniff", spy)
    with contextlib.suppress(TableError):  # read or refused: the bound is what counts
        read_table("csv", data, 10_000)
    assert seen and max(seen) <= SNIFF_SAMPLE
    assert sniff_sample("x" * 10 * SNIFF_SAMPLE) == "x" * SNIFF_SAMPLE
    assert sniff_sample("Name;Mail\rAda;a@b.c\r") == "Name;Mail"


def test_a_long_first_line_still_picks_its_delimiter(api: ApiClient, draft: Draft) -> None:
    header = ";".join(["Name", *(f"Column {index}" for index in range(900))])
    data = f"{header}\r\nAda;x\r\n".encode()
    assert len(header) > SNIFF_SAMPLE
    assert post_file(api, draft, "a.csv", data, {"name": "Name"}).status_code == 204
    assert api.get(path(draft)).get_json()["data"] == [{"name": "Ada"}]


def test_a_declared_dimension_and_far_row_numbers_are_not_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``<dimension ref="A1:XFD1048576"/>`` and a row at 1,048,576: openpyxl would pad to
    both; the rows walked stop after MAX_BLANK_ROWS empty ones, each at most MAX_COLUMNS."""
    monkeypatch.setattr(tabular, "MAX_BLANK_ROWS", 50)
    walked: list[int] = []
    collect = tabular._collect

    def counting(rows: Any, max_rows: int) -> Any:
        def each() -> Any:
            for row in rows:
                walked.append(len(row))
                yield row

        return collect(each(), max_rows)

    monkeypatch.setattr(tabular, "_collect", counting)
    far = '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>x</t></is></c></row>'
    data = xlsx_by_hand(HEADER + far, dimension="A1:XFD1048576")
    assert len(data) < 2000
    with pytest.raises(TableError, match="more than 50 empty rows"):
        read_table("xlsx", data, 10_000)
    assert len(walked) <= 52 and max(walked) <= MAX_COLUMNS


def test_rows_with_a_cell_in_column_xfd_keep_only_what_can_be_mapped() -> None:
    """A cell in A and one in XFD per row: each row is kept as wide as the header, and
    the header at most MAX_COLUMNS wide."""
    cells = "".join(
        f'<row r="{n}"><c r="A{n}"><v>{n}</v></c><c r="XFD{n}"><v>1</v></c></row>'
        for n in range(2, 202)
    )
    table = read_table("xlsx", xlsx_by_hand(HEADER + cells, dimension="A1:XFD201"), 10_000)
    assert table.header == ["Name"]
    assert len(table.rows) == 200 and {len(row) for row in table.rows} == {1}
    far_header = HEADER.replace("</row>", '<c r="XFD1" t="inlineStr"><is><t>Far</t></is></c></row>')
    wide = read_table("xlsx", xlsx_by_hand(far_header + cells), 10_000)
    assert wide.header == ["Name"]  # beyond MAX_COLUMNS: no mapping can name it


def test_blank_rows_count_towards_a_limit(api: ApiClient, draft: Draft) -> None:
    data = b"Name\r\n" + b"\r\n" * (MAX_BLANK_ROWS + 1) + b"Ada\r\n"
    error = assert_error(post_file(api, draft, "a.csv", data, {"name": 0}), 422, "file")
    assert f"more than {MAX_BLANK_ROWS} empty rows" in error["message"]


def test_shared_strings_are_limited_on_both_paths(api: ApiClient, draft: Draft) -> None:
    """Millions of tiny shared strings in a small ZIP: refused from the ZIP directory, by
    the one check an upload and a workbook sent as variable data both run."""
    count = MAX_SHARED_STRINGS_UNPACKED // len("<si><t>a</t></si>") + 1
    data = xlsx_by_hand(HEADER, shared=["a"] * count)
    assert len(data) < 100_000
    assert "shared strings" in (workbook_problem(data) or "")
    error = assert_error(post_file(api, draft, "a.xlsx", data, {"name": 0}), 422, "file")
    assert "shared strings" in error["message"]
    upload = api.post(
        "/api-ext/file", data=multipart("a.xlsx", data), content_type="multipart/form-data"
    )
    assert "shared strings" in assert_error(upload, 422, "file")["message"]


def test_a_zip_bomb_sent_as_variable_data_is_refused_before_openpyxl(
    api: ApiClient, draft: Draft, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pps.uploads.workbook as workbook

    data = xlsx_by_hand(HEADER + '<row r="2"><c r="A2"><v>1</v></c></row>')
    monkeypatch.setattr(workbook, "MAX_XLSX_UNPACKED", 100)
    error = assert_error(post_file(api, draft, "a.xlsx", data, {"name": 0}), 422, "file")
    assert "unpacks to" in error["message"]
    assert rows_stored(api, draft) == 0


def one_row(cells: int, cell: str = "<c><v>1</v></c>") -> bytes:
    """A header and one data row of ``cells`` cells: millions of them zip to a few KB."""
    return xlsx_by_hand(HEADER + '<row r="2">' + cell * cells + "</row>")


HUGE_ROW_CELLS = 2_000_000


def test_a_row_of_millions_of_cells_is_refused_on_both_paths(
    api: ApiClient, repo: SqlRepository, draft: Draft
) -> None:
    """openpyxl builds a row whole before ``max_col`` trims it (900 MB for these 2,000,000
    cells): the one check an upload and a workbook sent as variable data both run refuses
    it, naming the row and the limit, and nothing is written."""
    data = one_row(HUGE_ROW_CELLS)
    assert len(data) < 100_000
    assert (
        post_file(api, draft, "a.csv", csv_bytes([["Name"], ["A"]]), {"name": 0}).status_code == 204
    )
    before = snapshot(repo)
    error = assert_error(post_file(api, draft, "a.xlsx", data, {"name": 0}), 422, "file")
    assert (
        f"row 2 of its part xl/worksheets/sheet1.xml has more than {MAX_ROW_CELLS} cells"
        in (error["message"])
    )
    upload = api.post(
        "/api-ext/file", data=multipart("a.xlsx", data), content_type="multipart/form-data"
    )
    assert f"more than {MAX_ROW_CELLS} cells" in assert_error(upload, 422, "file")["message"]
    assert snapshot(repo) == before  # no upload, the draft's one row as it was
    assert rows_stored(api, draft) == 1


def test_refusing_a_row_of_millions_of_cells_takes_little_memory(tmp_path: Path) -> None:
    """Read through pps's reader in a process of its own: its peak RSS stays far below the
    900 MB openpyxl would take for the row (a bound on memory, not on time)."""
    source = tmp_path / "row.xlsx"
    source.write_bytes(one_row(HUGE_ROW_CELLS))
    script = (
        "import sys\n"
        "from pps.vdata.tabular import TableError, read_table\n"
        "try:\n"
        "    read_table('xlsx', open(sys.argv[1], 'rb').read(), 10_000)\n"
        "except TableError as exc:\n"
        "    print(exc)\n"
        # VmHWM, the peak of this process's own memory: ru_maxrss would also count the
        # parent's resident memory, which Linux carries over into a child started by
        # vfork and exec (the whole test run's pytest, hundreds of MB).
        "print(next(line.split()[1] for line in open('/proc/self/status')"
        " if line.startswith('VmHWM:')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(source)],
        capture_output=True, text=True, check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    message, peak_kb = done.stdout.splitlines()
    assert f"more than {MAX_ROW_CELLS} cells" in message
    assert int(peak_kb) < 300 * 1024


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        (
            '<row r="2">' + "<c><v>1</v></c>" * (MAX_ROW_CELLS + 1) + "</row>",
            f"row 2 of its part xl/worksheets/sheet1.xml has more than {MAX_ROW_CELLS} cells",
        ),
        (  # one cell, but an element for each of its children
            '<row r="2"><c r="A2"><v>1</v>' + "<x/>" * MAX_ROW_ELEMENTS + "</c></row>",
            f"row 2 of its part xl/worksheets/sheet1.xml holds more than {MAX_ROW_ELEMENTS}",
        ),
        (  # openpyxl parses each and skips it, keeping its element
            '<row r="2"><c r="A2"><v>1</v></c></row>' + '<row r="2"/>' * 3,
            "row 2 of its part xl/worksheets/sheet1.xml comes after row 2; rows must be in",
        ),
        ('<row r="5"/><row r="3.0"/>', "row 3 of its part xl/worksheets/sheet1.xml comes after"),
        ('<row r="3"/><row/><row r="4"/>', "row 4 of its part xl/worksheets/sheet1.xml comes"),
    ],
    ids=["cells", "elements", "repeated", "backwards", "counted"],
)
def test_rows_openpyxl_would_build_at_great_cost_are_refused(rows: str, words: str) -> None:
    with pytest.raises(TableError, match="The XLSX file cannot be used") as refused:
        read_table("xlsx", xlsx_by_hand(HEADER + rows), 10_000)
    assert words in str(refused.value)


def test_legal_rows_past_the_workbook_cell_total_are_refused() -> None:
    """Rows each within a sheet's width, but so many cells in all that openpyxl would take
    minutes: refused at the first cell past the total."""
    rows_needed = MAX_WORKBOOK_CELLS // MAX_ROW_CELLS + 1
    wide_row = "<c/>" * MAX_ROW_CELLS
    rows = "".join(f'<row r="{n}">{wide_row}</row>' for n in range(2, rows_needed + 2))
    with pytest.raises(TableError, match="The XLSX file cannot be used") as refused:
        read_table("xlsx", xlsx_by_hand(HEADER + rows), 10_000)
    assert f"takes the workbook past {MAX_WORKBOOK_CELLS} cells in all" in str(refused.value)


def test_a_workbook_of_exactly_the_cell_total_passes_the_check() -> None:
    """Cells of the header row count too: the total is of every cell the parts hold."""
    body = "".join(f'<row r="{n}"><c/></row>' for n in range(2, MAX_WORKBOOK_CELLS + 1))
    assert workbook_problem(xlsx_by_hand(HEADER + body)) is None
    one_more = body + f'<row r="{MAX_WORKBOOK_CELLS + 1}"><c/></row>'
    assert "past 2000000 cells" in str(workbook_problem(xlsx_by_hand(HEADER + one_more)))


def test_a_row_of_every_column_is_read(api: ApiClient, draft: Draft) -> None:
    """A row of MAX_ROW_CELLS cells, A to XFD, most of them empty cells with a style (as
    spreadsheet programs pad a formatted row), then one without row numbers: read, each
    row kept as wide as the header."""
    from openpyxl.utils import get_column_letter

    padded = "".join(f'<c r="{get_column_letter(n)}2" s="1"/>' for n in range(2, MAX_ROW_CELLS + 1))
    rows = f'<row r="2"><c r="A2" t="inlineStr"><is><t>Ada</t></is></c>{padded}</row>'
    rows += '<row><c t="inlineStr"><is><t>Bob</t></is></c></row>'
    data = xlsx_by_hand(HEADER + rows)
    assert workbook_problem(data) is None
    assert post_file(api, draft, "a.xlsx", data, {"name": 0}).status_code == 204
    assert api.get(path(draft)).get_json()["data"] == [{"name": "Ada"}, {"name": "Bob"}]


def test_a_workbook_written_by_openpyxl_with_styled_empty_cells_is_read(
    api: ApiClient, draft: Draft
) -> None:
    """Empty cells with a fill, a cell far to the right, a picture-like binary part: the
    check reads the sheet and passes over what is not XML."""
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["Name", "Mail"])
    for index in range(2, 2002):
        sheet.append([f"Person {index}", None])
        sheet.cell(index, 2).fill = PatternFill("solid", fgColor="FFFF00")
        sheet.cell(index, 5000).fill = PatternFill("solid", fgColor="FFFF00")
    out = io.BytesIO()
    workbook.save(out)
    assert workbook_problem(out.getvalue()) is None
    assert post_file(api, draft, "a.xlsx", out.getvalue(), {"name": "Name"}).status_code == 204
    assert rows_stored(api, draft) == 2000


def test_every_part_is_checked_whatever_its_name() -> None:
    """openpyxl opens the sheet its workbook relates to, under any name: a part that is not
    XML is passed over, the sheet is read (and refused) wherever it lies."""
    extra = {"xl/media/image1.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40}
    name = "xl/data.bin"
    small = xlsx_by_hand(HEADER + '<row r="2"><c><v>7</v></c></row>', sheet=name, extra=extra)
    assert workbook_problem(small) is None
    assert read_table("xlsx", small, 10).rows == [["7"]]  # openpyxl read that very part
    big = xlsx_by_hand(
        HEADER + '<row r="2">' + "<c/>" * (MAX_ROW_CELLS + 1) + "</row>", sheet=name, extra=extra
    )
    assert f"row 2 of its part {name} has more than" in (workbook_problem(big) or "")


def test_entity_declarations_are_refused_in_any_part() -> None:
    declared = b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY c "<c/><c/>">]><r>&c;</r>'
    data = xlsx_by_hand(HEADER, extra={"customXml/item1.xml": declared})
    assert "its part customXml/item1.xml declares the XML entity 'c'" in (
        workbook_problem(data) or ""
    )


BROKEN_CELLS = [
    '<row r="2"><c r="A2"><v>abc</v></c></row>',
    '<row r="2"><c r="A2" t="s"><v>5</v></c></row>',
    '<row r="2"><c r="A2" t="d"><v>notadate</v></c></row>',
    '<row r="x"><c r="A2"><v>1</v></c></row>',
    '<row r="2"><c r="ZZZZ2"><v>1</v></c></row>',
]


@pytest.mark.parametrize("row", BROKEN_CELLS)
@pytest.mark.parametrize("way", ["multipart", "stored"])
def test_cells_openpyxl_cannot_parse_are_a_422(
    api: ApiClient, draft: Draft, row: str, way: str
) -> None:
    assert (
        post_file(api, draft, "a.csv", csv_bytes([["Name"], ["A"]]), {"name": 0}).status_code == 204
    )
    data = xlsx_by_hand(HEADER + row, shared=["a"])
    if way == "multipart":
        response = post_file(api, draft, "a.xlsx", data, {"name": 0})
    else:
        response = post_stored(api, draft, "a.xlsx", data, {"columnMapping": {"name": 0}})
    error = assert_error(response, 422, "file")
    assert "cannot be read" in error["message"]
    assert rows_stored(api, draft) == 1  # nothing replaced


def test_a_wide_header_is_not_echoed_whole(api: ApiClient, draft: Draft) -> None:
    data = b"Name" + b"," * 100_000 + b"\r\nAlice\r\n"
    response = post_file(api, draft, "a.csv", data, {"name": "Nope"})
    error = assert_error(response, 422, "columnMapping")
    assert len(response.get_data()) < 4000
    assert "more" in error["message"]


def test_column_lists_are_capped_and_names_shortened() -> None:
    header = ["x" * 500, *(f"c{index}" for index in range(5000))]
    with pytest.raises(TableError) as refused:
        resolve_mapping({"name": "Nope", "email": 99_999}, header, ["name", "email"])
    message = str(refused.value)
    assert "x" * 41 not in message and f"and {len(header) - LISTED_COLUMNS} more" in message
    assert len(message) < 2000


def test_a_long_header_cell_is_refused() -> None:
    with pytest.raises(TableError, match="header of column 1"):
        read_table("csv", b"Name," + b"y" * 300 + b"\r\nA,b\r\n", 10)


def test_a_csv_wider_than_max_columns_reads_its_first_columns() -> None:
    """Columns past MAX_COLUMNS are not read, header and rows alike: a row with values
    there is no row with more values than its header."""
    width = MAX_COLUMNS + 5
    header = ",".join(f"c{n}" for n in range(width))
    row = ",".join(str(n) for n in range(width))
    table = read_table("csv", f"{header}\r\n{row}\r\n".encode(), 10)
    assert len(table.header) == MAX_COLUMNS
    assert table.rows == [[str(n) for n in range(MAX_COLUMNS)]]


def test_a_csv_exactly_max_columns_wide_still_refuses_a_row_with_more_values() -> None:
    """Its header is whole, not cut at MAX_COLUMNS: a value past it is an unquoted value
    holding the delimiter, refused as in a narrower file, not dropped without a word."""
    header = ",".join(f"c{n}" for n in range(MAX_COLUMNS))
    row = ",".join(str(n) for n in range(MAX_COLUMNS - 1)) + ",Smith, John"
    with pytest.raises(TableError, match=f"Row 1 has {MAX_COLUMNS + 1} values"):
        read_table("csv", f"{header}\r\n{row}\r\n".encode(), 10)
