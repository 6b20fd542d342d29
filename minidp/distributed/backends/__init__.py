"""The backends that plug into the core's process-group interface: ``mpi`` (mpi4py) and ``nccl``
(CuPy's NCCL bindings). The core's backend table names them, and imports each on first use."""
