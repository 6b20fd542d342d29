"""minidp.vision.image: reading image files with either backend, and the backend switch."""

import numpy as np
import pytest
from PIL import Image

import minidp.vision as vision


def test_image_load_gives_pil_or_bgr_arrays(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    path = str(tmp_path / "a.png")
    Image.fromarray(rgb).save(path)
    np.testing.assert_array_equal(np.asarray(vision.image_load(path)), rgb)
    np.testing.assert_array_equal(vision.image_load(path, backend="cv2"), rgb[:, :, ::-1])
    assert vision.get_image_backend() == "pil"
    vision.set_image_backend("cv2")
    try:
        assert isinstance(vision.image_load(path), np.ndarray)
    finally:
        vision.set_image_backend("pil")
    with pytest.raises(ValueError, match="backend should be one of"):
        vision.set_image_backend("opencv")
