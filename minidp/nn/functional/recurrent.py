"""Whole-sequence LSTM and GRU ops: one graph node per layer and direction, backward through time.

Built from per-step ops, a recurrent layer records a dozen graph nodes per time step, each with
its own small arrays and Python overhead, and its weights collect one gradient per step. These
ops run the whole sequence at once instead:

- the input projection of every step is one matmul ([time * batch, input] @ W_ih^T);
- each step does one matmul with W_hh and a few in-place elementwise updates on its slice of a
  [time, batch, gates * hidden] buffer, which keeps the activations the backward needs;
- the backward walks the steps in reverse (backpropagation through time), writing each step's
  gate gradients into one buffer; the weights' and the input's gradients are then three matmuls
  over all steps together, so nothing is accumulated step by step.

Arrays are time-major inside ([time, batch, ...], each step's slice contiguous); the ops take
and return batch-major sequences as :mod:`minidp.nn.layers.rnn` runs them. Gates are in Paddle's
order, LSTM (input, forget, cell, output) and GRU (reset, update, candidate), with Paddle's GRU
form h' = (h - c) * z + c and the reset gate applied to the projected state.

``alive`` ([time, batch, 1] booleans, or None) ends each sequence at its length, as the layer's
per-step ``where`` does: past it a sample's state stays as it was and its outputs are zero.

The math is the same as the per-step cells' (:class:`minidp.nn.LSTMCell`, :class:`minidp.nn.GRUCell`),
to float rounding; the sigmoid is computed as 0.5 * tanh(x / 2) + 0.5, which cannot overflow.
"""

from __future__ import annotations

from typing import Any, Optional

from ...core.backend import get_array_module
from ...core.op_util import matmul_arrays, results
from ...core.tensor import Tensor

__all__: list = []


def _sigmoid_(xp: Any, a: Any) -> None:
    """The logistic sigmoid of ``a``, in place."""
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5


def _time_major(xp: Any, x: Any) -> Any:
    """[batch, time, features] as a contiguous [time * batch, features] matrix."""
    batch, steps, features = x.shape
    return xp.ascontiguousarray(x.swapaxes(0, 1)).reshape(steps * batch, features)


def _input_projection(xs: Any, weight_ih: Tensor, biases: tuple, steps: int) -> Any:
    """x W_ih^T plus the given biases for every step at once, as a [time, batch, gates] buffer."""
    projected = matmul_arrays(xs, weight_ih._data.T)
    for bias in biases:
        if bias is not None:
            projected += bias._data
    return projected.reshape(steps, -1, projected.shape[-1])


def _keep_state(xp: Any, new: Any, old: Any, alive: Any) -> None:
    """Where a sequence has ended (``alive`` False), ``new`` takes the state ``old`` in place."""
    xp.copyto(new, old, where=~alive)


def _parameter_grads(d_input: Any, d_state: Any, xs: Any, hs: Any, weights: tuple, biases: tuple) -> list:
    """Gradients of W_ih, W_hh and the biases from the pre-activation gradients of all steps.

    ``d_input`` [time, batch, gates] is what reached x W_ih^T + b_ih, ``d_state`` what reached
    h W_hh^T + b_hh (the same array for an LSTM, whose gates add the two), ``hs`` the states
    the steps started from.
    """
    gates = d_input.shape[-1]
    d_in = d_input.reshape(-1, gates)
    d_st = d_in if d_state is d_input else d_state.reshape(-1, gates)
    weight_ih, weight_hh = weights
    grads = [
        None if weight_ih.stop_gradient else matmul_arrays(d_in.T, xs),
        None if weight_hh.stop_gradient else matmul_arrays(d_st.T, hs.reshape(-1, hs.shape[-1])),
    ]
    sums = {}
    for bias, d in zip(biases, (d_in, d_st)):
        if bias is None:
            continue
        if bias.stop_gradient:
            grads.append(None)
        elif id(d) in sums:  # an LSTM's two biases: equal gradients, but each leaf its own array
            grads.append(sums[id(d)].copy())
        else:
            grads.append(sums.setdefault(id(d), d.sum(axis=0)))
    return grads


def _input_grad(x: Tensor, d_input: Any, weight_ih: Tensor) -> Optional[Any]:
    """The gradient of the batch-major input from the pre-activation gradients of all steps."""
    if x.stop_gradient:
        return None
    steps, batch, gates = d_input.shape
    return matmul_arrays(d_input.reshape(-1, gates), weight_ih._data).reshape(steps, batch, -1).swapaxes(0, 1)


