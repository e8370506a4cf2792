"""Rule links come from one setting (vjplint.links) in every format that writes one, and every link
written by default resolves to a file of the installed package (issue 47: SARIF's `informationUri`
and rdjson's `source.url` named a GitHub repository that does not exist)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List
from urllib.parse import unquote, urlparse

import pytest

from tests.cli.test_first_contact import HAZARD
from tests.conftest import run_cli

LINK = re.compile(r"""(?:file|https?)://[^\s"'<>]+""")
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"  # SARIF's `$schema`, not a rule link
LINKED_FORMATS = ("json", "sarif", "rdjson", "lsp", "gitlab", "junit")
SITE = "https://docs.example.org/vjplint/rules/"


def _links(tmp_path: Path, env: Dict[str, str]) -> Dict[str, List[str]]:
    out = {}
    for fmt in LINKED_FORMATS:
        proc = run_cli("--no-cache", "--output-format", fmt, "m.py", cwd=tmp_path, env=env)
        assert proc.returncode == 1, proc.stderr
        here = tmp_path.resolve().as_uri() + "/"  # SARIF's %SRCROOT%, LSP's document URIs: not rule links
        out[fmt] = [link for link in LINK.findall(proc.stdout) if link != SCHEMA and not link.startswith(here)]
        assert out[fmt], fmt
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "m.py").write_text(HAZARD)
    return tmp_path


def test_every_link_written_by_default_is_a_file_of_the_installed_package(project: Path):
    import vjplint

    package = Path(vjplint.__file__).resolve().parent
    for fmt, links in _links(project, {"VJPLINT_DOCS_URL": ""}).items():
        for link in links:
            url = urlparse(link)
            path = Path(unquote(url.path))
            assert url.scheme == "file" and path.is_file() and package in path.parents, (fmt, link)
    sarif = json.loads(run_cli("--no-cache", "--output-format", "sarif", "m.py", cwd=project).stdout)
    driver = sarif["runs"][0]["tool"]["driver"]
    assert Path(unquote(urlparse(driver["informationUri"]).path)) == package / "docs" / "rules" / "README.md"


def test_docs_url_moves_every_link_and_the_environment_overrides_it(project: Path):
    (project / "pyproject.toml").write_text(f'[tool.vjplint]\ndocs-url = "{SITE}{{code}}/"\n')
    for env, base in (({}, SITE), ({"VJPLINT_DOCS_URL": "https://mirror.example.com/r/"}, "https://mirror.example.com/r/")):
        links = _links(project, env)
        rule_link = f"{base}VJP101/" if base == SITE else f"{base}VJP101.md"
        assert links["json"] == [rule_link] and links["lsp"] == [rule_link], env
        assert links["gitlab"] == [rule_link] and links["junit"] == [rule_link], env
        assert sorted(links["rdjson"]) == sorted([rule_link, base]), env  # source.url and code.url
        sarif = links["sarif"]  # informationUri, then each rule's helpUri
        assert sarif[0] == base and rule_link in sarif and all(link.startswith(base) for link in sarif), env


def test_rule_json_follows_the_environment():
    default = json.loads(run_cli("rule", "VJP101", "--output-format", "json").stdout)["url"]
    assert urlparse(default).scheme == "file" and Path(unquote(urlparse(default).path)).is_file()
    moved = run_cli("rule", "VJP101", "--output-format", "json", env={"VJPLINT_DOCS_URL": SITE})
    assert json.loads(moved.stdout)["url"] == f"{SITE}VJP101.md"


@pytest.mark.unit
def test_docs_home_of_each_kind_of_base():
    from vjplint.links import DEFAULT_DOCS_URL, docs_home

    assert docs_home(DEFAULT_DOCS_URL) == DEFAULT_DOCS_URL + "README.md"
    assert docs_home("https://example.org/vjplint/rules/") == "https://example.org/vjplint/rules/"
    assert docs_home("https://example.org/vjplint/{code}.html") == "https://example.org/vjplint/"
    assert docs_home("https://example.org/rules/{code}/") == "https://example.org/rules/"


def test_the_engine_codes_have_pages_and_rule_prints_them():
    """SARIF lists VJP900 and VJP901 with a helpUri: their pages ship too."""
    for code, name in (("VJP900", "syntax-error"), ("VJP901", "invalid-noqa")):
        for asked in (code, name):
            proc = run_cli("rule", asked)
            assert proc.returncode == 0 and proc.stdout.startswith(f"# {name} ({code})\n"), asked
        data = json.loads(run_cli("rule", code, "--output-format", "json").stdout)
        assert (data["code"], data["name"], data["explanation"].split("\n")[0]) == (code, name, "## What it does")
        assert Path(unquote(urlparse(data["url"]).path)).read_text(encoding="utf-8") == proc.stdout[:-1]


def test_a_replayed_run_follows_the_environment(project: Path):
    """An unchanged run is replayed from the cache (vjplint.batch.fastpath): the replay's key holds
    VJPLINT_DOCS_URL, so its stored JSON never carries the links of another setting."""
    def url(env: Dict[str, str]) -> str:
        proc = run_cli("--output-format", "json", "m.py", cwd=project, env=env)
        return json.loads(proc.stdout)[0]["url"]

    default = url({"VJPLINT_DOCS_URL": ""})
    assert url({"VJPLINT_DOCS_URL": ""}) == default and urlparse(default).scheme == "file"  # the second replays
    assert url({"VJPLINT_DOCS_URL": SITE}) == f"{SITE}VJP101.md"
    assert url({"VJPLINT_DOCS_URL": ""}) == default
