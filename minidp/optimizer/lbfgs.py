"""L-BFGS: a quasi-Newton method driven by a closure that re-evaluates the loss, with Paddle's
algorithm (optionally with a strong-Wolfe line search).

The gradients of all parameters are handled as one flat vector. The last ``history_size``
steps ``s`` and gradient changes ``y`` approximate the inverse Hessian (the two-loop
recursion of Nocedal and Wright, Algorithm 7.4); the line search is their Algorithm 3.5/3.6
with cubic interpolation (their equation 3.59).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from ..core import backend
from ..core.tensor import Tensor
from ..core.op_util import wrap
from ..core.optimizer import Optimizer


def _cubic_minimum(
    x1: float, f1: float, g1: float, x2: float, f2: float, g2: float, bounds: Optional[tuple] = None
) -> float:
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clipped to
    ``bounds`` (default: between the two points); their midpoint when the cubic has none."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    discriminant = d1 * d1 - g1 * g2
    if discriminant < 0:
        return (low + high) / 2.0
    d2 = discriminant**0.5
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(position, low), high)


class _Point:
    """One trial of the line search: step, loss, flat gradient and slope along the direction."""

    __slots__ = ("step", "loss", "grad", "slope")

    def __init__(self, step: float, loss: float, grad: Any, slope: float) -> None:
        self.step, self.loss, self.grad, self.slope = step, loss, grad, slope


def _strong_wolfe(
    evaluate: Callable[[float], tuple],
    direction: Any,
    start: _Point,
    step: float,
    tolerance_change: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    max_ls: int = 25,
) -> tuple:
    """A step along ``direction`` satisfying the strong Wolfe conditions: first bracket one, then
    zoom in. ``evaluate(step) -> (loss, flat grad)``. Returns (loss, grad, step, evaluations)."""

    def trial(at: float) -> _Point:
        loss, grad = evaluate(at)
        return _Point(at, loss, grad, float((grad * direction).sum()))

    largest = float(abs(direction).max())
    new = trial(step)
    evaluations, previous = 1, start
    bracket: list = []
    found = False
    iteration = 0
    while iteration < max_ls:
        if new.loss > start.loss + c1 * new.step * start.slope or (iteration > 1 and new.loss >= previous.loss):
            bracket = [previous, new]
            break
        if abs(new.slope) <= -c2 * start.slope:
            bracket, found = [new], True
            break
        if new.slope >= 0:
            bracket = [previous, new]
            break
        next_step = _cubic_minimum(
            previous.step,
            previous.loss,
            previous.slope,
            new.step,
            new.loss,
            new.slope,
            bounds=(new.step + 0.01 * (new.step - previous.step), new.step * 10),
        )
        previous, new = new, trial(next_step)
        evaluations += 1
        iteration += 1
    if iteration == max_ls:
        bracket = [start, new]
    low, high = (0, 1) if bracket[0].loss <= bracket[-1].loss else (1, 0)
    insufficient_progress = False
    while not found and iteration < max_ls:
        left, right = bracket[0].step, bracket[1].step
        if abs(right - left) * largest < tolerance_change:
            break
        step = _cubic_minimum(left, bracket[0].loss, bracket[0].slope, right, bracket[1].loss, bracket[1].slope)
        lower, upper = min(left, right), max(left, right)
        margin = 0.1 * (upper - lower)
        if min(upper - step, step - lower) < margin:
            if insufficient_progress or step >= upper or step <= lower:
                step = upper - margin if abs(step - upper) < abs(step - lower) else lower + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        new = trial(step)
        evaluations += 1
        iteration += 1
        if new.loss > start.loss + c1 * new.step * start.slope or new.loss >= bracket[low].loss:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].loss <= bracket[1].loss else (1, 0)
        else:
            if abs(new.slope) <= -c2 * start.slope:
                found = True
            elif new.slope * (bracket[high].step - bracket[low].step) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = new
    best = bracket[low]
    return best.loss, best.grad, best.step, evaluations


class LBFGS(Optimizer):
    """L-BFGS. Each :meth:`step` takes ``closure``, a function that clears the gradients,
    computes the loss, calls ``loss.backward()`` and returns the loss; it may call it up to
    ``max_eval`` times and iterates up to ``max_iter`` times, stopping early when the gradient
    falls below ``tolerance_grad`` or the loss or step changes less than ``tolerance_change``.
    ``line_search_fn`` is None (fixed steps of ``learning_rate``) or ``'strong_wolfe'``.

    As in Paddle, ``weight_decay`` and ``grad_clip`` are accepted but the update uses the raw
    gradients, and parameter groups share one set of options.
    """

    def __init__(
        self,
        learning_rate: float = 1.0,
        max_iter: int = 20,
        max_eval: Optional[int] = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: Optional[str] = None,
        parameters: Optional[Iterable] = None,
        weight_decay: Optional[float] = None,
        grad_clip: Any = None,
        name: Optional[str] = None,
    ) -> None:
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        for label, value in (("max_iter", max_iter), ("history_size", history_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"LBFGS: {label} must be a positive int, got {value!r}")
        self.max_iter, self.max_eval = max_iter, max_iter * 5 // 4 if max_eval is None else max_eval
        self.tolerance_grad, self.tolerance_change = float(tolerance_grad), float(tolerance_change)
        self.history_size, self.line_search_fn = history_size, line_search_fn
        self.state: dict = {}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, {})

    # --- flat views of the parameters ------------------------------------------------------
    def _flat_grad(self) -> Any:
        params = self._parameter_list
        xp = backend.get_array_module(params[0]._data)
        return xp.concatenate(
            [(p._grad if p._grad is not None else xp.zeros_like(p._data)).reshape(-1) for p in params]
        )

    def _move(self, step: float, direction: Any) -> None:
        """Every parameter += step * its part of ``direction``."""
        offset = 0
        for param in self._parameter_list:
            data = param._data
            data += (step * direction[offset : offset + data.size]).reshape(data.shape).astype(data.dtype, copy=False)
            offset += data.size

    def _evaluate_at(self, closure: Callable, step: float, direction: Any) -> tuple:
        """Loss and flat gradient at ``step`` along ``direction``; the parameters are put back."""
        saved = [param._data.copy() for param in self._parameter_list]
        self._move(step, direction)
        loss = float(closure())
        grad = self._flat_grad()
        for param, data in zip(self._parameter_list, saved):
            param._data[...] = data
        return loss, grad

    # --- the update -------------------------------------------------------------------------
    def _direction(self, grad: Any, state: dict) -> Any:
        """-H grad by the two-loop recursion over the stored steps and gradient changes."""
        steps, changes, rhos = state["old_sk"], state["old_yk"], state["ro"]
        q = -grad
        alphas = []
        for s, y, rho in zip(reversed(steps), reversed(changes), reversed(rhos)):
            alpha = float((s * q).sum()) * rho
            q = q - alpha * y
            alphas.append(alpha)
        r = q * state["H_diag"]
        for s, y, rho, alpha in zip(steps, changes, rhos, reversed(alphas)):
            beta = float((y * r).sum()) * rho
            r = r + s * (alpha - beta)
        return r

    def _remember(self, grad: Any, state: dict) -> None:
        """Store the last step and gradient change when the curvature is positive."""
        y = grad - state["prev_flat_grad"]
        s = state["d"] * state["alpha"]
        curvature = float((y * s).sum())
        if curvature > 1e-10:
            if len(state["old_yk"]) == self.history_size:
                for key in ("old_yk", "old_sk", "ro"):
                    state[key].pop(0)
            state["old_yk"].append(y)
            state["old_sk"].append(s)
            state["ro"].append(1.0 / curvature)
            state["H_diag"] = curvature / float((y * y).sum())

    def step(self, closure: Callable[[], Tensor]) -> Tensor:
        """Minimise with up to ``max_iter`` iterations; returns the loss ``closure`` gave first."""
        if not callable(closure):
            raise TypeError(
                "LBFGS.step: pass closure, a function that clears the gradients, computes the loss, "
                "calls loss.backward() and returns the loss"
            )
        state = self.state
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        first_loss = closure()
        loss = float(first_loss)
        evaluations = 1
        state["func_evals"] += 1
        grad = self._flat_grad()
        if float(abs(grad).max()) <= self.tolerance_grad:
            return first_loss
        rate = self.get_lr()
        for iteration in range(1, self.max_iter + 1):
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                state.update(d=-grad, old_yk=[], old_sk=[], ro=[], H_diag=1.0)
            else:
                self._remember(grad, state)
                state["d"] = self._direction(grad, state)
            direction = state["d"]
            state["prev_flat_grad"], state["prev_loss"] = grad.copy(), loss
            step = min(1.0, 1.0 / float(abs(grad).sum())) * rate if state["n_iter"] == 1 else rate
            slope = float((grad * direction).sum())
            if slope > -self.tolerance_change:
                break
            spent = 0
            if self.line_search_fn == "strong_wolfe":
                loss, grad, step, spent = _strong_wolfe(
                    lambda at: self._evaluate_at(closure, at, direction),
                    direction,
                    _Point(0.0, loss, grad, slope),
                    step,
                    self.tolerance_change,
                )
                self._move(step, direction)
            else:
                self._move(step, direction)
                if iteration != self.max_iter:
                    loss = float(closure())
                    grad = self._flat_grad()
                    spent = 1
            state["alpha"] = step
            evaluations += spent
            state["func_evals"] += spent
            if (
                iteration == self.max_iter
                or evaluations >= self.max_eval
                or float(abs(grad).max()) <= self.tolerance_grad
                or float(abs(direction * step).max()) <= self.tolerance_change
                or abs(loss - state["prev_loss"]) < self.tolerance_change
            ):
                break
        return first_loss

    def minimize(
        self, loss: Tensor, startup_program: Any = None, parameters: Optional[Iterable] = None, no_grad_set: Any = None
    ) -> tuple:
        """Refused, as in Paddle: L-BFGS needs to re-evaluate the loss; call ``step(closure)``."""
        raise TypeError(
            "LBFGS.minimize: L-BFGS re-evaluates the loss several times per step; call "
            "opt.step(closure) with a closure that computes the loss and calls backward()"
        )

    def apply_gradients(self, params_grads: Iterable) -> list:
        """Refused: L-BFGS updates only through ``step(closure)``."""
        raise TypeError("LBFGS.apply_gradients: L-BFGS updates only through opt.step(closure)")

    # --- state ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Paddle's layout: ``{'state': {...}}`` with the counters, the last direction and step,
        the history lists and the previous gradient and loss (arrays as tensors)."""

        def export(value: Any) -> Any:
            if isinstance(value, list):
                return [export(v) for v in value]
            return wrap(value) if hasattr(value, "shape") and not isinstance(value, Tensor) else value

        return {"state": {key: export(value) for key, value in self.state.items()}}

    def set_state_dict(self, state_dict: dict) -> None:
        """Restore :meth:`state_dict`."""
        if not isinstance(state_dict, dict) or not isinstance(state_dict.get("state"), dict):
            raise ValueError("LBFGS.set_state_dict: expected {'state': {...}} as LBFGS.state_dict() returns")
        xp = backend.get_array_module(self._parameter_list[0]._data)

        def restore(value: Any) -> Any:
            if isinstance(value, list):
                return [restore(v) for v in value]
            if isinstance(value, Tensor):
                value = value._data
            return xp.array(value, copy=True) if hasattr(value, "shape") and value.ndim else value

        self.state = {key: restore(value) for key, value in state_dict["state"].items()}

    set_dict = set_state_dict
