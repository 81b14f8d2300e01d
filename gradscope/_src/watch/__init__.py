"""The one watcher of a running process, as users reach it: ``gradscope.watch()`` (a block of
code), the IPython magics (a notebook cell) and the pytest plugin (a test).

Each is a thin door onto ``frontends/program``'s hooks and ``Watcher``, the machinery
``gradscope run`` watches a whole program with; the report is the same ``RunReport``.
Importing this package imports no TensorFlow.
"""
