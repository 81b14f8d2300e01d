"""The watcher: every gradient call of a running program (``gradscope run``, ``gradscope.run()``,
``gradscope.watch()``, ``pytest --gradscope``, the notebook magic) and the Keras ``Monitor``'s
traced step, captured (``hooks``, ``calls``, ``graph_calls``, ``jax_calls``, ``numpy_calls``)
and explained by one set of passes (``passes``, ``analyse``, ``origin``) into results
(``watch.Watcher``). Running the user's program itself (``launch``, ``endings``, ``streams``)
is ``gradscope._src.watch``'s."""
