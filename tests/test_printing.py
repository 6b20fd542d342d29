"""minidp/printing.py: set_printoptions changes how tensors print."""

import numpy as np
import pytest

import minidp


def test_set_printoptions_changes_tensor_repr():
    saved = np.get_printoptions()
    try:
        minidp.set_printoptions(precision=2)
        assert "3.14" in repr(minidp.to_tensor([3.14159])) and "3.142" not in repr(minidp.to_tensor([3.14159]))
        minidp.set_printoptions(sci_mode=True)
        assert "e+00" in repr(minidp.to_tensor([3.14159]))
        minidp.set_printoptions(threshold=5, edgeitems=1)
        assert "..." in repr(minidp.arange(100))
    finally:
        np.set_printoptions(**saved)
    with pytest.raises(TypeError, match="precision"):
        minidp.set_printoptions(precision=-1)
