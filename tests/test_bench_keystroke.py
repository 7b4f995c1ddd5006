"""The keystroke benchmark's arithmetic: which image load answers which key stroke, and
its percentiles. The benchmark itself is run by hand (it drives Chromium for a minute).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import keystroke


def test_a_key_stroke_is_answered_by_the_first_load_showing_it_or_a_later_value() -> None:
    down = [[0.0, 1], [100.0, 2], [200.0, 3], [300.0, 4]]
    # Value 1 shown at 60; value 2 was typed during a render: 3 answers both at 290;
    # value 4 is never shown.
    shown = [[60.0, 1], [290.0, 3]]
    assert keystroke.latencies(down, shown) == [60.0, 190.0, 90.0]


def test_a_load_before_the_key_stroke_does_not_answer_it() -> None:
    assert keystroke.latencies([[100.0, 2]], [[50.0, 5], [130.0, 2]]) == [30.0]


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 61)]
    assert keystroke.percentile(values, 0.50) == 30.0
    assert keystroke.percentile(values, 0.95) == 57.0
    assert keystroke.percentile([7.0], 0.95) == 7.0
    assert keystroke.summary([]) == {"n": 0, "p50": None, "p95": None, "max": None, "mean": None}
