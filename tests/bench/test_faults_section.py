"""bench.faults lays the cluster tier's recorded figures out as the Faults section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import faults

pytestmark = pytest.mark.unit


def _figures(name: str, **over: object) -> dict[str, object]:
    return {
        "fault": name,
        "offered_per_s": 900.0,
        "accepted_per_s": 897.4,
        "retries": 3,
        "recover_s": 12.34,
        "recovery": "restart until healthy",
        "samples_lost": 0,
        "samples_extra": 0,
        "windows": 6,
        "windows_wrong": 0,
        "converge_s": 4.0,
        "reads": 50,
        "reads_failed": 2,
        "fresh_after_s": 7.25,
        "notes": {"down_s": 15},
        **over,
    }


def test_rows_follow_the_fault_order_with_every_figure() -> None:
    table = faults.rows(
        {
            "aggregator shard stopped": _figures("aggregator shard stopped"),
            "kafka broker kill -9": _figures("kafka broker kill -9", windows_wrong=1),
            "two kafka brokers down 30 s": _figures(
                "two kafka brokers down 30 s", fresh_after_s=None
            ),
        }
    )
    assert [r[0] for r in table[1:]] == [
        "kafka broker kill -9",
        "two kafka brokers down 30 s",
        "aggregator shard stopped",
    ]
    assert table[1][1:] == [
        "897 / 900",
        3,
        "12.3",
        "restart until healthy",
        0,
        0,
        "1 / 6",
        "4.0",
        "2 / 50",
        "7.2",
    ]
    assert table[2][-1] == "never"  # freshness not back within the watch


def test_main_writes_the_section_from_the_figures_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n")
    written: dict[str, object] = {}

    def fake_write(key: str, title: str, command: str, rows: object, notes: str = "") -> str:
        written.update(key=key, command=command, rows=rows, notes=notes)
        return ""

    monkeypatch.setattr(faults, "write_section", fake_write)
    path = tmp_path / "faults.json"
    path.write_text(json.dumps({"kafka broker kill -9": _figures("kafka broker kill -9")}))
    assert faults.main(["--figures", str(path)]) == 0
    assert written["key"] == "faults" and written["command"] == faults.COMMAND
    assert faults.main(["--figures", str(path), "--command", "make bench-faults X=1"]) == 0
    assert written["command"] == "make bench-faults X=1"
    assert "down_s 15" in str(written["notes"])
    assert faults.main(["--figures", str(tmp_path / "none.json")]) == 1
