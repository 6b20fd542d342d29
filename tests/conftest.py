"""Test helpers (``tests/*.py`` modules that are not tests) importable from every test folder."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
