"""Errors the CLI turns into one line on stderr and an exit code, never a traceback."""

from contextlib import contextmanager

__all__ = ["InputError", "UsageError", "writing"]


class UsageError(Exception):
    """Bad command-line input (sizes, unknown kinds, options): exit code 2."""

    exit_code = 2


class InputError(Exception):
    """A file or schedule the tool cannot accept (malformed, invalid, not executable): exit code 1."""

    exit_code = 1


@contextmanager
def writing(what):
    """Turn an OSError raised while writing ``what`` (a path) into one InputError line.

    Parameters
    ----------
    what : str or pathlib.Path
        The file being written, named in the error line.
    """
    try:
        yield
    except OSError as e:
        raise InputError(f"cannot write {what}: {e.strerror}") from None
