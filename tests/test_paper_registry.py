"""The table and preset registries: every paper module registers its presets and tables, and the
command line's listings are generated from the registries (a name registered anywhere shows up,
in registration order)."""

import importlib
import pkgutil
import subprocess
import sys

import pytest
from conftest import invoke

import fedbench.papers
from fedbench.presets import PRESETS, register_preset
from fedbench.tables import TABLES, Cell, PlotSpec, TableSpec, get_table, register, table


def _listed(output: str, names) -> list[str]:
    """The names that appear as the first cell of a row of a rich table, in output order."""
    firsts = [line.strip("│┃ ").split("│")[0].split("┃")[0].strip() for line in output.splitlines()]
    return [f for f in firsts if f in names]


def _stub(name: str, is_table: bool = True, plot: bool = True) -> TableSpec:
    return TableSpec(
        name,
        "a new paper",
        "a new table",
        ("synthetic-1-1",),
        lambda ds: [Cell(ds, "row", "col", const=1.0)],
        plot=PlotSpec("bars", "best_acc") if plot else None,
        is_table=is_table,
    )


PAPERS = [m.name for m in pkgutil.iter_modules(fedbench.papers.__path__)]


@pytest.mark.parametrize("paper", PAPERS)
def test_every_paper_module_registers_presets_and_tables(paper):
    module = importlib.import_module(f"fedbench.papers.{paper}")
    tables = [t for t in TABLES.values() if t.build.__module__ == module.__name__]
    assert tables, f"fedbench.papers.{paper} registers no table"
    presets = {c.preset for t in tables for c in t.cells() if c.preset}
    assert presets and presets <= set(PRESETS), presets - set(PRESETS)


def test_every_table_is_registered_by_a_paper_module():
    for name, spec in TABLES.items():
        assert spec.build.__module__.startswith("fedbench.papers."), name


def test_table_listing_is_the_registry(monkeypatch):
    monkeypatch.setitem(TABLES, "new-table", _stub("new-table"))
    monkeypatch.setitem(TABLES, "new-figure", _stub("new-figure", is_table=False))
    r = invoke("table")
    assert r.exit_code == 0, r.output
    want = [n for n, t in TABLES.items() if t.is_table]
    assert _listed(r.output, TABLES) == want
    assert want[-1] == "new-table" and "new-figure" not in want
    r = invoke("plot")
    assert r.exit_code == 0, r.output
    assert _listed(r.output, TABLES) == [n for n, t in TABLES.items() if t.plot is not None]
    assert "new-figure" in _listed(r.output, TABLES)


def test_table_listing_keeps_the_papers_order():
    """FedLGA (and its readings), SFL (and its FMNIST lr grid), FedSoftMax, FedProx
    (fedbench.papers.LISTED_FIRST), each in its module's order of registration."""
    assert list(TABLES) == [
        *("runtime", "tau", "best-acc", "epochs", "rho", "devices", "sampled", "imbalance"),
        *("tau-at-most", "tau-steps"),
        *("sfl", "quadratic", "quadratic-lr", "sfl-fmnist-lr"),
        *("r90", "smoothness", "temperature", "participation"),
        *("stragglers", "dissimilarity", "adaptive-mu", "data-stats"),
    ]


def test_unknown_table_names_every_registered_table(monkeypatch):
    monkeypatch.setitem(TABLES, "new-table", _stub("new-table"))
    r = invoke("table", "no-such-table")
    assert r.exit_code == 2
    for name, spec in TABLES.items():
        assert (name in r.output) == spec.is_table, name


def test_preset_listing_is_the_registry(monkeypatch):
    monkeypatch.setitem(PRESETS, "new-preset", ("a new paper's setting", {"rounds": 3}))
    r = invoke("presets")
    assert r.exit_code == 0, r.output
    assert _listed(r.output, PRESETS) == list(PRESETS)
    assert list(PRESETS)[0] == "default"


def test_registering_a_name_twice_fails():
    with pytest.raises(ValueError, match="registered twice"):
        register(_stub("runtime"))
    with pytest.raises(ValueError, match="registered twice"):
        register_preset("default", "again", {})


def test_table_decorator_registers_the_builder(monkeypatch):
    monkeypatch.setattr("fedbench.tables.spec.TABLES", dict(TABLES))
    from fedbench.tables import spec as spec_module

    @table("decorated", "a paper", "a title", ("synthetic-1-1",), seeds=(0,))
    def build(ds):
        return [Cell(ds, "r", "c", const=2.0)]

    got = spec_module.TABLES["decorated"]
    assert got.build is build and got.seeds == (0,)
    assert "decorated" not in TABLES  # the real registry is untouched
    assert get_table("runtime") is TABLES["runtime"]


def test_presets_and_table_specs_import_neither_torch_nor_pandas():
    """Every preset comes with its paper's table specs; evaluation and rendering load on use."""
    code = (
        "import sys, fedbench.papers, fedbench.presets, fedbench.tables; "
        "assert 'fedlga-fmnist' in fedbench.presets.PRESETS and 'tau' in fedbench.tables.TABLES; "
        "print(sorted(m for m in ('torch', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_registries_do_not_load_the_papers_the_entry_points_do():
    """presets and tables hold what is registered; importing either runs no paper module (the
    papers import them): the command line and fedbench.api load the catalogs."""
    code = (
        "import sys, fedbench.presets, fedbench.tables, fedbench.assembly\n"
        "print(sorted(m for m in sys.modules if m.startswith('fedbench.papers')),"
        " list(fedbench.presets.PRESETS), list(fedbench.tables.TABLES))\n"
        "import fedbench.cli\n"
        "print('fedbench.papers' in sys.modules, 'fedlga-fmnist' in fedbench.presets.PRESETS)\n"
        "import fedbench.api\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[] ['default'] []", "True True"]
    api = "import sys, fedbench.api; print('tau' in __import__('fedbench.tables').tables.TABLES)"
    out = subprocess.run([sys.executable, "-c", api], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
