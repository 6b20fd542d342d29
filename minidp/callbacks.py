"""minidp.callbacks: the training callbacks of ``Model.fit`` (Paddle's ``paddle.callbacks``)."""

from .hapi.callbacks import (
    Callback,
    EarlyStopping,
    LRScheduler,
    ModelCheckpoint,
    ProgBarLogger,
    ReduceLROnPlateau,
)

__all__ = ["Callback", "ProgBarLogger", "ModelCheckpoint", "LRScheduler", "EarlyStopping", "ReduceLROnPlateau"]
