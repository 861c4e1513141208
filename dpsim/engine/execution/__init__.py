"""Planning and running: missing lanes into steps and chunks (``planning``), the batching policy (``batching``,
``calibration``), compiled programs (``program``), a chunk's arguments and rows (``chunk_io``), who computes
(``executors``, ``threads``) and the run loop (``runner``)."""
