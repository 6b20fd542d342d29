"""``Model``: Paddle's high-level training loop (``prepare``, ``fit``, ``evaluate``, ``predict``).

A Model wraps a network and, after ``prepare(optimizer, loss, metrics)``, runs the loops a
training script would otherwise write: batches from a Dataset or DataLoader, forward, loss,
backward, optimizer step, metrics, callbacks (:mod:`minidp.hapi.callbacks`) and checkpoints.

Under a launcher (world size > 1) it does what Paddle's dynamic-graph Model does: it calls
``init_parallel_env`` if nobody has, trains through ``DataParallel``, shards a Dataset with
``DistributedBatchSampler``, and in evaluation all-gathers each batch's outputs and labels
before the metrics see them, dropping the samples the sampler repeated to pad the last batch,
so the metrics cover every sample exactly once on every rank. Losses stay per rank.

Metrics are duck-typed on Paddle's Metric protocol: ``compute(*outputs, *labels)``, whose
results go to ``update`` as NumPy arrays, ``accumulate()``, ``reset()`` and ``name()``.
"""

from __future__ import annotations

import inspect
import os
import warnings
from typing import Any, Callable, Optional

import numpy

from ..core.distributed.collective import is_initialized
from ..core.distributed.data_parallel import DataParallel
from ..core.distributed.env import ParallelEnv
from ..core.distributed.parallel import init_parallel_env
from ..core.engine import no_grad
from ..core.layer import Layer
from ..core.tensor import Tensor
from ..distributed.communication.all_gather import all_gather
from ..io.dataloader import DataLoader
from ..io.dataset import Dataset
from ..io.sampler import DistributedBatchSampler
from ..ops.creation import to_tensor
from ..ops.shape import concat
from ..serialization import load as load_object
from ..serialization import save as save_object
from .callbacks import EarlyStopping, config_callbacks
from .model_summary import summary

__all__ = ["Model"]

_METRIC_PROTOCOL = ("compute", "update", "accumulate", "reset", "name")


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _to_numpy(value: Any) -> numpy.ndarray:
    return value.numpy() if isinstance(value, Tensor) else numpy.asarray(value)


def _flatten(data: Any) -> list:
    """A batch as a flat list of fields (a DataLoader yields nested lists for nested samples)."""
    if isinstance(data, (list, tuple)):
        return [leaf for item in data for leaf in _flatten(item)]
    if isinstance(data, dict):
        return [leaf for item in data.values() for leaf in _flatten(item)]
    return [data]


def _steps_of(loader: Any) -> Optional[int]:
    try:
        return len(loader)
    except TypeError:
        return None


def _gather(tensor: Tensor) -> Tensor:
    """Every rank's ``tensor`` concatenated along axis 0, in rank order."""
    parts: list = []
    all_gather(parts, tensor)
    return concat(parts, axis=0)


class _EvalMerge:
    """Trims gathered evaluation batches to the dataset: the sampler pads the last round with
    repeated samples so every rank has as many; counting what was gathered tells where to cut."""

    def __init__(self, total: int) -> None:
        self.total, self.seen = total, 0

    def trim(self, tensors: list) -> tuple:
        """(the tensors cut to the samples not seen yet, how many samples they keep)."""
        count = tensors[0].shape[0] if tensors else 0
        if self.seen + count >= self.total:
            keep = self.total - self.seen
            self.seen = 0
            return [t[:keep] for t in tensors], keep
        self.seen += count
        return tensors, count


