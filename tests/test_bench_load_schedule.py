"""The load benchmark's bookkeeping: which runs form a scenario's baseline, and its ratios.

The benchmark itself is run by hand; its schedule and arithmetic are plain functions, so a
change that pairs a scenario with the wrong hello-world runs fails here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import benchlib
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


def test_each_round_starts_one_scenario_later_so_every_scenario_takes_every_place() -> None:
    scenarios = ["auth", "file", "preview", "naive"]
    order = load.schedule(scenarios, 4)
    by_round = [[name for n, name in order if n == r and name != "hello"] for r in range(1, 5)]
    assert by_round == [
        ["auth", "file", "preview", "naive"],
        ["file", "preview", "naive", "auth"],
        ["preview", "naive", "auth", "file"],
        ["naive", "auth", "file", "preview"],
    ]
    for place in range(4):
        assert sorted(run[place] for run in by_round) == sorted(scenarios)


def test_a_scenario_is_measured_against_the_mean_of_its_neighbours() -> None:
    before = load.summarise("hello", _raw(4000, 20_000), None)
    after = load.summarise("hello", _raw(3000, 30_000), None)
    run = load.summarise("auth", _raw(2800, 50_000), load.bracket(before, after))
    assert run["rps_ratio"] == pytest.approx(2800 / 3500)
    assert run["p99_ratio"] == pytest.approx(50 / 25)


def _round(number: int, name: str, rps: int, hello_rps: int, p99_us: int = 20_000) -> Any:
    hello = load.summarise("hello", _raw(hello_rps, 20_000), None)
    run = load.summarise(name, _raw(rps, p99_us), hello)
    run["round"] = number
    return run


def test_pps_scenarios_are_judged_against_naive_of_the_same_round() -> None:
    """Each round's ratio to hello-world over naive's of that round: a slow round for both
    (a noisy neighbour) cancels out."""
    runs = [
        _round(1, "auth", 2400, 4000),  # 0.60 of hello, naive 0.50: 1.20 of naive
        _round(1, "naive", 2000, 4000),
        _round(2, "auth", 1000, 2000),  # 0.50 of hello, naive 0.50: 1.00
        _round(2, "naive", 1000, 2000),
        _round(3, "auth", 1800, 4000),  # 0.45 of hello, naive 0.50: 0.90
        _round(3, "naive", 2000, 4000),
        _round(3, "user", 500, 4000),  # no target: no naive ratio
    ]
    load.against_naive(runs)
    assert [run.get("naive_ratio") for run in runs if run["scenario"] == "auth"] == pytest.approx(
        [1.2, 1.0, 0.9]
    )
    assert "naive_ratio" not in runs[-1]
    row = load.aggregate("auth", [run for run in runs if run["scenario"] == "auth"])
    assert row["naive_ratio"] == pytest.approx(1.0)
    assert (row["naive_ratio_min"], row["naive_ratio_max"]) == pytest.approx((0.9, 1.2))
    assert row["meets_target"] is True and row["meets_aim"] is False
    assert row["meets_p99"] is None  # judged at 32 connections only
    assert "naive_ratio" not in load.aggregate("user", [runs[-1]])


def test_targets_are_the_issues() -> None:
    assert load.TARGETS == {"auth": 1.0, "file": 1.0, "file-once": 1.0, "preview": 1.0}
    assert (load.AIM, load.P99_LIMIT, load.P99_CONNECTIONS) == (1.25, 3.0, 32)


def test_a_slow_scenario_misses_and_p99_is_judged_at_32_connections() -> None:
    runs = [_round(1, "file", 1800, 4000, p99_us=70_000), _round(1, "naive", 2000, 4000)]
    load.against_naive(runs)
    row = load.aggregate("file", runs[:1], connections=32)
    assert row["naive_ratio"] == pytest.approx(0.9)
    assert row["meets_target"] is False
    assert row["p99_ratio"] == pytest.approx(3.5)
    assert row["meets_p99"] is False
    assert "MISSED" in load.verdict(row)
    fast = load.aggregate("file", [_round(1, "file", 2600, 4000, p99_us=50_000)], connections=32)
    assert fast["meets_target"] is None  # no naive run in that invocation: not judged
    assert fast["meets_p99"] is True
    assert load.aggregate("file", runs[:1], connections=16)["meets_p99"] is None


def test_a_run_without_naive_is_not_judged_against_it() -> None:
    runs = [_round(1, "auth", 2400, 4000)]
    load.against_naive(runs)
    row = load.aggregate("auth", runs)
    assert row["meets_target"] is None and "no naive run" in load.verdict(row)


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


def test_every_scenario_has_an_expected_status_and_naive_runs_by_default() -> None:
    assert set(load.EXPECTED) == set(load.SCENARIOS)
    assert set(load.DEFAULT_SCENARIOS) == {"auth", "file", "file-once", "preview", "user", "naive"}


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


def test_the_single_use_file_scenario_sends_a_fresh_token_with_a_jti_every_request(
    tmp_path: Path,
) -> None:
    made: list[str] = []

    def once_file_token(jti: str) -> str:
        made.append(jti)
        return f"file.{jti}.sig"

    pps = SimpleNamespace(
        base_url="http://127.0.0.1:1",
        file_path="/api-ext/files/draft/abc/print",
        once_file_token=once_file_token,
    )
    opts = load.parse_args(["-t", "2"])
    url, lua_args = load.scenario_args("file-once", pps, tmp_path, opts, 6, "r1")  # type: ignore[arg-type]
    assert url == f"{pps.base_url}{pps.file_path}"
    prefix = tmp_path / "tokens-r1-"
    assert lua_args == ["expected=302", f"path={pps.file_path}?jwt=", f"tokens={prefix}"]
    dealt = [Path(f"{prefix}{index}.txt").read_text().split() for index in range(2)]
    assert sorted(dealt[0] + dealt[1]) == sorted(f"file.{jti}.sig" for jti in made)
    assert len(set(made)) == 6  # every request its own jti
    assert load.TARGETS["file-once"] == load.TARGETS["auth"]


def test_ab_compares_every_pps_scenario_between_hello_world_runs() -> None:
    import ab

    assert set(ab.SCENARIOS) == {"auth", "file", "file-once", "preview"}
    order = ab.sequence(list(ab.SCENARIOS), 2)
    assert order[0] == order[-1] == ("H", "hello")
    for index, (name, scenario) in enumerate(order):
        if name != "H":
            assert scenario in ab.SCENARIOS
            before = next(n for n, _ in reversed(order[:index]) if n == "H")
            assert before == "H" and any(n == "H" for n, _ in order[index:])
    for scenario in ab.SCENARIOS:
        runs = [name for name, which in order if which == scenario]
        assert runs.count("A") == runs.count("B") == 4
    measured = [
        (name, which, {"H": 4000.0, "A": 2000.0, "B": 3000.0}[name]) for name, which in order
    ]
    ratios = ab.ratios_of(measured, "file")
    assert ratios["A"] == pytest.approx([0.5] * 4)
    assert ratios["B"] == pytest.approx([0.75] * 4)


def test_cpu_per_request_is_carried_from_runs_to_the_scenarios_medians() -> None:
    assert load.cpu_per_request(10.0, 10.5, 1000) == pytest.approx(500.0)
    assert load.cpu_per_request(None, 1.0, 1000) is None  # no /proc: no figure
    assert load.cpu_per_request(1.0, 2.0, 0) is None
    hello = load.summarise("hello", _raw(4000, 20_000), None)
    runs = []
    for number, app_us in ((1, 900.0), (2, 700.0), (3, None)):
        raw = {**_raw(3000, 20_000), "app_cpu_us": app_us, "redis_cpu_us": 60.0}
        run = load.summarise("auth", raw, hello)
        run["round"] = number
        runs.append(run)
    row = load.aggregate("auth", runs)
    assert row["app_cpu_us"] == pytest.approx(800.0)  # a round without a figure is left out
    assert row["redis_cpu_us"] == pytest.approx(60.0)
    assert load.APP_OF.get("auth", "pps") == "pps" and load.APP_OF["naive"] == "naive"


def test_tree_cpu_counts_the_descendants_of_a_process() -> None:
    """A gunicorn master spends next to nothing; its workers, its children, do the work."""
    burn = (
        "import time\n"
        "end = time.process_time() + 0.4\n"
        "while time.process_time() < end: pass\n"
        "print('burnt', flush=True)\n"
        "time.sleep(60)\n"
    )
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; subprocess.run([sys.executable, '-c', sys.argv[1]])",
            burn,
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as parent:
        try:
            assert parent.stdout is not None
            assert parent.stdout.readline().strip() == "burnt"
            spent = benchlib.tree_cpu_seconds(parent.pid)
            assert spent is not None and spent >= 0.35
        finally:
            os.killpg(parent.pid, signal.SIGKILL)
            parent.wait()
    assert benchlib.tree_cpu_seconds(parent.pid) is None  # gone: no figure, no error
