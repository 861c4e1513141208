"""Errors the CLI reports as one line with a non-zero exit."""


class UsageError(ValueError):
    """Bad input from the user: a bad grid value, unknown name, malformed option."""
