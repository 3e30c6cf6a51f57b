"""Draw the soak's samples as one PNG: one panel per measure, time on x, the warm-up shaded.

    /tmp/bench-peers-venv/bin/python bench/soak_chart.py SAMPLES.json CHART.png

``bench/soak.py`` runs it under the benchmarks' throwaway venv (``BENCH_PEERS_PYTHON``), which has matplotlib:
the project's own venv gets no plotting library. SAMPLES.json is the file soak.py writes:
``{"warmup_s", "traffic_end_s", "title", "panels": [{"title", "unit", "series": [column, ...]}],
"samples": [{column: value, ...}, ...]}``.
Only the standard library and matplotlib are imported here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: write the file only
import matplotlib.pyplot as plt

SCALES = {"MiB": 1024 * 1024, "count": 1}


def draw(doc: dict[str, Any], out: Path) -> None:
    samples = doc["samples"]
    minutes = [row["t_s"] / 60 for row in samples]
    panels = doc["panels"]
    figure, axes = plt.subplots(len(panels), 1, figsize=(10, 2.3 * len(panels)), sharex=True, squeeze=False)
    for axis, panel in zip(axes[:, 0], panels, strict=True):
        scale = SCALES[panel["unit"]]
        for column in panel["series"]:
            values = [row.get(column) for row in samples]
            points = [(t, v / scale) for t, v in zip(minutes, values, strict=True) if v is not None]
            if points:
                axis.plot(*zip(*points, strict=True), label=column, linewidth=1.2)
        axis.axvspan(0, doc["warmup_s"] / 60, color="0.85", label="warm-up")
        axis.axvline(doc["traffic_end_s"] / 60, color="0.4", linestyle="--", linewidth=1, label="traffic stops")
        axis.set_title(panel["title"], fontsize=10, loc="left")
        axis.set_ylabel(panel["unit"])
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7, loc="best", ncol=3)
    axes[-1, 0].set_xlabel("minutes since the traffic started")
    figure.suptitle(doc["title"], fontsize=11)
    figure.tight_layout()
    figure.savefig(out, dpi=90)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    draw(json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2]))


if __name__ == "__main__":
    main()
