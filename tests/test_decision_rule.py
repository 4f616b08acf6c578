"""The decision rule (fedbench.tables.decision) on hand-made seed sets: Student's t, each of
the three outcomes for differences, orders and equalities, censored seeds ('> R'), and the
rule through a table (evaluate -> claims -> summary and report counts)."""

import math

import pytest

from fedbench.tables import decision as rule
from fedbench.tables.decision import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Seeds


def seeds(*values, larger=(), smaller=()):
    return Seeds(dict(enumerate(values)), frozenset(larger), frozenset(smaller))


@pytest.mark.parametrize(
    "df,t", [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (9, 2.2622), (29, 2.0452)]
)
def test_student_t_quantiles_are_the_tables(df, t):
    assert rule.t_quantile(0.975, df) == pytest.approx(t, abs=1e-4)


def test_t_interval_by_hand():
    # 3 seeds 3, 4, 4: mean 11/3, s = sqrt(1/3), half-width 4.3027 * s / sqrt(3) = 1.4342
    m, lo, hi = rule.t_interval([3.0, 4.0, 4.0])
    assert m == pytest.approx(11 / 3)
    assert (lo, hi) == pytest.approx((11 / 3 - 1.43424, 11 / 3 + 1.43424), abs=1e-4)
    assert rule.t_interval([5.0]) is None  # one seed: no interval
    # 1.96 would give +-0.653: the normal interval is 2.2x too narrow at 3 seeds
    assert (hi - lo) / 2 / (1.96 * math.sqrt(1 / 3) / math.sqrt(3)) == pytest.approx(2.195, 1e-3)


def test_a_difference_reproduced_not_reproduced_or_inconclusive():
    x = seeds(8.0, 9.0, 10.0)
    # y - x = 3, 4, 4: [2.23, 5.10] > 0
    assert rule.less(x, seeds(11.0, 13.0, 14.0)).outcome == REPRODUCED
    # y - x = -3, -4, -4: < 0
    assert rule.less(x, seeds(5.0, 5.0, 6.0)).outcome == NOT_REPRODUCED
    # y - x = 1, -1, 2: mean 0.67, s 1.53, [-3.13, 4.46] holds 0
    d = rule.less(x, seeds(9.0, 8.0, 12.0))
    assert d.outcome == INCONCLUSIVE and d.interval[1] < 0 < d.interval[2]
    # the same gap as the first, one seed: no interval
    one = rule.less(seeds(8.0), seeds(11.0))
    assert one.outcome == INCONCLUSIVE and one.interval is None and one.n == 1
    # equal on every seed: the claimed difference is not there
    tie = rule.less(x, seeds(8.0, 9.0, 10.0))
    assert tie.outcome == NOT_REPRODUCED and tie.tie
    # quadratic-lr group 1: both methods at exactly 0 distance on every seed, a tie at the
    # floor, which the measure cannot separate (was 'not reproduced')
    floor = rule.less(seeds(0.0, 0.0, 0.0), seeds(0.0, 0.0, 0.0))
    assert floor.outcome == INCONCLUSIVE and floor.tie


INF = math.inf


