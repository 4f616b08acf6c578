"""What `fedbench reproduce` says: the plan's screen before any run (tables, runs done / to do,
rounds, expected time per table and in all, and where the estimate comes from), and the closing
summary (tables complete, partial, and the command that goes on)."""

from __future__ import annotations

from fedbench.reproduce.reproduction_plan import ReproPlan

SCALE_WORDS = {
    "paper": "the paper's scale (its rounds, clients and seeds)",
    "cut": "the committed tables' scale (their files' commands)",
    "quick": "the quick CI scale (first seed, few rounds; runs kept apart)",
}


def plan_lines(rp: ReproPlan, order: str, jobs: int) -> list[str]:
    from fedbench.sweep.estimate import _duration

    store = " and the shipped store" if rp.shipped else ""
    lines = [f"reproduce at {SCALE_WORDS[rp.scale]}: runs in {rp.results}{store}"]
    rows = [["table", "runs", "done", "to do", "rounds", "expected"]]
    for u in rp.units:
        if u.missing:
            expected = u.label
        elif not u.own:
            expected = "done" if u.complete else "shared"
        else:
            expected = "unknown" if u.seconds is None else _duration(u.seconds / jobs)
        rows.append([u.name, str(len(u.configs)), str(u.done), str(len(u.own)), f"{u.rounds:,}",
                     expected])  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(r[1:], widths[1:])]
        lines.append("  " + "  ".join(cells))
    lines.append(total_line(rp, jobs))
    lines += _notes(rp, order)
    return lines


def total_line(rp: ReproPlan, jobs: int) -> str:
    from fedbench.identity import config_hash
    from fedbench.sweep.estimate import _duration

    todo = rp.todo
    wanted = [config_hash(c) for u in rp.units if not u.missing for c in u.todo]
    shared = len(wanted) - len(set(wanted))
    if not todo:
        skipped = sum(bool(u.missing) for u in rp.units)
        done = f"{len(rp.units) - skipped} tables, every run done"
        return "in all: 0 runs to do; " + done + (f", {skipped} skipped" if skipped else "")
    guess = rp.estimate
    if guess is None or not guess.timed:
        when = "unknown: no finished run comparable to these settings on any device"
    else:
        part = "" if guess.timed == len(todo) else f" for {guess.timed} of {len(todo)} runs"
        when = f"{_duration(guess.seconds / jobs)}{part} on {rp.device}"
    return (
        f"in all: {len(todo)} runs to do, {sum(c.rounds for c in todo):,} rounds"
        + (f" ({shared} shared between tables, run once)" if shared else "")
        + f"; expected {when}"
    )


def _notes(rp: ReproPlan, order: str) -> list[str]:
    out = []
    guess = rp.estimate
    if guess is not None and guess.timed:
        out.append("estimate: " + guess.source_text(str(rp.results) + (
            " and the shipped store" if rp.shipped else "")))  # fmt: skip
    if guess is not None and guess.untimed:
        out.append(f"estimate unknown for {len(guess.untimed)} runs: {guess.untimed_text()}")
    out.append(
        "order: "
        + (
            "cheapest complete table first (a budget that ends leaves whole tables)"
            if order == "cheapest"
            else "as the papers list their tables"
        )
    )
    for u in rp.units:
        if u.missing:
            out.append(f"skipped: {u.name}: {u.missing}")
        if u.scale_note:
            out.append(f"{u.name}: {u.scale_note}")
        for reason, n in u.unavailable.items():
            out.append(f"unavailable in {u.name} ({n} cells): {reason}")
    return out


def closing_lines(rp: ReproPlan, stopped: str | None, command: str) -> list[str]:
    """Which tables are complete now, which partial, and how to go on."""
    complete = [u.name for u in rp.units if u.complete]
    partial = [u.name for u in rp.units if not u.complete and not u.missing]
    lines = [f"complete: {', '.join(complete) or 'none'}"]
    if partial:
        lines.append(f"partial: {', '.join(partial)}")
    for label in dict.fromkeys(u.label for u in rp.units if u.missing):
        names = [u.name for u in rp.units if u.missing and u.label == label]
        lines.append(f"skipped ({label}): {', '.join(names)}")
    if stopped:
        lines.append(f"{stopped}; to continue: {command}")
    elif partial:
        lines.append(f"to continue: {command}")
    return lines
