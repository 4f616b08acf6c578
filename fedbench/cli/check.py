"""`fedbench check`: rerun a fixed set of configs and compare them with the stored reference."""

from __future__ import annotations

from pathlib import Path

import click

from fedbench.atomic import atomic_write_bytes
from fedbench.cli import options as opt
from fedbench.cli.common import OneLineError
from fedbench.errors import FedbenchError

# --acc-tol, --rounds-tol, --speed-factor, --no-timing.
tolerance_options = opt.together(
    opt.amount("--acc-tol", 0.02, "Allowed absolute change of best/final test accuracy."),
    opt.amount(
        "--rounds-tol", 0.10, "Allowed relative increase of rounds to target (at least one round)."
    ),
    opt.amount(
        "--speed-factor",
        3.0,
        "Allowed slow-down of the median s/round relative to a workload timed in the same "
        "process (compared on the reference's device only: same CPU model, instruction set "
        "and threads, or GPU).",
    ),
    click.option("--no-timing", is_flag=True, help="Do not compare s/round."),
)


@click.command()
@click.option(
    "--quick",
    is_flag=True,
    help="The CI subset (under a minute): the arithmetic checks and the synthetic checks.",
)
@click.option("--only", help="Comma-separated check names (see the table it prints).")
@click.option(
    "--contracts",
    is_flag=True,
    help="Instead: the contract checks of what --plugin registers (methods, datasets, models, "
    "tables; without a plugin: every method), as the test suite checks built-in ones; "
    "--only picks names.",
)
@opt.results(
    default=None,
    show_default=False,
    help="Read the paper-scale check runs from here instead of rerunning (the arithmetic "
    "checks, a few seconds, always rerun).",
)
@click.option(
    "--reference", default="results/reference/check.json", show_default=True, type=click.Path()
)
@click.option("--update", is_flag=True, help="Write the measured numbers as the new reference.")
@tolerance_options
@opt.threads(default=1, show_default=True, help="torch threads.")
@click.option(
    "--report",
    type=opt.FolderPath(dir_okay=False),
    help="Also write the table and the verdict to this Markdown file (e.g. a CI artifact).",
)
def check(
    quick,
    only,
    contracts,
    results,
    reference,
    update,
    acc_tol,
    rounds_tol,
    speed_factor,
    no_timing,
    threads,
    report,
):
    """Regression check: rerun a small fixed set of configs and compare them with the stored
    reference; exits 1 with a table of what regressed. Arithmetic checks (tiny-*): every
    method and server optimizer, 3 rounds of a tiny float64 run, each number within a relative
    1e-5 of the reference. Paper-scale checks: accuracy, rounds to target, speed, and which
    method ends ahead where a paper says so.

    \b
    Examples:
      fedbench check --quick                   # CI: arithmetic + synthetic checks, < 1 min
      fedbench check                           # all checks (Fashion-MNIST one if installed)
      fedbench check --update                  # accept the current numbers as the reference
      fedbench check --results runs/ --no-timing
      fedbench check --contracts --plugin my_method.py   # a plugin's contracts
      fedbench check --quick --report check.md   # the table as Markdown too (CI artifact)
    """
    from fedbench.training import threads as thread_policy

    thread_policy.configure(threads)
    if contracts:
        run_contracts(only)
        return
    from fedbench.check import Tolerances

    tol = Tolerances(acc_tol, rounds_tol, speed_factor, not no_timing)
    run_checks(quick, only, results, Path(reference), update, tol, threads, report)


def run_checks(quick, only, results, ref_path: Path, update, tol, threads, report) -> None:
    """The checks' table (and --report); --update writes the reference, else the verdict."""
    from fedbench.check import (
        Row,
        check_configs,
        compare,
        load_reference,
        measure,
        rows_table,
        write_reference,
    )
    from fedbench.check.arithmetic import arithmetic_rows, measure_arithmetic
    from fedbench.tables import console

    names, tiny = check_names(quick, only)
    configs = check_configs(names)
    if not update:
        ref = load_reference(ref_path)  # before running anything
    numbers = measure_arithmetic(tiny)
    measured = measure(configs, Path(results) if results else None, threads)
    if update:
        write_reference(ref_path, measured, configs, numbers)
        ref = load_reference(ref_path)
    rows = arithmetic_rows(numbers, ref, Row) + compare(measured, ref, tol)
    console().print(rows_table(rows))
    if report:
        write_report(Path(report), rows, ref_path)
    if update:
        click.echo(f"wrote {ref_path}")
    else:
        verdict(rows, len(names) + len(tiny), ref_path)


def write_report(path: Path, rows, ref_path: Path) -> None:
    """The check's table as Markdown, with its verdict line, written atomically."""
    from dataclasses import asdict

    from fedbench.check import regressions
    from fedbench.cli.info import markdown

    bad = len(regressions(rows))
    verdict_line = f"{bad} regression(s)" if bad else "ok: within tolerance"
    text = f"# fedbench check against {ref_path}\n\n{markdown([asdict(r) for r in rows])}\n\n"
    atomic_write_bytes(path, (text + verdict_line + "\n").encode())


def check_names(quick: bool, only: str | None) -> tuple[list[str], list[str]]:
    """(paper-scale check names, arithmetic check names) to run."""
    from fedbench.check import CHECKS, QUICK
    from fedbench.check.arithmetic import ARITHMETIC
    from fedbench.sweep import parse_list

    wanted = parse_list(only, "--only")
    if not wanted:
        return list(QUICK if quick else CHECKS), list(ARITHMETIC)
    unknown = [n for n in wanted if n not in CHECKS and n not in ARITHMETIC]
    if unknown:
        raise FedbenchError(
            f"unknown check {unknown[0]!r}; choose from: {', '.join([*CHECKS, *ARITHMETIC])}"
        )
    return [n for n in wanted if n in CHECKS], [n for n in wanted if n in ARITHMETIC]


def verdict(rows, checked: int, ref_path: Path) -> None:
    """ok, or exit 1 naming the first regressions."""
    from fedbench.check import describe, regressions

    bad = regressions(rows)
    if bad:
        raise OneLineError(
            f"{len(bad)} regression(s): "
            + "; ".join(describe(r) for r in bad[:3])
            + (" ..." if len(bad) > 3 else ""),
            1,
        )
    click.echo(f"ok: {checked} check(s) within tolerance of {ref_path}")


def run_contracts(only: str | None) -> None:
    """The contract checks' table; exit 1 naming the failures."""
    from rich.table import Table

    from fedbench.contracts import plugin_names, run_checks
    from fedbench.methods import METHODS
    from fedbench.sweep import parse_list
    from fedbench.tables import console

    names = plugin_names()
    if not any(names.values()):
        names = {"methods": list(METHODS)}
    wanted = parse_list(only, "--only")
    if wanted:
        known = [n for kind in names.values() for n in kind]
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise FedbenchError(f"--only {unknown[0]}: not among {', '.join(known)}")
        names = {kind: [n for n in ns if n in wanted] for kind, ns in names.items()}
    rows = run_checks(names)
    table = Table(title="contracts")
    for col in ("name", "check", "", "detail"):
        table.add_column(col)
    for c in rows:
        table.add_row(c.subject, c.name, "ok" if c.ok else "[red]FAIL[/]", c.detail)
    console().print(table)
    failed = [c for c in rows if not c.ok]
    if failed:
        first = failed[0]
        raise OneLineError(
            f"{len(failed)} of {len(rows)} contract check(s) failed, first {first.subject}: "
            f"{first.name}: {first.detail}",
            1,
        )
    click.echo(f"ok: {len(rows)} contract check(s) passed")


COMMANDS = [check]
