"""Errors the CLI turns into one line on stderr and an exit code, never a traceback."""


class UsageError(Exception):
    """Bad command-line input (sizes, unknown kinds, options): exit code 2."""

    exit_code = 2


class InputError(Exception):
    """A file or schedule the tool cannot accept (malformed, invalid, not executable): exit code 1."""

    exit_code = 1
