"""The papers' claims as checks over a table's cells: each check on hand-made cell values, every
spec's claims naming cells that exist, and one table through the command line (golden)."""

import math
import re

import pytest
from test_tables import _stragglers_args, _stragglers_results, check_golden, invoke

from fedbench.tables import (
    TABLES,
    CellResult,
    Claim,
    ClaimResult,
    PaperValue,
    TableResult,
    TableSpec,
    claim_lines,
    evaluate_claims,
    every,
    lowest,
    ordered,
    ratio_near,
    reached,
    same_as_paper,
    within_ci,
)
from fedbench.tables.claims import show_number
from fedbench.tables.decision import Seeds

CAP = 200  # the rounds of a run: a seed that never reached the target is "> 200"


class View:
    """A CellView stand-in: {(row, col): value} (one seed) or {(row, col): [values]} (seeds
    0, 1, ...; math.inf: a seed that never reached the target, censored at CAP), and
    {(row, col): PaperValue}."""

    def __init__(self, cells, papers=None, dataset="d"):
        self.cells, self.papers, self.dataset = cells, papers or {}, dataset
        self.cols = {c for _, c in cells}

    def row(self, row):
        return row(self.dataset) if callable(row) else row

    def _values(self, row, col):
        v = self.cells.get((self.row(row), col))
        return v if v is None or isinstance(v, (list, str)) else [v]

    def seeds(self, row, col):
        vals = self._values(row, col)
        if vals is None or isinstance(vals, str):
            return None
        censored = frozenset(i for i, x in enumerate(vals) if math.isinf(x))
        return Seeds({i: (CAP if math.isinf(x) else x) for i, x in enumerate(vals)}, censored)

    def mean(self, row, col):
        vals = self._values(row, col)
        if vals is None or isinstance(vals, str):
            return vals
        if all(math.isinf(x) for x in vals):
            return math.inf
        return sum(CAP if math.isinf(x) else x for x in vals) / len(vals)

    def text(self, row, col):
        m, vals = self.mean(row, col), self._values(row, col)
        if isinstance(m, float) and math.isinf(m):
            return f"> {CAP}"
        bound = "> " if any(isinstance(x, float) and math.isinf(x) for x in vals or []) else ""
        return bound + show_number(m)

    def paper(self, row, col):
        return self.papers.get((self.row(row), col))


C = "rounds"
LOW, MID, HIGH = [3.0, 4.0, 5.0], [6.0, 8.0, 9.0], [12.0, 13.0, 15.0]  # paired seeds 0, 1, 2


def test_lowest_orders_and_handles_not_reached_and_missing():
    check = lowest(("A", C), [("B", C), ("D", C)])
    v = check(View({("A", C): LOW, ("B", C): MID, ("D", C): [math.inf] * 3}))
    assert v.holds is True and v.ours.startswith("A 4, B 7.67, D > 200; ")
    assert v.outcome == "reproduced"
    tie = check(View({("A", C): MID, ("B", C): MID, ("D", C): HIGH}))
    assert tie.holds is False  # zero on every seed: no difference
    never = check(View({("A", C): [math.inf] * 3, ("B", C): LOW, ("D", C): MID}))
    assert never.holds is False  # A at > 200 against B's finite seeds
    na = check(View({("A", C): LOW, ("D", C): MID}))
    assert na.holds is None and na.ours == "no number for B" and na.outcome == "n/a"
    none = check(View({("A", C): [math.inf] * 3, ("B", C): [math.inf] * 3, ("D", C): [math.inf]}))
    assert none.holds is None and "none reached" in none.ours
    higher = lowest(("A", C), [("B", C)], lower=False)
    assert higher(View({("A", C): HIGH, ("B", C): MID})).holds is True
    # a present cell already beats A: decided, whatever the missing B would say
    lost = check(View({("A", C): MID, ("D", C): LOW}))
    assert lost.holds is False and lost.ours.startswith("A 7.67, D 4; ")
    assert check(View({("A", C): [math.inf], ("D", C): [math.inf]})).holds is None
    assert check(View({("B", C): LOW, ("D", C): MID})).holds is None  # no number for A


def test_lowest_shows_the_papers_numbers_when_it_has_them():
    papers = {("A", C): PaperValue(60.0), ("B", C): PaperValue(116.0)}
    v = lowest(("A", C), [("B", C)], stated="text")(View({("A", C): MID, ("B", C): LOW}, papers))
    assert v.holds is False and v.paper == "A 60, B 116"
    v = lowest(("A", C), [("B", C)], stated="text")(View({("A", C): LOW, ("B", C): MID}))
    assert v.holds is True and v.paper == "text"


