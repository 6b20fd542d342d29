"""The command line of the tools that take no arguments: ``--help`` prints the tool's docstring.

A tool calls :func:`answer_help` before it imports its optional dependencies (Paddle, torch,
matplotlib), so that ``python tools/TOOL.py --help`` says what the tool does in any environment
instead of failing on a missing import or, worse, starting its work.
"""

from __future__ import annotations

import argparse


def answer_help(name: str, doc: str) -> None:
    """When ``name`` (the tool's ``__name__``) is ``"__main__"``, parse the command line: none
    but ``--help``, which prints ``doc`` and exits. An imported tool leaves the command line to
    whoever imported it."""
    if name == "__main__":
        argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()


if __name__ == "__main__":
    answer_help(__name__, __doc__)
