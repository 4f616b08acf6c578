"""Options several commands take, each declared once (name, type, default, metavar, help).

Each is a factory: `@opt.results()` gives the shared option, `@opt.results(help="...")` the same
option with what one command says differently (a help text, a default)."""

from __future__ import annotations

import math

import click

from fedbench.errors import FedbenchError


class NonNegative(click.FloatRange):
    """A finite number >= 0 (click's FloatRange lets nan and inf through)."""

    def __init__(self):
        super().__init__(min=0)

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


def load_plugins(ctx: click.Context, param: click.Parameter, values) -> None:
    """--plugin's callback: load the plugins before any other option is read (eager), so that
    their method, dataset and table names are known to the rest of the command line."""
    if not values:
        return
    from fedbench.cli.common import OneLineError

    if any(not str(v).strip() for v in values):
        raise click.BadParameter("empty; give a .py file or a module name", ctx, param)
    from fedbench.plugins import load  # `fedbench --help` loads no plugins module

    try:
        load(values)
    except FedbenchError as e:
        raise OneLineError(str(e), 2) from None


PLUGIN_HELP = (
    "Load a plugin: a .py file or a module that registers methods, datasets, models or "
    "tables; repeatable (also read from FEDBENCH_PLUGINS and installed packages' "
    "fedbench.plugins entry points)."
)


def plugin_option() -> click.Option:
    """--plugin, which every command takes (fedbench.cli adds it to each)."""
    return click.Option(
        ["--plugin"],
        multiple=True,
        metavar="FILE.py|MODULE",
        expose_value=False,
        is_eager=True,
        callback=load_plugins,
        help=PLUGIN_HELP,
    )


