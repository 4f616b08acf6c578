"""fedbench: reproduce federated-learning papers' comparison tables on one batched engine.

The Python API (fedbench.api; importing fedbench stays light, torch loads when train runs):

- ``fedbench.train(config=None, *, preset=None, results="results", overwrite=False,
  plugins=(), threads=None, **overrides)`` -> (run.json as a dict, rounds DataFrame)
- ``fedbench.load_runs(results="results", shipped=True, *, dataset=None, method=None,
  where=None, plugins=())`` -> (runs DataFrame, rounds DataFrame)
"""

from fedbench.version import __version__


def train(config=None, **options):
    """Run one config (a RunConfig, dict of fields or TOML path; or a preset and overrides)
    and return (run.json as a dict, rounds as a DataFrame). See fedbench.api.train."""
    from fedbench.api import train as run

    return run(config, **options)


def load_runs(results="results", shipped=True, **options):
    """(runs, rounds) DataFrames of a results folder: one row per run, one row per run and
    round (with run_id). See fedbench.api.load_runs."""
    from fedbench.api import load_runs as load

    return load(results, shipped, **options)


__all__ = ["__version__", "load_runs", "train"]
