"""`fedbench methods` and `fedbench presets`: what the registries hold."""

from __future__ import annotations

import click

from fedbench.cli import options as opt


def markdown(rows: list[dict]) -> str:
    """Rows as a GitHub table (what `--format md` prints and README's generated tables hold)."""
    from tabulate import tabulate

    return tabulate(rows, headers="keys", tablefmt="github", showindex=False)


def method_rows() -> list[dict]:
    from fedbench.methods import describe_methods

    return describe_methods()


def preset_rows() -> list[dict]:
    from fedbench.presets import PRESETS

    return [{"preset": name, "source": source} for name, (source, _) in PRESETS.items()]


@click.command()
@opt.view_format()
def methods(fmt):
    """List the methods, their parameters (names from the papers) and defaults, and the engine
    round paths their local steps may take (stepwise: local_step at every step, slower).
    Any method ends with the server optimizer the config names (sgd, FedAvgM with
    server_momentum, adagrad, adam, yogi).

    \b
    Examples:
      fedbench train --preset fedlga-fmnist --method fedprox --set mu=0.1
      fedbench train --method fedprox --set mu=0.1 --set server_opt=adam --set server_lr=0.01
    """
    import pandas as pd

    from fedbench.tables import console, rich_table

    if fmt == "md":
        click.echo(markdown(method_rows()))
    else:
        df = pd.DataFrame(method_rows())
        title = "methods (--set NAME=VALUE; any method: --set server_opt=sgd|adagrad|adam|yogi)"
        console().print(rich_table(df, title=title))


@click.command()
@opt.view_format()
def presets(fmt):
    """List the named paper settings and where they come from."""
    from rich.console import Console
    from rich.table import Table

    if fmt == "md":
        click.echo(markdown(preset_rows()))
        return
    table = Table(title="presets")
    table.add_column("name")
    table.add_column("source")
    for row in preset_rows():
        table.add_row(row["preset"], row["source"])
    Console().print(table)


COMMANDS = [methods, presets]
