"""Noise samplers, privacy calibrations and accounting."""
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.mechanisms.calibration import (
    EdgePerturbation,
    edge_count_noise_scale,
    edge_objective_perturbation,
    individual_count_noise_scale,
    individual_objective_perturbation,
    one_shot_noise_scale,
)

__all__ = ["laplace_noise", "EdgePerturbation", "edge_count_noise_scale",
           "edge_objective_perturbation", "individual_count_noise_scale",
           "individual_objective_perturbation", "one_shot_noise_scale"]
