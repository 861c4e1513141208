"""Where a metric's mean meets a target: stochastic root-finders (``rootfinding``) and ``dpsim solve`` (``solve``)."""
