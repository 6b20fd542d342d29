"""Where a rank's output goes: this terminal (prefixed ``[rank N]``), its log file, its tail.

Lines are copied whole. When the launcher writes to a terminal, rank 0's carriage-return updates
(progress bars, which the rank draws because the launcher tells it ``MINIDP_LAUNCHER_TTY=1``)
are shown as they come, on a bottom line that other ranks' lines never cut; log files and the
tail get only the final text of each line.
"""

from __future__ import annotations

import codecs
import collections
import os
import threading
from typing import IO, BinaryIO, Deque, Optional

TAIL_LINES = 30
CLEAR_LINE = "\r\x1b[K"


class Terminal:
    """This launcher's standard output, shared by the ranks' output threads.

    Lines are written whole. One rank may also show a progress line (its latest text after a
    carriage return): it stays at the bottom, other lines are written above it.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._progress = ""

    def write_line(self, line: str, ends_progress: bool = False) -> None:
        """Write one whole line; ``ends_progress`` when it comes from the progress's rank."""
        with self._lock:
            if self._progress:
                self._stream.write(CLEAR_LINE)
            if ends_progress:
                self._progress = ""
            self._stream.write(line)
            self._stream.write(self._progress)
            self._stream.flush()

    def show_progress(self, text: str) -> None:
        """Replace the progress line by ``text`` ("" removes it)."""
        with self._lock:
            if text or self._progress:
                self._stream.write(CLEAR_LINE + text)
                self._stream.flush()
            self._progress = text


def last_segment(text: str) -> str:
    """What a terminal would show of ``text``: the last non-blank part after a carriage return."""
    return next((part for part in reversed(text.split("\r")) if part.strip()), "")


class RankOutput:
    """Copies one rank's output: to ``log_path`` (if any), to ``terminal`` (if echoed, prefixed)
    and to ``tail``, its last ``TAIL_LINES`` lines. With ``progress``, the rank's
    carriage-return updates are shown on the terminal as they come."""

    def __init__(self, rank: int, log_path: Optional[str], terminal: Optional[Terminal], progress: bool) -> None:
        self.rank = rank
        self.log_path = log_path
        self.tail: Deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._log_file = open(log_path, "w", encoding="utf-8") if log_path else None
        self._terminal = terminal
        self._progress = progress and terminal is not None

    @property
    def echoed(self) -> bool:
        """Whether this rank's lines reach the terminal as they come (so a summary need not
        repeat them)."""
        return self._terminal is not None

    def copy(self, stream: BinaryIO) -> None:
        """Copy ``stream`` until its end, then close it and the log file."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        shown = ""
        try:
            while True:
                chunk = os.read(stream.fileno(), 65536)
                pending += decoder.decode(chunk, final=not chunk)
                *lines, pending = pending.split("\n")
                for line in lines:
                    self._emit(line)
                if not chunk:
                    break
                if self._progress and last_segment(pending) != shown:
                    shown = last_segment(pending)
                    self._terminal.show_progress(f"[rank {self.rank}] {shown}" if shown else "")
            if pending:
                self._emit(pending)
        finally:
            stream.close()
            if self._log_file is not None:
                self._log_file.close()

    def _emit(self, line: str) -> None:
        if self._progress:
            line = last_segment(line)
        line += "\n"
        self.tail.append(line)
        if self._log_file is not None:
            self._log_file.write(line)
            self._log_file.flush()
        if self._terminal is not None:
            self._terminal.write_line(f"[rank {self.rank}] {line}", ends_progress=self._progress)