def test_ordered_allows_ties_and_reads_direction():
    refs = [("A", C), ("B", C), ("D", C)]
    up = View({("A", C): LOW, ("B", C): LOW, ("D", C): MID})
    assert ordered(refs)(up).holds is True  # a tie on the way, the ends apart
    assert ordered(refs, increasing=False)(up).holds is False
    assert ordered(refs, increasing=False)(View({("A", C): HIGH, ("B", C): MID, ("D", C): MID}))


def test_ratio_near_uses_the_papers_cells_or_a_given_ratio():
    papers = {("A", C): PaperValue(116.0), ("B", C): PaperValue(60.0)}  # 1.93x
    check = ratio_near(("A", C), ("B", C), tol=0.25)
    near = View({("A", C): [20.0, 21.0, 19.0], ("B", C): [11.0, 11.0, 10.0]}, papers)
    assert check(near).holds is True  # 1.82x, 1.91x, 1.9x
    v = check(View({("A", C): MID, ("B", C): MID}, papers))
    assert v.holds is False and v.ours.endswith("ratio: 1 [1, 1] (3 seeds)")
    assert v.paper == "1.93x (within 25%)"
    assert check(View({("A", C): MID, ("B", C): MID})).holds is None  # no paper numbers
    given = ratio_near(("A", C), ("B", C), tol=0.1, paper_ratio=0.5)
    assert given(View({("A", C): [52.0, 50.0, 49.0], ("B", C): [100.0] * 3})).holds is True
    # A never reached the target: its ratio is > 2 on every seed, already outside 0.5 +- 10%
    assert given(View({("A", C): [math.inf] * 3, ("B", C): [100.0] * 3})).holds is False
    # B never reached it: A / B is below 0.26 on every seed, below the band
    below = given(View({("A", C): [52.0, 50.0, 49.0], ("B", C): [math.inf] * 3}))
    assert below.holds is False
    # A never reached it but B took 500: A / B is > 0.4, below or inside the band
    maybe = given(View({("A", C): [math.inf] * 3, ("B", C): [500.0] * 3}))
    assert maybe.holds is None and maybe.inconclusive


def test_within_ci_same_as_paper_reached_and_every():
    ci = {("A", C): PaperValue(15.0, 14.0, 16.0), ("B", C): PaperValue(9.0, 8.0, 10.0)}
    check = within_ci([("A", C), ("B", C)])
    inside = View({("A", C): [15.4, 15.5, 15.6], ("B", C): [8.9, 9.0, 9.1]}, ci)
    assert check(inside).holds is True
    v = check(View({("A", C): [15.4, 15.5, 15.6], ("B", C): [12.0, 12.1, 11.9]}, ci))
    assert v.holds is False and v.paper == "A 14.00–16.00, B 8.00–10.00"
    assert check(View({("A", C): [15.5], ("B", C): [8.2]})).holds is None
    win = {("G1", "w"): PaperValue("SFL"), ("G2", "w"): PaperValue("PFL")}
    same = same_as_paper([("G1", "w"), ("G2", "w")])
    assert same(View({("G1", "w"): "SFL", ("G2", "w"): "PFL"}, win)).holds is True
    assert same(View({("G1", "w"): "SFL", ("G2", "w"): "SFL"}, win)).holds is False
    near = same_as_paper([("G1", "n")], rel=0.01)
    assert near(View({("G1", "n"): 1005.0}, {("G1", "n"): PaperValue(1000.0)})).holds is True
    assert reached([("A", C)])(View({("A", C): LOW})).holds is True
    assert reached([("A", C)])(View({("A", C): [math.inf] * 3})).holds is False
    partly = reached([("A", C)])(View({("A", C): [3.0, math.inf, 5.0]}))
    assert partly.holds is None and partly.inconclusive
    both = every(lowest(("A", C), [("B", C)]), lowest(("B", C), [("D", C)]))
    v = both(View({("A", C): LOW, ("B", C): MID, ("D", C): LOW}))
    assert v.holds is False and v.ours.startswith("B 7.67, D 4; ")  # the failing part shown
    assert both(View({("A", C): LOW, ("B", C): MID})).holds is None
    # one part false decides the whole, even with another part n/a
    assert both(View({("A", C): MID, ("B", C): LOW})).holds is False