def _cell_grad(dh: Any, g_step: Optional[Any], alive_t: Optional[Any]) -> Any:
    """The gradient reaching a step's cell output: the next state's plus the step output's, zero
    where the sequence had ended."""
    grad = dh if g_step is None else dh + g_step
    return grad if alive_t is None else grad * alive_t


def _carried(grad: Any, from_cell: Any, alive_t: Optional[Any]) -> Any:
    """The gradient reaching a step's incoming state: through the cell, plus the part that
    passed the step by where the sequence had ended."""
    if alive_t is None:
        return from_cell
    return from_cell + grad * (1 - alive_t)


def lstm_sequence(
    x: Tensor,
    h0: Tensor,
    c0: Tensor,
    weight_ih: Tensor,
    weight_hh: Tensor,
    bias_ih: Optional[Tensor],
    bias_hh: Optional[Tensor],
    alive: Optional[Any] = None,
) -> tuple:
    """An LSTM over the batch-major sequence ``x`` [batch, time, input] from the states ``h0``,
    ``c0`` [batch, hidden]; returns (outputs [batch, time, hidden], final h, final c)."""
    xd = x._data
    xp = get_array_module(xd)
    batch, steps, _ = xd.shape
    hidden = weight_hh._data.shape[1]
    biases = (bias_ih, bias_hh)
    xs = _time_major(xp, xd)
    acts = _input_projection(xs, weight_ih, biases, steps)  # pre-activations, then activations
    w_hh_t = weight_hh._data.T
    hs = xp.empty((steps + 1, batch, hidden), dtype=xd.dtype)
    cs = xp.empty_like(hs)
    tanh_c = xp.empty((steps, batch, hidden), dtype=xd.dtype)
    hs[0], cs[0] = h0._data, c0._data
    two, three = 2 * hidden, 3 * hidden
    for t in range(steps):
        a = acts[t]
        a += matmul_arrays(hs[t], w_hh_t)
        _sigmoid_(xp, a[:, :two])
        xp.tanh(a[:, two:three], out=a[:, two:three])
        _sigmoid_(xp, a[:, three:])
        c = cs[t + 1]
        xp.multiply(a[:, hidden:two], cs[t], out=c)
        c += a[:, :hidden] * a[:, two:three]
        xp.tanh(c, out=tanh_c[t])
        xp.multiply(a[:, three:], tanh_c[t], out=hs[t + 1])
        if alive is not None:
            _keep_state(xp, hs[t + 1], hs[t], alive[t])
            _keep_state(xp, c, cs[t], alive[t])
    outputs = hs[1:] if alive is None else hs[1:] * alive
    out = outputs.swapaxes(0, 1).copy()  # its own array: the buffer is saved for backward
    alive_f = None if alive is None else alive.astype(xd.dtype)
    parents = tuple(p for p in (x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh) if p is not None)

    def backward(grads: tuple) -> tuple:
        g_out, g_h, g_c = grads
        gy = None if g_out is None else g_out.swapaxes(0, 1)  # time-major view
        # derivatives of the activations w.r.t. their pre-activations, for all steps at once
        slopes = acts * (1 - acts)
        g = acts[:, :, two:three]
        xp.multiply(g, g, out=slopes[:, :, two:three])
        xp.subtract(1, slopes[:, :, two:three], out=slopes[:, :, two:three])
        d_gates = xp.empty_like(acts)
        dh = xp.zeros((batch, hidden), dtype=xd.dtype) if g_h is None else g_h
        dc = xp.zeros((batch, hidden), dtype=xd.dtype) if g_c is None else g_c
        for t in range(steps - 1, -1, -1):
            m = None if alive_f is None else alive_f[t]
            a, d, tc = acts[t], d_gates[t], tanh_c[t]
            dh_cell = _cell_grad(dh, None if gy is None else gy[t], m)
            dc_cell = dc if m is None else dc * m
            xp.multiply(dh_cell, tc, out=d[:, three:])
            dc_cell = dc_cell + dh_cell * a[:, three:] * (1 - tc * tc)
            xp.multiply(dc_cell, a[:, two:three], out=d[:, :hidden])
            xp.multiply(dc_cell, cs[t], out=d[:, hidden:two])
            xp.multiply(dc_cell, a[:, :hidden], out=d[:, two:three])
            d *= slopes[t]
            dh = _carried(dh, matmul_arrays(d, weight_hh._data), m)
            dc = _carried(dc, dc_cell * a[:, hidden:two], m)
        grads_out = [_input_grad(x, d_gates, weight_ih), None if h0.stop_gradient else dh]
        grads_out.append(None if c0.stop_gradient else dc)
        params = _parameter_grads(d_gates, d_gates, xs, hs[:-1], (weight_ih, weight_hh), biases)
        return tuple(grads_out + params)

    return results((out, hs[steps].copy(), cs[steps].copy()), parents, backward)


