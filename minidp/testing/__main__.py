"""``python -m minidp.testing compare golden.npz theirs.npz [--rtol R] [--atol A]``."""

import sys

from .compare import main

sys.exit(main())
