"""Noise samplers, privacy calibrations and accounting."""
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.mechanisms.calibration import (
    EdgePerturbation,
    edge_count_noise_scale,
    edge_objective_perturbation,
)

__all__ = ["laplace_noise", "EdgePerturbation", "edge_count_noise_scale",
           "edge_objective_perturbation"]
