"""One exception type for every mistake a user can make; the CLI prints it as one line."""


class FedbenchError(Exception):
    """A user-facing error: bad config, missing dataset, corrupt results file.

    The message must fit on one line and say what to do about it.
    """
