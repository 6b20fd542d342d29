"""Whole-sequence LSTM and GRU ops: one graph node per layer and direction, backward through time.

Built from per-step ops, a recurrent layer records a dozen graph nodes per time step, each with
its own small arrays and Python overhead, and its weights collect one gradient per step. These
ops run the whole sequence at once instead:

- the input projection of every step is one matmul ([time * batch, input] @ W_ih^T);
- each step does one matmul with W_hh and a few in-place elementwise updates on its slice of a
  buffer that keeps the activations the backward needs;
- the backward walks the steps in reverse (backpropagation through time), writing each step's
  gate gradients into one buffer; the weights' and the input's gradients are then three matmuls
  over all steps together, so nothing is accumulated step by step.

Inside, arrays are time-major and feature-major, [time, features, batch]: a step's gates
[gates * hidden, batch] come from W_hh @ h with h kept as [hidden, batch], and each gate is a
contiguous block of rows, so the per-step elementwise work runs on contiguous memory (on
[batch, gates * hidden] column slices each NumPy call costs two to three times as much, and
those calls are most of a step). The ops take and return batch-major sequences as
:mod:`minidp.nn.layers.rnn` runs them. Gates are in Paddle's order, LSTM (input, forget, cell,
output) and GRU (reset, update, candidate), with Paddle's GRU form h' = (h - c) * z + c and the
reset gate applied to the projected state.

``alive`` ([time, batch, 1] booleans, or None) ends each sequence at its length, as the layer's
per-step ``where`` does: past it a sample's state stays as it was and its outputs are zero.

The math is the same as the per-step cells' (:class:`minidp.nn.LSTMCell`, :class:`minidp.nn.GRUCell`),
to float rounding; the sigmoid is computed as 0.5 * tanh(x / 2) + 0.5, which cannot overflow.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from ...core.backend import get_array_module
from ...core.op_util import matmul_arrays, results
from ...core.tensor import Tensor

__all__: list = []


class RecurrentWeights(NamedTuple):
    """A cell's weights as both ops take them: ``weight_ih`` [gates * hidden, input],
    ``weight_hh`` [gates * hidden, hidden] and the biases [gates * hidden] (each may be None)."""

    weight_ih: Tensor
    weight_hh: Tensor
    bias_ih: Optional[Tensor]
    bias_hh: Optional[Tensor]


def _sigmoid_(xp: Any, a: Any) -> None:
    """The logistic sigmoid of ``a``, in place."""
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5


def _input_projection(xp: Any, xs: Any, weight_ih: Tensor, biases: tuple, steps: int) -> Any:
    """x W_ih^T plus the given biases for every step at once, as a [time, gates, batch] buffer
    (``xs``: the input as [time * batch, input])."""
    projected = matmul_arrays(xs, weight_ih._data.T)
    for bias in biases:
        if bias is not None:
            projected += bias._data
    return xp.ascontiguousarray(projected.reshape(steps, -1, projected.shape[-1]).transpose(0, 2, 1))


def _keep_state(xp: Any, new: Any, old: Any, alive: Any) -> None:
    """Where a sequence has ended (``alive`` False), ``new`` takes the state ``old`` in place."""
    xp.copyto(new, old, where=~alive)


def _batch_major(states: Any) -> Any:
    """[time, hidden, batch] states as a new [batch, time, hidden] array."""
    return states.transpose(2, 0, 1).copy()


def _gate_rows(d: Any) -> Any:
    """[time, gates, batch] gradients as a [time * batch, gates] matrix (rows in time, then
    batch order, as the input's)."""
    return d.transpose(0, 2, 1).reshape(-1, d.shape[1])


def _parameter_and_input_grads(
    x: Tensor, xs: Any, hs: Any, d_input: Any, d_state: Any, weights: tuple, biases: tuple
) -> list:
    """Gradients of x, W_ih, W_hh and the biases from the pre-activation gradients of all steps.

    ``d_input`` [time, gates, batch] is what reached x W_ih^T + b_ih, ``d_state`` what reached
    h W_hh^T + b_hh (the same array for an LSTM, whose gates add the two), ``hs`` the states
    [time, hidden, batch] the steps started from, ``xs`` the input as [time * batch, input].
    """
    weight_ih, weight_hh = weights
    d_in = _gate_rows(d_input)
    d_st = d_in if d_state is d_input else _gate_rows(d_state)
    steps, batch = d_input.shape[0], d_input.shape[2]
    gx = None
    if not x.stop_gradient:
        gx = matmul_arrays(d_in, weight_ih._data).reshape(steps, batch, -1).swapaxes(0, 1)
    grads = [
        gx,
        None if weight_ih.stop_gradient else matmul_arrays(d_in.T, xs),
        None if weight_hh.stop_gradient else matmul_arrays(d_st.T, hs.transpose(0, 2, 1).reshape(-1, hs.shape[1])),
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


def _initial_grad(xp: Any, g: Optional[Any], shape: tuple, dtype: Any) -> Any:
    """The gradient of a final state, [batch, hidden], as [hidden, batch] (zeros when none came)."""
    return xp.zeros(shape, dtype=dtype) if g is None else g.T


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


def _sequence_setup(x: Tensor, weight_hh: Tensor, alive: Optional[Any]) -> tuple:
    """What both ops start from: the array module, sizes, the input as [time * batch, input],
    the state buffer [time + 1, hidden, batch] and ``alive`` as [time, 1, batch] (bools and
    0/1 values) or Nones."""
    xd = x._data
    xp = get_array_module(xd)
    batch, steps, _ = xd.shape
    hidden = weight_hh._data.shape[1]
    xs = xp.ascontiguousarray(xd.swapaxes(0, 1)).reshape(steps * batch, -1)
    hs = xp.empty((steps + 1, hidden, batch), dtype=xd.dtype)
    keep = None if alive is None else alive.transpose(0, 2, 1)
    keep_f = None if keep is None else keep.astype(xd.dtype)
    return xp, batch, steps, hidden, xs, hs, keep, keep_f


def _outputs(hs: Any, keep: Optional[Any]) -> Any:
    """The step outputs [batch, time, hidden]: the states, zero where a sequence had ended."""
    return _batch_major(hs[1:] if keep is None else hs[1:] * keep)


def lstm_sequence(x: Tensor, h0: Tensor, c0: Tensor, weights: RecurrentWeights, alive: Optional[Any] = None) -> tuple:
    """An LSTM over the batch-major sequence ``x`` [batch, time, input] from the states ``h0``,
    ``c0`` [batch, hidden]; returns (outputs [batch, time, hidden], final h, final c)."""
    weight_ih, weight_hh, bias_ih, bias_hh = weights
    xp, batch, steps, hidden, xs, hs, keep, keep_f = _sequence_setup(x, weight_hh, alive)
    dtype = xs.dtype
    biases = (bias_ih, bias_hh)
    acts = _input_projection(xp, xs, weight_ih, biases, steps)  # pre-activations, then activations
    w_hh = weight_hh._data
    cs = xp.empty_like(hs)
    tanh_c = xp.empty((steps, hidden, batch), dtype=dtype)
    hs[0], cs[0] = h0._data.T, c0._data.T
    two, three = 2 * hidden, 3 * hidden
    for t in range(steps):
        a = acts[t]
        a += matmul_arrays(w_hh, hs[t])
        _sigmoid_(xp, a[:two])
        xp.tanh(a[two:three], out=a[two:three])
        _sigmoid_(xp, a[three:])
        c = cs[t + 1]
        xp.multiply(a[hidden:two], cs[t], out=c)
        c += a[:hidden] * a[two:three]
        xp.tanh(c, out=tanh_c[t])
        xp.multiply(a[three:], tanh_c[t], out=hs[t + 1])
        if keep is not None:
            _keep_state(xp, hs[t + 1], hs[t], keep[t])
            _keep_state(xp, c, cs[t], keep[t])
    out = _outputs(hs, keep)
    parents = tuple(p for p in (x, h0, c0, *weights) if p is not None)

    def backward(grads: tuple) -> tuple:
        g_out, g_h, g_c = grads
        gy = None if g_out is None else xp.ascontiguousarray(g_out.transpose(1, 2, 0))
        # derivatives of the activations w.r.t. their pre-activations, for all steps at once
        slopes = acts * (1 - acts)
        g = acts[:, two:three]
        xp.multiply(g, g, out=slopes[:, two:three])
        xp.subtract(1, slopes[:, two:three], out=slopes[:, two:three])
        d_gates = xp.empty_like(acts)
        w_hh_t = xp.ascontiguousarray(w_hh.T)  # BLAS is slower on the transposed view
        dh = _initial_grad(xp, g_h, (hidden, batch), dtype)
        dc = _initial_grad(xp, g_c, (hidden, batch), dtype)
        for t in range(steps - 1, -1, -1):
            m = None if keep_f is None else keep_f[t]
            a, d, tc = acts[t], d_gates[t], tanh_c[t]
            dh_cell = _cell_grad(dh, None if gy is None else gy[t], m)
            dc_cell = dc if m is None else dc * m
            xp.multiply(dh_cell, tc, out=d[three:])
            dc_cell = dc_cell + dh_cell * a[three:] * (1 - tc * tc)
            xp.multiply(dc_cell, a[two:three], out=d[:hidden])
            xp.multiply(dc_cell, cs[t], out=d[hidden:two])
            xp.multiply(dc_cell, a[:hidden], out=d[two:three])
            d *= slopes[t]
            dh = _carried(dh, matmul_arrays(w_hh_t, d), m)
            dc = _carried(dc, dc_cell * a[hidden:two], m)
        grads_in = _parameter_and_input_grads(x, xs, hs[:-1], d_gates, d_gates, (weight_ih, weight_hh), biases)
        initial = [None if h0.stop_gradient else dh.T, None if c0.stop_gradient else dc.T]
        return tuple(grads_in[:1] + initial + grads_in[1:])

    return results((out, hs[steps].T.copy(), cs[steps].T.copy()), parents, backward)


def gru_sequence(x: Tensor, h0: Tensor, weights: RecurrentWeights, alive: Optional[Any] = None) -> tuple:
    """A GRU over the batch-major sequence ``x`` [batch, time, input] from the state ``h0``
    [batch, hidden]; returns (outputs [batch, time, hidden], final h)."""
    weight_ih, weight_hh, bias_ih, bias_hh = weights
    xp, batch, steps, hidden, xs, hs, keep, keep_f = _sequence_setup(x, weight_hh, alive)
    dtype = xs.dtype
    acts = _input_projection(xp, xs, weight_ih, (bias_ih,), steps)  # becomes r, z, candidate
    w_hh = weight_hh._data
    b_hh = None if bias_hh is None else bias_hh._data[:, None]
    h_cand = xp.empty((steps, hidden, batch), dtype=dtype)  # the candidate's projected state
    hs[0] = h0._data.T
    two = 2 * hidden
    for t in range(steps):
        a = acts[t]
        hw = matmul_arrays(w_hh, hs[t])
        if b_hh is not None:
            hw += b_hh
        a[:two] += hw[:two]
        _sigmoid_(xp, a[:two])
        h_cand[t] = hw[two:]
        c = a[two:]
        c += a[:hidden] * h_cand[t]
        xp.tanh(c, out=c)
        h = hs[t + 1]
        xp.subtract(hs[t], c, out=h)
        h *= a[hidden:two]
        h += c
        if keep is not None:
            _keep_state(xp, h, hs[t], keep[t])
    out = _outputs(hs, keep)
    parents = tuple(p for p in (x, h0, *weights) if p is not None)

    def backward(grads: tuple) -> tuple:
        g_out, g_h = grads
        gy = None if g_out is None else xp.ascontiguousarray(g_out.transpose(1, 2, 0))
        slopes = acts * (1 - acts)
        cand = acts[:, two:]
        xp.multiply(cand, cand, out=slopes[:, two:])
        xp.subtract(1, slopes[:, two:], out=slopes[:, two:])
        d_input = xp.empty_like(acts)  # reached x W_ih^T + b_ih
        d_state = xp.empty_like(acts)  # reached h W_hh^T + b_hh
        w_hh_t = xp.ascontiguousarray(w_hh.T)
        dh = _initial_grad(xp, g_h, (hidden, batch), dtype)
        for t in range(steps - 1, -1, -1):
            m = None if keep_f is None else keep_f[t]
            a, di, ds = acts[t], d_input[t], d_state[t]
            r, z, c = a[:hidden], a[hidden:two], a[two:]
            dh_cell = _cell_grad(dh, None if gy is None else gy[t], m)
            xp.subtract(hs[t], c, out=di[hidden:two])
            di[hidden:two] *= dh_cell
            xp.multiply(dh_cell, 1 - z, out=di[two:])
            di[hidden:] *= slopes[t][hidden:]
            xp.multiply(di[two:], h_cand[t], out=di[:hidden])
            di[:hidden] *= slopes[t][:hidden]
            ds[:two] = di[:two]
            xp.multiply(di[two:], r, out=ds[two:])
            dh = _carried(dh, dh_cell * z + matmul_arrays(w_hh_t, ds), m)
        grads_in = _parameter_and_input_grads(
            x, xs, hs[:-1], d_input, d_state, (weight_ih, weight_hh), (bias_ih, bias_hh)
        )
        return tuple(grads_in[:1] + [None if h0.stop_gradient else dh.T] + grads_in[1:])

    return results((out, hs[steps].T.copy()), parents, backward)
