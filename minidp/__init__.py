"""minidp: a minimal deep-learning runtime for data-parallel training.

The public names follow PaddlePaddle's, so a script written for ``paddle`` runs after
replacing the import. See README.md for a tour.
"""
