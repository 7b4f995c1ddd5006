"""``/api-ext/draft/<hash>/variable-data``: what the PHP SDK sends, rows checked like editor
values, and the print PDF with one record per row."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest
from api_support import assert_error
from conftest import ApiClient
from flask import Flask
from joserfc import jwt
from joserfc.jwk import OctKey
from openpyxl import Workbook
from openpyxl.worksheet.formula import ArrayFormula, DataTableFormula
from pypdf import PdfReader
from vdata_support import card_draft, card_template, csv_bytes, multipart

from pps.platform.models import Client, Draft, Template
from pps.platform.repository.sql import SqlRepository

HEADER = ["Name", "E-Mail", "Web"]
MAPPING = {"name": 0, "email": 1, "url": 2}


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return card_template(repo, tenant)


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client, template: Template) -> Draft:
    return card_draft(repo, tenant, template)


def people(count: int) -> list[list[str]]:
    return [
        [f"Person {index:04d}", f"p{index}@example.org", f"https://example.org/p/{index}"]
        for index in range(count)
    ]


def path(draft: Draft) -> str:
    return f"/api-ext/draft/{draft.draft_hash}/variable-data"


def post_csv(api: ApiClient, draft: Draft, data: bytes, mapping: Any = MAPPING) -> Any:
    """``VariableData\\Client::create`` with an ``\\SplFileInfo`` (src/Client/VariableData/
    Client.php): multipart parts ``file`` (contents, filename) and ``columnMapping``
    (``json_encode($columnMapping)``)."""
    return api.post(
        path(draft),
        data=multipart("people.csv", data, columnMapping=json.dumps(mapping)),
        content_type="multipart/form-data",
    )


def print_pdf(app: Flask, api: ApiClient, tenant: Client, draft: Draft) -> bytes:
    now = int(time.time())
    token = jwt.encode(
        {"alg": "HS256"},
        {"client": tenant.identifier, "iat": now, "exp": now + 300},
        OctKey.import_key(tenant.api_key),
    )
    response = api.client.get(
        f"/api-ext/files/draft/{draft.draft_hash}/print", query_string={"jwt": token}
    )
    assert response.status_code == 302, response.get_data(as_text=True)
    location = response.headers["Location"].removeprefix("http://localhost")
    with api.client.get(location) as served:
        assert served.status_code == 200
        return bytes(served.data)


def amount(api: ApiClient, draft: Draft) -> Any:
    return api.get(f"/api-ext/draft/{draft.draft_hash}").get_json()["data"]["personalizations"][
        "amount"
    ]


def test_csv_of_1000_rows_prints_1000_records_in_order(
    app: Flask, api: ApiClient, tenant: Client, draft: Draft
) -> None:
    """Variable data end to end: 1,000 rows -> amount 1,000 -> a print PDF of 1,000
    records, each with its row's values (text extracted with pypdf), in row order."""
    assert amount(api, draft) == 1  # without variable data
    rows = people(1000)
    response = post_csv(api, draft, csv_bytes([HEADER, *rows]))
    assert response.status_code == 204, response.get_data(as_text=True)
    assert response.get_data() == b""  # assertEmptyResponse: 204 and nothing else
    assert amount(api, draft) == 1000
    assert isinstance(amount(api, draft), int)

    pdf = PdfReader(io.BytesIO(print_pdf(app, api, tenant, draft)))
    assert len(pdf.pages) == 1000
    for index in (0, 1, 499, 998, 999):
        text = pdf.pages[index].extract_text()
        name, email, url = rows[index]
        assert name in text and email in text and url in text, (index, text)
        assert "Print Buyer" in text  # the draft's own value for the unmapped DataKey
    names = [page.extract_text().split("\n")[0] for page in pdf.pages]
    assert names == [row[0] for row in rows]
    # Fonts are embedded once per document, not once per record.
    fonts = {
        font.get_object()["/BaseFont"]
        for page in pdf.pages[:50]
        for font in page["/Resources"]["/Font"].values()
    }
    assert len(fonts) <= 4, fonts


