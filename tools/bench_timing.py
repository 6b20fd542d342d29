"""Side-by-side timing for the benchmarks: contenders take turns, so noise hits them alike.

On a shared machine a burst of load can slow whichever contender happens to run during it.
Interleaving the rounds (a, b, c, a, b, c, ...) and keeping each contender's fastest round makes
the ratios between them stable even when the absolute times are not.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Optional

from command_line import answer_help


def best_times(steps: Dict[str, Callable[[], object]], repeat: int, inner: int) -> Dict[str, float]:
    """For each named step, the fastest mean time of ``inner`` calls over ``repeat`` rounds."""
    for step in steps.values():
        step()
    best = {name: float("inf") for name in steps}
    for _ in range(repeat):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(inner):
                step()
            best[name] = min(best[name], (time.perf_counter() - start) / inner)
    return best


def pyplot() -> Optional[Any]:
    """matplotlib's pyplot drawing to files, or None with a hint when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        print("no plot: matplotlib is not installed (pip install -e '.[bench]')")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot

    return matplotlib.pyplot


if __name__ == "__main__":
    answer_help(__name__, __doc__)
