"""The `fedbench` command line: the group, its one-line error handling and `main`.

Each command group lives in its own module (train, sweep, table, plot, data, info, check,
calibrate, docs); options several commands share are declared once in `options`. The command
line is an entry point: it loads the paper catalogs (fedbench.papers) before any command runs."""

from __future__ import annotations

import logging
import os
import sys

import click

import fedbench.papers  # noqa: F401 -- the catalogs: every paper's presets and tables register
from fedbench.cli import (
    calibrate,
    check,
    data,
    docs,
    info,
    plot,
    reproduce,
    store,
    sweep,
    table,
    train,
)
from fedbench.cli import options as opt
from fedbench.cli.common import OneLineError
from fedbench.errors import FedbenchError

# a group run without a command prints its help: no mistake to put on one line
HELP_ERRORS = getattr(click.exceptions, "NoArgsIsHelpError", ())


def _one_line_usage(e: click.UsageError) -> OneLineError:
    """click's usage error (usage, hint and error on three lines) as one line."""
    where = e.ctx.command_path if e.ctx else "fedbench"
    return OneLineError(f"{e.format_message()} (see {where} --help)", 2)


def _unexpected(e: Exception) -> OneLineError:
    """Any other failure: one line, exit 2 when the system refused one of the user's files,
    else exit 1 (the caller reraises it with its traceback under --debug)."""
    if isinstance(e, OSError) and e.filename:
        return OneLineError(f"{e.filename}: {e.strerror or e}", 2)
    msg = f"{type(e).__name__}: {e}".strip().splitlines()[0]
    return OneLineError(f"{msg} (rerun with --debug for the traceback)", 1)


def _interrupted(e: KeyboardInterrupt) -> click.exceptions.Exit:
    """A stop by a signal: exit 128 + the signal (130 Ctrl-C, 143 SIGTERM), not click's
    "Aborted!" and 1; one line unless the command said more already."""
    from fedbench.training import signals

    if not getattr(e, "reported", False):
        click.echo(f"interrupted ({signals.signal_name(e)})", err=True)
    signals.reset()  # the stop is this command's (in-process callers run more)
    return click.exceptions.Exit(signals.exit_code(e))


class FedbenchGroup(click.Group):
    """Turns every user mistake (a FedbenchError, a bad option, a file the system cannot read
    or write) into one line, exit 2, a stop by Ctrl-C or SIGTERM into exit 130 or 143, and any
    other failure into one line, exit 1, unless --debug asks for the traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:  # the group's own options (fedbench --nosuch)
            return super().parse_args(ctx, args)
        except HELP_ERRORS:
            raise
        except click.UsageError as e:
            raise _one_line_usage(e) from None

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FedbenchError as e:
            raise OneLineError(str(e), 2) from None
        except HELP_ERRORS:
            raise
        except click.UsageError as e:
            raise _one_line_usage(e) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM (fedbench.training.signals)
            raise _interrupted(e) from None
        except BrokenPipeError:  # output piped into `head` and the like: not an error
            import os
            import sys

            sys.stderr = open(os.devnull, "w")  # noqa: SIM115 -- python flushes it at exit
            raise click.exceptions.Exit(0) from None
        except Exception as e:
            if (ctx.obj or {}).get("debug"):
                raise
            raise _unexpected(e) from None


@click.group(cls=FedbenchGroup)
@click.option("--debug", is_flag=True, help="Show full tracebacks.")
@click.version_option(package_name="fedbench")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Reproduce federated-learning papers' comparison tables on one batched engine.

    \b
    Examples:
      fedbench train                                  # FedAvg on Synthetic(1,1), no download
      fedbench train --preset fedlga-fmnist --method fedprox --set mu=0.1
      fedbench sweep --table tau --dataset fmnist     # the runs Table VI needs, resumable
      fedbench table tau --dataset fmnist             # ours vs the paper's
      fedbench plot tau --dataset fmnist
      fedbench table summary --format md
      fedbench check --quick
      fedbench sweep --table tau --dataset fmnist --plugin my_method.py --add-method mine
    """
    from fedbench.plugins import load_all

    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    try:  # installed packages' entry points and FEDBENCH_PLUGINS (--plugin: its callback)
        load_all()
    except FedbenchError as e:
        raise OneLineError(str(e), 2) from None


def _take_plugins(command: click.Command) -> None:
    """The group and every command (and a group's subcommands) take --plugin, after their own
    options: `fedbench --plugin F sweep ...` and `fedbench sweep ... --plugin F` alike."""
    if not any(p.name == "plugin" for p in command.params):
        command.params.append(opt.plugin_option())
    for sub in getattr(command, "commands", {}).values():
        _take_plugins(sub)


for _module in (train, sweep, reproduce, table, plot, data, info, check, calibrate, store, docs):
    for _command in _module.COMMANDS:
        cli.add_command(_command)
_take_plugins(cli)


def main() -> None:
    try:
        cli(obj={})
    except SystemExit as e:
        if not isinstance(e.code, int) or e.code == 0 or "pyarrow" not in sys.modules:
            raise
        # An error already said in one line: leave without the interpreter's teardown, where
        # pyarrow's thread pools sometimes abort the process ("terminate called without an
        # active exception", exit 134 in ~2 of 100 failing publishes; apache/arrow#34314).
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(e.code)
