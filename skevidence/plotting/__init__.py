"""Figures of model-selection results.

matplotlib is optional: this package imports without it, and only drawing
(``plot``, ``from_estimator``, ``from_results``) needs it
(``pip install "skevidence[plot]"``).
"""

from ._evidence_curve import EvidenceCurveDisplay

__all__ = ["EvidenceCurveDisplay"]
