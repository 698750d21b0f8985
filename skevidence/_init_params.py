"""Store an estimator's ``__init__`` arguments, as scikit-learn's ``get_params`` and ``clone`` read them."""

__all__ = ["store_init_params"]


def store_init_params(estimator, arguments):
    """Set each argument as the attribute of its name, unchanged (scikit-learn's rule: no logic in ``__init__``).

    ``arguments`` is ``locals()`` taken first thing in ``__init__``: the
    parameters of the signature and ``self``, which is skipped.
    """
    for name, value in arguments.items():
        if name != "self":
            setattr(estimator, name, value)
