"""``summary``: the table of a network's layers, output shapes and parameter counts.

One forward pass on random inputs of ``input_size`` (or on ``input``) records, through forward
post-hooks, each layer's input and output shapes and its own parameters; containers
(``Sequential``, ``LayerList``) and the network itself are left out of the table, as in Paddle.
Each row is named ``<Class>-<n>`` after the layer's unique name (``linear_2`` gives ``Linear-3``).
"""

from __future__ import annotations

import collections
import numbers
from typing import Any

import numpy

from ..core.engine import no_grad
from ..core.layer import Layer
from ..core.tensor import Tensor
from ..nn.layers.container import LayerList, Sequential
from ..ops.creation import rand

__all__ = ["summary"]


def _is_shape(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(item is None or isinstance(item, numbers.Number) for item in value)


def _shape_of(spec: Any) -> Any:
    """A shape from a tuple, an int or anything carrying ``.shape`` (e.g. an InputSpec)."""
    if isinstance(spec, int):
        return (spec,)
    if hasattr(spec, "shape") and not isinstance(spec, (list, tuple)):
        return tuple(spec.shape)
    return spec


def _checked_shape(shape: Any) -> tuple:
    """``shape`` with its one unknown dimension (None or -1, the batch) set to 1."""
    unknown, checked = 0, []
    for item in shape:
        if item is None or item == -1:
            unknown += 1
            if unknown > 1:
                raise ValueError("summary: only the batch dimension of input_size may be None or -1")
            item = 1
        elif not isinstance(item, numbers.Number) or item <= 0:
            raise ValueError(f"summary: input_size dimensions must be positive ints, got {item!r}")
        checked.append(item)
    return tuple(checked)


def _normalise_sizes(input_size: Any) -> Any:
    """Shapes as tuples (one tuple, or a list of them for several inputs)."""
    size = _shape_of(input_size)
    if isinstance(size, list):
        size = [_shape_of(item) for item in size]
    if _is_shape(size):
        return _checked_shape(size)
    if isinstance(size, (list, tuple)):
        return [_normalise_sizes(item) for item in size]
    raise TypeError(f"summary: input_size must be a shape, an int or a list of shapes, got {input_size!r}")


def _sizes_of(input: Any) -> Any:
    if isinstance(input, Tensor):
        return tuple(input.shape)
    if isinstance(input, (list, tuple)):
        return [tuple(x.shape) for x in input]
    if isinstance(input, dict):
        return [tuple(x.shape) for x in input.values()]
    raise ValueError("summary: input must be a Tensor, a list or tuple of them or a dict; or give input_size")


def _shapes(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [_shapes(item) for item in value]
    return list(value.shape) if hasattr(value, "shape") else []


def _layer_index(layer: Layer, fallback: int) -> int:
    tail = layer.full_name().rpartition("_")[2]
    return int(tail) + 1 if tail.isdigit() else fallback + 1


def _record_rows(net: Layer, run: Any) -> dict:
    """Row name -> shapes and parameter counts, for the layers that ran during ``run()``."""
    rows: dict = collections.OrderedDict()
    depth = len(net.sublayers())

    def hook(layer: Layer, inputs: tuple, outputs: Any) -> None:
        params = list(layer._parameters.values())
        trainable = [p for p in params if p is not None and p.trainable]
        rows[f"{type(layer).__name__}-{_layer_index(layer, len(rows))}"] = {
            "input_shape": _shapes(inputs),
            "output_shape": _shapes(outputs),
            "nb_params": int(sum(int(numpy.prod(p.shape)) for p in params if p is not None)),
            "trainable_params": int(sum(int(numpy.prod(p.shape)) for p in trainable)),
        }

    handles = [
        layer.register_forward_post_hook(hook)
        for layer in [*net.sublayers(), net]
        if not isinstance(layer, (Sequential, LayerList)) and (layer is not net or depth < 1)
    ]
    try:
        run()
    finally:
        for handle in handles:
            handle.remove()
    return rows


def _input_megabytes(sizes: Any) -> float:
    if _is_shape(sizes):
        return abs(float(numpy.prod(sizes)) * 4.0 / 1024**2)
    return sum(_input_megabytes(item) for item in sizes)


def _output_count(shape: list) -> float:
    """The elements of a row's output(s), summed Paddle's way (last axis products)."""
    if shape and all(isinstance(item, list) for item in shape):
        return float(sum(_output_count(item) for item in shape))
    return float(numpy.sum(numpy.prod(shape, axis=-1))) if shape else 0.0


def _render(rows: dict, sizes: Any) -> tuple:
    widths = {"layer": 15, "input": 20, "output": 20, "params": 15}
    for name, row in rows.items():
        widths["layer"] = max(widths["layer"], len(name))
        widths["input"] = max(widths["input"], len(str(row["input_shape"])))
        widths["output"] = max(widths["output"], len(str(row["output_shape"])))
        widths["params"] = max(widths["params"], len(str(row["nb_params"])))
    table_width = max(75, sum(widths.values()) + 5)

    def line(*cells: str) -> str:
        return " ".join(f"{cell:^{width}}" for cell, width in zip(cells, widths.values())) + "\n"

    text = "-" * table_width + "\n" + line("Layer (type)", "Input Shape", "Output Shape", "Param #")
    text += "=" * table_width + "\n"
    total = trainable = 0
    outputs = 0.0
    for name, row in rows.items():
        text += line(name, str(row["input_shape"]), str(row["output_shape"]), f"{row['nb_params']:,}")
        total += row["nb_params"]
        trainable += row["trainable_params"]
        outputs += _output_count(row["output_shape"])
    input_mb = _input_megabytes(sizes)
    output_mb = abs(2.0 * outputs * 4.0 / 1024**2)
    params_mb = abs(total * 4.0 / 1024**2)
    text += "=" * table_width + "\n"
    text += f"Total params: {total:,}\nTrainable params: {trainable:,}\n"
    text += f"Non-trainable params: {total - trainable:,}\n" + "-" * table_width + "\n"
    text += f"Input size (MB): {input_mb:0.2f}\nForward/backward pass size (MB): {output_mb:0.2f}\n"
    text += f"Params size (MB): {params_mb:0.2f}\nEstimated Total Size (MB): {input_mb + output_mb + params_mb:0.2f}\n"
    text += "-" * table_width + "\n"
    return text, {"total_params": total, "trainable_params": trainable}


def _random_inputs(sizes: Any, dtypes: Any) -> list:
    if _is_shape(sizes):
        return [rand(list(sizes)).astype(dtypes or "float32")]
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes] * len(sizes)
    if len(dtypes) != len(sizes):
        raise ValueError(f"summary: {len(sizes)} input sizes but {len(dtypes)} dtypes; give one dtype per input")
    return [rand(list(size)).astype(dtype or "float32") for size, dtype in zip(sizes, dtypes)]


def summary(net: Layer, input_size: Any = None, dtypes: Any = None, input: Any = None) -> dict:
    """Print ``net``'s layer table and return ``{'total_params': n, 'trainable_params': m}``.

    ``input_size`` is one shape (a tuple, an int, or an object with ``.shape``) or a list of them
    for a network of several inputs; only the batch dimension may be None or -1 (it becomes 1).
    ``dtypes`` (default 'float32') is one dtype or one per input. ``input`` (a Tensor, a list of
    them or a dict) replaces the random inputs. The network runs once in eval mode, without
    gradients, and returns to the mode it was in.
    """
    if not isinstance(net, Layer):
        raise TypeError(f"summary: net must be a minidp.nn.Layer, got {type(net).__name__}")
    if input_size is None and input is None:
        raise ValueError("summary: give input_size (the input shapes) or input (example tensors)")
    sizes = _normalise_sizes(_sizes_of(input) if input_size is None else input_size)
    was_training = net.training
    net.eval()
    try:
        with no_grad():
            if input is not None:
                rows = _record_rows(net, lambda: net(input))
            else:
                arguments = _random_inputs(sizes, dtypes)
                rows = _record_rows(net, lambda: net(*arguments))
    finally:
        if was_training:
            net.train()
    text, info = _render(rows, sizes)
    print(text)
    return info
