"""Audit your own model: the study's measurements on any PyTorch network with normalisation layers.

``bnstudy.audit.audit(model, x, y=None, groups=None, ...)`` returns an
:class:`AuditResult`; :func:`assert_flip_rate` is the same in a test suite;
``bnstudy audit`` (:mod:`bnstudy.audit.cli`) is the command. This subpackage needs
only PyTorch and NumPy (matplotlib for figures); the pipeline never imports it.
"""

from .core import AuditResult, audit
from .engine import AuditError
from .options import DEFAULT_SIZES
from .testing import assert_flip_rate

__all__ = ["DEFAULT_SIZES", "AuditError", "AuditResult", "assert_flip_rate", "audit"]
