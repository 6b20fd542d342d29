"""Callbacks: code that ``Model.fit``, ``evaluate`` and ``predict`` call at fixed points.

A :class:`Callback` overrides any of the hooks ``on_{train,eval,predict}_{begin,end}``,
``on_epoch_{begin,end}`` and ``on_{train,eval,predict}_batch_{begin,end}``; ``self.model`` is the
running :class:`~minidp.hapi.model.Model` and ``self.params`` holds ``batch_size``, ``epochs``,
``steps``, ``verbose`` and ``metrics``. The hook names, the ``logs`` dicts and the callbacks
Paddle adds by itself (a progress logger, a checkpointer, a scheduler stepper) are Paddle's.
Under a launcher only local rank 0 prints and writes checkpoints.
"""

from __future__ import annotations

import numbers
import os
import time
import warnings
from typing import Any, Iterator, Optional, Sequence

import numpy

from ..core.distributed.env import ParallelEnv
from ..core.lr import LRScheduler as _Schedule
from .progressbar import ProgressBar

__all__ = ["Callback", "ProgBarLogger", "ModelCheckpoint", "LRScheduler", "EarlyStopping", "ReduceLROnPlateau"]

_MODES = ("train", "eval", "predict")


def _is_local_leader() -> bool:
    """True on the process that prints and saves: local rank 0 (every process when not launched)."""
    return ParallelEnv().local_rank == 0


def _monitored(logs: Optional[dict], monitor: str, who: str) -> Optional[float]:
    """The number ``logs[monitor]`` holds (first item of a list), or None with a warning."""
    if logs is None or monitor not in logs:
        warnings.warn(f"{who}: monitor {monitor!r} is not in the evaluation logs; use 'loss' or a metric name")
        return None
    value = logs[monitor]
    if isinstance(value, (list, tuple)):
        return value[0]
    return value if isinstance(value, numbers.Number) else None


def _minimising(who: str, mode: str, monitor: str) -> bool:
    """Whether smaller is better: ``mode`` 'min', or 'auto' on a monitor without 'acc' in it."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who}: mode {mode!r} is unknown; using 'auto'")
        mode = "auto"
    return mode == "min" or (mode == "auto" and "acc" not in monitor)


class Callback:
    """Base class: every hook does nothing; subclasses override the ones they need."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict = {}

    def set_params(self, params: dict) -> None:
        """Receive the run's ``batch_size``, ``epochs``, ``steps``, ``verbose`` and ``metrics``."""
        self.params = params

    def set_model(self, model: Any) -> None:
        """Receive the Model being run."""
        self.model = model

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        """Called once before the first training epoch."""

    def on_train_end(self, logs: Optional[dict] = None) -> None:
        """Called once after training ends (with the last epoch's logs)."""

    def on_eval_begin(self, logs: Optional[dict] = None) -> None:
        """Called before evaluation; ``logs`` holds ``steps`` and ``metrics``."""

    def on_eval_end(self, logs: Optional[dict] = None) -> None:
        """Called after evaluation with the final loss and metric values."""

    def on_predict_begin(self, logs: Optional[dict] = None) -> None:
        """Called before prediction; ``logs`` holds ``steps``."""

    def on_predict_end(self, logs: Optional[dict] = None) -> None:
        """Called after prediction."""

    def on_epoch_begin(self, epoch: int, logs: Optional[dict] = None) -> None:
        """Called at the start of training epoch ``epoch`` (counted from 0)."""

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        """Called at the end of training epoch ``epoch`` with its last logs."""

    def on_train_batch_begin(self, step: int, logs: Optional[dict] = None) -> None:
        """Called before training step ``step`` of the epoch."""

    def on_train_batch_end(self, step: int, logs: Optional[dict] = None) -> None:
        """Called after training step ``step`` with its loss, metrics and batch size."""

    def on_eval_batch_begin(self, step: int, logs: Optional[dict] = None) -> None:
        """Called before evaluation step ``step``."""

    def on_eval_batch_end(self, step: int, logs: Optional[dict] = None) -> None:
        """Called after evaluation step ``step``."""

    def on_predict_batch_begin(self, step: int, logs: Optional[dict] = None) -> None:
        """Called before prediction step ``step``."""

    def on_predict_batch_end(self, step: int, logs: Optional[dict] = None) -> None:
        """Called after prediction step ``step``."""


