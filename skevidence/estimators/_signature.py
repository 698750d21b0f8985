"""Parameter groups: ``__init__`` parameters that several estimators share.

scikit-learn reads an estimator's parameters from the signature of its
``__init__``, so every estimator lists each of them. Most of ours share
whole groups (the STI settings, the SGAIS settings, the CP models' chains and
budget), which written out in every class made ten copies of one list that
could drift apart. :func:`shared_parameters` adds a group to a class's
``__init__``: the parameters join its signature with the group's defaults,
keyword-only or after the class's own positional ones (``inspect.signature``,
``get_params``, ``clone`` and the docs see them as if written out), and
``__init__`` stores them unchanged, as scikit-learn asks.
"""

import functools
import inspect

__all__ = ["shared_parameters"]


def shared_parameters(*groups, positional=None, **overrides):
    """Class decorator: add parameters, with defaults, to ``cls.__init__``.

    Parameters
    ----------
    *groups : dict
        Keyword-only parameters: name to default; later groups win.
    positional : dict, default=None
        Parameters that follow the class's own positional ones (name to
        default, in order), before its keyword-only ones.
    **overrides
        Defaults that differ from the groups' (or further keyword-only parameters).

    Returns
    -------
    decorate : callable
        Takes the class and returns it with the new ``__init__``.
    """
    keyword = {}
    for group in groups:
        keyword.update(group)
    keyword.update(overrides)
    positional = dict(positional or {})

    def decorate(cls):
        own_init = cls.__init__
        own = inspect.signature(own_init)
        clash = set(own.parameters) & (set(keyword) | set(positional))
        if clash:
            raise TypeError(f"{cls.__name__}.__init__ already takes {sorted(clash)}; drop them from the group.")
        head = [p for p in own.parameters.values() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        tail = [p for p in own.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        if len(head) + len(tail) != len(own.parameters):
            raise TypeError(f"{cls.__name__}.__init__ takes *args or **kwargs, which scikit-learn forbids.")
        signature = own.replace(parameters=[
            *head,
            *(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=value)
              for name, value in positional.items()),
            *tail,
            *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value)
              for name, value in keyword.items()),
        ])
        own_names = [name for name in own.parameters if name != "self"]

        @functools.wraps(own_init)
        def __init__(self, *args, **kwargs):
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            values = bound.arguments
            own_init(self, **{name: values[name] for name in own_names})
            for name in (*positional, *keyword):
                setattr(self, name, values[name])

        __init__.__signature__ = signature
        cls.__init__ = __init__
        return cls

    return decorate
