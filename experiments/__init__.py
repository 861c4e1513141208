"""dpsim.experiments: one package per paper (``dpsim.experiments.cai``, …), each a set of
declarative experiments, checks and privacy audits assembled from the library.

This folder is installed as ``dpsim.experiments`` (how and why: setup.py's docstring), and
every paper package is registered by one line under the ``dpsim.papers`` entry-point group,
whose name is the paper's name: that is how the ``dpsim`` command finds it. Nothing in ``dpsim/`` imports this package, and a paper package imports no
other paper's package. A paper package exposes ``TITLE``, ``PAGE`` (its page in the repository, ``docs/<paper>.md``,
which ``dpsim show`` prints), ``EXPERIMENTS``, ``CHECKS`` and ``AUDITS`` (and may expose ``MUTANTS``).
"""
