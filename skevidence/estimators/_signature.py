"""Parameter groups: keyword-only ``__init__`` parameters that several estimators share.

scikit-learn reads an estimator's parameters from the signature of its
``__init__``, so every estimator lists each of them. Most of ours share
whole groups (the STI settings, the SGAIS settings, the CP models' chains and
budget), which written out in every class made ten copies of one list that
could drift apart. :func:`shared_parameters` adds a group to a class's
``__init__``: the parameters join its signature as keyword-only ones with the
group's defaults (``inspect.signature``, ``get_params``, ``clone`` and the docs
see them as if written out), and ``__init__`` stores them unchanged, as
scikit-learn asks.
"""

import functools
import inspect

__all__ = ["model_defaults", "shared_parameters"]


def shared_parameters(*groups, **overrides):
    """Class decorator: add keyword-only parameters, with defaults, to ``cls.__init__``.

    Parameters
    ----------
    *groups : dict
        Parameter name to default; later groups win.
    **overrides
        Defaults that differ from the groups' (or further parameters).

    Returns
    -------
    decorate : callable
        Takes the class and returns it with the new ``__init__``.
    """
    defaults = {}
    for group in groups:
        defaults.update(group)
    defaults.update(overrides)

    def decorate(cls):
        own_init = cls.__init__
        own = inspect.signature(own_init)
        clash = set(own.parameters) & set(defaults)
        if clash:
            raise TypeError(f"{cls.__name__}.__init__ already takes {sorted(clash)}; drop them from the group.")
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value)
                 for name, value in defaults.items()]

        @functools.wraps(own_init)
        def __init__(self, *args, **kwargs):
            shared = {name: kwargs.pop(name, value) for name, value in defaults.items()}
            own_init(self, *args, **kwargs)
            for name, value in shared.items():
                setattr(self, name, value)

        __init__.__signature__ = own.replace(parameters=[*own.parameters.values(), *added])
        cls.__init__ = __init__
        return cls

    return decorate


def model_defaults(model_class, names, exclude):
    """Defaults of ``model_class``'s parameters ``names``, leaving out ``exclude``.

    A rank selector hands these parameters to every model unchanged, so it
    takes them with the model's defaults.
    """
    parameters = inspect.signature(model_class).parameters
    return {name: parameters[name].default for name in names if name not in exclude}
