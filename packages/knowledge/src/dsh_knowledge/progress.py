"""A progress bar on stderr for long commands (``vectors build``).

On a terminal one line is redrawn in place (``\\r``); piped or in a log, a line is written
per report, as ``health --all`` does, so the output stays readable there too.
"""

from __future__ import annotations

import sys
from typing import IO, Final

__all__ = ["ProgressBar"]

WIDTH: Final = 30


class ProgressBar:
    """``bar(done, total)`` draws ``<label>: [#####-----] done/total <unit>``."""

    def __init__(self, label: str, unit: str, out: IO[str] | None = None) -> None:
        self.label = label
        self.unit = unit
        self.out = out if out is not None else sys.stderr
        self.tty = self.out.isatty()
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        filled = WIDTH if total == 0 else WIDTH * done // total
        line = f"{self.label}: [{'#' * filled}{'-' * (WIDTH - filled)}] {done}/{total} {self.unit}"
        if self.tty:
            self.out.write("\r" + line)
            self.drawn = True
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def close(self) -> None:
        """End the redrawn line (a terminal's next output starts on a line of its own)."""
        if self.drawn:
            self.out.write("\n")
            self.out.flush()
            self.drawn = False
