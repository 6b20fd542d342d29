"""The launcher: plans a job, starts its ranks, relays their output and stops them together
(``python -m minidp.distributed.launch`` runs :func:`main.main`)."""
