"""Activations: the ops of :mod:`minidp.ops`, under the names ``nn.functional`` users expect."""
from ...ops import gelu, log_softmax, relu, sigmoid, softmax, tanh

__all__ = ["relu", "gelu", "sigmoid", "tanh", "softmax", "log_softmax"]
