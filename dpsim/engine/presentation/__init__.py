"""What a user reads: summaries (``summary``), figures (``labels``: how values are written,
``panels``: which panels and rows, ``plots``: the drawing), ``dpsim list``/``show`` text
(``describe``), verify's verdict files (``verdict_files``), the HTML report (``report_data``:
what it shows, ``report``: the page) and sizes and durations as text (``units``)."""
