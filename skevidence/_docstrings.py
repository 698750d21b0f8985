"""Docstring text that several estimators share, written once, and the class decorator that inserts it.

A docstring line that holds nothing but ``%(name)s`` stands for the fragment
``name`` of :data:`FRAGMENTS`: :func:`fill_doc` replaces it, indented as the
placeholder is, in a class's docstring and in those of the functions the
class defines (the same idea as scikit-learn's and MNE's shared docstrings).
The result is the complete docstring, so ``help``, Sphinx and numpydoc see
every parameter and attribute in every class.
"""

import re
import textwrap

__all__ = ["FRAGMENTS", "fill_doc"]

FRAGMENTS = {
    "X_data": """\
X : array-like of shape (n_samples, n_features)
    Data.""",
    "X_inputs": """\
X : array-like of shape (n_samples, n_features)
    Inputs.""",
    "evidence_of_data": """\
Parameters
----------
X : array-like of shape (n_samples, n_features)
    Data.
y : array-like of shape (n_samples,), default=None
    Targets, for supervised models.

Returns
-------
log_evidence : float""",
    "y_ignored_fitted": """\
y : None
    Ignored.

Returns
-------
self : object
    Fitted estimator.""",
    "X_mixture": """\
X : array-like of shape (n_frames, n_freq)
    Non-negative magnitude spectrogram of the noisy mixture.""",
    "score_cached": """\
For the data the estimator was fitted on this is the cached
``log_evidence_``; for other data the evidence is estimated anew with
the same settings and ``random_state``.""",
    "seed_progress": """\
random_state : int, RandomState instance or None, default=None
    Seed of the evidence estimate; an int makes ``fit`` reproducible.
verbose : int, default=0
    Progress: ``1`` a bar, ``2`` a line per temperature or chunk.""",
    "evidence_attributes": """\
log_evidence_, log_evidence_std_ : float
    The log-evidence of all the data fitted so far and its Monte-Carlo standard error.
result_ : EvidenceResult
    The record of the estimate (see :meth:`fit`).
log_evidence_path_, n_samples_seen_ : ndarray of shape (n_chunks,), int
    ``method="sgais"`` only: the log-evidence after every chunk; the rows seen.""",
    "particles_source": """\
SGAIS's final particles, or AIS's when its result carries them
(``result_.diagnostics["particles"]``). A method that reports only a
posterior mean (STI: the mean of the chain at :math:`t = 1`) gives a
single row, that mean.""",
    "features_in": """\
n_features_in_ : int
    Number of features seen during ``fit``.
feature_names_in_ : ndarray of shape (`n_features_in_`,)
    Feature names, when ``X`` has string column names.""",
}

_PLACEHOLDER = re.compile(r"^( *)%\((\w+)\)s$", re.MULTILINE)


def _fragment(match):
    indent, name = match.groups()
    return textwrap.indent(FRAGMENTS[name], indent)


def fill_doc(cls):
    """Class decorator: insert the :data:`FRAGMENTS` in the docstrings of ``cls`` and of its own functions."""
    for member in [cls, *vars(cls).values()]:
        function = getattr(member, "__func__", member)
        if callable(function) and function.__doc__:
            function.__doc__ = _PLACEHOLDER.sub(_fragment, function.__doc__)
    return cls
