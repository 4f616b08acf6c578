"""`fedbench data stats` and `fedbench data get`: datasets and partitions."""

from __future__ import annotations

from pathlib import Path

import click

from fedbench.cli import options as opt
from fedbench.cli.common import ListedHelp, command_line
from fedbench.errors import FedbenchError


@click.group()
def data():
    """Datasets and partitions."""


@data.command("stats")
@click.argument("dataset", required=False)
@opt.preset(help="Take the dataset and partition of a preset.")
@opt.data_dir()
@opt.sets(help="Partition fields: partition, N, P, dirichlet_alpha, xi, num_shards, data_seed, ...")
@opt.view_format()
def data_stats(dataset, preset, data_dir, sets, fmt):
    """Per-device statistics of a dataset's split, like FedProx's Table 1.

    \b
    Examples:
      fedbench data stats --preset fedprox-mnist
      fedbench data stats mnist --set partition=pclass --set N=50 --set P=2
      fedbench data stats cifar10 --set partition=exdir --set N=500 --set P=1 \\
          --set dirichlet_alpha=10 --format md
    """
    import pandas as pd

    from fedbench.assembly import apply_overrides
    from fedbench.cli.info import markdown
    from fedbench.presets import get_preset
    from fedbench.tables import console, rich_table

    overrides = command_line(sets, {"dataset": dataset, "data_dir": data_dir})
    cfg = apply_overrides(get_preset(preset or "default"), overrides).validate_data()
    row, description = split_row(cfg)
    if fmt == "md":
        click.echo(f"{description}\n")
        click.echo(markdown([row]))
    else:
        console().print(rich_table(pd.DataFrame([row]), title=description))


def split_row(cfg) -> tuple[dict, str]:
    """The statistics of cfg's split as one table row, and the data's description."""
    from fedbench.data import load_arrays, split_stats

    _, train_y, _, test_y, parts, num_classes, info, _ = load_arrays(cfg)
    st = split_stats(train_y, parts, info)
    row = {
        "dataset": cfg.dataset,
        "devices": st["devices"],
        "samples": st["samples"],
        "mean/device": round(st["mean_per_device"], 1),
        "stdev/device": round(st["std_per_device"], 1),
        "min": st["min_per_device"],
        "max": st["max_per_device"],
        "classes/device": round(st["classes_per_device_mean"], 2),
        "test samples": len(test_y),
    }
    return row, info["description"]


def archive_names() -> list[str]:
    from fedbench.data import download

    return list(download.SOURCES)


def leaf_names() -> list[str]:
    from fedbench.data import download

    return list(download.LEAF_STEPS)


@data.command("get", cls=ListedHelp, lists={"archives": archive_names, "leaf": leaf_names})
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@opt.data_dir(help="Folder to put the datasets in (default: the cache, ~/.cache/fedbench).")
@click.option(
    "--url",
    help="Folder URL holding the dataset's files (a mirror); default: the publishers' URLs, "
    "or $FEDBENCH_MIRROR/NAME/.",
)
@opt.quiet(help="No progress bar.")
def data_get(names, data_dir, url, quiet):
    """Download, verify (published md5) and unpack datasets where fedbench finds them.

    NAME: {archives}; for {leaf} (built by LEAF's scripts) it prints the steps. An
    interrupted download resumes on rerun.

    \b
    Examples:
      fedbench data get mnist cifar10
      fedbench data get cinic10 --data-dir /data/fl
      fedbench data get cifar10 --url http://mirror.example/cifar10/
    """
    from fedbench.data import download
    from fedbench.data.locate import cache_root

    unknown = [n for n in names if n not in download.datasets()]
    if unknown:
        raise FedbenchError(
            f"unknown dataset {unknown[0]!r}; choose from: {', '.join(download.datasets())}"
        )
    root = Path(data_dir) if data_dir else cache_root()
    for name in names:
        if name in download.LEAF_STEPS:
            click.echo(download.leaf_steps(name, root))
            continue
        folder, fetched = download.fetch(name, root, url, quiet)
        if fetched:
            click.echo(f"{name}: downloaded, md5 verified, in {folder}")
        else:
            rec = download.provenance(folder)
            how = f"verified {rec.get('verified')}" if isinstance(rec, dict) else "not by fedbench"
            click.echo(f"{name}: already in {folder} ({how}); nothing downloaded")


COMMANDS = [data]
