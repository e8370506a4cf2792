"""The census of JAX's own checks (docs/facts/jax-errors.md) stays honest.

Every row names a script that exists, quotes the outcome recorded for it on JAX
(scripts/out/jax_errors.txt, written by scripts/jax_errors.py), and either names rule codes that
exist, the first of which `vjplint check` gives on the script, or starts with "none" and says why.
Linting runs in process, without JAX.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from vjplint.lint.engine import lint_source
from vjplint.rules import registry
from vjplint.settings.config import Config

ROOT = pathlib.Path(__file__).resolve().parents[2]
FACTS = ROOT / "docs" / "facts"
ROW = re.compile(r"^\| (E\d\d) \| (.*)\|\s*$")


def _rows():
    rows = []
    text = (FACTS / "jax-errors.md").read_text(encoding="utf-8")
    for line in text.split("\n## Summary", 1)[0].splitlines():  # the census table, not the summary's
        m = ROW.match(line)
        if m:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
            rows.append((m.group(1), cells))
    return rows


def _recorded():
    lines = (FACTS / "scripts" / "out" / "jax_errors.txt").read_text(encoding="utf-8").splitlines()
    return dict(line.split(": ", 1) for line in lines if not line.startswith("#"))


ROWS = _rows()


def test_every_script_has_one_row_and_the_rows_are_numbered_in_order():
    scripts = sorted(p.stem for p in (FACTS / "scripts" / "errors").glob("e*.py"))
    named = [re.search(r"\(scripts/errors/(e\d\d_\w+)\.py\)", cells[3]).group(1) for _, cells in ROWS]
    assert named == scripts
    assert [rid for rid, _ in ROWS] == [f"E{i:02d}" for i in range(1, len(ROWS) + 1)]
    assert len(ROWS) >= 60


@pytest.mark.parametrize("rid,cells", ROWS, ids=[rid for rid, _ in ROWS])
def test_row(rid, cells):
    where, message, condition, script_cell, verdict = cells
    assert where and condition
    script = re.search(r"\((scripts/errors/(e\d\d_\w+)\.py)\)", script_cell)
    path = FACTS / script.group(1)
    assert path.is_file()
    # the quoted outcome is the beginning of what JAX did, as recorded
    quoted = message.strip("`").replace("\\|", "|")
    assert _recorded()[script.group(2)].startswith(quoted), rid
    codes = re.findall(r"`(VJP\d{3})`", verdict)
    known = registry.all_rules()
    assert all(code in known for code in codes), codes
    if verdict.startswith("none"):
        # a reason, not just the word
        assert len(verdict) > len("none: ") + 20, rid
        return
    assert codes, f"{rid}: a row without 'none' names the rule that finds it"
    found = {d.code for d in lint_source(str(path), path.read_bytes(), Config()).diagnostics}
    assert codes[0] in found, (rid, codes[0], sorted(found))


def test_the_summary_counts_the_table():
    verdicts = [cells[4] for _, cells in ROWS]
    text = (FACTS / "jax-errors.md").read_text(encoding="utf-8").split("\n## Summary", 1)[1]
    ruled = sum(not v.startswith("none") for v in verdicts)
    gaps = [rid for rid, cells in ROWS if cells[4].startswith("none yet")]
    reasons = len(verdicts) - ruled - len(gaps)
    assert f"{len(ROWS)} rows" in text
    assert f"**{ruled} have a rule**" in text
    assert f"**{reasons} have a\nstated reason**" in text or f"**{reasons} have a stated reason**" in text
    assert ", ".join(gaps) in text if gaps else "no row is a gap" in text