class FolderPath(click.Path):
    """A folder path that names something: an empty (or blank) one would put files in the
    current directory without a word."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("empty: that would mean the current directory; give a folder, e.g. results")
        return super().convert(value, param, ctx)


class Named(click.ParamType):
    """A name (a preset's, ...) that must not be empty: '' would silently mean the default."""

    name = "text"

    def __init__(self, example: str):
        self.example = example

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail(f"empty; give one, e.g. {self.example}", param, ctx)
        return value


class FilePath(click.Path):
    """A file path that names something: an empty one would silently read no file."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("empty; give a file, e.g. run.toml", param, ctx)
        return super().convert(value, param, ctx)


class ThreadCount(click.ParamType):
    """A torch thread count: a whole number from 1 to fedbench.devices.thread_limit()."""

    name = "integer"

    def convert(self, value, param, ctx):
        from fedbench.devices import thread_count_problem

        count = click.INT.convert(value, param, ctx)
        problem = thread_count_problem(count)
        if problem:
            self.fail(problem, param, ctx)
        return count


THREAD_COUNT = ThreadCount()
FINITE_NON_NEGATIVE = NonNegative()


def amount(name: str, default: float, help: str):
    """An option taking a finite number >= 0, its default shown (a tolerance, a resource)."""
    return click.option(
        name, type=FINITE_NON_NEGATIVE, default=default, show_default=True, help=help
    )


def probe():
    """--probe SECONDS: the plan's estimate measured here now first (fedbench.sweep.probe)."""
    return click.option(
        "--probe", type=FINITE_NON_NEGATIVE, default=None, metavar="SECONDS",
        help="Before the expected time, time a few rounds of one run of each setting here now "
        "(a temporary folder, never recorded), for about this long in all; the other settings' "
        "rates are scaled by what it found. 0: none. Default with --dry-run or a budget: 30 "
        "($FEDBENCH_PROBE); else none.",
    )  # fmt: skip


def _shared(*decls, **attrs):
    def factory(**changes):
        return click.option(*decls, **{**attrs, **changes})

    return factory


results = _shared(
    "--results",
    default="results",
    show_default=True,
    type=FolderPath(),
    help="Results folder.",
)
threads = _shared(
    "--threads",
    type=THREAD_COUNT,
    help="torch CPU threads (default: 1 for small models, else all cores).",
)
jobs = _shared(
    "--jobs",
    "-j",
    type=int,
    default=1,
    show_default=True,
    help="Runs at once on this machine (each gets cores/jobs threads, its own GPU).",
)
stack = _shared(
    "--stack/--no-stack",
    "stack",
    default=None,
    help="Train runs that differ only in seeds, heterogeneity draws, length or evaluation as "
    "one stacked engine pass, each still its own run (default: where it pays: small models "
    "through the torch loop, e.g. on a GPU; results are the same either way).",
)
preset = _shared(
    "--preset",
    type=Named("default (see `fedbench presets`)"),
    help="Named paper setting (see `fedbench presets`).",
)
config_file = _shared(
    "--config", "config_file", type=FilePath(), help="TOML file of config fields."
)
sets = _shared(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Change a field of every run (e.g. rounds=30 for a quick look); repeatable.",
)
seeds = _shared("--seeds", help="Comma-separated seeds (default: the table's).")
dataset = _shared("--dataset", help="One dataset of the table (default: all of them).")
data_dir = _shared("--data-dir", help="Folder holding the dataset files.")
quiet = _shared("--quiet", "-q", is_flag=True, help="No progress display.")
verbose = _shared(
    "--verbose", "-v", is_flag=True, help="A progress line every round (--log-level debug)."
)
log_level = _shared(
    "--log-level",
    type=click.Choice(["warning", "info", "debug"]),
    help="warning: no progress (--quiet); info (default): a live display on a terminal, else a "
    "progress line every 10 s (FEDBENCH_PROGRESS_SECONDS); debug: a line every round (-v).",
)
checkpoint_rounds = _shared(
    "--checkpoint-rounds",
    type=click.IntRange(min=0),
    help="Checkpoint every N rounds (default 0: by time only; FEDBENCH_CHECKPOINT_ROUNDS). "
    "A killed or interrupted run resumes from its last checkpoint.",
)
checkpoint_minutes = _shared(
    "--checkpoint-minutes",
    type=FINITE_NON_NEGATIVE,
    help="Checkpoint after this many minutes (default 2, 0: off; "
    "FEDBENCH_CHECKPOINT_MINUTES). Neither changes a run's identity.",
)
on_error = _shared(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    show_default=True,
    help="A run with a corrupt file: stop with its name, or skip it.",
)
strict = _shared(
    "--strict",
    is_flag=True,
    help="Refuse runs written by another fedbench version (default: use them, with a note).",
)
calibrated = _shared(
    "--calibrated",
    is_flag=True,
    help="At the value `fedbench calibrate` fitted for this table and dataset.",
)
table_name = _shared("--table", "table_name", help="The paper table (see fedbench table).")
view_format = _shared("--format", "fmt", type=click.Choice(["rich", "md"]), default="rich")


where = _shared(
    "--where",
    "where",
    multiple=True,
    metavar="FIELD=VALUE[,VALUE]",
    help="Only runs whose config field (or alias, method parameter, status) has one of these "
    "values, e.g. --where s=0.5 --where mu=0.1,1; repeatable (all must hold).",
)
method_filter = _shared("--method", "method", help="Only runs of this method.")
add_method = _shared(
    "--add-method",
    "add_methods",
    multiple=True,
    metavar="METHOD[:KEY=VALUE,...]",
    help="Add rows of this method (e.g. a --plugin's) beside the paper's, run at the table's "
    "FedAvg row's settings; marked (added), no paper value, not in the claims; repeatable. "
    "With sweep: trains only those rows.",
)


def together(*options):
    """One decorator applying several options, listed in the order --help shows them."""

    def apply(f):
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def reading_runs(listing: str):
    """What a command that reads a paper table's runs (table, plot) takes: --strict,
    --calibrated, --add-method, and --method/--where for its `listing` of single runs."""
    return together(
        strict(),
        calibrated(),
        add_method(),
        method_filter(help=f"For `{listing}`: only runs of this method."),
        where(
            help=f"For `{listing}`: only runs whose FIELD (config field, alias, method "
            "parameter or status) has one of the VALUEs; repeatable."
        ),
    )


# what a long command prints while it runs (train, sweep)
output = together(quiet(), verbose(), log_level())
checkpoints = together(checkpoint_rounds(), checkpoint_minutes())

# which runs a paper table refers to (table, plot, calibrate; sweep --table takes the same)
selection = together(
    dataset(),
    seeds(),
    preset(help="Run the table's cells on this preset instead of the paper's."),
    sets(),
    results(),
)
