"""Reading the JSON files a user gives the tool (schedules, routing tables, Fmax results, model shapes).

Every way such a file can fail to be JSON is one :class:`JsonFileError` line naming the file: missing,
unreadable, not UTF-8, malformed, nested too deep or holding a number too long to convert. What the
JSON must contain is each reader's own check.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["JsonFileError", "parse", "read_json", "read_text"]


class JsonFileError(ValueError):
    """A file that cannot be read as JSON; the message is one line naming the file."""


def read_text(path: str | Path) -> str:
    """The text of a user's file.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    str

    Raises
    ------
    JsonFileError
        If the file is missing, unreadable or not UTF-8.
    """
    p = Path(path)
    try:
        return p.read_text()
    except FileNotFoundError:
        raise JsonFileError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise JsonFileError(f"{p}: cannot read: {getattr(e, 'strerror', None) or e}") from None


def parse(text: str, where: str):
    """Parse JSON text.

    Parameters
    ----------
    text : str
    where : str
        The file name (or other label) the error message starts with.

    Returns
    -------
    object
        The JSON value.

    Raises
    ------
    JsonFileError
        If the text is malformed, nested too deep or holds a number too long to convert.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise JsonFileError(f"{where}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except (ValueError, RecursionError) as e:  # a number too long, nesting too deep
        raise JsonFileError(f"{where}: not valid JSON ({type(e).__name__}: {e})") from None


def read_json(path: str | Path):
    """Read and parse a user's JSON file: :func:`read_text`, then :func:`parse`.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    object
        The JSON value; what it must contain is the caller's check.

    Raises
    ------
    JsonFileError
        On any of the failures of :func:`read_text` and :func:`parse`.
    """
    return parse(read_text(path), str(path))
