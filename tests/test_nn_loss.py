"""minidp/nn/loss.py: Paddle's ``paddle.nn.loss`` path names the very loss layers of minidp.nn."""

import minidp
from minidp.nn.layers import loss as layers_loss


def test_the_path_names_every_loss_layer():
    assert minidp.nn.loss.__all__ == layers_loss.__all__
    assert "CrossEntropyLoss" in minidp.nn.loss.__all__
    for name in minidp.nn.loss.__all__:
        assert getattr(minidp.nn.loss, name) is getattr(minidp.nn, name)
    mse = minidp.nn.loss.MSELoss()
    assert float(mse(minidp.to_tensor([1.0, 3.0]), minidp.to_tensor([0.0, 0.0]))) == 5.0
