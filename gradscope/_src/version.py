"""The one place gradscope's version lives: ``pyproject.toml`` reads it from here (statically;
importlib.metadata would cost ~60 ms on every ``gradscope --help``) and ``gradscope`` re-exports
it. A module of its own, so that the report layer, which ``import gradscope`` imports, can name
the version without importing the package face that imports it."""

__version__ = "0.1.0"
