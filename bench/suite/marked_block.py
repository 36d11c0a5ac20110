"""Rewrites the part of a Markdown file between two marker lines, leaving the rest as it is:
the latest summary in docs/performance.md, and the generated report at the top of
bench/RESULTS.md above its hand-written history."""

from __future__ import annotations

from pathlib import Path

BEGIN = "<!-- bench/run.py results: begin -->"
END = "<!-- bench/run.py results: end -->"


def update(path: Path, block: str) -> bool:
    """Replace the text between the markers; False (and no change) where they are missing."""
    text = path.read_text()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return False
    path.write_text(text[: start + len(BEGIN)] + "\n" + block.rstrip() + "\n" + text[end:])
    return True
