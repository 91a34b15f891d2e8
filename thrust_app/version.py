"""Thrust's version, in a module of its own so that every layer can name it (the package's `__init__`
re-exports it and sits above all of them)."""

__version__ = "0.1.0"
