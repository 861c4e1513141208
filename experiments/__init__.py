"""Paper experiments, one module per paper, as declarative definitions.

``EXPERIMENTS`` maps an experiment name to its :class:`dpsim.experiment.Experiment`;
``CHECKS`` maps a check name to its rate or trend check.
"""
from experiments import cai, cai_individual, cai_scaling, cai_threshold

EXPERIMENTS = {e.name: e for e in (*cai.EXPERIMENTS, *cai_individual.EXPERIMENTS, *cai_scaling.EXPERIMENTS,
                                     *cai_threshold.EXPERIMENTS)}
CHECKS = {c.name: c for c in (*cai.CHECKS, *cai_individual.CHECKS, *cai_scaling.CHECKS,
                                *cai_threshold.CHECKS)}

__all__ = ["EXPERIMENTS", "CHECKS"]
