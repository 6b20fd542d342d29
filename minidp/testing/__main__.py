"""``python -m minidp.testing compare golden.npz theirs.npz [--rtol R] [--atol A] [--only PATTERN]``."""

import sys

from .compare import main

sys.exit(main())