def test_a_never_seed_is_plus_infinity_and_the_seeds_are_counted():
    """Eq. 6 (tau calibrated): every seed diverged at rounds 5-16, every FedAvg seed reached
    65 % in 30-40 rounds. At the divergence round the pair read +95 [+20.5, +170], inconclusive;
    never (+inf) it is 3 of 3 seeds against: not reproduced."""
    eq6, fedavg = seeds(INF, INF, INF), seeds(30.0, 35.0, 40.0)
    d = rule.less(eq6, fedavg)  # 'Eq. 6 needs fewer rounds than FedAvg'
    assert d.outcome == NOT_REPRODUCED and d.interval is None and d.signs == (0, 3, 0)
    assert rule.less(fedavg, eq6).outcome == REPRODUCED
    # both never on a seed: a tie there; the two others decide
    assert rule.less(seeds(9.0, 9.0, INF), seeds(12.0, 13.0, INF)).signs == (2, 0, 1)
    assert rule.less(seeds(9.0, 9.0, INF), seeds(12.0, 13.0, INF)).outcome == REPRODUCED
    # one seed that differs is not enough
    assert rule.less(seeds(INF, INF, 9.0), seeds(INF, INF, 12.0)).outcome == INCONCLUSIVE
    # finite seeds whose interval decides (y - x = 3, 4, 4, 3) and a never seed against them:
    # the count replaces the interval, 4 for and 1 against: inconclusive, never reversed
    x, y = seeds(8.0, 9.0, 10.0, 9.0, INF), seeds(11.0, 13.0, 14.0, 12.0, 50.0)
    assert rule.less(x, y).outcome == INCONCLUSIVE and rule.less(x, y).signs == (4, 1, 0)
    y = seeds(11.0, 13.0, 14.0, 12.0, INF)
    # ... and with it (x reached on every seed, y never on the fifth), still decided
    assert rule.less(seeds(8.0, 9.0, 10.0, 9.0, 9.0), y).outcome == REPRODUCED
    # both never on the fifth: a tie there, the four others decide
    assert rule.less(x, seeds(11.0, 13.0, 14.0, 12.0, INF)).signs == (4, 0, 1)
    # an equality: never is outside any band on its side
    assert rule.within(seeds(INF, INF, INF), 14.88, 15.84).outcome == NOT_REPRODUCED
    assert rule.within(seeds(INF, 15.0, 15.5), 14.88, 15.84).outcome == INCONCLUSIVE


def test_a_difference_pairs_seeds_and_uses_only_common_ones():
    # unpaired the spreads overlap (8-30 vs 9-31); paired, y is 1 more on every seed
    x, y = seeds(8.0, 30.0, 15.0), seeds(9.0, 31.0, 16.0, 100.0)
    d = rule.less(x, y)
    assert d.n == 3
    assert d.interval == pytest.approx((1.0, 1.0, 1.0))  # zero spread: the interval is 1
    assert d.outcome == REPRODUCED


def test_a_margin_must_be_cleared():
    x, y = seeds(1.00, 1.01, 1.02), seeds(1.05, 1.06, 1.07)  # y - x = 0.05 on each seed
    assert rule.less(x, y).outcome == REPRODUCED
    assert rule.less(x, y, margin=0.1).outcome == INCONCLUSIVE  # inside the drift
    assert rule.less(y, x, margin=0.01).outcome == NOT_REPRODUCED  # beyond it, reversed


def test_censored_seeds_confirm_only_the_censored_cell_as_the_larger():
    """R = 200 rounds: a seed that never reached the target enters at 200 and may be more."""
    fast = seeds(90.0, 100.0, 110.0)
    never = seeds(200.0, 200.0, 200.0, larger=(0, 1, 2))
    # 'fast needs fewer rounds than never': differences >= 90..110, all may be larger: holds
    assert rule.less(fast, never).outcome == REPRODUCED
    # 'never needs fewer rounds than fast': the interval at 200 already says the opposite
    assert rule.less(never, fast).outcome == NOT_REPRODUCED
    # MimeLite's tau cell: 64, 120, > 200 against FedLGA's 111 a seed (one seed each side)
    mime = seeds(64.0, 120.0, 200.0, larger=(2,))
    lga = seeds(111.0, 111.0, 111.0)
    # at the cap the differences are 47, -9, -89 (interval holds 0): inconclusive either way
    assert rule.less(lga, mime).outcome == INCONCLUSIVE
    assert rule.less(mime, lga).outcome == INCONCLUSIVE
    # a censored seed on the claimed smaller side can never confirm the claim
    close = seeds(100.0, 101.0, 200.0, larger=(2,))
    assert rule.less(close, seeds(150.0, 151.0, 250.0)).outcome == INCONCLUSIVE
    # ... and one on the larger side can never refute it
    assert rule.less(seeds(150.0, 151.0, 210.0), close).outcome == INCONCLUSIVE
    # both censored on a seed: they tie at R there, which decides nothing either way
    both = rule.less(seeds(200.0, 200.0, larger=(0, 1)), seeds(200.0, 200.0, larger=(0, 1)))
    assert both.outcome == INCONCLUSIVE


