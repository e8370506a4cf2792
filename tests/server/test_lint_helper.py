"""The Language Server's lint helper (vjplint.server.lint_helper), a real second process.

It lints a big document's first lint with the nondiff-inference rules while the server lints
it with the others; the merged lint is the whole lint, and a helper that fails, dies or is busy
only means the server lints those rules itself. tests/unit/test_rule_split.py checks the merge over
the whole corpus in-process; tests/server/test_server_lint_helper.py, the server that uses the helper.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest

from tests.conftest import ROOT
from tests.server import HANG_GUARD_S
from vjplint.settings.config import Config
from vjplint.lint.engine import RuleSplit, lint_source
from vjplint.server import lint_helper
from vjplint.server.lint_helper import LintHelper, helper_codes

sys.path.insert(0, str(ROOT / "benchmarks"))
from lsp_latency import make_module  # noqa: E402


TEXT = make_module(600)  # 32 custom_vjps, VJP101 on half of them


@pytest.fixture
def helper(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VJPLINT_LINT_HELPER", "1")
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    started = LintHelper.start()
    assert started is not None
    yield started
    started.stop()
    started.proc.wait(HANG_GUARD_S)


def _reprs(result) -> List[str]:
    return [repr(d) for d in result.diagnostics]


def test_the_helper_runs_its_rules_in_another_process(helper: LintHelper):
    whole = lint_source("m.py", TEXT)
    split = helper.split("m.py", TEXT, Config(), None)
    assert isinstance(split, RuleSplit) and split.codes == helper_codes()
    merged = lint_source("m.py", TEXT, split=split)
    assert _reprs(merged) == _reprs(whole)
    assert [d.code for d in whole.diagnostics].count("VJP101") == 32  # `lo` and `hi` of each clip
    assert helper.proc.pid != os.getpid() and helper.alive
    assert helper.describe() == f"lint helper: pid {helper.proc.pid}, running; first lints shared with it: 1"


def test_it_runs_the_family_it_is_asked_for(helper: LintHelper):
    split = helper.split("m.py", TEXT, Config(), None, lint_helper.AHEAD_FAMILY)
    assert split is not None and split.codes == helper_codes(lint_helper.AHEAD_FAMILY)
    assert _reprs(lint_source("m.py", TEXT, split=split)) == _reprs(lint_source("m.py", TEXT))


def test_it_lints_with_the_settings_it_is_sent(helper: LintHelper):
    config = Config(ignore=("VJP101",), extend_select=("VJP109",))
    merged = lint_source("m.py", TEXT, config, split=helper.split("m.py", TEXT, config, None))
    assert _reprs(merged) == _reprs(lint_source("m.py", TEXT, config))
    assert "VJP101" not in {d.code for d in merged.diagnostics}


def test_a_busy_helper_is_not_asked_again(helper: LintHelper):
    first = helper.split("m.py", TEXT, Config(), None)
    assert first is not None
    assert helper.split("m.py", TEXT, Config(), None) is None  # one request at a time
    assert first.collect() is not None
    deadline = time.monotonic() + HANG_GUARD_S
    while helper.busy and time.monotonic() < deadline:
        time.sleep(0.01)
    assert helper.split("m.py", TEXT, Config(), None) is not None


def test_a_helper_that_dies_leaves_its_rules_to_the_server(helper: LintHelper):
    split = helper.split("m.py", TEXT, Config(), None)
    helper.proc.kill()
    merged = lint_source("m.py", TEXT, split=split)
    assert _reprs(merged) == _reprs(lint_source("m.py", TEXT))  # whatever the helper managed
    helper.proc.wait(HANG_GUARD_S)
    assert not helper.alive
    assert helper.split("m.py", TEXT, Config(), None) is None  # not asked again
    assert helper.describe().startswith(f"lint helper: pid {helper.proc.pid}, stopped")


def test_an_answer_that_never_comes_is_not_waited_for_forever(helper: LintHelper, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lint_helper, "COLLECT_TIMEOUT_S", 0.0)
    # Stopped, the helper cannot answer: a zero time limit alone raced with it (on a loaded
    # machine the helper answered before the server's own rules were done, and was used).
    # (Woken after 60 s, so that a wait without a limit fails below instead of hanging.)
    os.kill(helper.proc.pid, signal.SIGSTOP)
    wake = threading.Timer(60, os.kill, (helper.proc.pid, signal.SIGCONT))
    wake.start()
    split = helper.split("m.py", TEXT, Config(), None)
    assert split is not None
    merged = lint_source("m.py", TEXT, split=split)  # the server runs the rules itself
    wake.cancel()
    assert _reprs(merged) == _reprs(lint_source("m.py", TEXT))
    assert helper.fallbacks == 1 and not helper.alive
    assert "(1 linted here after it failed)" in helper.describe()


def test_the_helper_exits_at_the_end_of_its_input(helper: LintHelper):
    assert helper.proc.stdin is not None
    helper.proc.stdin.close()
    assert helper.proc.wait(HANG_GUARD_S) == 0


def test_a_module_of_the_working_directory_never_shadows_the_standard_library(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "ast.py").write_text("raise SystemExit('the working directory was imported')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setenv("VJPLINT_LINT_HELPER", "1")
    started = LintHelper.start()
    assert started is not None
    try:
        merged = lint_source("m.py", TEXT, split=started.split("m.py", TEXT, Config(), None))
        assert started.fallbacks == 0 and started.alive
        assert _reprs(merged) == _reprs(lint_source("m.py", TEXT))
    finally:
        started.stop()
        started.proc.wait(HANG_GUARD_S)


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_no_helper_when_switched_off(monkeypatch: pytest.MonkeyPatch, value: str):
    monkeypatch.setenv("VJPLINT_LINT_HELPER", value)
    assert LintHelper.start() is None


def test_no_helper_on_one_core(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("VJPLINT_LINT_HELPER", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert LintHelper.start() is None


@pytest.mark.parametrize("value,lines", [("100", 100), ("0", 1), ("many", 2000), ("", 2000)])
def test_the_size_threshold_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str, lines: int):
    monkeypatch.setenv("VJPLINT_SPLIT_MIN_LINES", value)
    assert lint_helper._min_lines() == lines
