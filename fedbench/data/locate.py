"""Where dataset folders are looked for, in order: --data-dir, $FEDBENCH_DATA, ./data,
../shared/data, then the download cache (~/.cache/fedbench, where download.py puts them)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from fedbench.errors import FedbenchError


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fedbench"


def roots(data_dir: str | None) -> list[Path]:
    out = []
    if data_dir:
        out.append(Path(data_dir))
    if os.environ.get("FEDBENCH_DATA"):
        out.append(Path(os.environ["FEDBENCH_DATA"]))
    out += [Path.cwd() / "data", Path.cwd() / ".." / "shared" / "data", cache_root()]
    return out


def find_folder(
    name: str,
    data_dir: str | None,
    subdirs: list[str],
    ok: Callable[[Path], bool],
    how_to_get: str,
    download: Callable[[], bool] | None = None,
) -> Path:
    """The first root/sub (sub in subdirs, "" = the root itself) for which ok() holds;
    else try download() once; else one line naming where we looked."""
    for attempt in range(2):
        dirs = [r / s if s else r for r in roots(data_dir) for s in subdirs]
        for d in dirs:
            if d.is_dir() and ok(d):
                return d
        if attempt == 0 and not (download and may_download() and download()):
            break
    looked = ", ".join(str(d) for d in dirs)
    raise FedbenchError(f"{name} not found (looked in {looked}); {how_to_get}")


def may_download() -> bool:
    return not os.environ.get("FEDBENCH_NO_DOWNLOAD")
