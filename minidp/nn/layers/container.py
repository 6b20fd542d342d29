"""Containers: Sequential, LayerList, LayerDict, ParameterList and ParameterDict (all keep insertion order)."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional

from ...core.tensor import Parameter
from ...core.layer import Layer

__all__ = [
    "LayerDict",
    "LayerList",
    "ParameterDict",
    "ParameterList",
    "Sequential",
]


def _index(i: int, length: int, kind: str) -> int:
    if not -length <= i < length:
        raise IndexError(f"{kind} index {i} is out of range for {length} entries")
    return i % length


class Sequential(Layer):
    """Calls its layers one after another. Takes layers, or (name, layer) pairs to name them."""

    def __init__(self, *layers: Any) -> None:
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], dict):
            layers = tuple(layers[0].items())
        for i, entry in enumerate(layers):
            if isinstance(entry, (tuple, list)):
                name, layer = entry
                self.add_sublayer(str(name), layer)
            else:
                self.add_sublayer(str(i), entry)

    def forward(self, x: Any) -> Any:
        for layer in self._sub_layers.values():
            x = layer(x)
        return x

    def __getitem__(self, index: Any) -> Any:
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return Sequential(*layers[index])
        if isinstance(index, str):
            return self._sub_layers[index]
        return layers[_index(index, len(layers), "Sequential")]

    def __setitem__(self, index: int, layer: Layer) -> None:
        names = list(self._sub_layers)
        self.add_sublayer(names[_index(index, len(names), "Sequential")], layer)

    def __delitem__(self, index: int) -> None:
        names = list(self._sub_layers)
        delattr(self, names[_index(index, len(names), "Sequential")])

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self._sub_layers.values())


class LayerList(Layer):
    """A list of sublayers that registers them (a plain Python list would hide their parameters)."""

    def __init__(self, sublayers: Optional[Iterable[Layer]] = None) -> None:
        super().__init__()
        for layer in sublayers or ():
            self.append(layer)

    def _renumber(self, layers: list) -> None:
        for name in list(self._sub_layers):
            delattr(self, name)
        for i, layer in enumerate(layers):
            self.add_sublayer(str(i), layer)

    def append(self, sublayer: Layer) -> "LayerList":
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def insert(self, index: int, sublayer: Layer) -> None:
        layers = list(self._sub_layers.values())
        layers.insert(index, sublayer)
        self._renumber(layers)

    def extend(self, sublayers: Iterable[Layer]) -> "LayerList":
        for layer in sublayers:
            self.append(layer)
        return self

    def __getitem__(self, index: Any) -> Any:
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return LayerList(layers[index])
        return layers[_index(index, len(layers), "LayerList")]

    def __setitem__(self, index: int, sublayer: Layer) -> None:
        self.add_sublayer(str(_index(index, len(self), "LayerList")), sublayer)

    def __delitem__(self, index: Any) -> None:
        layers = list(self._sub_layers.values())
        del layers[index if isinstance(index, slice) else _index(index, len(layers), "LayerList")]
        self._renumber(layers)

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self._sub_layers.values())


class ParameterList(Layer):
    """A list of parameters that registers them with the layer that holds the list."""

    def __init__(self, parameters: Optional[Iterable[Parameter]] = None) -> None:
        super().__init__()
        for param in parameters or ():
            self.append(param)

    def append(self, parameter: Parameter) -> "ParameterList":
        self.add_parameter(str(len(self)), parameter)
        return self

    def __getitem__(self, index: int) -> Parameter:
        params = list(self._parameters.values())
        return params[_index(index, len(params), "ParameterList")]

    def __setitem__(self, index: int, parameter: Parameter) -> None:
        self.add_parameter(str(_index(index, len(self), "ParameterList")), parameter)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())


def _items(entries: Any) -> list:
    """(name, value) pairs from a mapping or a sequence of pairs."""
    if entries is None:
        return []
    pairs = list(entries.items()) if hasattr(entries, "items") else list(entries)
    if not all(isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in pairs):
        raise TypeError("expected a mapping or a sequence of (name, value) pairs")
    return pairs


class LayerDict(Layer):
    """Sublayers by name, in insertion order (a plain dict would hide their parameters)."""

    def __init__(self, sublayers: Any = None) -> None:
        super().__init__()
        self.update(sublayers)

    def update(self, sublayers: Any) -> None:
        for name, layer in _items(sublayers):
            self.add_sublayer(name, layer)

    def __getitem__(self, key: str) -> Layer:
        return self._sub_layers[key]

    def __setitem__(self, key: str, sublayer: Layer) -> None:
        self.add_sublayer(key, sublayer)

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __contains__(self, key: str) -> bool:
        return key in self._sub_layers

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[str]:
        return iter(self._sub_layers)

    def keys(self) -> Iterable[str]:
        return self._sub_layers.keys()

    def values(self) -> Iterable[Layer]:
        return self._sub_layers.values()

    def items(self) -> Iterable[tuple]:
        return self._sub_layers.items()

    def pop(self, key: str) -> Layer:
        layer = self._sub_layers[key]
        del self[key]
        return layer

    def clear(self) -> None:
        for key in list(self._sub_layers):
            del self[key]


class ParameterDict(Layer):
    """Parameters by name, registered with the layer that holds the dict."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self.update(parameters)

    def update(self, parameters: Any) -> None:
        for name, param in _items(parameters):
            self.add_parameter(name, param)

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key: str, parameter: Parameter) -> None:
        self.add_parameter(key, parameter)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def keys(self) -> Iterable[str]:
        return self._parameters.keys()

    def values(self) -> Iterable[Parameter]:
        return self._parameters.values()

    def items(self) -> Iterable[tuple]:
        return self._parameters.items()