class CallbackList:
    """The callbacks of one run, called in order; ``on_begin('eval')`` calls ``on_eval_begin``."""

    def __init__(self, callbacks: Sequence[Callback]) -> None:
        self.callbacks = list(callbacks)

    def __iter__(self) -> Iterator[Callback]:
        return iter(self.callbacks)

    def set_params(self, params: dict) -> None:
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model: Any) -> None:
        for callback in self.callbacks:
            callback.set_model(model)

    def _call(self, name: str, *args: Any) -> None:
        for callback in self.callbacks:
            getattr(callback, name)(*args)

    @staticmethod
    def _checked(mode: str) -> str:
        if mode not in _MODES:
            raise ValueError(f"callback mode must be one of {_MODES}, got {mode!r}")
        return mode

    def on_begin(self, mode: str, logs: Optional[dict] = None) -> None:
        self._call(f"on_{self._checked(mode)}_begin", logs)

    def on_end(self, mode: str, logs: Optional[dict] = None) -> None:
        self._call(f"on_{self._checked(mode)}_end", logs)

    def on_epoch_begin(self, epoch: int, logs: Optional[dict] = None) -> None:
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        self._call("on_epoch_end", epoch, logs)

    def on_batch_begin(self, mode: str, step: int, logs: Optional[dict] = None) -> None:
        self._call(f"on_{self._checked(mode)}_batch_begin", step, logs)

    def on_batch_end(self, mode: str, step: int, logs: Optional[dict] = None) -> None:
        self._call(f"on_{self._checked(mode)}_batch_end", step, logs)


def config_callbacks(
    callbacks: Any = None,
    model: Any = None,
    batch_size: Optional[int] = None,
    epochs: Optional[int] = None,
    steps: Optional[int] = None,
    log_freq: int = 2,
    verbose: int = 2,
    save_freq: int = 1,
    save_dir: Optional[str] = None,
    metrics: Optional[list] = None,
) -> CallbackList:
    """The user's callbacks plus Paddle's defaults: a :class:`ProgBarLogger` first (when
    ``verbose`` and none is given), then a :class:`ModelCheckpoint` and an :class:`LRScheduler`
    last (each unless one is given); :class:`EarlyStopping` learns ``save_dir``."""
    given = list(callbacks) if isinstance(callbacks, (list, tuple)) else ([] if callbacks is None else [callbacks])
    for callback in given:
        if not isinstance(callback, Callback):
            raise TypeError(f"callbacks must be Callback instances, got {type(callback).__name__}")
    if verbose and not any(isinstance(c, ProgBarLogger) for c in given):
        given.insert(0, ProgBarLogger(log_freq, verbose=verbose))
    if not any(isinstance(c, ModelCheckpoint) for c in given):
        given.append(ModelCheckpoint(save_freq, save_dir))
    for callback in given:
        if isinstance(callback, EarlyStopping):
            callback.save_dir = save_dir
    if not any(isinstance(c, LRScheduler) for c in given):
        given.append(LRScheduler())
    chain = CallbackList(given)
    chain.set_model(model)
    chain.set_params(
        {"batch_size": batch_size, "epochs": epochs, "steps": steps, "verbose": verbose, "metrics": metrics or []}
    )
    return chain


class _Phase:
    """What the logger tracks for one of train, eval and predict: its bar, step and timings."""

    def __init__(self, steps: Optional[int], metrics: list, verbose: int) -> None:
        self.steps, self.metrics = steps, metrics
        self.step = self.samples = 0
        self.bar = ProgressBar(num=steps, verbose=verbose)
        self.reset_timer()
        self.batch_start = time.time()
        self.data_end = self.batch_start

    def reset_timer(self) -> None:
        self.data_time = self.batch_time = 0.0
        self.count = self.timed_samples = 0


