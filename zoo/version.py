"""zoo's version, in a module of its own: the modules that record it (eval.json, export sidecars, the
release manifest, model cards, the check memo, doctor) import it from here rather than from the ``zoo``
package facade, which sits above them (its ``__getattr__`` reaches :mod:`zoo.api`). Hatch reads it too."""

__version__ = "0.1.0"
