"""Checks and their verdicts: statistics (``statistics``), claims (``checks``, ``deferred``), verdicts
(``verdicts``), plausible bugs (``mutants``) and ``dpsim verify`` (``verify``)."""
