"""Audit your own model: the study's measurements on any PyTorch network with normalisation layers.

``bnstudy.audit.audit(model, x, y=None, groups=None, ...)`` returns an
:class:`AuditResult`; ``bnstudy audit`` (:mod:`bnstudy.audit.cli`) is the command.
This subpackage imports PyTorch; the pipeline never imports it.
"""

from .core import DEFAULT_SIZES, AuditResult, audit
from .engine import AuditError

__all__ = ["DEFAULT_SIZES", "AuditError", "AuditResult", "audit"]
