"""minidp as a reference for other frameworks: golden recordings, comparisons, equivalence.

- :func:`golden` trains a model data-parallel and records, per step and rank, the inputs, local
  and averaged gradients and parameters into a pickle-free ``.npz`` (format in
  :mod:`minidp.testing.golden`).
- ``python -m minidp.testing compare golden.npz theirs.npz --rtol R --atol A`` (or
  :func:`compare`) checks every tensor of the golden file, starting parameters included, and
  prints the worst difference per tensor and step: exit status 1 outside the tolerance, 2 when
  the recording lacks one of them (``--only PATTERN`` names the subset a recording holds).
- :func:`assert_data_parallel_equivalent` checks that N ranks end where one process on the
  whole batch ends.
"""

from .compare import Difference, compare, format_table
from .equivalence import assert_data_parallel_equivalent
from .golden import FORMAT, golden, read_manifest, shard

__all__ = [
    "FORMAT",
    "Difference",
    "assert_data_parallel_equivalent",
    "compare",
    "format_table",
    "golden",
    "read_manifest",
    "shard",
]