class Model:
    """A network with the loops that train, evaluate and run it.

    ``inputs`` and ``labels`` (Paddle's ``InputSpec`` lists) only say how many of a batch's fields
    are inputs; anything with a ``shape`` works, and without them every positional parameter of
    ``network.forward`` takes one field, the rest are labels.
    """

    def __init__(self, network: Layer, inputs: Any = None, labels: Any = None) -> None:
        if not isinstance(network, Layer):
            raise TypeError(f"Model: network must be a minidp.nn.Layer, got {type(network).__name__}")
        self.network = network
        self.mode = "train"
        self.stop_training = False
        self._inputs = _as_list(inputs) if inputs is not None else self._forward_arguments()
        self._labels = _as_list(labels)
        self._optimizer: Any = None
        self._loss: Optional[Callable] = None
        self._metrics: list = []
        self._eval_merge: Optional[_EvalMerge] = None
        self._merged_batch = 0
        self._accumulate = 1
        self._num_iters: Optional[int] = None
        env = ParallelEnv()
        self._nranks, self._local_rank = env.nranks, env.local_rank
        self._ddp: Optional[DataParallel] = None
        if self._nranks > 1:
            if not is_initialized():
                init_parallel_env()
            self._ddp = DataParallel(network)

    def _forward_arguments(self) -> list:
        """The names of ``network.forward``'s positional parameters (one batch field each)."""
        spec = inspect.getfullargspec(self.network.forward)
        return spec.args[1:] if spec.args and spec.args[0] == "self" else list(spec.args)

    # --- set-up -------------------------------------------------------------------------
    def prepare(
        self, optimizer: Any = None, loss: Optional[Callable] = None, metrics: Any = None, amp_configs: Any = None
    ) -> None:
        """Choose the optimizer, the loss (a Layer or any callable of outputs then labels) and
        the metrics (objects with Paddle's Metric protocol) that ``fit`` and friends use."""
        if loss is not None and not callable(loss):
            raise TypeError(f"Model.prepare: loss must be a Layer or a callable, got {type(loss).__name__}")
        metrics = _as_list(metrics)
        for metric in metrics:
            missing = [name for name in _METRIC_PROTOCOL if not callable(getattr(metric, name, None))]
            if missing:
                raise TypeError(
                    f"Model.prepare: metrics must follow the Metric protocol (e.g. minidp.metric.Accuracy); "
                    f"{type(metric).__name__} lacks {', '.join(missing)}"
                )
        if amp_configs not in (None, "O0") and not (isinstance(amp_configs, dict) and amp_configs.get("level") == "O0"):
            raise ValueError(
                "Model.prepare: minidp has no automatic mixed precision; leave amp_configs None (or level 'O0') "
                "and cast the network with network.to(dtype=...) for low-precision training"
            )
        self._optimizer, self._loss, self._metrics = optimizer, loss, metrics

    def parameters(self, *args: Any, **kwargs: Any) -> list:
        """The network's parameters."""
        return self.network.parameters(*args, **kwargs)

    # --- one batch ----------------------------------------------------------------------
    def _metric_updates(self, outputs: list, labels: list) -> list:
        results = []
        for metric in self._metrics:
            computed = metric.compute(*outputs, *labels)
            results.append(metric.update(*[_to_numpy(value) for value in _as_list(computed)]))
        return results

    def _losses(self, outputs: list, labels: list) -> list:
        return _as_list(self._loss(*outputs, *labels))

    def train_batch(self, inputs: Any, labels: Any = None, update: bool = True) -> Any:
        """One training step on a batch: forward, loss, backward and (with ``update``) the
        optimizer step. Returns the losses as NumPy arrays, with the metrics' batch values too
        (``(losses, metrics)``) when there are metrics."""
        if self._optimizer is None or self._loss is None:
            raise RuntimeError("Model.train_batch: call model.prepare(optimizer, loss) before training")
        self.network.train()
        self.mode = "train"
        labels = [to_tensor(label) for label in _as_list(labels)]
        forward = self._ddp if self._ddp is not None else self.network
        outputs = _as_list(forward(*[to_tensor(x) for x in _as_list(inputs)]))
        losses = self._losses(outputs, labels)
        total = losses[0]
        for loss in losses[1:]:
            total = total + loss
        total.backward()
        if update:
            self._optimizer.step()
            self._optimizer.clear_grad()
        metrics = self._metric_updates(outputs, labels)
        values = [_to_numpy(loss) for loss in losses]
        return (values, metrics) if metrics else values

    @no_grad()
    def eval_batch(self, inputs: Any, labels: Any = None) -> Any:
        """Forward, loss and metrics on a batch without gradients; returns the losses, the
        metrics' batch values, or ``(losses, metrics)`` when there are both."""
        self.network.eval()
        self.mode = "eval"
        labels = [to_tensor(label) for label in _as_list(labels)]
        outputs = _as_list(self.network(*[to_tensor(x) for x in _as_list(inputs)]))
        losses = self._losses(outputs, labels) if self._loss is not None else []
        if self._nranks > 1:
            outputs = [_gather(o) for o in outputs]
            labels = [_gather(label) for label in labels]
            if self._eval_merge is not None:
                merged, self._merged_batch = self._eval_merge.trim(outputs + labels)
                outputs, labels = merged[: len(outputs)], merged[len(outputs) :]
        metrics = self._metric_updates(outputs, labels)
        values = [_to_numpy(loss) for loss in losses]
        if self._loss is not None:
            return (values, metrics) if metrics else values
        return metrics

    @no_grad()
    def predict_batch(self, inputs: Any) -> list:
        """The network's outputs on a batch, as NumPy arrays."""
        self.network.eval()
        self.mode = "test"
        outputs = self.network(*[to_tensor(x) for x in _as_list(inputs)])
        return [_to_numpy(output) for output in _as_list(outputs)]

    # --- checkpoints --------------------------------------------------------------------
    def save(self, path: str, training: bool = True) -> None:
        """Write ``path.pdparams`` (the network's state dict) and ``path.pdopt`` (the optimizer's,
        when it has state), on local rank 0 only. ``training=False`` (Paddle's inference export)
        is refused: minidp has no static graph to export."""
        if not training:
            raise ValueError(
                "Model.save(training=False) exports a static inference program, which minidp (dygraph only) "
                "does not have; use Model.save(path) or minidp.save(model.network.state_dict(), path + '.pdparams')"
            )
        if self._local_rank != 0:
            return
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        save_object(self.network.state_dict(), path + ".pdparams")
        if self._optimizer is not None:
            state = self._optimizer.state_dict()
            if state:
                save_object(state, path + ".pdopt")

    def load(self, path: str, skip_mismatch: bool = False, reset_optimizer: bool = False) -> None:
        """Read what :meth:`save` wrote (or Paddle's ``.pdparams``/``.pdopt``). A parameter missing
        from the file or of another shape raises ValueError, or with ``skip_mismatch`` is kept
        with a warning (and the optimizer state is then not loaded); ``reset_optimizer`` skips it."""
        root, extension = os.path.splitext(path)
        if extension in (".pdparams", ".pdopt", ".pdmodel"):
            path = root
        elif extension:
            raise ValueError(f"Model.load: unknown suffix {extension!r}; give the path without .pdparams/.pdopt")
        if not os.path.exists(path + ".pdparams"):
            raise FileNotFoundError(f"Model.load: no parameters at {path + '.pdparams'!r}")
        saved = load_object(path + ".pdparams")
        matched = []
        for key, param in self.network.state_dict().items():
            value = saved.get(key)
            problem = None
            if value is None:
                problem = f"{key} is not found in {path + '.pdparams'!r}"
            elif list(value.shape) != list(param.shape):
                problem = f"{key} has shape {list(value.shape)} in the file but the network expects {list(param.shape)}"
            if problem is None:
                matched.append((param, value))
            elif skip_mismatch:
                warnings.warn(f"Model.load: skipped {problem}")
                reset_optimizer = True
            else:
                raise ValueError(f"Model.load: {problem}; pass skip_mismatch=True to keep the current value")
        for param, value in matched:
            param.set_value(value)
        if self._optimizer is not None and not reset_optimizer and os.path.exists(path + ".pdopt"):
            self._optimizer.set_state_dict(load_object(path + ".pdopt"))

    # --- loops --------------------------------------------------------------------------
    def _loader(self, data: Any, batch_size: int, shuffle: bool, drop_last: bool, num_workers: int) -> Any:
        """A DataLoader over ``data`` sharded across the ranks, or ``data`` itself if it is a loader."""
        if not isinstance(data, Dataset):
            return data
        sampler = DistributedBatchSampler(data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last)
        return DataLoader(data, batch_sampler=sampler, num_workers=num_workers, return_list=True)

    def _metrics_name(self) -> list:
        names = ["loss"] if self._loss is not None else []
        for metric in self._metrics:
            names.extend(_as_list(metric.name()))
        return names

    def _run_one_epoch(self, loader: Any, callbacks: Any, mode: str) -> Any:
        logs: dict = {}
        outputs = []
        steps = _steps_of(loader)
        n_inputs = len(self._inputs)
        self._eval_merge = None
        if mode == "eval" and self._nranks > 1 and isinstance(loader, DataLoader):
            self._eval_merge = _EvalMerge(len(loader.dataset))
        for step, data in enumerate(loader):
            fields = _flatten(data)
            batch_size = fields[0].shape[0]
            callbacks.on_batch_begin(mode, step, logs)
            if mode == "predict":
                outputs.append(self.predict_batch(fields[:n_inputs] if n_inputs else fields))
            else:
                if mode == "train":
                    update = (step + 1) % self._accumulate == 0 or step + 1 == steps
                    result = self.train_batch(fields[:n_inputs], fields[n_inputs:], update)
                else:
                    result = self.eval_batch(fields[:n_inputs], fields[n_inputs:])
                losses = result[0] if self._metrics and self._loss is not None else result
                values = [[float(loss) for loss in losses]] if self._loss is not None else []
                for metric in self._metrics:
                    values.extend(_as_list(metric.accumulate()))
                logs.update(zip(self._metrics_name(), values))
            logs["step"] = step
            if self._eval_merge is not None:
                logs["batch_size"] = self._merged_batch
            else:
                logs["batch_size"] = batch_size * self._nranks
            callbacks.on_batch_end(mode, step, logs)
            if self._num_iters is not None:
                self._num_iters -= 1
                if self._num_iters <= 0:
                    self.stop_training = True
                    self._num_iters = None
                    break
        self._eval_merge = None
        for metric in self._metrics:
            metric.reset()
        return (logs, outputs) if mode == "predict" else logs

    @staticmethod
    def _check_count(name: str, value: Any, owner: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"Model.{owner}: {name} must be a positive int, got {value!r}")

    def fit(
        self,
        train_data: Any = None,
        eval_data: Any = None,
        batch_size: Any = 1,
        epochs: int = 1,
        eval_freq: int = 1,
        log_freq: int = 10,
        save_dir: Optional[str] = None,
        save_freq: int = 1,
        verbose: int = 2,
        drop_last: bool = False,
        shuffle: bool = True,
        num_workers: int = 0,
        callbacks: Any = None,
        accumulate_grad_batches: int = 1,
        num_iters: Optional[int] = None,
    ) -> None:
        """Train for ``epochs`` epochs on ``train_data`` (a Dataset, batched by ``batch_size`` —
        one int, or ``[train, eval]`` — or any iterable of batches), evaluating on ``eval_data``
        every ``eval_freq`` epochs; ``accumulate_grad_batches`` steps the optimizer every that
        many batches; ``num_iters`` stops after that many steps in all."""
        if train_data is None:
            raise ValueError("Model.fit: train_data must be given (a Dataset or a DataLoader)")
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 2:
                raise ValueError(f"Model.fit: batch_size as a list is [train, eval], got {batch_size!r}")
            train_batch_size, eval_batch_size = batch_size
        else:
            train_batch_size = eval_batch_size = batch_size
        for name, value in (
            ("epochs", epochs),
            ("eval_freq", eval_freq),
            ("accumulate_grad_batches", accumulate_grad_batches),
        ):
            self._check_count(name, value, "fit")
        train_loader = self._loader(train_data, train_batch_size, shuffle, drop_last, num_workers)
        eval_loader = None if eval_data is None else self._loader(eval_data, eval_batch_size, False, False, num_workers)
        self._accumulate = accumulate_grad_batches
        self.stop_training = False
        steps = _steps_of(train_loader)
        self._num_iters = num_iters
        if num_iters is not None:
            self._check_count("num_iters", num_iters, "fit")
            if steps is not None:
                epochs, steps = num_iters // steps + 1, min(num_iters, steps)
        chain = config_callbacks(
            callbacks,
            model=self,
            epochs=epochs,
            steps=steps,
            log_freq=log_freq,
            save_freq=save_freq,
            save_dir=save_dir,
            verbose=verbose,
            metrics=self._metrics_name(),
        )
        if eval_loader is None and any(isinstance(c, EarlyStopping) for c in chain):
            warnings.warn("Model.fit: EarlyStopping watches evaluation results; pass eval_data")
        chain.on_begin("train")
        logs: dict = {}
        for epoch in range(epochs):
            chain.on_epoch_begin(epoch)
            logs = self._run_one_epoch(train_loader, chain, "train")
            chain.on_epoch_end(epoch, logs)
            if eval_loader is not None and epoch % eval_freq == 0:
                chain.on_begin("eval", {"steps": _steps_of(eval_loader), "metrics": self._metrics_name()})
                chain.on_end("eval", self._run_one_epoch(eval_loader, chain, "eval"))
            if self.stop_training:
                break
        chain.on_end("train", logs)

    def evaluate(
        self,
        eval_data: Any,
        batch_size: int = 1,
        log_freq: int = 10,
        verbose: int = 2,
        num_workers: int = 0,
        callbacks: Any = None,
        num_iters: Optional[int] = None,
    ) -> dict:
        """Loss and metrics over ``eval_data`` (over every rank's samples under a launcher), as
        ``{'loss': [value], <metric name>: value}``; ``num_iters`` caps the batches."""
        loader = self._loader(eval_data, batch_size, False, False, num_workers)
        chain = config_callbacks(
            callbacks, model=self, log_freq=log_freq, verbose=verbose, metrics=self._metrics_name()
        )
        steps = _steps_of(loader)
        self._num_iters = None
        if num_iters is not None:
            self._check_count("num_iters", num_iters, "evaluate")
            steps = num_iters if steps is None else min(num_iters, steps)
            self._num_iters = steps
        chain.on_begin("eval", {"steps": steps, "metrics": self._metrics_name()})
        logs = self._run_one_epoch(loader, chain, "eval")
        chain.on_end("eval", logs)
        return {name: logs[name] for name in self._metrics_name()}

    def predict(
        self,
        test_data: Any,
        batch_size: int = 1,
        num_workers: int = 0,
        stack_outputs: bool = False,
        verbose: int = 1,
        callbacks: Any = None,
    ) -> list:
        """The network's outputs over ``test_data``: one tuple per output holding each batch's
        NumPy array, or (``stack_outputs``) one array per output with the batches stacked.
        Under a launcher each rank predicts its own shard."""
        loader = self._loader(test_data, batch_size, False, False, num_workers)
        chain = config_callbacks(callbacks, model=self, verbose=verbose)
        chain.on_begin("predict", {"steps": _steps_of(loader)})
        logs, batches = self._run_one_epoch(loader, chain, "predict")
        outputs = list(zip(*batches))
        if stack_outputs:
            outputs = [numpy.vstack(per_output) for per_output in outputs]
        chain.on_end("predict", logs)
        return outputs

    def summary(self, input_size: Any = None, dtype: Any = None) -> dict:
        """:func:`minidp.summary` of the network, with ``input_size`` or the shapes of ``inputs``."""
        if input_size is None:
            shaped = [spec for spec in self._inputs if hasattr(spec, "shape")]
            if not shaped:
                raise ValueError("Model.summary: give input_size, or build the Model with inputs that have shapes")
            input_size = shaped if len(shaped) > 1 else shaped[0]
        return summary(self.network, input_size, dtypes=dtype)
