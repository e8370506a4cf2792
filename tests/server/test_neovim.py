"""The Neovim recipes of docs/editors-and-ci.md, run as written in a real headless Neovim.

The recipe blocks are read from the docs (marked `<!-- nvim: NAME -->`), written into an
init.lua, and Neovim runs them against this checkout's `vjplint server`: diagnostics arrive,
saving a Python file writes the fixed text, and saving pyproject.toml re-lints the open files.
Neovim comes from `nvim` on PATH, /usr/bin/nvim (.ci/run installs Debian's) and
$VJPLINT_TEST_NVIM (more binaries, separated by os.pathsep); each distinct one is tested, and the
test skips only when there is none.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.conftest import ROOT, RULE_FIXTURES, run_cli

DOC = ROOT / "docs" / "editors-and-ci.md"
HAZARD = RULE_FIXTURES / "VJP101" / "fire_clip_gradient.py"  # VJP101 x2 (fixable), VJP104 x2

DRIVER = r"""
local result = { steps = {} }
local function finish()
  vim.fn.writefile({ vim.fn.json_encode(result) }, RESULT)
  vim.cmd("qa!")
end
local function codes(buf)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(found, d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) or "?")
  end
  table.sort(found)
  return found
end
local function step(name, ms, pred, buf)
  local ok = vim.wait(ms, pred, 50)
  result.steps[#result.steps + 1] = { name = name, ok = ok, codes = codes(buf) }
  return ok
end
local ok, err = pcall(function()
  -- Three windows, as a user would have them: the file kept as it is, the file fixed on save,
  -- and pyproject.toml (Neovim 0.10+ pulls diagnostics for the buffers it shows).
  vim.cmd("edit " .. KEEP)
  local keep = vim.api.nvim_get_current_buf()
  if not step("keep: diagnostics", 30000, function() return #vim.diagnostic.get(keep) >= 4 end, keep) then return end
  vim.cmd("split " .. FIX)
  local fix = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[fix].filetype
  if not step("fix: diagnostics", 15000, function() return #vim.diagnostic.get(fix) >= 4 end, fix) then return end
  vim.cmd("write")  -- BufWritePre applies fix-all before the text is written
  step("fix: after write", 15000, function() return #vim.diagnostic.get(fix) == 0 end, fix)
  vim.cmd("split " .. PYPROJECT)
  vim.api.nvim_buf_set_lines(0, -1, -1, false, { 'ignore = ["VJP101"]' })
  vim.cmd("write")  -- BufWritePost tells the server
  step("keep: after pyproject", 15000, function()
    for _, code in ipairs(codes(keep)) do if code == "VJP101" then return false end end
    return #vim.diagnostic.get(keep) > 0
  end, keep)
end)
result.error = not ok and tostring(err) or nil
finish()
"""


def nvims() -> List[Tuple[str, Tuple[int, int]]]:
    found: Dict[str, Tuple[str, Tuple[int, int]]] = {}
    candidates = [shutil.which("nvim") or "", "/usr/bin/nvim"] + os.environ.get("VJPLINT_TEST_NVIM", "").split(os.pathsep)
    for path in filter(None, candidates):
        try:
            first = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
        except OSError:  # not there
            continue
        match = re.match(r"NVIM v(\d+)\.(\d+)", first)
        if match:
            found.setdefault(os.path.realpath(path), (path, (int(match[1]), int(match[2]))))
    return sorted(found.values(), key=lambda item: item[1])


def recipe(name: str) -> str:
    """The ```lua block right after `<!-- nvim: NAME -->` in the docs."""
    match = re.search(rf"<!-- nvim: {re.escape(name)} -->\n```lua\n(.*?)\n```\n", DOC.read_text(encoding="utf-8"),
                      re.S)
    assert match, f"no `<!-- nvim: {name} -->` lua block in {DOC}"
    return match[1]


NVIMS = nvims()


@pytest.mark.skipif(not NVIMS, reason="Neovim is not installed (`apt-get install neovim`; .ci/run installs it)")
@pytest.mark.parametrize("nvim,version", NVIMS, ids=[f"nvim-{v[0]}.{v[1]}" for _, v in NVIMS])
def test_documented_recipes_in_headless_neovim(tmp_path: Path, nvim: str, version: Tuple[int, int]) -> None:
    vjplint = Path(sys.executable).with_name("vjplint")
    assert vjplint.exists(), f"{vjplint}: the test environment has no vjplint script"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "vjplint").symlink_to(vjplint)  # the recipes run `vjplint server` from PATH
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.vjplint]\n", encoding="utf-8")
    fix, keep = project / "ops.py", project / "keep.py"
    shutil.copyfile(HAZARD, fix)
    shutil.copyfile(HAZARD, keep)
    expected = tmp_path / "expected.py"
    shutil.copyfile(HAZARD, expected)
    assert run_cli("--fix", "--no-cache", str(expected)).returncode == 0

    start = recipe("start 0.11" if version >= (0, 11) else "start 0.7")
    (tmp_path / "init.lua").write_text(start + "\n\n" + recipe("on-save") + "\n", encoding="utf-8")
    result_file = tmp_path / "result.json"
    names = {"FIX": fix, "KEEP": keep, "PYPROJECT": project / "pyproject.toml", "RESULT": result_file}
    driver = "".join(f"local {k} = {json.dumps(str(v))}\n" for k, v in names.items()) + DRIVER
    (tmp_path / "driver.lua").write_text(driver, encoding="utf-8")

    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1",
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's code, however vjplint is installed (as run_cli)
    proc = subprocess.run([nvim, "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua"),
                           "-c", f"luafile {tmp_path / 'driver.lua'}"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result_file.exists(), f"Neovim wrote no result (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(result_file.read_text(encoding="utf-8"))
    assert result.get("error") is None, result
    assert result["filetype"] == "python"
    steps = {s["name"]: s for s in result["steps"]}
    hazard = ["VJP101", "VJP101", "VJP104", "VJP104"]
    assert steps["fix: diagnostics"] == {"name": "fix: diagnostics", "ok": True, "codes": hazard}, result
    assert steps["keep: diagnostics"]["codes"] == hazard, result
    # Fix all on save: the file on disk is what `vjplint --fix` writes, and its diagnostics go.
    assert fix.read_text(encoding="utf-8") == expected.read_text(encoding="utf-8")
    assert steps["fix: after write"] == {"name": "fix: after write", "ok": True, "codes": []}, result
    # Saving pyproject.toml with `ignore = ["VJP101"]` re-lints the open file that was not fixed.
    assert steps["keep: after pyproject"] == {"name": "keep: after pyproject", "ok": True,
                                              "codes": ["VJP104", "VJP104"]}, result
    assert keep.read_text(encoding="utf-8") == HAZARD.read_text(encoding="utf-8")
