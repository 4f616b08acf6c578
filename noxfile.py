"""nox sessions: tests (the CI suite), lint, regression (fedbench check), paper (longer
reproduction checks), bench."""

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.default_venv_backend = "venv"

# CPU wheel: an unpinned torch pulls gigabytes of CUDA packages.
TORCH = "torch==2.13.0"


def install(session: nox.Session, extras: str = "test") -> None:
    session.install(TORCH)
    session.install("-e", f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The fast suite CI runs (slow paper checks excluded)."""
    install(session)
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "fedbench", "tests", "benchmarks", "examples")
    session.run("ruff", "format", "--check", "fedbench", "tests", "benchmarks", "examples")


@nox.session
def regression(session: nox.Session) -> None:
    """Rerun the fixed check configs and compare them with results/reference/check.json
    (accuracy, rounds to target, s/round); fails with a table of what regressed."""
    install(session)
    session.run("fedbench", "check", *session.posargs)


@nox.session
def paper(session: nox.Session) -> None:
    """Longer checks against the papers' settings on real data (minutes)."""
    install(session)
    session.run("python", "-m", "pytest", "-m", "slow", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Engine speed (batched engine vs a per-client DataLoader loop) and reading 1,000 runs."""
    install(session)
    session.run("python", "benchmarks/engine_speed.py", *session.posargs)
    session.run("python", "benchmarks/read_results.py")
