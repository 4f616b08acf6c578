"""The papers' reported numbers (fedbench/data/paper_values.csv) and how a cell finds its own."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class PaperRef:
    """Which row(s) of paper_values.csv a cell is compared with. `setting` matches the CSV's
    setting exactly or as the part before a ':'; metric "X_ci" pairs rows X_ci_low/X_ci_high;
    `note_key` reads "key=value" from the note instead of the value."""

    paper: str
    table: str
    method: str
    metric: str
    setting: str | None = None
    dataset: str | None = None  # the CSV's dataset name; None: the cell's dataset
    note_key: str | None = None


@dataclass(frozen=True)
class PaperValue:
    value: float | str
    low: float | None = None
    high: float | None = None

    @property
    def text(self) -> str:
        if self.low is not None and self.high is not None:
            return f"{self.low:.2f}–{self.high:.2f}"
        if isinstance(self.value, float):
            return f"{self.value:g}"
        return str(self.value)


@functools.cache
def paper_values() -> pd.DataFrame:
    from importlib.resources import files

    import pandas as pd  # here: the specs (imported with every preset) need no pandas

    with files("fedbench.data").joinpath("paper_values.csv").open() as f:
        return pd.read_csv(f, dtype=str, keep_default_na=False)


def _number(text: str) -> float | str:
    try:
        if "/" in text:
            a, b = text.split("/")
            return float(a) / float(b)
        return float(text)
    except ValueError:
        return text


def lookup(ref: PaperRef, dataset: str) -> PaperValue | None:
    df = paper_values()
    ds = ref.dataset or dataset
    sel = (df["paper"] == ref.paper) & (df["table"] == ref.table) & (df["dataset"] == ds)
    sel &= df["method"] == ref.method
    if ref.setting is not None:
        setting = df["setting"]
        sel &= (setting == ref.setting) | setting.str.startswith(ref.setting + ":")
    rows = df[sel]
    if ref.metric.endswith("_ci"):
        lo = rows[rows["metric"] == ref.metric + "_low"]["value"]
        hi = rows[rows["metric"] == ref.metric + "_high"]["value"]
        if lo.empty or hi.empty:
            return None
        low, high = float(lo.iloc[0]), float(hi.iloc[0])
        return PaperValue((low + high) / 2, low, high)
    rows = rows[rows["metric"] == ref.metric]
    if rows.empty:
        return None
    if ref.note_key:
        for part in rows["note"].iloc[0].replace(";", ",").split(","):
            k, _, v = part.strip().partition("=")
            if k == ref.note_key:
                return PaperValue(_number(v))
        return None
    return PaperValue(_number(rows["value"].iloc[0]))