def gru_sequence(
    x: Tensor,
    h0: Tensor,
    weight_ih: Tensor,
    weight_hh: Tensor,
    bias_ih: Optional[Tensor],
    bias_hh: Optional[Tensor],
    alive: Optional[Any] = None,
) -> tuple:
    """A GRU over the batch-major sequence ``x`` [batch, time, input] from the state ``h0``
    [batch, hidden]; returns (outputs [batch, time, hidden], final h)."""
    xd = x._data
    xp = get_array_module(xd)
    batch, steps, _ = xd.shape
    hidden = weight_hh._data.shape[1]
    xs = _time_major(xp, xd)
    acts = _input_projection(xs, weight_ih, (bias_ih,), steps)  # becomes r, z, candidate
    w_hh_t = weight_hh._data.T
    hs = xp.empty((steps + 1, batch, hidden), dtype=xd.dtype)
    h_cand = xp.empty((steps, batch, hidden), dtype=xd.dtype)  # the candidate's projected state
    hs[0] = h0._data
    two = 2 * hidden
    for t in range(steps):
        a = acts[t]
        hw = matmul_arrays(hs[t], w_hh_t)
        if bias_hh is not None:
            hw += bias_hh._data
        a[:, :two] += hw[:, :two]
        _sigmoid_(xp, a[:, :two])
        h_cand[t] = hw[:, two:]
        c = a[:, two:]
        c += a[:, :hidden] * h_cand[t]
        xp.tanh(c, out=c)
        h = hs[t + 1]
        xp.subtract(hs[t], c, out=h)
        h *= a[:, hidden:two]
        h += c
        if alive is not None:
            _keep_state(xp, h, hs[t], alive[t])
    outputs = hs[1:] if alive is None else hs[1:] * alive
    out = outputs.swapaxes(0, 1).copy()  # its own array: the buffer is saved for backward
    alive_f = None if alive is None else alive.astype(xd.dtype)
    parents = tuple(p for p in (x, h0, weight_ih, weight_hh, bias_ih, bias_hh) if p is not None)

    def backward(grads: tuple) -> tuple:
        g_out, g_h = grads
        gy = None if g_out is None else g_out.swapaxes(0, 1)  # time-major view
        slopes = acts * (1 - acts)
        cand = acts[:, :, two:]
        xp.multiply(cand, cand, out=slopes[:, :, two:])
        xp.subtract(1, slopes[:, :, two:], out=slopes[:, :, two:])
        d_input = xp.empty_like(acts)  # reached x W_ih^T + b_ih
        d_state = xp.empty_like(acts)  # reached h W_hh^T + b_hh
        dh = xp.zeros((batch, hidden), dtype=xd.dtype) if g_h is None else g_h
        for t in range(steps - 1, -1, -1):
            m = None if alive_f is None else alive_f[t]
            a, di, ds = acts[t], d_input[t], d_state[t]
            r, z, c = a[:, :hidden], a[:, hidden:two], a[:, two:]
            dh_cell = _cell_grad(dh, None if gy is None else gy[t], m)
            xp.subtract(hs[t], c, out=di[:, hidden:two])
            di[:, hidden:two] *= dh_cell
            xp.multiply(dh_cell, 1 - z, out=di[:, two:])
            di[:, hidden:] *= slopes[t][:, hidden:]
            xp.multiply(di[:, two:], h_cand[t], out=di[:, :hidden])
            di[:, :hidden] *= slopes[t][:, :hidden]
            ds[:, :two] = di[:, :two]
            xp.multiply(di[:, two:], r, out=ds[:, two:])
            dh = _carried(dh, dh_cell * z + matmul_arrays(ds, weight_hh._data), m)
        grads_out = [_input_grad(x, d_input, weight_ih), None if h0.stop_gradient else dh]
        params = _parameter_grads(d_input, d_state, xs, hs[:-1], (weight_ih, weight_hh), (bias_ih, bias_hh))
        return tuple(grads_out + params)

    return results((out, hs[steps].copy()), parents, backward)
