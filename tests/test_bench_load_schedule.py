"""The load benchmark's bookkeeping: which runs form a scenario's baseline, and its ratios.

The benchmark itself is run by hand; its schedule and arithmetic are plain functions, so a
change that pairs a scenario with the wrong hello-world runs fails here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import load


def _raw(requests: int, p99_us: int, *, unexpected: int = 0) -> dict[str, Any]:
    return {
        "requests": requests,
        "duration_us": 1_000_000,
        "latency_us": {"p50": p99_us // 2, "p99": p99_us},
        "socket_errors": {"connect": 0, "read": 0, "write": 0, "timeout": 0},
        "expected_status": 302,
        "unexpected": unexpected,
        "first_unexpected": 500 if unexpected else 0,
        "exhausted": 0,
    }


@pytest.mark.parametrize("rounds", [1, 2, 5])
def test_every_scenario_run_sits_between_two_hello_world_runs(rounds: int) -> None:
    order = load.schedule(["auth", "file", "preview", "user"], rounds)
    names = [name for _, name in order]
    assert names[0] == names[-1] == "hello"
    for index, name in enumerate(names):
        if name != "hello":
            assert names[index - 1] == names[index + 1] == "hello"
    for scenario in ("auth", "file", "preview", "user"):
        assert [n for n, name in order if name == scenario] == list(range(1, rounds + 1))
    assert names.count("hello") == 4 * rounds + 1


def test_a_scenario_is_measured_against_the_mean_of_its_neighbours() -> None:
    before = load.summarise("hello", _raw(4000, 20_000), None)
    after = load.summarise("hello", _raw(3000, 30_000), None)
    run = load.summarise("auth", _raw(2800, 50_000), load.bracket(before, after))
    assert run["rps_ratio"] == pytest.approx(2800 / 3500)
    assert run["p99_ratio"] == pytest.approx(50 / 25)
    assert run["meets_target"] is True
    slow = load.summarise("auth", _raw(2400, 50_000), load.bracket(before, after))
    assert slow["meets_target"] is False


def test_a_ratio_counts_only_when_both_neighbours_loaded_the_machine() -> None:
    before = load.summarise("hello", _raw(4000, 20_000), None)
    idle = {**load.summarise("hello", _raw(1900, 20_000), None), "saturated": False}
    assert load.bracket(before, idle)["saturated"] is False
    assert load.bracket(before, before)["saturated"] is True


def test_aggregate_names_rounds_not_positions() -> None:
    hello = load.summarise("hello", _raw(4000, 20_000), None)
    runs = []
    for number, unexpected in ((1, 0), (2, 3), (3, 0)):
        run = load.summarise("auth", _raw(3000, 20_000, unexpected=unexpected), hello)
        run["round"] = number
        runs.append(run)
    row = load.aggregate("auth", runs)
    assert row["invalid_rounds"] == [2]
    assert row["valid"] is False
    assert row["rps_ratio"] == pytest.approx(0.75)
    assert row["rps_ratio_per_round"] == pytest.approx([0.75, 0.75, 0.75])


def test_every_scenario_has_an_expected_status_and_naive_runs_only_when_asked() -> None:
    assert set(load.EXPECTED) == set(load.SCENARIOS)
    assert "naive" not in load.DEFAULT_SCENARIOS
    assert set(load.DEFAULT_SCENARIOS) == {"auth", "file", "preview", "user"}


def test_file_scenarios_ask_for_their_endpoint_with_a_reusable_token(tmp_path: Path) -> None:
    pps = SimpleNamespace(
        base_url="http://127.0.0.1:1",
        file_path="/api-ext/files/draft/abc/print",
        file_token="file.token.sig",
        preview_path="/api-ext/files/template/Tmpl1234/page-preview-thumb",
        preview_token="preview.token.sig",
    )
    opts = load.parse_args([])
    for name, path, token in (
        ("file", pps.file_path, pps.file_token),
        ("preview", pps.preview_path, pps.preview_token),
    ):
        url, lua_args = load.scenario_args(name, pps, tmp_path, opts, 0, name)  # type: ignore[arg-type]
        assert url == f"{pps.base_url}{path}?jwt={token}"
        assert lua_args == ["expected=302"]
        assert load.TARGETS[name] == load.TARGETS["auth"]
    assert list(tmp_path.iterdir()) == []  # a reusable token: no token files
