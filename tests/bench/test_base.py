import math

import pytest

from bench.base import percentile, write_section

pytestmark = pytest.mark.unit


def test_sections_are_replaced_in_place_and_others_kept(tmp_path):
    doc = tmp_path / "B.md"
    write_section("a", "Stage A", "make bench-a", [["figure", "value"], ["rate", 1]], doc=doc)
    write_section("b", "Stage B", "make bench-b", [["figure", "value"], ["rate", 2]], doc=doc)
    write_section("a", "Stage A", "make bench-a", [["figure", "value"], ["rate", 3]], doc=doc)
    text = doc.read_text()
    assert text.count("## Stage A") == 1 and "| rate | 3 |" in text and "| rate | 1 |" not in text
    assert "| rate | 2 |" in text and text.index("Stage A") < text.index("Stage B")


def test_percentile_is_a_measured_value_by_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99
    assert percentile(values, 100) == 100 and percentile([7.0, 3.0], 99) == 7
    assert percentile([5.0], 1) == 5
    assert math.isnan(percentile([], 99))  # nothing measured: shown as nan in a table
