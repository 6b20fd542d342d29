"""minidp/core/param_attr.py: ParamAttr at the top level with Paddle's defaults."""

import minidp


def test_param_attr_is_at_the_top_level_with_paddles_defaults():
    attr = minidp.ParamAttr(name="w", learning_rate=0.5)
    assert attr.do_model_average is True and attr.trainable and attr.need_clip
    layer = minidp.nn.Linear(2, 2, weight_attr=attr)
    assert layer.weight.name == "w"
