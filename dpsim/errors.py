"""Errors the CLI reports as one line with a non-zero exit, and dpsim's warnings."""

import os
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


def did_you_mean(name: str, known, n: int = 2, cutoff: float = 0.6) -> str:
    """ ", did you mean 'x'?" for the (at most ``n``) closest known names, or "" when none is
    close (``difflib`` similarity ≥ ``cutoff``)."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=n, cutoff=cutoff)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def traceback_wanted() -> bool:
    """True when the user asked for whole traces (``dpsim --traceback``, which sets
    ``$DPSIM_TRACEBACK=1``): a failure in a study's code is then re-raised as it was."""
    return bool(os.environ.get("DPSIM_TRACEBACK"))


def stage_failed(experiment: str, stage: str, at, exc: BaseException) -> "UsageError":
    """The one line of an exception raised by a study's own code (``stage``: e.g. "truth",
    "generate", "derived 's'", "method 'mle'", "figure"), at grid point ``at`` (axis → value, or
    text; empty when the stage has none), naming the exception. Raise it ``from None`` unless
    :func:`traceback_wanted`."""
    if isinstance(at, dict):
        at = ", ".join(f"{k}={v}" for k, v in at.items())
    message = " ".join(str(exc).split())
    place = f"at {at}; " if at else ""
    return UsageError(
        f"experiment {experiment!r}: {stage} failed: {type(exc).__name__}: {message[:300]} "
        f"({place}dpsim --traceback … shows the whole trace)"
    )


def call_stage(experiment: str, stage: str, at, fn, *args):
    """``fn(*args)``, a stage of a study's own code (truth, generate, privatise, a method, a
    derived value, a host hook) at grid point ``at``: an exception it raises becomes the one
    line of :func:`stage_failed`; a UsageError (the study naming a bad value itself) passes as
    it is, and with :func:`traceback_wanted` every exception does."""
    try:
        return fn(*args)
    except UsageError:
        raise
    except Exception as exc:
        if traceback_wanted():
            raise
        raise stage_failed(experiment, stage, at, exc) from None