def test_list_pages_as_the_sdk_asks(api: ApiClient, draft: Draft) -> None:
    """``VariableData\\Client::list`` (src/Client/VariableData/Client.php): ``?limit=25`` (an
    offset of 0 is dropped by ``buildQuery``'s ``array_filter``), then ``?limit=25&offset=25``;
    it reads ``data`` and ``_meta.amountOfRows`` (an int: ``ceil($amountOfRows / $perPage)``)."""
    empty = api.get(path(draft) + "?limit=25")
    assert empty.status_code == 200
    assert empty.get_json() == {"data": [], "_meta": {"amountOfRows": 0}}
    assert post_csv(api, draft, csv_bytes([HEADER, *people(30)])).status_code == 204
    first = api.get(path(draft) + "?limit=25").get_json()
    assert first["_meta"] == {"amountOfRows": 30}
    assert len(first["data"]) == 25
    assert first["data"][0] == {
        "name": "Person 0000",
        "email": "p0@example.org",
        "url": "https://example.org/p/0",
    }
    second = api.get(path(draft) + "?limit=25&offset=25").get_json()
    assert [row["name"] for row in second["data"]] == [f"Person {i:04d}" for i in range(25, 30)]
    assert_error(api.get(path(draft) + "?limit=0"), 422, "limit")
    assert_error(api.get(path(draft) + "?offset=-1"), 422, "offset")


def test_post_a_file_identifier_as_json(api: ApiClient, draft: Draft) -> None:
    """``create`` with a ``File`` (src/Client/VariableData/Client.php): first
    ``File\\Client::create`` uploads it, then ``post($path, ['file' => <identifier>,
    'columnMapping' => $columnMapping])`` sends JSON. Mapping by header text works too."""
    upload = api.post(
        "/api-ext/file",
        data=multipart("people.csv", csv_bytes([HEADER, *people(3)])),
        content_type="multipart/form-data",
    )
    assert upload.status_code == 201
    identifier = upload.get_json()["identifier"]
    response = api.post(
        path(draft), json={"file": identifier, "columnMapping": {"name": "Name", "url": "Web"}}
    )
    assert response.status_code == 204, response.get_data(as_text=True)
    rows = api.get(path(draft)).get_json()["data"]
    assert rows[2] == {"name": "Person 0002", "url": "https://example.org/p/2"}
    assert_error(api.post(path(draft), json={"file": "nope", "columnMapping": {}}), 422, "file")
    for missing in ({"file": ""}, {"file": None}, {"file": 7}, {"columnMapping": {}}):
        assert_error(api.post(path(draft), json=missing), 422, "file")


def test_put_as_the_sdk_sends_it(api: ApiClient, draft: Draft) -> None:
    """``VariableData\\Client::update`` (src/Client/VariableData/Client.php and its test):
    ``PUT {"data": {"2": {"a": 26}}}``: PHP's sparse array is a JSON object keyed by row
    index; a list replaces every row. Both answer 204 with an empty body."""
    replaced = api.put(path(draft), json={"data": [{"name": "A"}, {"name": "B"}, {"name": "C"}]})
    assert replaced.status_code == 204 and replaced.get_data() == b""
    assert amount(api, draft) == 3
    changed = api.put(path(draft), json={"data": {"2": {"phone": 26}}})
    assert changed.status_code == 204, changed.get_data(as_text=True)
    rows = api.get(path(draft)).get_json()["data"]
    assert rows[2] == {"name": "C", "phone": "26"}  # a number is kept as its text
    assert_error(api.put(path(draft), json={"data": {"7": {"name": "X"}}}), 422, "data")
    refused = assert_error(
        api.put(path(draft), json={"data": {"1": {"name": "x" * 41}}}), 422, "rows.2.name"
    )
    assert "Row 2" in refused["message"]
    assert api.get(path(draft)).get_json()["data"][1] == {"name": "B"}  # nothing stored


@pytest.mark.parametrize("value", ["Red", "Pink"])
def test_a_choice_in_a_row_is_refused_as_no_data_key_whatever_its_value(
    api: ApiClient, draft: Draft, value: str
) -> None:
    """Rows carry DataKeys only; a choice (``name.color``) is refused the same way with an
    option of the template's list or without one (a list that could never be met)."""
    body = assert_error(
        api.put(path(draft), json={"data": [{"name": "A", "name.color": value}]}),
        422,
        "rows.1.name.color",
    )
    assert body["errors"]["rows.1.name.color"] == [
        "Row 1: 'name.color' is not a DataKey of the template."
    ]
    assert api.get(path(draft)).get_json()["data"] == []  # nothing stored


