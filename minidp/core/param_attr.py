"""ParamAttr: how a layer should create one of its parameters (name, initializer, trainability,
regularizer)."""

from __future__ import annotations

from typing import Any, Optional, Union

from .regularizer import WeightDecayRegularizer


class ParamAttr:
    """Paddle's parameter attribute: passed as ``weight_attr`` / ``bias_attr`` to a layer.

    ``learning_rate`` multiplies the optimizer's learning rate for this parameter; ``regularizer``
    (an L1Decay or L2Decay) replaces the optimizer's L2 decay for it; ``need_clip`` lets a
    gradient-clipping strategy skip it; ``trainable=False`` freezes it.
    """

    def __init__(
        self,
        name: Optional[str] = None,
        initializer: Any = None,
        learning_rate: float = 1.0,
        regularizer: Any = None,
        trainable: bool = True,
        do_model_average: bool = True,
        need_clip: bool = True,
    ) -> None:
        if initializer is not None and not callable(initializer):
            raise TypeError(f"ParamAttr: initializer must be an Initializer, got {initializer!r}")
        if regularizer is not None and not isinstance(regularizer, WeightDecayRegularizer):
            raise TypeError(
                f"ParamAttr: regularizer must be minidp.regularizer.L1Decay or L2Decay, got {regularizer!r}"
            )
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.do_model_average = do_model_average
        self.need_clip = bool(need_clip)

    @staticmethod
    def _to_attr(arg: Union["ParamAttr", str, bool, None, Any]) -> Union["ParamAttr", bool]:
        """Normalise what layers accept as an attribute: None, a name, an initializer, False."""
        if arg is None:
            return ParamAttr()
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if arg is False:
            return False
        if arg is True:
            return ParamAttr()
        if callable(arg):
            return ParamAttr(initializer=arg)
        raise TypeError(
            f"a parameter attribute must be a ParamAttr, a name, an initializer, None or False; "
            f"got {type(arg).__name__}"
        )