class ProgBarLogger(Callback):
    """Prints progress every ``log_freq`` steps: ``verbose`` 0 silent, 1 a redrawn bar, 2 one line
    per update, 3 also the reader cost, batch cost and samples per second."""

    def __init__(self, log_freq: int = 1, verbose: int = 2) -> None:
        super().__init__()
        if isinstance(log_freq, bool) or not isinstance(log_freq, int) or log_freq < 1:
            raise ValueError(f"ProgBarLogger: log_freq must be a positive int, got {log_freq!r}")
        self.log_freq, self.verbose = log_freq, verbose
        self.epochs: Optional[int] = None
        self._phases: dict = {}

    def _is_print(self) -> bool:
        return bool(self.verbose) and _is_local_leader()

    def _show(self, mode: str, logs: dict) -> None:
        phase = self._phases[mode]
        values = [(name, logs[name]) for name in phase.metrics if name in logs]
        if self.verbose == 3:
            count, samples = phase.count or 1, phase.timed_samples or 1
            spent = phase.data_time + phase.batch_time
            values.append(("avg_reader_cost", f"{phase.data_time / count:.5f} sec"))
            values.append(("avg_batch_cost", f"{phase.batch_time / count:.5f} sec"))
            values.append(("ips", f"{samples / spent if spent else 0.0:.5f} samples/sec"))
            phase.reset_timer()
        phase.bar.update(phase.step, values)

    def _batch_begin(self, mode: str) -> None:
        phase = self._phases[mode]
        phase.data_end = time.time()
        phase.data_time += phase.data_end - phase.batch_start

    def _batch_end(self, mode: str, logs: Optional[dict]) -> None:
        logs = logs or {}
        phase = self._phases[mode]
        phase.step += 1
        phase.batch_time += time.time() - phase.data_end
        phase.count += 1
        phase.samples += logs.get("batch_size", 1)
        phase.timed_samples += logs.get("batch_size", 1)
        if self._is_print() and phase.step % self.log_freq == 0 and (phase.steps is None or phase.step < phase.steps):
            self._show(mode, logs)
        phase.batch_start = time.time()

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        self.epochs = self.params["epochs"]
        if self._is_print():
            print(
                "The loss value printed in the log is the current step, and the metric is the average value "
                "of previous steps."
            )

    def on_epoch_begin(self, epoch: int, logs: Optional[dict] = None) -> None:
        if self.epochs and self._is_print():
            print(f"Epoch {epoch + 1}/{self.epochs}")
        self._phases["train"] = _Phase(self.params["steps"], self.params["metrics"], self.verbose)

    def on_train_batch_begin(self, step: int, logs: Optional[dict] = None) -> None:
        self._batch_begin("train")

    def on_train_batch_end(self, step: int, logs: Optional[dict] = None) -> None:
        self._batch_end("train", logs)

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        if self._is_print() and self._phases["train"].steps is not None:
            self._show("train", logs or {})

    def on_eval_begin(self, logs: Optional[dict] = None) -> None:
        logs = logs or {}
        self._phases["eval"] = _Phase(logs.get("steps"), logs.get("metrics", []), self.verbose)
        if self._is_print():
            print("Eval begin...")

    def on_eval_batch_begin(self, step: int, logs: Optional[dict] = None) -> None:
        self._batch_begin("eval")

    def on_eval_batch_end(self, step: int, logs: Optional[dict] = None) -> None:
        self._batch_end("eval", logs)

    def on_eval_end(self, logs: Optional[dict] = None) -> None:
        phase = self._phases["eval"]
        if self._is_print() and phase.steps is not None:
            self._show("eval", logs or {})
            print(f"Eval samples: {phase.samples}")

    def on_predict_begin(self, logs: Optional[dict] = None) -> None:
        logs = logs or {}
        self._phases["predict"] = _Phase(logs.get("steps"), logs.get("metrics", []), self.verbose)
        if self._is_print():
            print("Predict begin...")

    def on_predict_batch_begin(self, step: int, logs: Optional[dict] = None) -> None:
        self._batch_begin("predict")

    def on_predict_batch_end(self, step: int, logs: Optional[dict] = None) -> None:
        self._batch_end("predict", logs)

    def on_predict_end(self, logs: Optional[dict] = None) -> None:
        phase = self._phases["predict"]
        if self._is_print():
            if phase.step % self.log_freq != 0 or self.verbose == 1:
                self._show("predict", logs or {})
            print(f"Predict samples: {phase.samples}")


class ModelCheckpoint(Callback):
    """Saves the model to ``save_dir/<epoch>`` every ``save_freq`` epochs and to
    ``save_dir/final`` when training ends (nothing when ``save_dir`` is None)."""

    def __init__(self, save_freq: int = 1, save_dir: Optional[str] = None) -> None:
        super().__init__()
        if isinstance(save_freq, bool) or not isinstance(save_freq, int) or save_freq < 1:
            raise ValueError(f"ModelCheckpoint: save_freq must be a positive int, got {save_freq!r}")
        self.save_freq, self.save_dir = save_freq, save_dir

    def _save(self, name: str) -> None:
        path = f"{self.save_dir}/{name}"
        print(f"save checkpoint at {os.path.abspath(path)}")
        self.model.save(path)

    def _is_save(self) -> bool:
        return self.model is not None and bool(self.save_dir) and _is_local_leader()

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        if self._is_save() and epoch % self.save_freq == 0:
            self._save(str(epoch))

    def on_train_end(self, logs: Optional[dict] = None) -> None:
        if self._is_save():
            self._save("final")


class LRScheduler(Callback):
    """Steps the optimizer's learning-rate scheduler after every batch (``by_step``) or every
    epoch (``by_epoch``); a float learning rate is left alone."""

    def __init__(self, by_step: bool = True, by_epoch: bool = False) -> None:
        super().__init__()
        if by_step and by_epoch:
            raise ValueError("LRScheduler: by_step and by_epoch exclude each other; set one of them")
        self.by_step, self.by_epoch = by_step, by_epoch

    def _step(self) -> None:
        optimizer = self.model._optimizer if self.model is not None else None
        schedule = getattr(optimizer, "_learning_rate", None)
        if isinstance(schedule, _Schedule):
            schedule.step()

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        if self.by_epoch:
            self._step()

    def on_train_batch_end(self, step: int, logs: Optional[dict] = None) -> None:
        if self.by_step:
            self._step()


