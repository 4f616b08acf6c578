"""`fedbench publish`: adding finished runs to the shipped store
(fedbench.results.shipped_store), once per identity and data fingerprint, within its size
budget."""

from __future__ import annotations

import os
from pathlib import Path

from fedbench.atomic import atomic_write_bytes, refuse_links
from fedbench.errors import FedbenchError
from fedbench.results.shipped_store import _DEFAULT, CALIBRATION, GENERATION, Store
from fedbench.safe_read import read_bytes


def publish(index, records, root: Path, group: str, command: str) -> dict:
    """Add the finished records not in the store yet (by config_hash and data fingerprint) to
    root/<group>/{runs,rounds}.parquet, sorted by run_id (and round). A run id the store holds
    for other data gets its fingerprint's -d suffix. Refuses, writing nothing, when the store
    would pass SIZE_BUDGET. Returns counts: added, already (in the store), unfinished.
    One publish at a time (fedbench.results.publish_lock); both files carry one generation
    token, so a reader tells a pair from two publishes (Store.rounds refuses it)."""
    from fedbench.results.publish_lock import publish_lock

    check_group(group)
    with publish_lock(root):  # the store as read here is the one written: no lost update
        return _publish_locked(index, records, root, group, command)


def _publish_locked(index, records, root: Path, group: str, command: str) -> dict:

    from fedbench.results.export import export_tables
    from fedbench.results.index import FINISHED, RunIndex

    store = Store(root)
    if os.path.lexists(root / group / "runs.parquet"):
        store.runs_table(group)  # a damaged target group: its one line, before any other
    shipped = RunIndex(root / ".none", must_exist=False, shipped=store)  # keys as computed now
    have = {(r.key, r.fingerprint) for r in shipped.records()}
    ids = {r["run_id"]: r["data_fingerprint"] for _, r in store.rows()}
    new, counts = [], {"added": 0, "already": 0, "unfinished": 0}
    for rec in records:
        ident = (rec.key, rec.fingerprint)
        if rec.status not in FINISHED or not index.rounds_ok(rec, report=True):
            counts["unfinished"] += 1
        elif ident in have or rec.shipped:
            counts["already"] += 1
        else:
            have.add(ident)
            new.append(rec)
    if not new:
        return counts
    runs, rounds = export_tables(index, new)
    runs, rounds = _unique_ids(runs, rounds, ids)
    folder = root / group
    refuse_links(folder, root)
    if os.path.lexists(folder / "runs.parquet"):
        # a group shipped before a config field existed: its rows get nulls (= the default)
        runs = _merged(store.runs_table(group), runs, folder / "runs.parquet")
        rounds = _merged(store.rounds_file(group), rounds, folder / "rounds.parquet")
    runs = runs.sort_by("run_id")
    rounds = rounds.sort_by([("run_id", "ascending"), ("round", "ascending")])
    _write_within_budget(store, folder, runs, rounds, command)
    counts["added"] = len(new)
    _DEFAULT.clear()
    return counts


def _merged(old, new, path: Path):
    """The group's rows and the new ones in one table; a column whose type differs (a store
    file edited by hand) is one line naming the file, not Arrow's merge error."""
    import pyarrow as pa

    try:
        return pa.concat_tables([old, new], promote_options="default")
    except (pa.ArrowTypeError, pa.ArrowInvalid) as e:
        raise FedbenchError(
            f"shipped store file {path} does not match what publish writes ({str(e).strip()}); "
            f"restore it from git (git checkout -- {path}) and publish again"
        ) from None


def check_group(group: str) -> None:
    import re

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", group) or group == CALIBRATION:
        raise FedbenchError(
            f"store group {group!r} must be letters, digits, '_', '-', '.' (and not "
            f"{CALIBRATION!r}); e.g. tau_fmnist"
        )


def _unique_ids(runs, rounds, ids: dict):
    """Rename a new run whose run_id the store holds for other data: <run_id>-d<fp[:8]>."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = runs.column("run_id").to_pylist()
    fps = runs.column("data_fingerprint").to_pylist()
    renamed = {
        n: f"{n}-d{(fp or 'none')[:8]}" for n, fp in zip(names, fps) if n in ids and ids[n] != fp
    }
    if not renamed:
        return runs, rounds
    new_names = pa.array([renamed.get(n, n) for n in names], pa.string())
    runs = runs.set_column(runs.schema.get_field_index("run_id"), "run_id", new_names)
    old = rounds.column("run_id")
    for n, m in renamed.items():
        old = pc.if_else(pc.equal(old, n), pa.scalar(m), old)
    return runs, rounds.set_column(rounds.schema.get_field_index("run_id"), "run_id", old)


def _write_within_budget(store: Store, folder: Path, runs, rounds, command: str) -> None:
    """Write the group's two files aside, check the store's size, then swap them in (rounds
    first: a kill between the two leaves a pair whose generations differ, which is refused)."""
    import secrets

    from fedbench.results.export import write_table

    folder.mkdir(parents=True, exist_ok=True)
    tmp = {name: folder / f".{name}.publish" for name in ("runs", "rounds")}
    try:
        made = {"made_by": command, GENERATION: secrets.token_hex(8)}
        write_table(runs, tmp["runs"], made)
        write_table(rounds, tmp["rounds"], made)
        old = sum((folder / f"{n}.parquet").stat().st_size for n in tmp
                  if (folder / f"{n}.parquet").is_file())  # fmt: skip
        size = store.size() - old  # the temp files counted in place of the old ones
        if size > budget():
            raise FedbenchError(
                f"publishing would make the shipped store {size / 2**20:.1f} MiB, over its "
                f"budget of {budget() / 2**20:.0f} MiB; publish fewer runs"
            )
        for name in ("rounds", "runs"):
            os.replace(tmp[name], folder / f"{name}.parquet")
    finally:
        for p in tmp.values():
            p.unlink(missing_ok=True)


def publish_fit(fit_path: Path, root: Path) -> str:
    """Copy a calibration fit into the store (unchanged if the same; refused if different)."""
    from fedbench.results.publish_lock import publish_lock

    with publish_lock(root):
        return _publish_fit(fit_path, root)


def _publish_fit(fit_path: Path, root: Path) -> str:
    target = root / CALIBRATION / fit_path.name
    refuse_links(target, root)
    data = read_bytes(fit_path)
    if os.path.lexists(target):
        if read_bytes(target) == data:
            return f"{target.name} already shipped"
        raise FedbenchError(
            f"the store already holds another fit {target}; delete it (git rm) to ship {fit_path}"
        )

    atomic_write_bytes(target, data)
    return f"shipped fit {target.name}"


def budget() -> int:
    """The store's size budget (read at call time: tests lower it)."""
    import fedbench.results.shipped_store as store

    return store.SIZE_BUDGET
