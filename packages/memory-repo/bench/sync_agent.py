#!/usr/bin/env python3
"""Bench agent: appends one line to every handbook record of the staging folder (its cwd)."""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    for path in sorted((Path.cwd() / "handbook").rglob("*.md")):
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("Revised by the bench agent.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
