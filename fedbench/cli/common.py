"""What several commands share besides their options: the one-line error, checks of folder and
seed options, the command line as one source of config fields; the runs a table names are
fedbench.tables.selection's (thin wrappers here check --results first)."""

from __future__ import annotations

from pathlib import Path

import click

from fedbench.config import check_seeds as config_check_seeds
from fedbench.errors import FedbenchError


class OneLineError(click.ClickException):
    def __init__(self, message: str, code: int):
        super().__init__(" ".join(str(message).splitlines()))  # one line, whatever it holds
        self.exit_code = code


def escape(text: str) -> str:
    """Text for rich's markup (paths and messages may hold [brackets])."""
    from rich.markup import escape as rich_escape

    return rich_escape(str(text))


def warn(label: str, lines) -> None:
    """Each line on stderr after a yellow label (skipped:, rerunning:, ...)."""
    from rich.console import Console

    err = Console(stderr=True)
    for line in lines:
        err.print(f"[yellow]{label}[/] {escape(line)}", highlight=False, soft_wrap=True)


def echo_lines(lines) -> None:
    for line in lines:
        click.echo(line)


def terminal_width() -> int:
    """Where printed prose wraps: the terminal's width, 80 off a terminal (a log, a pipe)."""
    import shutil
    import sys

    return shutil.get_terminal_size().columns if sys.stdout.isatty() else 80


def wrapped(line: str, width: int | None = None) -> str:
    """A note or claim line wrapped at `width` (default terminal_width()), continued under its
    text; words (paths, commands) are never split (the Markdown files keep each line whole)."""
    import textwrap

    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.fill(
        line,
        width or terminal_width(),
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def echo_wrapped(lines) -> None:
    """Note lines printed under a table or plot, each wrapped (wrapped)."""
    for line in lines:
        click.echo(wrapped(line))


def check_folder(path: str | Path | None, option: str, claims: bool = False) -> None:
    """A folder option (made if missing): neither it nor a folder above it may be a file;
    with claims, its .claims folder (run claims) must not be a file either."""
    if path is None:
        return
    p = Path(path)
    for q in (p, *p.parents):
        if q.exists() and not q.is_dir():
            above = "" if q == p else f" (it is inside {q})"
            raise FedbenchError(
                f"{option} {path} cannot be a folder: {q} is a file{above}; give a folder"
            )
    claims_dir = p / ".claims"
    if claims and claims_dir.exists() and not claims_dir.is_dir():
        raise FedbenchError(
            f"{claims_dir} is a file; fedbench keeps run claims in that folder: move the file away"
        )


def log_level(quiet: bool, verbose: bool, level: str | None) -> str:
    """The one log level of --quiet, -v and --log-level (warning, info or debug), set up for
    fedbench's loggers (progress lines and warnings on stderr)."""
    from fedbench.sweep.progress import configure_logging

    given = [name for name, on in (("--quiet", quiet), ("--verbose", verbose)) if on]
    if level:
        given.append(f"--log-level {level}")
    if len(given) > 1:
        raise FedbenchError(f"{' and '.join(given)} contradict each other; give one of them")
    chosen = level or ("warning" if quiet else "debug" if verbose else "info")
    configure_logging(chosen)
    return chosen


def check_seeds(seeds, option: str = "--seeds") -> None:
    config_check_seeds(seeds, option)


def command_line(sets, flags: dict, options: dict | None = None) -> dict:
    """--set items and the fields that flags (--rounds, --seed, ...) set, as one source: a
    field given twice on the command line, even with one value, is an error (one_each).
    options: a field's flag where it is not --FIELD (e.g. seed: --seeds)."""
    from fedbench.config_input import one_each, parse_set  # `fedbench --help` loads no config_input

    items = [(k, v, f"--set {k}={v}") for k, v in parse_set(sets).items()]
    for key, val in flags.items():
        if val is not None:
            flag = (options or {}).get(key, f"--{key.replace('_', '-')}")
            items.append((key, str(val), f"{flag} {val}"))
    return one_each(items)


def make_selection(dataset, seeds, preset, sets, results, add_methods=()):
    """The runs a paper table refers to (fedbench.tables.selection), --results checked first."""
    from fedbench.tables.selection import make_selection as select

    sel = select(dataset, seeds, preset, sets, results, add_methods)
    check_folder(results, "--results")
    return sel


def given_plugins() -> tuple[str, ...]:
    from fedbench.tables.selection import given_plugins as given

    return given()


def with_additions(spec, sel):
    from fedbench.tables.selection import with_additions as add

    return add(spec, sel)


def apply_calibration(spec, sel, calibrated: bool):
    from fedbench.tables.selection import apply_calibration as apply

    return apply(spec, sel, calibrated)


def table_selection(spec, dataset, seeds, preset, sets, results, calibrated, add_methods=()):
    """make_selection, then the calibrated value where asked: (selection, header line)."""
    sel = make_selection(dataset, seeds, preset, sets, results, add_methods)
    return apply_calibration(spec, sel, calibrated)


class ListedHelp(click.Command):
    """A command whose help names a registry's entries: each `{KEY}` in its docstring becomes
    the names lists[KEY]() returns, when the help is shown (so the registries load only then)."""

    def __init__(self, *args, lists: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lists = lists or {}

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for key, names in self.lists.items():
            self.help = (self.help or "").replace(f"{{{key}}}", ", ".join(names()))
        self.lists = {}
        super().format_help_text(ctx, formatter)


# the options that select runs, by parameter name: what `refuse` calls them
OPTION_NAMES = {
    "dataset": "--dataset",
    "seeds": "--seeds",
    "preset": "--preset",
    "sets": "--set",
    "add_methods": "--add-method",
    "method": "--method",
    "where": "--where",
    "calibrated": "--calibrated",
    "spread": "--spread",
}


def refuse(given: dict, options, command: str, why: str) -> None:
    """A one-line error for an option (by parameter name) the command would otherwise
    ignore."""
    bad = [OPTION_NAMES[o] for o in options if given.get(o)]
    if bad:
        verb = "does" if len(bad) == 1 else "do"
        raise FedbenchError(f"{', '.join(bad)} {verb} not apply to `fedbench {command}`: {why}")


def run_filter(dataset, method, seeds, where):
    """--dataset, --method, --seeds and --where as one filter of runs (fedbench.run_filter)."""
    from fedbench.run_filter import RunFilter
    from fedbench.sweep import parse_list

    seed_list = parse_list(seeds, "--seeds", int)
    return RunFilter.parse(dataset, method, seed_list, where)
