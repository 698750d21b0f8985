"""``method`` and ``method_params``: which evidence method an estimator runs, and its settings.

Every evidence-scored estimator has a ``method`` (a name saying what runs)
and a ``method_params`` dict: keyword arguments of the function that
``method`` runs (``referenced_ti_log_evidence`` for ``"rti"``, and so on),
documented once, in that function's docstring. The estimator passes what it
owns itself (the data, the rank, the priors, ``random_state``, ...); every
other keyword-only argument of the function may be set here, and any other
key is refused with the list of those the method takes. The values are
validated by the function, like any call of it.
"""

import inspect

#: Constraints of the parameters every evidence-scored estimator has besides its model's, ``method`` and ``tol``.
EVIDENCE_PARAMETER_CONSTRAINTS = {
    "method_params": [dict, None],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}


def method_settings(function, reserved=()):
    """The names ``method_params`` may hold for ``function``: its keyword-only arguments but ``reserved``."""
    return sorted(name for name, p in inspect.signature(function).parameters.items()
                  if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in reserved)


def method_kwargs(estimator, function, reserved=()):
    """``estimator.method_params`` as keyword arguments of ``function``, or a ``ValueError`` naming a bad key.

    Parameters
    ----------
    estimator : estimator
        With ``method`` and ``method_params`` (a dict or None).
    function : callable
        The function ``estimator.method`` runs.
    reserved : sequence of str
        Its arguments the estimator passes itself (from its own parameters).

    Returns
    -------
    kwargs : dict
        A copy of ``method_params`` (empty for None).
    """
    params = dict(estimator.method_params or {})
    allowed = method_settings(function, reserved)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"method_params {unknown} are not settings of method={estimator.method!r} "
            f"({function.__module__}.{function.__name__}); its settings are {allowed}."
        )
    return params
