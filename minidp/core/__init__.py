"""The core of minidp: data parallelism from the tensor to the wire, and nothing else.

Everything a learner needs to see how data-parallel training works lives in this package, and it
imports nothing from the rest of minidp (``tests/test_layering.py`` checks that). Read it in this
order: ``backend`` (NumPy or CuPy), ``tensor``, ``function`` and ``engine`` (the tape and
backward, with the gradient-ready hook), ``ops`` (the arithmetic that records itself), ``layer``,
``optimizer`` with ``sgd`` and ``adam``, then ``distributed/``: ``data_parallel``, ``reducer``,
``comm_hooks``, the process groups in ``backends/``, the ``store``, and the job (``parallel``,
``spawn``, ``launch/``, ``supervisor``).

The Paddle surface (the other ops, layers, losses, optimizers, io, collectives, fleet, ...) is
built on top of this package, in the folders named after Paddle's namespaces.
"""
