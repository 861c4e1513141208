"""toy's figures: one module per figure or table, each with its Experiments and the checks read
on them. Add a module here and list it below."""

from . import noise, size

EXPERIMENTS = [*noise.EXPERIMENTS, *size.EXPERIMENTS]
CHECKS = [*noise.CHECKS, *size.CHECKS]
