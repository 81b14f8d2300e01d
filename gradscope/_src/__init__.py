"""gradscope's internals: no stable API. Import what you need from ``gradscope`` (and
``gradscope.keras``, ``gradscope.testing``); everything under ``gradscope._src`` may change
without notice."""
