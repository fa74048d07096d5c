"""The served-API table in the README, generated from the registry.

    python -m kcoord.api.table              # print it
    python -m kcoord.api.table --readme README.md   # rewrite the README's block
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kcoord.api import registry

BEGIN, END = "<!-- served-apis:begin -->", "<!-- served-apis:end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def served_table() -> str:
    """A Markdown table: API, key, versions, notes (summary, then what changes per version)."""
    rows = ["| API | key | versions | notes |", "|---|---|---|---|"]
    for d in registry().values():
        versions = str(d.min_version) if d.min_version == d.max_version else f"{d.min_version}–{d.max_version}"
        notes = [d.summary] + [f"v{v}+: {note}" for v, note in sorted(d.version_notes.items())]
        rows.append(f"| {d.name} | {int(d.key)} | {versions} | {_cell('; '.join(notes))} |")
    return "\n".join(rows) + "\n"


def readme_block() -> str:
    return f"{BEGIN}\n{served_table()}{END}"


def current_block(text: str) -> str:
    """The README's block, markers included ("" when there are no markers)."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return ""
    return text[start:end + len(END)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readme", help="rewrite the served-API block of this Markdown file in place")
    args = parser.parse_args(argv)
    if args.readme is None:
        sys.stdout.write(served_table())
        return 0
    path = Path(args.readme)
    text = path.read_text(encoding="utf-8")
    old = current_block(text)
    if not old:
        print(f"{path}: no {BEGIN} ... {END} block", file=sys.stderr)
        return 1
    path.write_text(text.replace(old, readme_block()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