def test_claims_are_counted_per_dataset_and_listed():
    spec = TableSpec(
        "t",
        "src",
        "title",
        ("x", "y"),
        lambda ds: [],
        claims=(
            Claim("A beats B", lowest(("A", C), [("B", C)])),
            Claim("only on y", reached([("A", C)]), datasets=("y",)),
        ),
    )
    result = TableResult(spec, None, "minmax", [])
    views = {"x": View({("A", C): LOW, ("B", C): MID}), "y": View({("A", C): [math.inf] * 3})}
    result.claims = [
        ClaimResult(c, ds, c.check(views[ds]))
        for ds in ("x", "y")
        for c in spec.claims
        if c.datasets is None or ds in c.datasets
    ]
    lines = claim_lines(result)
    assert lines[0] == (
        "claims: 1 of 2 reproduced, 1 not reproduced, 0 inconclusive "
        "(1 n/a: cells without a number)"
    )
    assert lines[1] == (
        # diffs 3, 4, 4: mean 3.667, sd 0.577, t(0.975, 2) = 4.303: +-1.434
        "  reproduced: [x] A beats B (ours: A 4, B 7.67; B - A: +3.67 [+2.23, +5.1] (3 seeds))"
    )
    assert lines[2].startswith("  n/a: [y] A beats B (ours: no number for B")
    assert lines[3] == "  not reproduced: [y] only on y (ours: A > 200)"
    assert lines[4].startswith("  (decision rule: ") and "Student-t" in lines[4]
    assert claim_lines(result, rule=False) == lines[:4]


@pytest.mark.parametrize("name", [n for n, t in TABLES.items() if t.claims])
def test_every_claim_names_cells_of_its_table(name):
    """With a number in every cell, no claim of any spec reads a cell that is not there."""
    spec = TABLES[name]
    cells = spec.cells()
    results = [CellResult(c, status="ok", mean=float(i + 1)) for i, c in enumerate(cells)]
    for r in results:
        if r.cell.derived is not None and "winner" in r.cell.col:
            r.mean = "SFL"
        if r.cell.paper is not None:
            from fedbench.tables import lookup

            r.paper = lookup(r.cell.paper, r.cell.dataset)
    result = TableResult(spec, None, "minmax", results)
    claims = evaluate_claims(result)
    assert claims, name
    for c in claims:
        assert not c.verdict.ours.startswith("no number"), (c.dataset, c.claim.text, c.verdict)


def test_table_command_ends_with_its_claims(tmp_path):
    """stragglers through the command line: the terminal table ends with the verdicts, and the
    md / csv / latex files carry them."""
    res = tmp_path / "results"
    _stragglers_results(res)
    args = _stragglers_args(res)
    r = invoke("table", "stragglers", *args)
    assert r.exit_code == 0, r.output
    tail = r.output[r.output.index("claims: ") :]
    check_golden("stragglers_claims.txt", tail, res)
    assert tail.startswith("claims: 1 of 4 reproduced, 3 not reproduced, 0 inconclusive\n")
    # a csv's claims are in its sidecar NAME.csv.json (the csv holds data only)
    for fmt, ext, mark in (("md", "md", "**claims: "), ("csv", "csv.json", '"claims: ')):
        r = invoke("table", "stragglers", *args, "--format", fmt, "--out", tmp_path / "t")
        assert r.exit_code == 0 and "claims: 1 of 4 reproduced" in r.output, r.output
        text = (tmp_path / "t" / f"stragglers_synthetic-1-1.{ext}").read_text()
        assert mark + "1 of 4 reproduced" in text
        assert len(re.findall(r"reproduced: ", text)) == 4
    r = invoke("table", "stragglers", *args, "--format", "latex", "--out", tmp_path / "t")
    assert (
        "% claims: 1 of 4 reproduced"
        in (tmp_path / "t" / "stragglers_synthetic-1-1.tex").read_text()
    )


