"""MkDocs hooks of the documentation site (mkdocs.yml): the pages that are generated, not written.

- `rules/CODE.md` and `rules/README.md`: from the rules themselves (vjplint.rules.docs.rule_pages,
  the source of `vjplint rule CODE` and of the pages shipped in vjplint/docs/rules), one per rule,
  per engine code and per merged code; each rule's page is listed under Rules in the nav.
- `index.md`: the README, its links to docs/ and vjplint/docs/rules/ made relative to the site.

Links from the guides to the README and to the shipped rule pages are rewritten the same way, so
the Markdown reads right on a forge and in the site. A nav entry of PENDING_PAGES (a page another
branch adds) is left out until its file exists.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, List

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
PENDING_PAGES = {"cli.md"}
_LINK = re.compile(r"\]\((?!https?:|#|mailto:)([^)\s]+)\)")


def _rules() -> dict:
    import sys

    if str(ROOT) not in sys.path:  # a checkout's vjplint, not an installed one, is what the site documents
        sys.path.insert(0, str(ROOT))
    from vjplint.rules.docs import rule_pages

    return rule_pages()


def _relink(markdown: str, mapping: List[tuple]) -> str:
    def fix(match: "re.Match[str]") -> str:
        target = match.group(1)
        for old, new in mapping:
            if target.startswith(old):
                return f"]({new}{target[len(old):]})"
        return match.group(0)

    return _LINK.sub(fix, markdown)


README_LINKS = [("docs/", ""), ("vjplint/docs/rules/", "rules/")]
GUIDE_LINKS = [("../README.md", "index.md"), ("../vjplint/docs/rules/", "rules/")]


def on_config(config: Any) -> Any:
    docs = Path(config["docs_dir"])
    nav = [entry for entry in config["nav"]
           if not any(page in PENDING_PAGES and not (docs / page).is_file() for page in entry.values())]
    pages = _rules()
    rules = [{"All rules": "rules/README.md"}]
    rules += [{_title(text, name): f"rules/{name}"} for name, text in pages.items() if name != "README.md"]
    config["nav"] = [{"Rules": rules} if list(entry.values()) == ["rules/README.md"] else entry for entry in nav]
    return config


def _title(text: str, name: str) -> str:
    first = text.split("\n", 1)[0].lstrip("# ").strip()
    return first or name[:-3]


def on_files(files: Files, config: Any) -> Files:
    for name, text in _rules().items():
        files.append(File.generated(config, f"rules/{name}", content=text))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=_relink(readme, README_LINKS)))
    return files


_TEXT_LINK = re.compile(r"\[([^\]]*)\]\((?!https?:|#|mailto:)([^)\s]+)\)")


def _unlink_outside(markdown: str, page_dir: Path, docs: Path) -> str:
    """A link to a repository file outside docs/ (a script, a fixture) or to a folder becomes its
    text: the site has no repository to link to. What the rewrites above map stays a link."""
    def fix(match: "re.Match[str]") -> str:
        target = (page_dir / match.group(2).split("#", 1)[0]).resolve()
        inside = docs == target or docs in target.parents
        return match.group(0) if inside and not target.is_dir() else match.group(1)

    return _TEXT_LINK.sub(fix, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if page.file.src_uri == "index.md" or page.file.src_uri.startswith("rules/"):  # mapped in on_files
        return markdown
    if page.file.src_uri.count("/") == 0:  # a guide in docs/
        markdown = _relink(markdown, GUIDE_LINKS)
    docs = Path(config["docs_dir"]).resolve()
    return _unlink_outside(markdown, (docs / page.file.src_uri).parent, docs)