class EarlyStopping(Callback):
    """Stops ``fit`` when the evaluated ``monitor`` has not improved by ``min_delta`` for
    ``patience`` evaluations; with ``save_best_model`` and a ``save_dir`` given to ``fit``, the
    best model so far is saved to ``save_dir/best_model``. ``baseline`` is the value to beat first."""

    def __init__(
        self,
        monitor: str = "loss",
        mode: str = "auto",
        patience: int = 0,
        verbose: int = 1,
        min_delta: float = 0,
        baseline: Optional[float] = None,
        save_best_model: bool = True,
    ) -> None:
        super().__init__()
        self.monitor, self.patience, self.verbose, self.baseline = monitor, patience, verbose, baseline
        self.save_best_model = save_best_model
        self.save_dir: Optional[str] = None
        self.minimise = _minimising("EarlyStopping", mode, monitor)
        self.min_delta = -abs(min_delta) if self.minimise else abs(min_delta)
        self.wait_epoch = self.stopped_epoch = 0
        self.best_value = 0.0

    def _better(self, value: float) -> bool:
        shifted = value - self.min_delta
        return bool(shifted < self.best_value if self.minimise else shifted > self.best_value)

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        self.wait_epoch = 0
        if self.baseline is not None:
            self.best_value = self.baseline
        else:
            self.best_value = numpy.inf if self.minimise else -numpy.inf

    def on_eval_end(self, logs: Optional[dict] = None) -> None:
        current = _monitored(logs, self.monitor, "EarlyStopping")
        if current is None:
            return
        best_path = os.path.join(self.save_dir, "best_model") if self.save_dir is not None else None
        if self._better(current):
            self.best_value, self.wait_epoch = current, 0
            if self.save_best_model and best_path is not None:
                self.model.save(best_path)
        else:
            self.wait_epoch += 1
        if self.wait_epoch >= self.patience:
            self.model.stop_training = True
            if self.verbose > 0:
                print(f"Epoch {self.stopped_epoch + 1}: Early stopping.")
                if self.save_best_model and best_path is not None:
                    print(f"Best checkpoint has been saved at {os.path.abspath(best_path)}")
        self.stopped_epoch += 1


class ReduceLROnPlateau(Callback):
    """Multiplies a float learning rate by ``factor`` when the evaluated ``monitor`` has not
    improved by ``min_delta`` for ``patience`` evaluations, then waits ``cooldown`` evaluations;
    never below ``min_lr``. (A scheduler learning rate is left alone, with a warning.)"""

    def __init__(
        self,
        monitor: str = "loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: int = 1,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0,
    ) -> None:
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be below 1.0 to reduce the rate, got {factor}")
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, verbose
        self.mode, self.min_delta, self.cooldown, self.min_lr = mode, min_delta, cooldown, min_lr
        self.epoch = 0
        self._reset()

    def _reset(self) -> None:
        self.minimise = _minimising("ReduceLROnPlateau", self.mode, self.monitor)
        self.best = numpy.inf if self.minimise else -numpy.inf
        self.cooldown_counter = self.wait = 0

    def _better(self, value: float) -> bool:
        if self.minimise:
            return bool(value < self.best - self.min_delta)
        return bool(value > self.best + self.min_delta)

    def in_cooldown(self) -> bool:
        """True while the evaluations after a reduction are still being skipped."""
        return self.cooldown_counter > 0

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        self._reset()

    def on_eval_end(self, logs: Optional[dict] = None) -> None:
        current = _monitored(logs, self.monitor, "ReduceLROnPlateau")
        if current is None:
            return
        optimizer = self.model._optimizer
        if not isinstance(optimizer._learning_rate, float):
            warnings.warn(
                f"ReduceLROnPlateau: the learning rate is a {type(optimizer._learning_rate).__name__}, not a "
                "float; use minidp.optimizer.lr.ReduceOnPlateau for a scheduler"
            )
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._better(current):
            self.best, self.wait = current, 0
        elif not self.in_cooldown():
            self.wait += 1
            old_lr = optimizer.get_lr()
            if self.wait >= self.patience and old_lr > numpy.float32(self.min_lr):
                new_lr = max(old_lr * self.factor, self.min_lr)
                optimizer.set_lr(new_lr)
                if self.verbose > 0 and _is_local_leader():
                    print(f"\nEpoch {self.epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.")
                self.cooldown_counter, self.wait = self.cooldown, 0
        self.epoch += 1
