"""Errors the CLI turns into one line on stderr and an exit code, never a traceback."""

from contextlib import contextmanager

__all__ = ["InputError", "UsageError", "print_and_save", "writing"]


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


def print_and_save(text: str, out) -> None:
    """Print ``text`` (a command's table) and, when ``out`` is given, write it there too (its folder
    made if needed; a failure is one :class:`InputError` line).

    Parameters
    ----------
    text : str
        The table, ending with a newline.
    out : str or pathlib.Path or None
        The file to save it in.
    """
    from pathlib import Path

    print(text, end="")
    if out:
        with writing(out):
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(text)
