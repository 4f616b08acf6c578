"""Is the last-25 window of SFL/PFL runs past the knee? For each run under RESULTS (default
results/) of preset sfl-fmnist: the mean test accuracy of the last 25 evaluations (Table 3's
metric), of the 25 before them, and the best mean of any 25 consecutive evaluations. The
criterion (docs, tables/README.md): past the knee when the last window is no more than 1 point
above the one before it (the curve no longer climbs) and no more than 2 points below the best
window (it has not collapsed). Usage: python benchmarks/sfl_knee.py [RESULTS]"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

CLIMB, DROP = 1.0, 2.0  # points of accuracy


def window_means(acc: pd.Series, n: int = 25) -> tuple[float, float, float]:
    """(last window, the window before it, best window) of n consecutive evaluations, in %."""
    a = acc.dropna().to_numpy() * 100
    roll = pd.Series(a).rolling(n).mean().dropna()
    return float(a[-n:].mean()), float(a[-2 * n : -n].mean()), float(roll.max())


def main(root: str = "results") -> int:
    rows = []
    for run in sorted(Path(root).glob("*fmnist*/run.json")):
        cfg = json.loads(run.read_text())["config"]
        if cfg.get("partition") != "exdir" or cfg.get("model") != "mlp":
            continue
        acc = pd.read_parquet(run.parent / "rounds.parquet")["test_acc"]
        if acc.dropna().size < 50:
            continue
        last, before, best = window_means(acc)
        knee = last - before <= CLIMB and best - last <= DROP
        rows.append(
            (
                cfg["method"],
                cfg["classes_per_client"],
                cfg["local_steps"],
                cfg["lr"],
                cfg["seed"],
                cfg["rounds"],
                round(last, 2),
                round(last - before, 2),
                round(best - last, 2),
                knee,
            )
        )
    cols = ["method", "C", "K", "lr", "seed", "R", "last25", "climb", "below_best", "past_knee"]
    df = pd.DataFrame(rows, columns=cols).sort_values(cols[:5])
    print(df.to_string(index=False))
    print(f"past the knee: {int(df.past_knee.sum())} of {len(df)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