def test_an_order_needs_its_ends_apart_and_no_step_reversed():
    a, b, c = seeds(29.0, 30.0, 28.0), seeds(41.0, 40.0, 43.0), seeds(60.0, 58.0, 61.0)
    flat = seeds(41.0, 40.0, 43.0)
    outcome, parts = rule.ordered([a, b, flat, c])  # a tie on the way is allowed
    assert outcome == REPRODUCED and parts[0].outcome == REPRODUCED
    assert rule.ordered([a, c, b])[0] == NOT_REPRODUCED  # c > b: a step reversed
    assert rule.ordered([c, b, a])[0] == NOT_REPRODUCED  # the ends reversed
    # the calibrated tau column, one seed: 90, 92, 92, 111 -> inconclusive (was 'reproduced')
    single = [seeds(v) for v in (90.0, 92.0, 92.0, 111.0)]
    assert rule.ordered(single)[0] == INCONCLUSIVE
    # lr 0.01, 3 seeds: 9.0 [7-11], 8.3 [5-11], 9.7 [5-15], 9.0 [7-11]: ends equal, noisy
    noisy = [
        seeds(7.0, 9.0, 11.0),
        seeds(5.0, 9.0, 11.0),
        seeds(5.0, 9.0, 15.0),
        seeds(11.0, 9.0, 7.0),
    ]
    assert rule.ordered(noisy)[0] == INCONCLUSIVE


def test_an_equality_within_a_tolerance():
    # the paper's R90 interval 14.88-15.84
    assert rule.within(seeds(15.3, 15.4, 15.35), 14.88, 15.84).outcome == REPRODUCED
    assert rule.within(seeds(9.0, 9.5, 10.0), 14.88, 15.84).outcome == NOT_REPRODUCED
    # mean 15.4 but s = 1: [12.9, 17.9] straddles the band
    assert rule.within(seeds(14.4, 15.4, 16.4), 14.88, 15.84).outcome == INCONCLUSIVE
    assert rule.within(seeds(15.3), 14.88, 15.84).outcome == INCONCLUSIVE  # one seed
    # never reached in 25 rounds (> 25): above the band whatever the true value
    assert rule.within(seeds(25.0, 25.0, 25.0, larger=(0, 1, 2)), 14.88, 15.84).outcome == (
        NOT_REPRODUCED
    )
    # > 10 may be inside the band or above it
    assert rule.within(seeds(10.0, 10.0, larger=(0, 1)), 14.88, 15.84).outcome == INCONCLUSIVE


def test_ratios_carry_the_censoring_direction():
    num = seeds(116.0, 120.0, 200.0, larger=(2,))
    den = seeds(58.0, 60.0, 200.0, larger=(2,))
    r = rule.ratios(num, den)
    assert r.values == {0: 2.0, 1: 2.0, 2: 1.0}
    assert r.larger == {2} and r.smaller == {2}  # both censored: unbounded either way
    near = rule.within(rule.ratios(seeds(116.0, 118.0, 114.0), seeds(60.0, 61.0, 59.0)), 1.55, 2.4)
    assert near.outcome == REPRODUCED  # 1.93x within 25 %
    assert rule.combine_all([REPRODUCED, INCONCLUSIVE]) == INCONCLUSIVE
    assert rule.combine_all([REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED]) == NOT_REPRODUCED
    assert rule.combine_all([REPRODUCED, REPRODUCED]) == REPRODUCED


def _cell(row, values, censored=(), cap=None):
    from fedbench.tables import Cell, CellResult

    vals = dict(enumerate(values))
    finite = [v for s, v in vals.items() if s not in censored]
    res = CellResult(Cell("d", row, "rounds", "rounds_to_target"), n=len(vals), expected=3)
    res.seed_values, res.censored = vals, set(censored)
    res.not_reached, res.reached, res.cap = len(censored), len(finite), cap
    res.mean = math.inf if not finite else sum(vals.values()) / len(vals)
    return res


