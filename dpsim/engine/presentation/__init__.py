"""What a user reads: summaries (``summary``), figures (``plots``), ``dpsim list``/``show`` text (``describe``),
the HTML report (``report``) and sizes and durations as text (``units``)."""
