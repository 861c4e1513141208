"""dpsim.experiments: one package per paper (``dpsim.experiments.cai``, …), each a set of
declarative experiments, checks and privacy audits assembled from the library.

This folder is installed as ``dpsim.experiments`` (pyproject.toml ``package-dir``) and every
paper package is registered under the ``dpsim.papers`` entry-point group, which is how the
``dpsim`` command finds it: nothing in ``dpsim/`` imports this package, and a paper package
imports no other paper's package. A paper package exposes ``PAPER``, ``TITLE``, ``SPEC``,
``EXPERIMENTS``, ``CHECKS`` and ``AUDITS``.
"""