def test_the_rule_through_a_table_counts_its_three_outcomes():
    from fedbench.tables import Claim, TableResult, TableSpec, claims_summary, evaluate_claims
    from fedbench.tables import lowest as beats
    from fedbench.tables.verdicts import outcome_counts

    spec = TableSpec(
        "t",
        "src",
        "title",
        ("d",),
        lambda ds: [],
        claims=(
            Claim("A beats B", beats(("A", "rounds"), [("B", "rounds")])),
            Claim("A beats C", beats(("A", "rounds"), [("C", "rounds")])),
            Claim("A beats D", beats(("A", "rounds"), [("D", "rounds")])),
            Claim("D beats A", beats(("D", "rounds"), [("A", "rounds")])),
            Claim("a measurement", beats(("A", "rounds"), [("B", "rounds")]), counted=False),
        ),
    )
    cells = [
        _cell("A", [8.0, 9.0, 10.0]),
        _cell("B", [11.0, 13.0, 14.0]),  # beaten on every seed
        _cell("C", [9.0, 8.0, 12.0]),  # within noise
        _cell("D", [150.0, 200.0, 200.0], censored=(1, 2), cap=200),  # "> 183.3"
    ]
    result = TableResult(spec, None, "minmax", cells)
    result.claims = evaluate_claims(result)
    got = {c.claim.text: c.status for c in result.claims}
    assert got == {
        "A beats B": "reproduced",
        "A beats C": "inconclusive",
        "A beats D": "reproduced",  # D's censored seeds can only be larger
        "D beats A": "not reproduced",
        "a measurement": "measured",
    }
    assert outcome_counts(result) == {
        "reproduced": 2,
        "not reproduced": 1,
        "inconclusive": 1,
        "n/a": 0,
    }
    assert claims_summary(result) == "claims: 2 of 4 reproduced, 1 not reproduced, 1 inconclusive"
    d_line = next(c.verdict.ours for c in result.claims if c.claim.text == "A beats D")
    assert d_line.startswith("A 9, D > 183; D - A: ")  # a censored mean shows as a bound


def test_a_positive_skewed_quantity_is_compared_on_log_ratios():
    """Each metric declares its scale (metrics.Metric.scale) before any result: dissimilarity,
    losses, distances and smoothness on log ratios, rounds and accuracy raw. mu=0 against mu=1
    at a ratio near 2.3 on every seed, at scales 60, 10, 17.6: the raw differences 34, 5.6, 9.9
    hold 0 (mean 16.5, s 15.3), the log ratios (x2.29 [x2.24, x2.34]) do not."""
    from fedbench.tables import Cell, CellResult, Claim, TableResult, TableSpec, evaluate_claims
    from fedbench.tables import lowest as beats
    from fedbench.tables.metrics import METRICS

    assert {k for k, m in METRICS.items() if m.scale == "log"} == {
        "final_train_loss",
        "final_dist",
        "mean_dissimilarity",
        "smoothness",
    }
    assert METRICS["rounds_to_target"].scale == METRICS["best_acc"].scale == "raw"

    def cell(row, values, metric):
        res = CellResult(Cell("d", row, "c", metric), n=3, expected=3, reached=3)
        res.seed_values, res.mean = dict(enumerate(values)), sum(values) / len(values)
        return res

    claim = Claim("mu=1 lower", beats(("mu1", "c"), [("mu0", "c")]))
    spec = TableSpec("t", "src", "title", ("d",), lambda ds: [], claims=(claim,))
    mu0, mu1 = [60.0, 10.0, 17.6], [26.0, 4.4, 7.7]
    got = {}
    for metric in ("mean_dissimilarity", "rounds_to_target"):
        result = TableResult(
            spec, None, "minmax", [cell("mu0", mu0, metric), cell("mu1", mu1, metric)]
        )
        (c,) = evaluate_claims(result)
        got[metric] = (c.verdict.outcome, c.verdict.ours)
    assert got["mean_dissimilarity"][0] == REPRODUCED
    assert "mu0 / mu1 (log scale): x2.29 [x2.2" in got["mean_dissimilarity"][1]
    assert (
        got["rounds_to_target"][0] == INCONCLUSIVE and "mu0 - mu1: +" in got["rounds_to_target"][1]
    )


def test_runtime_claims_are_not_testable_on_a_shared_machine():
    """Seconds of runs made minutes apart under a changing load (drift > 10 %) cannot decide
    gaps the paper puts at 3-6 %: both Table V claims are n/a (never counted), saying why."""
    from fedbench.papers.fedlga_paper import RUNTIME_CLAIMS

    for claim in RUNTIME_CLAIMS:
        v = claim.check(None)
        assert v.outcome == "n/a" and v.ours.startswith("not testable on a shared machine: ")
        assert "interleaved" in v.ours and "3-6 %" in v.ours
