"""The one watcher of a running process, as users reach it: ``gradscope run`` and
``gradscope.run()`` (a whole program, ``run.py``), ``gradscope.watch()`` (a block of code,
``block.py``), the IPython magics (a notebook cell) and the pytest plugin (a test).

Each is a thin door onto ``watcher``'s hooks and ``Watcher``; every door's report
is made by ``run.reported``, the same ``RunReport``. The Keras ``Monitor`` asks the same
analysis why a traced step gives a variable no gradient
(``watcher/graph_calls.step_causes``). Importing this package imports no
TensorFlow.
"""
