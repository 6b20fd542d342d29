"""minidp.vision.transforms against Paddle 3.3.1: every case of vision_cases.py replays the call
recorded from Paddle (tests/fixtures/paddle_vision.npz, tools/record_paddle_vision.py) -- random
transforms under the same Python/NumPy seeds -- plus the NumPy-image path, which Paddle computes
with OpenCV (absent beside Paddle), checked against the PIL path and by its properties."""

import random
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import minidp
import minidp.vision.transforms as T
import minidp.vision.transforms.functional as F
from vision_cases import CASES, as_array, images

FIXTURE = np.load(Path(__file__).parent / "fixtures" / "paddle_vision.npz")
INPUTS = images()
RGB = INPUTS["rgb"]


def _input(name):
    return Image.fromarray(INPUTS[name]) if name.endswith("_pil") else INPUTS[name]


@pytest.mark.parametrize("case_id,name,seed,build", CASES, ids=[case[0] for case in CASES])
def test_matches_paddle(case_id, name, seed, build):
    transform = build(T)
    if seed is not None:
        random.seed(seed)
        np.random.seed(seed)
    result = transform(_input(name))
    expected = FIXTURE[f"transform/{case_id}"]
    got = as_array(result)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda img: F.hflip(img),
        lambda img: F.vflip(img),
        lambda img: F.pad(img, (1, 2, 3, 4), fill=(5, 6, 7)),
        lambda img: F.pad(img, 2, padding_mode="reflect"),
        lambda img: F.pad(img, (2, 1), padding_mode="symmetric"),
        lambda img: F.pad(img, 1, padding_mode="edge"),
        lambda img: F.adjust_brightness(img, 1.4),
        lambda img: F.adjust_saturation(img, 0.0),
        lambda img: F.resize(img, (24, 32), "nearest"),
        lambda img: F.rotate(img, 90),
        lambda img: F.rotate(img, 180, expand=True),
    ],
)
def test_numpy_images_give_what_pil_images_give(call):
    # Exact operations agree to the pixel; colour blends may differ by 1 through PIL's rounding.
    np.testing.assert_allclose(call(RGB).astype(int), np.asarray(call(Image.fromarray(RGB))), atol=1)


def test_numpy_colour_and_resampling_follow_their_definitions():
    grey = F.to_grayscale(RGB)
    assert grey.shape == (12, 16, 1) and grey.dtype == np.uint8
    np.testing.assert_allclose(grey[:, :, 0], np.asarray(Image.fromarray(RGB).convert("L")), atol=1)
    assert F.to_grayscale(RGB, 3).shape == (12, 16, 3)
    np.testing.assert_array_equal(F.adjust_hue(RGB, 0.0), RGB)
    turned = F.adjust_hue(F.adjust_hue(RGB.astype(np.float64), 0.25), -0.25)
    np.testing.assert_allclose(turned, RGB, atol=1e-9)
    # A third of a turn moves red to green and green to blue.
    np.testing.assert_array_equal(F.adjust_hue(np.array([[[200, 10, 10]]], np.uint8), 1 / 3), [[[10, 200, 10]]])
    flat = F.adjust_contrast(RGB, 0.0)
    assert len(np.unique(flat)) == 1
    up = F.resize(RGB.astype(np.float32), (24, 32))
    assert up.dtype == np.float32 and up.shape == (24, 32, 3)
    np.testing.assert_allclose(up.mean(), RGB.mean(), rtol=0.02)
    np.testing.assert_allclose(F.resize(RGB, 8), F.resize(RGB, (8, 10)))
    assert F.rotate(RGB, 0).tolist() == RGB.tolist()


def test_tensors_and_tuples():
    tensor = T.ToTensor()(RGB)
    assert isinstance(tensor, minidp.Tensor) and tensor.shape == [3, 12, 16]
    normal = T.Normalize([0.5] * 3, [0.25] * 3)(tensor)
    np.testing.assert_allclose(normal.numpy(), (tensor.numpy() - 0.5) / 0.25, rtol=1e-6)
    image, label = T.Compose([T.CenterCrop(4), T.ToTensor()])((RGB, 3))
    assert image.shape == [3, 4, 4] and label == 3
    both = T.RandomHorizontalFlip(1.0, keys=("image", "image"))((RGB, RGB))
    np.testing.assert_array_equal(both[0], RGB[:, ::-1])
    np.testing.assert_array_equal(both[1], RGB[:, ::-1])


def test_random_transforms_repeat_under_a_seed_and_stay_in_range():
    pipeline = T.Compose([T.RandomResizedCrop(8), T.ColorJitter(0.5, 0.5, 0.5, 0.2), T.RandomRotation(20)])

    def run(seed):
        random.seed(seed)
        np.random.seed(seed)
        return pipeline(RGB)

    first = run(5)
    assert first.shape == (8, 8, 3) and first.dtype == np.uint8
    np.testing.assert_array_equal(first, run(5))
    crops = {T.RandomCrop(4)(RGB).tobytes() for _ in range(20)}
    assert len(crops) > 1


def test_without_pillow_numpy_images_work_and_pil_calls_say_what_to_install(monkeypatch):
    from minidp.vision import image

    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match="pip install Pillow"):
        image.pillow()
    assert T.Compose([T.Resize(6), T.ToTensor()])(RGB).shape == [3, 6, 8]


def test_bad_arguments_name_the_fix():
    with pytest.raises(TypeError, match="img should be a PIL image or a NumPy array"):
        F.hflip([[1, 2]])
    with pytest.raises(ValueError, match="data_format"):
        T.ToTensor("NHWC")
    with pytest.raises(ValueError, match="padding_mode"):
        T.Pad(1, padding_mode="wrap")
    with pytest.raises(ValueError, match="hue_factor"):
        F.adjust_hue(RGB, 0.7)
    with pytest.raises(ValueError, match="prob"):
        T.RandomHorizontalFlip(1.5)
    with pytest.raises(ValueError, match="pad_if_needed"):
        T.RandomCrop(20)(RGB)
    with pytest.raises(NotImplementedError, match="boxes"):
        T.Resize(4, keys=("image", "boxes"))
    with pytest.raises(ValueError, match="interpolation"):
        F.resize(RGB, 4, "lanczos")
