"""Draw one training step of a timeline as a Gantt chart, without a browser.

    python -m minidp.tools.timeline TRACE.json -o step.png [--step N]

``TRACE.json`` is a file written by ``MINIDP_TIMELINE`` (one rank's ``rank-N.json`` or the
merged ``timeline.json``). For every rank the chart has two rows: the main thread (loading the
batch, forward, backward, the wait for the buckets at its end, the optimizer step) with a tick
for each gradient becoming ready, and the communication thread (each bucket's all-reduce), on
one time axis, so the all-reduces that ran while backward was still computing show as bars
under it. An all-reduce bar starts when the communication thread takes the bucket up and ends
when every rank has contributed, so it includes the wait for slower ranks.
Needs matplotlib: ``pip install 'minidp[plot]'``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

MAIN_COLOURS = {
    "next batch": "#8c8c8c",
    "forward": "#4c72b0",
    "backward": "#dd8452",
    "wait for buckets": "#c44e52",
    "optimizer step": "#55a868",
}
ALL_REDUCE_COLOUR = "#8172b3"
Interval = Tuple[float, float]


def load_events(path: str) -> List[Dict[str, Any]]:
    """The events of a Chrome-trace file, checked to be one."""
    with open(path) as file:
        document = json.load(file)
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise ValueError(
            f"{path} is not a Chrome-trace file (no traceEvents list); give a file written under MINIDP_TIMELINE"
        )
    return document["traceEvents"]


def _interval(event: Dict[str, Any]) -> Interval:
    return event["ts"], event["ts"] + event.get("dur", 0.0)


def step_events(events: Sequence[Dict[str, Any]], rank: int, step: int) -> List[Dict[str, Any]]:
    """The events of ``rank`` during its training step number ``step`` (Python indexing over the
    rank's backward passes): from loading the batch of the forward before that backward to the
    end of the optimizer step after it (or of the wait for the buckets, when there is no
    optimizer step)."""
    mine = sorted((e for e in events if e.get("pid") == rank and e.get("ph") in ("X", "i")), key=lambda e: e["ts"])
    backwards = [e for e in mine if e["name"] == "backward"]
    if not backwards:
        raise ValueError(f"rank {rank} recorded no backward pass; record a training step")
    if not -len(backwards) <= step < len(backwards):
        raise ValueError(f"--step {step} is out of range: rank {rank} recorded {len(backwards)} backward passes")
    backward = backwards[step]
    start, end = _interval(backward)
    for opening in ("forward", "next batch"):
        earlier = [e for e in mine if e["name"] == opening and e["ts"] <= start]
        if earlier:
            start = earlier[-1]["ts"]
    later = [e for e in mine if e["ts"] >= end]
    closing = next((e for e in later if e["name"] == "optimizer step"), None) or next(
        (e for e in later if e["name"] == "wait for buckets"), None
    )
    if closing is not None:
        end = _interval(closing)[1]
    return [e for e in mine if start <= e["ts"] and _interval(e)[1] <= end]


def draw(events: Sequence[Dict[str, Any]], out: str, step: int = -1) -> None:
    """Save the Gantt chart of training step ``step`` of every rank in ``events`` to ``out``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError as error:
        raise SystemExit("drawing a timeline needs matplotlib: pip install 'minidp[plot]'") from error
    ranks = sorted({e["pid"] for e in events if e.get("ph") in ("X", "i")})
    per_rank = {rank: step_events(events, rank, step) for rank in ranks}
    origin = min(e["ts"] for chosen in per_rank.values() for e in chosen)
    figure, axes = plt.subplots(figsize=(10, 1.1 + 1.3 * len(ranks)))
    labels = []
    for index, rank in enumerate(ranks):
        main_row, comm_row = 2 * index, 2 * index + 1
        labels += [(main_row, f"rank {rank} main"), (comm_row, f"rank {rank} all-reduce")]
        bucket = 0
        for event in per_rank[rank]:
            begin, finish = ((t - origin) / 1e3 for t in _interval(event))
            name = event["name"]
            if name in MAIN_COLOURS:
                axes.broken_barh([(begin, finish - begin)], (main_row - 0.4, 0.8), color=MAIN_COLOURS[name])
            elif name == "all_reduce":
                axes.broken_barh(
                    [(begin, finish - begin)], (comm_row - 0.3, 0.6), color=ALL_REDUCE_COLOUR, edgecolor="white"
                )
                axes.text(
                    (begin + finish) / 2, comm_row, str(bucket), ha="center", va="center", fontsize=7, color="white"
                )
                bucket += 1
            elif name == "grad ready":
                axes.vlines(begin, main_row - 0.45, main_row - 0.3, color="black", linewidth=0.6)
    rows, names = zip(*sorted(labels))
    axes.set_yticks(rows)
    axes.set_yticklabels(names)
    axes.invert_yaxis()
    axes.set_xlabel("time (ms)")
    step_name = "the last step" if step == -1 else f"step {step}"
    axes.set_title(
        f"{step_name}: bucket all-reduces (numbered in launch order) overlapping backward; ticks: gradients ready",
        fontsize=9,
    )
    legend = [Patch(color=colour, label=name) for name, colour in MAIN_COLOURS.items()]
    legend.append(Patch(color=ALL_REDUCE_COLOUR, label="all-reduce"))
    axes.legend(
        handles=legend,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.28 / len(ranks) - 0.12),
        ncol=len(legend),
        fontsize=8,
        frameon=False,
    )
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m minidp.tools.timeline``."""
    parser = argparse.ArgumentParser(
        prog="python -m minidp.tools.timeline",
        description=("Draw one training step per rank of a MINIDP_TIMELINE trace as a Gantt chart."),
    )
    parser.add_argument("trace", help="rank-N.json or the merged timeline.json")
    parser.add_argument("-o", "--out", default="step.png", help="the picture to write (PNG, SVG...)")
    parser.add_argument(
        "--step", type=int, default=-1, help="which training step, counted from 0 (negative: from the end; default -1)"
    )
    args = parser.parse_args(argv)
    try:
        draw(load_events(args.trace), args.out, args.step)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
