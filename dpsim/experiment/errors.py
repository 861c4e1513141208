"""Re-export of :mod:`dpsim.errors` (the error types live in the library, so that library
modules such as the dataset loaders can raise them without importing the experiment layer)."""
from dpsim.errors import DpsimNote, DpsimWarning, RunStalled, UsageError, note, warn

__all__ = ["DpsimNote", "DpsimWarning", "RunStalled", "UsageError", "note", "warn"]