def test_report_gathers_tables_verdicts_scale_and_commands(tmp_path):
    """A tiny results folder: the stragglers runs at a cut (5 rounds, N 6, K 3, seeds 0,1) and
    the table file that names them; `fedbench table report` finds both and writes REPORT.md."""
    from fedbench.tables.report import parse_table_command

    res, tdir = tmp_path / "results", tmp_path / "tables"
    _stragglers_results(res)
    args = _stragglers_args(res)
    r = invoke("table", "stragglers", *args, "--format", "md", "--out", tdir)
    assert r.exit_code == 0, r.output
    (tdir / "notes.md").write_text("no header here\n")  # other files are left alone
    r = invoke("table", "report", "--results", res, "--out", tdir)
    assert r.exit_code == 0, r.output
    assert "stragglers (synthetic-1-1): claims: 1 of 4 reproduced" in r.output
    text = (tdir / "REPORT.md").read_text()
    assert text.startswith(f"<!-- made by: fedbench table report --results {res} --out {tdir}")
    row = (
        "| stragglers | synthetic-1-1 | FedProx (MLSys 2020) Fig. 1 (and Fig. 7) | 1 | 3 | 0 | 0 |"
    )
    assert row in text and "| 0 | cut |" in text
    assert "- scale: cut: rounds 5 (paper 200); N 6 (paper 30); K 3 (paper 10); seeds 0,1" in text
    assert "(paper 0,1,2,3,4,5,6,7,8,9)" in text  # stragglers: 10 seeds
    assert (
        "- runs made by: `fedbench sweep --table stragglers --dataset synthetic-1-1 "
        "--preset default --seeds 0,1 --set rounds=5" in text
    )
    assert "(file `stragglers_synthetic-1-1.md`)" in text
    assert "- not reproduced: FedProx mu>0 ends with a lower training loss" in text
    assert text.count("\n## ") == 2  # no other table has runs here: the rest are listed
    assert "\n## Tables with no runs here\n" in text
    assert "- tau (fmnist), FedLGA (TCYB 2023) Table VI: `fedbench sweep --table tau" in text
    name, sel, ignored = parse_table_command(
        "fedbench table tau --dataset fmnist --seeds 0,1 --set lr=1e-5 --calibrated --format md",
        "results",
    )
    assert (name, sel.dataset, sel.seeds, sel.sets, ignored) == (
        "tau",
        "fmnist",
        (0, 1),
        {"lr": "1e-5"},
        ["--calibrated"],
    )
    (tmp_path / "empty").mkdir()
    r = invoke("table", "report", "--results", tmp_path / "empty", "--out", tmp_path / "none")
    assert r.exit_code == 2 and "no paper table has finished runs" in r.output


def test_report_of_a_table_whose_runs_are_gone_reads_its_file(tmp_path):
    """The runs behind a table file are lost (or were made elsewhere): the report still lists the
    table, with the file's scale, compute line and old numbers, marked as read from a file of
    an earlier machine, and counts no verdict from it (issue 34: verdicts made before the rule,
    on runs no longer here)."""
    import re

    res, tdir = tmp_path / "results", tmp_path / "tables"
    _stragglers_results(res)
    r = invoke("table", "stragglers", *_stragglers_args(res), "--format", "md", "--out", tdir)
    assert r.exit_code == 0, r.output
    table_file = (tdir / "stragglers_synthetic-1-1.md").read_text()
    scale = "scale: cut: rounds 5 (paper 200); N 6 (paper 30); K 3 (paper 10); seeds 0,1"
    assert f"<!-- {scale}" in table_file  # the file carries its scale
    r = invoke("table", "report", "--results", res, "--out", tdir)
    from_runs = (tdir / "REPORT.md").read_text()
    assert "| stragglers | synthetic-1-1 | FedProx (MLSys 2020) Fig. 1 (and Fig. 7) | 1 | 3 |" in (
        from_runs
    )  # from the runs: counted
    (tmp_path / "gone").mkdir()
    r = invoke("table", "report", "--results", tmp_path / "gone", "--out", tdir)
    assert r.exit_code == 0, r.output
    assert "from stragglers_synthetic-1-1.md: no verdict counted" in r.output
    text = (tdir / "REPORT.md").read_text()
    row = "| stragglers (file) | synthetic-1-1 | FedProx (MLSys 2020) Fig. 1 (and Fig. 7) | – | – |"
    assert row in text and "| – | – | cut |" in text
    assert "(from its file)" in text and f"- {scale}" in text
    assert "made on an earlier machine" in text and "**no verdict counted**" in text
    # the file's numbers per claim, its verdict words taken off
    claims = from_runs[from_runs.index("**claims:") :].split("\n\n## ")[0].splitlines()[2:]
    old = [re.sub(r"^- (reproduced|not reproduced|inconclusive): ", "- ", c) for c in claims]
    section = text[text.index("**no verdict counted**") :]
    assert all(c in section for c in old) and not any(c in section for c in claims)
    assert not re.search(r"^- (not )?reproduced: ", section, re.M)
    assert "- stragglers (synthetic-1-1)" not in text  # not listed as missing
    assert "- stragglers (mnist), FedProx" in text  # its other datasets still are
    # a file made before fedbench wrote scale or claims: reported as such
    (tdir / "stragglers_synthetic-1-1.md").write_text(
        "<!-- made by: fedbench table stragglers --dataset synthetic-1-1 --format md -->\n"
        "<!-- compute: 27 runs, 11.8 min of run wall time (summed) -->\n| a |\n"
    )
    invoke("table", "report", "--results", tmp_path / "gone", "--out", tdir)
    text = (tdir / "REPORT.md").read_text()
    assert "| – | – | – | – | ? |" in text and "- scale: not in the file" in text
    assert "- compute: 27 runs, 11.8 min" in text and "No verdicts in the file" in text


