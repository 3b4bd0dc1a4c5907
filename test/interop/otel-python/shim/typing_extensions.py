"""Debian 12's typing_extensions (4.4) with `deprecated` (PEP 702, typing_extensions 4.5),
which opentelemetry-api 1.44 imports. Loads the system module under its own name and adds
a `deprecated` that only warns, as typing_extensions' does at call time."""
import functools
import importlib.util
import sys
import warnings

_spec = importlib.util.spec_from_file_location('_system_typing_extensions', '/usr/lib/python3/dist-packages/typing_extensions.py')
_system = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_system)
globals().update({k: v for k, v in vars(_system).items() if not k.startswith('__')})

if not hasattr(_system, 'deprecated'):

    def deprecated(message, *, category=DeprecationWarning, stacklevel=1):
        def wrap(arg):
            if isinstance(arg, type):
                return arg

            @functools.wraps(arg)
            def inner(*args, **kwargs):
                if category is not None:
                    warnings.warn(message, category=category, stacklevel=stacklevel + 1)
                return arg(*args, **kwargs)

            inner.__deprecated__ = message
            return inner

        return wrap
