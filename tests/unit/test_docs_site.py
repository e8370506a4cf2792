"""The documentation site (mkdocs.yml, docs/hooks.py) builds with `--strict`, every internal link
and anchor of the built HTML resolves, and every rule code has its page: each rule, each engine
code, each merged code (issue 47). Built in this process into a temporary folder, as CI runs it."""

from __future__ import annotations

import posixpath
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List, Set, Tuple
from urllib.parse import unquote, urlsplit

import pytest

from tests.conftest import ROOT

mkdocs = pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: List[str] = []
        self.ids: Set[str] = set()

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, "str | None"]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if value and ((name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script"))):
                self.links.append(value)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with one planted redirect (VJP199 -> VJP101: no code has been merged yet, and a
    merged code must get its page too)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from vjplint.settings.redirects import REDIRECTS

    out = tmp_path_factory.mktemp("site")
    REDIRECTS["VJP199"] = "VJP101"
    try:
        build(load_config(str(ROOT / "mkdocs.yml"), site_dir=str(out), strict=True))  # raises on any warning
    finally:
        del REDIRECTS["VJP199"]
    return out


def _pages(site: Path) -> Dict[str, _Page]:
    pages = {}
    for path in site.rglob("*.html"):
        parser = _Page()
        parser.feed(path.read_text(encoding="utf-8"))
        pages[path.relative_to(site).as_posix()] = parser
    return pages


def test_every_internal_link_and_anchor_resolves(site: Path):
    pages = _pages(site)
    broken = []
    for name, page in pages.items():
        if name == "404.html":  # served for any missing path, so its links start at the site's root
            continue
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("mailto:"):
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(name), unquote(parts.path))) if parts.path else name
            if (site / target).is_dir():
                target = posixpath.join(target, "index.html")
            if not (site / target).is_file():
                broken.append(f"{name}: {link} (no {target})")
            elif parts.fragment and target.endswith(".html") and parts.fragment not in pages[target].ids:
                broken.append(f"{name}: {link} (no anchor #{parts.fragment} in {target})")
    assert broken == [], "\n".join(broken)
    assert len(pages) > 90  # the guides, the measured facts and a page per rule


def test_every_rule_code_has_its_page(site: Path):
    from vjplint.rules.registry import ENGINE_CODES, all_rules

    for code, rule in all_rules().items():
        assert f"<h1 id=\"{rule.NAME}-{code.lower()}\">" in (site / "rules" / code / "index.html").read_text(), code
    for code, (name, _) in ENGINE_CODES.items():
        assert f"<h1 id=\"{name}-{code.lower()}\">" in (site / "rules" / code / "index.html").read_text(), code
    merged = (site / "rules" / "VJP199" / "index.html").read_text()
    assert 'VJP199 has been merged into <a href="../VJP101/">VJP101</a>' in merged
    table = (site / "rules" / "index.html").read_text()
    assert all(f'<a href="{code}/">{code}</a>' in table for code in [*all_rules(), *ENGINE_CODES])


def test_the_home_page_is_the_readme_with_site_links(site: Path):
    home = (site / "index.html").read_text()
    assert "Quick start" in home and 'href="fixes/#safety"' in home and 'href="rules/VJP101/"' in home
    assert "docs/" not in {link.split("/")[0] + "/" for link in _pages(site)["index.html"].links}


def test_every_guide_is_in_the_nav():
    """A guide added to docs/ and forgotten in mkdocs.yml would be built but reachable from no menu."""
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    listed = {page for entry in nav for page in entry.values() if isinstance(page, str)}
    assert {p.name for p in (ROOT / "docs").glob("*.md")} <= listed