def sent_workbook(api: ApiClient, draft: Draft, workbook: Workbook) -> list[dict[str, Any]]:
    """The draft's rows after ``workbook`` is sent as its variable data (with MAPPING)."""
    out = io.BytesIO()
    workbook.save(out)
    response = api.post(
        path(draft),
        data=multipart("people.xlsx", out.getvalue(), columnMapping=json.dumps(MAPPING)),
        content_type="multipart/form-data",
    )
    assert response.status_code == 204, response.get_data(as_text=True)
    rows: list[dict[str, Any]] = api.get(path(draft)).get_json()["data"]
    return rows


def test_xlsx_with_formula_kept_as_text(
    app: Flask, api: ApiClient, tenant: Client, draft: Draft
) -> None:
    """An XLSX (first sheet, header row) maps like a CSV; a formula cell such as
    ``=HYPERLINK(...)`` is kept as the literal text, in the rows and in the print file."""
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(HEADER)
    sheet.append(['=HYPERLINK("http://evil.example","x")', "a@example.org", "https://a.example"])
    sheet.append(["Plain", 12345, "https://b.example"])
    rows = sent_workbook(api, draft, workbook)
    assert rows[0]["name"] == '=HYPERLINK("http://evil.example","x")'
    assert rows[1]["email"] == "12345"
    text = PdfReader(io.BytesIO(print_pdf(app, api, tenant, draft))).pages[0].extract_text()
    assert '=HYPERLINK("http://evil.example","x")' in text


def test_xlsx_array_and_data_table_formulas_are_kept_as_their_text(
    app: Flask, api: ApiClient, tenant: Client, draft: Draft
) -> None:
    """Excel stores array formulas (Ctrl+Shift+Enter, and the dynamic arrays of Excel 365
    such as ``=TEXTJOIN``) and what-if data tables apart from plain formulas; openpyxl reads
    them as objects, whose Python repr (with a memory address) was printed on the card."""
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(HEADER)
    sheet.append(["Plain", "a@example.org", "https://a.example"])
    sheet.append(["Table", "b@example.org", "https://b.example"])
    sheet.append(["Row table", "c@example.org", "https://c.example"])
    sheet["A2"] = ArrayFormula("A2", '=TEXTJOIN(" ",TRUE,B1:C1)')
    sheet["A3"] = DataTableFormula("A3", dt2D="1", r1="B1", r2="C1")
    sheet["A4"] = DataTableFormula("A4", dtr="1", r1="B1")
    rows = sent_workbook(api, draft, workbook)
    names = [row["name"] for row in rows]
    assert names == ['=TEXTJOIN(" ",TRUE,B1:C1)', "=TABLE(B1,C1)", "=TABLE(B1,)"]
    text = PdfReader(io.BytesIO(print_pdf(app, api, tenant, draft))).pages[0].extract_text()
    assert "openpyxl" not in text and '=TEXTJOIN(" ",TRUE,B1:C1)' in text


def test_csv_formula_is_literal(api: ApiClient, draft: Draft) -> None:
    data = csv_bytes([HEADER, ['=HYPERLINK("http://e.example","x")', "a@b.c", "u"]], ";")
    assert post_csv(api, draft, data).status_code == 204
    assert api.get(path(draft)).get_json()["data"][0]["name"].startswith("=HYPERLINK(")


