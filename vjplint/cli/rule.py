"""`vjplint rule CODE | --all`: a rule's documentation."""

from __future__ import annotations

from typing import List

from vjplint.errors import UsageError
from vjplint.links import docs_url, rule_url
from vjplint.settings.redirects import REDIRECTS, redirected
from vjplint.rules.docs import ENGINE_PAGES, render_rule, rule_to_json
from vjplint.rules.registry import ENGINE_CODES, all_rules


def run(argv: List[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="vjplint rule", description="Show a rule's documentation.")
    parser.add_argument("code", nargs="?", help="a rule code, e.g. VJP101, or its name")
    parser.add_argument("--all", action="store_true", help="every rule")
    parser.add_argument("--output-format", choices=("text", "json"), default="text",
                        help="text: the rule's page as Markdown (default); json: code, name, summary, "
                             "severity, fix, explanation and url of each rule")
    args = parser.parse_args(argv)
    rules = all_rules()
    merged = None  # (old code, new code) when the code asked for was merged into another
    if args.all:
        chosen = list(rules.values())
    elif args.code:
        key = args.code.upper()
        if key in REDIRECTS and redirected(key) in rules:
            merged = (key, redirected(key))
            key = merged[1]
        match = rules.get(key) or next((r for r in rules.values() if r.NAME == args.code), None)
        engine = next((c for c, (name, _) in ENGINE_CODES.items() if args.code in (c, name) or key == c), None)
        if match is None and engine is not None:  # VJP900, VJP901: the engine's own codes
            return _engine_page(engine, args.output_format)
        if match is None:
            raise UsageError(f"unknown rule {args.code!r}; `vjplint rule --all` lists them")
        chosen = [match]
    else:
        raise UsageError("give a rule code (e.g. `vjplint rule VJP101`) or --all")
    if args.output_format == "json":
        import json

        data = [rule_to_json(r, docs_url()) for r in chosen]  # $VJPLINT_DOCS_URL or the shipped pages
        if merged:
            data[0]["merged_from"] = merged[0]
        if args.all and REDIRECTS:
            data += [{"code": old, "merged_into": redirected(old)} for old in sorted(REDIRECTS)]
        print(json.dumps(data if args.all else data[0], indent=2))
    else:
        pages = [render_rule(r) for r in chosen]
        if merged:
            pages[0] = f"{merged[0]} has been merged into {merged[1]}: `{merged[0]}` in select, ignore, " \
                       f"per-file-ignores and `# noqa` keeps working and means {merged[1]}.\n\n" + pages[0]
        if args.all and REDIRECTS:
            pages.append("# Codes that moved\n\n" + "\n".join(
                f"- {old} has been merged into {redirected(old)}" for old in sorted(REDIRECTS)) + "\n")
        print("\n\n".join(pages))
    return 0


def _engine_page(code: str, output_format: str) -> int:
    page = ENGINE_PAGES[code]
    if output_format == "json":
        import json

        name, severity = ENGINE_CODES[code]
        print(json.dumps({"code": code, "name": name, "severity": severity, "default_enabled": True, "fix": None,
                          "url": rule_url(code, docs_url()), "explanation": page.split("\n\n", 2)[2].strip()},
                         indent=2))
    else:
        print(page)
    return 0
