"""Variable-data benchmark: the business card with N rows (default 10,000) into one print PDF.

    .venv/bin/python bench/vdata.py [--rows 10000]

Each run happens in a fresh child process, so peak RSS (``VmHWM``) belongs to that run
alone: first reportlab writing N blank pages of the card's print size into one document
(the baseline), then pps's ``render_records_pdf`` rendering N records, every row with its own
name, e-mail and URL (so a new QR code per record), into one document. Prints pages/s and
peak RSS of both and the ratio of pages/s. Targets: >= 500 pages/s on one core and peak
RSS < 300 MB at 10,000 rows.

Flat memory: pps's run is repeated with a tenth of the rows (1,000 by default) in a fresh
process too, and the ratio of the peak RSS (N rows / N/10 rows) is printed, with the growth
of RSS while rendering (peak minus RSS after imports and template parsing). Flat memory
gives a ratio close to 1: the records are drawn a part at a time (``RECORDS_PER_PART``) and
each part's pages are appended to the output when it is done (``pps.render.pdf_parts``). In
one reportlab document, which holds every page until it is saved, peak RSS grew by about
11 kB a card (168 MB at 10,000 rows, 63 MB at 1,000).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CARD = ROOT / "examples" / "templates" / "business-card"


def rows(count: int) -> object:
    for index in range(count):
        yield {
            "name": f"Ada Lovelace {index}",
            "title": "Analyst of Engines",
            "phone": "+44 20 7946 0000",
            "email": f"ada{index}@example.org",
            "url": f"https://example.org/ada/{index}",
        }


def blank(count: int, out: Path) -> None:
    from reportlab.pdfgen.canvas import Canvas

    mm = 72 / 25.4
    canvas = Canvas(str(out), pagesize=(91 * mm, 61 * mm), invariant=True, pageCompression=1)
    for _ in range(count):
        canvas.showPage()
    canvas.save()


def records(count: int, out: Path) -> None:
    from pps.render import parse_spec
    from pps.render.pdf import render_records_pdf

    spec = parse_spec(json.loads((CARD / "template.json").read_text()), CARD)
    with out.open("wb") as handle:
        render_records_pdf(spec, rows(count), CARD, handle)  # type: ignore[arg-type]


def _rss_now(field: str = "VmRSS") -> float:
    """This process's resident set now (``VmRSS``) or at its peak (``VmHWM``), in MB (Linux).

    The peak is read here, not from ``ru_maxrss``: that also counts the parent's resident
    memory, which Linux carries over into a child started by fork or vfork and exec.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _child(name: str, count: int, out: str, queue: multiprocessing.Queue[object]) -> None:
    if name == "records":  # imports and the template's fonts, before the clock starts
        from pps.render import parse_spec
        from pps.render.pdf import render_records_pdf  # noqa: F401

        parse_spec(json.loads((CARD / "template.json").read_text()), CARD)
    else:
        from reportlab.pdfgen.canvas import Canvas  # noqa: F401
    before = _rss_now()
    started = time.perf_counter()
    (blank if name == "blank" else records)(count, Path(out))
    elapsed = time.perf_counter() - started
    peak = _rss_now("VmHWM")
    queue.put((elapsed, peak, before))


def measure(name: str, count: int) -> tuple[float, float, int, float]:
    """(pages/s, peak RSS in MB, bytes written, RSS growth while rendering in MB) of one
    run in a fresh process."""
    context = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[object] = context.Queue()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / f"{name}.pdf"
        process = context.Process(target=_child, args=(name, count, str(out), queue))
        process.start()
        elapsed, rss, before = queue.get()  # type: ignore[misc]
        process.join()
        return count / elapsed, rss, out.stat().st_size, max(0.0, rss - before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    base_rate, base_rss, base_size, _ = measure("blank", args.rows)
    rate, rss, size, growth = measure("records", args.rows)
    small_rows = max(1, args.rows // 10)
    _, small_rss, _, small_growth = measure("records", small_rows)
    print(f"rows: {args.rows} (business card, 1 page each)")
    print(
        f"reportlab blank pages: {base_rate:8.0f} pages/s  peak RSS {base_rss:6.1f} MB  "
        f"{base_size / 1e6:.1f} MB"
    )
    print(
        f"pps variable data:     {rate:8.0f} pages/s  peak RSS {rss:6.1f} MB  {size / 1e6:.1f} MB"
    )
    print(f"ratio of pages/s (pps / blank): {rate / base_rate:.3f}")
    print(
        f"flat memory: peak RSS {small_rss:.1f} MB at {small_rows} rows, {rss:.1f} MB at "
        f"{args.rows} rows: ratio {rss / small_rss:.3f}; growth while rendering "
        f"{small_growth:.1f} MB vs {growth:.1f} MB"
    )
    print(
        f"targets: >= 500 pages/s: {'met' if rate >= 500 else 'MISSED'}; "
        f"peak RSS < 300 MB: {'met' if rss < 300 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
