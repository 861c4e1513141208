"""Privacy audits of the papers' mechanisms: the exact privacy loss on worst-case neighbouring
inputs, and an estimate of it from samples of the mechanism alone (every release is drawn in
:mod:`dpsim.mechanisms`).

:mod:`~dpsim.audits.audit` holds the common tools (:class:`~dpsim.audits.audit.Audit`,
:class:`~dpsim.audits.audit.AuditResult`, histogram and hockey-stick estimates);
:mod:`~dpsim.audits.pairwise_audit` (xu), :mod:`~dpsim.audits.audit_responses` (nguyen) and
:mod:`~dpsim.audits.label_audit` (chowdhury) audit one family of mechanisms each. An audit
may post-process a release with its estimator (the objective-perturbation minimiser) or use an
estimator's statistics (differential counts), so this package sits above :mod:`dpsim.estimators`;
mechanisms never import it.
Each paper registers its audits (``AUDITS`` of its package), which ``dpsim audit`` runs.
"""