@pytest.mark.parametrize(
    ("body", "mapping", "field", "words"),
    [
        ("Name,E-Mail\nJosé,j@x.y\n".encode("latin-1"), MAPPING, "file", "UTF-8"),
        (csv_bytes([["Name"], ["A"]]), {"name": 0, "email": 3}, "columnMapping", "no column 3"),
        (csv_bytes([["Name"], ["A"]]), {"name": "Vorname"}, "columnMapping", "'Vorname'"),
        (csv_bytes([["Name"], ["A"]]), {"colour": 0}, "columnMapping", "not a DataKey"),
        (csv_bytes([["Name"]]), {"name": 0}, "file", "no data rows"),
        (b"%PDF-1.4\n", {"name": 0}, "file", "CSV or XLSX"),
        # A quote left open swallowed every later line into one value (a 204).
        (
            b'Name,E-Mail,Web\nA,a@b.c,u\n"B,b@b.c,u\nC,c@b.c,u\n',
            MAPPING,
            "file",
            "starts on line 3",
        ),
        (csv_bytes([HEADER, ["", "a@b.c", "u"]]), MAPPING, "rows.1.Name", "Row 1"),
        # A value holding the delimiter, unquoted: its end went to the next column, or was
        # dropped past the header's columns ("Smith" printed for "Smith, John").
        (b"Name\nAda\nSmith, John\n", {"name": 0}, "file", "Row 2 has 2 values"),
        (
            b"Name,E-Mail,Web\nSmith, John,j@b.c,u\n",
            MAPPING,
            "file",
            "Row 1 has 4 values, more than the 3 columns",
        ),
        (
            csv_bytes([HEADER, ["A", "a@b.c", "u"], ["x" * 41, "", ""]]),
            MAPPING,
            "rows.2.Name",
            "Row 2",
        ),
    ],
)
def test_bad_csvs_get_clear_errors(
    api: ApiClient, draft: Draft, body: bytes, mapping: Any, field: str, words: str
) -> None:
    assert post_csv(api, draft, csv_bytes([HEADER, *people(2)])).status_code == 204
    error = assert_error(post_csv(api, draft, body, mapping), 422, field)
    assert words in error["message"], error
    assert error["success"] is False if "success" in error else True
    assert api.get(path(draft)).get_json()["_meta"]["amountOfRows"] == 2  # nothing replaced


def test_empty_cells_past_the_header_are_no_values(api: ApiClient, draft: Draft) -> None:
    """Trailing delimiters (a spreadsheet's empty columns) and short rows still read."""
    body = b"Name,E-Mail,Web\nA,a@b.c,u,,\nB,b@b.c\n"
    assert post_csv(api, draft, body).status_code == 204
    rows = api.get(path(draft)).get_json()["data"]
    assert rows == [
        {"name": "A", "email": "a@b.c", "url": "u"},
        {"name": "B", "email": "b@b.c", "url": ""},
    ]


@pytest.mark.parametrize("mapping", ["[" * 2000, '{"name": ' * 2000, '{"name": NaN}', "1e999"])
@pytest.mark.parametrize("way", ["multipart", "json", "form"])
def test_column_mapping_that_is_not_json_is_a_422(
    api: ApiClient, draft: Draft, mapping: str, way: str
) -> None:
    """``columnMapping`` sent as a string that cannot be read, however it arrives: nested too
    deep for the decoder as well as ``NaN``, a 422 naming it, and the rows stay as they were."""
    data = csv_bytes([HEADER, *people(3)])
    assert post_csv(api, draft, csv_bytes([HEADER, *people(2)])).status_code == 204
    if way == "multipart":
        response = api.post(
            path(draft),
            data=multipart("people.csv", data, columnMapping=mapping),
            content_type="multipart/form-data",
        )
    else:
        upload = api.post(
            "/api-ext/file",
            data=multipart("people.csv", data),
            content_type="multipart/form-data",
        )
        assert upload.status_code == 201
        body = {"file": upload.get_json()["identifier"], "columnMapping": mapping}
        response = (
            api.post(path(draft), json=body)
            if way == "json"
            else api.post(path(draft), data=body, content_type="application/x-www-form-urlencoded")
        )
    error = assert_error(response, 422, "columnMapping")
    assert error["message"] == "columnMapping is not valid JSON."
    assert api.get(path(draft)).get_json()["_meta"]["amountOfRows"] == 2  # nothing replaced


def test_100_mb_file_is_refused_with_the_limit(api: ApiClient, draft: Draft) -> None:
    big = b"Name\n" + b"A\n" * (50 * 1024 * 1024)  # 100 MB
    boundary = "pps-test-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\n'
            "Content-Type: text/csv\r\n\r\n"
        ).encode()
        + big
        + f"\r\n--{boundary}--\r\n".encode()
    )
    response = api.post(
        path(draft), data=body, content_type=f"multipart/form-data; boundary={boundary}"
    )
    error = assert_error(response, 413)
    assert "PPS_MAX_UPLOAD_BYTES" in error["message"]


def test_other_clients_draft_is_404(other_api: ApiClient, draft: Draft) -> None:
    assert_error(other_api.get(path(draft)), 404)
    assert_error(other_api.put(path(draft), json={"data": []}), 404)
