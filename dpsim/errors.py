"""Errors the CLI reports as one line with a non-zero exit, and dpsim's warnings."""
import warnings


class UsageError(ValueError):
    """Bad input from the user: a bad grid value, unknown name, malformed option."""


class RunStalled(RuntimeError):
    """A run made no progress for longer than its watchdog allows (runner): the
    message says what it was waiting for. Completed chunks are on disk; re-running resumes."""


class DpsimWarning(UserWarning):
    """Something a researcher must know about a run that still completes (the CLI prints
    it as one ``dpsim: warning: …`` line)."""


def warn(message: str) -> None:
    """Issue a :class:`DpsimWarning` (shown once per distinct message)."""
    warnings.warn(message, DpsimWarning, stacklevel=2)


class DpsimNote(UserWarning):
    """Information about a run a researcher should see (e.g. which data file or stand-in was
    used); the CLI prints it as one ``dpsim: note: …`` line."""


def note(message: str) -> None:
    """Issue a :class:`DpsimNote`."""
    warnings.warn(message, DpsimNote, stacklevel=2)
