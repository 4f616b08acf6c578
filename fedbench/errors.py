"""One exception type for every mistake a user can make; the CLI prints it as one line."""

from contextlib import contextmanager


class FedbenchError(Exception):
    """A user-facing error: bad config, missing dataset, corrupt results file.

    The message must fit on one line and say what to do about it.
    """


@contextmanager
def reading(what: str, hint: str = "check or replace it"):
    """Around reading a user's file or folder: an unexpected exception inside becomes one
    line naming `what` (the CLI shows it, exit 2), not a traceback."""
    try:
        yield
    except (FedbenchError, KeyboardInterrupt, MemoryError):
        raise
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise FedbenchError(
            f"{what}: cannot read it ({type(e).__name__}{': ' + first if first else ''}); {hint}"
        ) from e