def test_report_prefers_a_table_file_made_from_more_runs_than_are_here(tmp_path):
    """Some of a table file's runs are lost (or only a few were rerun): the report does not
    replace the file's verdicts with a table of the few runs here; it reads the file."""
    import shutil

    res, tdir = tmp_path / "results", tmp_path / "tables"
    _stragglers_results(res)
    r = invoke("table", "stragglers", *_stragglers_args(res), "--format", "md", "--out", tdir)
    assert r.exit_code == 0, r.output
    invoke("table", "report", "--results", res, "--out", tdir)
    assert "(from its file)" not in (tdir / "REPORT.md").read_text()  # all its runs are here
    run_dirs = sorted(p for p in res.iterdir() if (p / "run.json").exists())
    shutil.rmtree(run_dirs[0])
    r = invoke("table", "report", "--results", res, "--out", tdir)
    assert r.exit_code == 0, r.output
    text = (tdir / "REPORT.md").read_text()
    assert "| stragglers (file) | synthetic-1-1 |" in text and "(from its file)" in text


def test_report_keeps_a_calibrated_file_beside_the_same_table_at_the_paper_values(tmp_path):
    """best-acc --seeds 0 and best-acc --seeds 0 --calibrated are two tables (the fit's values
    are applied after the files are read): the report keeps both files."""
    from fedbench.tables.report import _candidates

    for name, extra in (
        ("best-acc_fmnist.md", ""),
        ("best-acc_fmnist_calibrated.md", " --calibrated"),
    ):
        (tmp_path / name).write_text(
            "<!-- made by: fedbench table best-acc --dataset fmnist --seeds 0 --format md"
            f"{extra} -->\n"
        )
    files = [c[3] for c in _candidates(tmp_path, "results") if c[3]]
    assert files == ["best-acc_fmnist.md", "best-acc_fmnist_calibrated.md"]


def test_report_lists_a_table_whose_file_covers_every_dataset_once(tmp_path):
    """A table file made without --dataset covers all the table's datasets: the report does not
    add each dataset at the paper's setting again."""
    from fedbench.tables.report import _candidates

    tdir = tmp_path / "tables"
    tdir.mkdir()
    (tdir / "dissimilarity.md").write_text(
        "<!-- made by: fedbench table dissimilarity --format md -->\n"
    )
    found = [sel.dataset for spec, sel, *_ in _candidates(tdir, "results")]
    names = [spec.name for spec, *_ in _candidates(tdir, "results")]
    assert names.count("dissimilarity") == 1 and None in found
    assert names.count("stragglers") > 1  # no file: each dataset at the paper's setting


def test_report_scale_says_which_cells_have_fewer_seeds(tmp_path):
    """Seeds used are a union over cells: a table where one cell lost a seed's run and another
    lost all of its runs is a cut, and the scale line counts them."""
    import shutil

    from fedbench.tables.evaluate import evaluate_table
    from fedbench.tables.report import table_scale

    res = tmp_path / "results"
    spec, sel = _stragglers_results(res)
    result = evaluate_table(spec, res, sel)
    assert "with every seed" not in table_scale(result)[1]  # every cell has seeds 0 and 1
    runs = [c for c in result.cells if c.cell.kind == "runs" and c.n]
    shutil.rmtree(res / runs[0].records[1][1].meta["run_id"])  # cell 0 loses seed 1
    for _, rec in runs[1].records:  # cell 1 loses both seeds
        shutil.rmtree(res / rec.meta["run_id"], ignore_errors=True)
    full, line = table_scale(evaluate_table(spec, res, sel))
    assert not full and line.startswith("cut: ")
    n = len([c for c in result.cells if c.cell.kind == "runs"])
    # each run feeds two cells (its loss and its accuracy column)
    assert line.endswith(f"cells {n - 4} of {n} with every seed, 2 with fewer, 2 without runs")
