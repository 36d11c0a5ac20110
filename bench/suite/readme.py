"""Puts the latest summary into README.md, between two marker lines of its Performance
section (nothing else in the README changes)."""

from __future__ import annotations

from pathlib import Path

BEGIN = "<!-- bench/run.py results: begin -->"
END = "<!-- bench/run.py results: end -->"


def update(readme: Path, block: str) -> bool:
    """Replace the text between the markers; False (and no change) where they are missing."""
    text = readme.read_text()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return False
    readme.write_text(text[: start + len(BEGIN)] + "\n" + block.rstrip() + "\n" + text[end:])
    return True
