"""The device-rate cache's format (formats/rate_cache.py): versioned, and an old unversioned file still reads."""

import json

from optbench.formats import rate_cache


def test_a_written_cache_carries_its_format_and_reads_back(tmp_path):
    path = tmp_path / "estimate-rates.json"
    rate_cache.write(path, {"host|torch|cpu|m": {"images_per_s": 500.0, "load": 0.2}})
    assert json.loads(path.read_text())["format"] == rate_cache.FORMAT
    assert rate_cache.read(path) == {"host|torch|cpu|m": {"images_per_s": 500.0, "load": 0.2}}


def test_an_unversioned_cache_written_before_the_format_reads_as_format_1(tmp_path):
    path = tmp_path / "fastest-device.json"
    path.write_text(json.dumps({"host|torch|cpu,mps|m": {"cpu": 300.0, "mps": 200.0}}))
    assert rate_cache.read(path) == {"host|torch|cpu,mps|m": {"cpu": 300.0, "mps": 200.0}}


def test_a_damaged_or_newer_cache_reads_as_empty_and_is_measured_again(tmp_path):
    path = tmp_path / "estimate-rates.json"
    for content in ("{not json", "[1, 2]", json.dumps({"format": rate_cache.FORMAT + 1, "entries": {"k": {}}})):
        path.write_text(content)
        assert rate_cache.read(path) == {}
    assert rate_cache.read(tmp_path / "missing.json") == {}
