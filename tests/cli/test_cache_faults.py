"""Fault injection into every cache record: a record that is valid JSON of the wrong type (`[]`,
`null`, a string, a field or a row of the wrong type) counts as no record, never as an internal
error, and the next run writes a good record over it (issue 48, item 4).

The command runs for real on real files (the replay and the result cache are read by the CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_speed_invariants import FIRING, _age_tree, _json, _replay_tree, _run_in, _tree
from vjplint.batch.cache import ENTRY
from vjplint.settings.cache_files import entries_sum, row_matches

WRONG_TYPES = ([], None, "s", 7, True, {})


def _drop_replays(root: Path) -> None:
    for replay in (root / ".vjplint_cache").glob("*/replay-*.json"):
        replay.unlink()


def _only(paths: list) -> Path:
    assert len(paths) == 1, paths
    return paths[0]


def test_replay_records_of_the_wrong_type_count_as_none_and_are_replaced(tmp_path: Path) -> None:
    _replay_tree(tmp_path)
    (tmp_path / ".vjplint_cache").mkdir()
    _age_tree(tmp_path)
    first = _run_in(tmp_path, ".")
    assert first["rc"] == 1 and "VJP101" in first["out"] and not first["replayed"]
    record = _only(list((tmp_path / ".vjplint_cache").glob("*/replay-*.json")))
    good = json.loads(record.read_text())
    stat_row = good["stats"][0]
    damaged = [*WRONG_TYPES,
               {**good, "format": "1"}, {**good, "stats": "x"}, {**good, "stats": {"a": 1}},
               {**good, "stats": [stat_row[:3]]}, {**good, "stats": [[0, False, 0, 0]]},  # a file descriptor
               {**good, "stats": [[stat_row[0], "yes", 0, 0]]}, {**good, "stats": [[stat_row[0], None, 0, 1.5]]},
               {**good, "stdout": 5}, {**good, "stdout": None}, {**good, "stdout": "\ud800 lone surrogate"},
               {**good, "rc": "1"}, {**good, "rc": True}, {**good, "rc": None}, {**good, "made_ns": "later"},
               {k: v for k, v in good.items() if k != "stats"}]
    for bad in damaged:
        record.write_text(json.dumps(bad))
        assert _run_in(tmp_path, ".") == {**first, "replayed": False}, bad
        rewritten = json.loads(record.read_text())  # the full run wrote a good record over it
        assert {k: v for k, v in rewritten.items() if k != "made_ns"} == {k: v for k, v in good.items() if k != "made_ns"}
    assert _run_in(tmp_path, ".") == {**first, "replayed": True}


def test_configuration_records_of_the_wrong_type_count_as_none_and_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\ncustom-vjp-aliases = ["mylib.cvjp"]\n')
    (tmp_path / "plain.py").write_text("import numpy as np\n")
    _age_tree(tmp_path)
    passed = {"rc": 0, "out": "All checks passed!\n"}
    assert _run_in(tmp_path, "plain.py") == {**passed, "replayed": False}
    record = _only(list((tmp_path / ".vjplint_cache").glob("*/config-*.json")))
    good = json.loads(record.read_text())
    _drop_replays(tmp_path)
    assert _run_in(tmp_path, "plain.py") == {**passed, "replayed": True}
    for bad in [*WRONG_TYPES, {**good, "names": "cvjp"}, {**good, "names": [1]}, {**good, "size": "3"},
                {**good, "mtime": None}, {**good, "made_ns": [1]}]:
        record.write_text(json.dumps(bad))
        _drop_replays(tmp_path)  # the configuration record is what the fast path must read
        assert _run_in(tmp_path, "plain.py") == {**passed, "replayed": False}, bad  # the full run answered
        rewritten = json.loads(record.read_text())
        assert {k: v for k, v in rewritten.items() if k != "made_ns"} == {k: v for k, v in good.items() if k != "made_ns"}
        _drop_replays(tmp_path)
        assert _run_in(tmp_path, "plain.py") == {**passed, "replayed": True}  # the fast path trusts it again


def _result_index(root: Path) -> Path:
    files = (root / ".vjplint_cache").glob("*/*.json")
    return _only([p for p in files if not p.name.startswith(("replay-", "config-"))])


def test_result_index_entries_of_the_wrong_type_are_linted_again_and_replaced(tmp_path: Path) -> None:
    _tree(tmp_path, small=True)
    reference = _json(tmp_path)
    index = _result_index(tmp_path)
    good = json.loads(index.read_text())
    display, entry = next((k, v) for k, v in good["entries"].items() if v[4])  # a file with findings
    finding = entry[4][0]
    assert finding["$d"] == "Diagnostic"

    def with_entry(value: object) -> dict:
        return {**good, "entries": {**good["entries"], display: value}}

    def with_field(name: str, value: object) -> dict:
        return with_entry([*entry[:4], [{**finding, "f": {**finding["f"], name: value}}], *entry[5:]])

    damaged = [*WRONG_TYPES, {**good, "entries": []}, {**good, "entries": None},
               with_entry([]), with_entry(None), with_entry("s"), with_entry(entry[:6]),
               with_entry(["1", *entry[1:]]), with_entry([*entry[:3], 1, *entry[4:]]),
               with_entry([*entry[:4], "s", *entry[5:]]), with_entry([*entry[:5], None, entry[6]]),
               with_entry([*entry[:4], [None], *entry[5:]]), with_entry([*entry[:4], [[]], *entry[5:]]),
               with_entry([*entry[:4], [{"$d": "Diagnostic", "f": []}], *entry[5:]]),
               with_entry([*entry[:4], [{"$d": "Position", "f": {"row": 1, "column": 1}}], *entry[5:]]),
               with_entry([*entry[:4], [{"$e": "Severity", "v": "nope"}], *entry[5:]]),
               with_field("code", 5), with_field("message", None), with_field("severity", "error"),
               with_field("location", {"$d": "Position", "f": {"row": "1", "column": 1}}),
               with_field("location", {"$t": [1, 1]}), with_field("noqa_row", True),
               with_field("fix", {"$d": "Fix", "f": {"applicability": {"$e": "Applicability", "v": "safe"},
                                                     "message": "m", "edits": [1]}})]
    for bad in damaged:
        _drop_replays(tmp_path)  # this run must read the index
        index.write_text(json.dumps(bad))
        assert _json(tmp_path) == reference, bad
        rewritten = json.loads(index.read_text())["entries"]
        assert row_matches(rewritten[display], ENTRY), bad
        assert rewritten[display][:5] == entry[:5] and rewritten[display][6] == entry[6], bad


def test_project_index_records_of_the_wrong_type_count_as_empty(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nselect = ["ALL"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "firing.py").write_text(FIRING)
    (tmp_path / "pkg" / "user.py").write_text("import jax\nfrom pkg.firing import scale\n\n\n"
                                              "def loss(x):\n    return jax.grad(lambda x: scale(x, 2.0).sum())(x)\n")
    (tmp_path / "src").mkdir()  # _json lints src/: link the package there
    (tmp_path / "src" / "pkg").symlink_to(tmp_path / "pkg")
    reference = _json(tmp_path, "--no-cache")
    assert _json(tmp_path) == reference
    records = sorted((tmp_path / ".vjplint_cache").glob("*/project/*.json"))
    assert len(records) == 2, records  # the wrappers' index and the cross-module values
    for record in records:
        good = json.loads(record.read_text())
        assert good["entries"] and good["sum"] == entries_sum(good["entries"])
        name, entry = next(iter(good["entries"].items()))
        damaged = [*WRONG_TYPES, {**good, "entries": []},
                   {**good, "entries": {name: [*entry[:-1], "s"]}},  # checksum no longer holds
                   {**good, "sum": None}]
        for i in range(len(entry)):  # each field of the wrong type, with a checksum that holds
            entries = {**good["entries"], name: [*entry[:i], ["wrong"] if not isinstance(entry[i], list) else "s",
                                                 *entry[i + 1:]]}
            damaged.append({**good, "entries": entries, "sum": entries_sum(entries)})
        for bad in damaged:
            _drop_replays(tmp_path)
            record.write_text(json.dumps(bad))
            assert _json(tmp_path) == reference, (record.name, bad)
            rewritten = json.loads(record.read_text())
            assert rewritten["sum"] == entries_sum(rewritten["entries"]) and name in rewritten["entries"], bad


@pytest.mark.unit
def test_row_matches_never_takes_a_bool_for_an_int() -> None:
    assert row_matches([1, "a"], (int, str)) and not row_matches([True, "a"], (int, str))
    assert row_matches([None], ((dict, type(None)),)) and not row_matches([1, 2], (int,))
