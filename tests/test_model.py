"""minidp.hapi.model: Model's loops against Paddle 3.3.1 (tests/fixtures/paddle_hapi.json, from
tools/record_paddle_hapi.py) and against a hand-written loop; checkpoints; errors; and a 2- and 3-rank
fit + evaluate whose metric covers every sample once."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

import minidp
from dist_utils import run_workers
from hapi_tasks import dataset, distributed_fit_worker, fit_case, linear_model

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "paddle_hapi.json").read_text())["fit"]


class StepLog(minidp.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.steps = []

    def on_train_batch_end(self, step, logs=None):
        self.steps.append([logs["loss"][0], logs["acc"]])


def _without_timings(text: str) -> list:
    return [re.sub(r"\d+(us|ms|s)/step", "T/step", line) for line in text.splitlines()]


def test_fit_evaluate_predict_match_paddle(capsys):
    case = fit_case()
    model, data, steps = linear_model(case), dataset(case), StepLog()
    model.fit(data, data, batch_size=4, epochs=2, shuffle=False, verbose=2, log_freq=1, callbacks=[steps])
    result = model.evaluate(data, batch_size=4, verbose=2, log_freq=2)
    predictions = model.predict(data, batch_size=4, stack_outputs=True, verbose=2)
    np.testing.assert_allclose(steps.steps, FIXTURE["steps"], rtol=1e-5, atol=1e-6)
    assert result["acc"] == FIXTURE["evaluate"]["acc"]
    np.testing.assert_allclose(result["loss"][0], FIXTURE["evaluate"]["loss"], rtol=1e-5)
    np.testing.assert_allclose(predictions[0], FIXTURE["predict"], rtol=1e-5, atol=1e-6)
    assert _without_timings(capsys.readouterr().out) == _without_timings(FIXTURE["log"])


def test_fit_with_minidp_metric_accuracy_matches_the_recorded_run():
    """The same fit with minidp.metric.Accuracy, Paddle's own metric class, in place of the
    counting accuracy: the same accuracy after every step and in evaluation."""
    case = fit_case()
    model, data, steps = linear_model(case, metric=minidp.metric.Accuracy()), dataset(case), StepLog()
    model.fit(data, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[steps])
    result = model.evaluate(data, batch_size=4, verbose=0)
    np.testing.assert_allclose(steps.steps, FIXTURE["steps"], rtol=1e-5, atol=1e-6)
    assert result["acc"] == pytest.approx(FIXTURE["evaluate"]["acc"])


def test_predict_without_stacking_returns_each_batch_per_output():
    case = fit_case()
    outputs = linear_model(case).predict(dataset(case), batch_size=4, verbose=0)
    assert len(outputs) == 1 and [batch.shape for batch in outputs[0]] == [(4, 3), (4, 3), (2, 3)]


class MLP(minidp.nn.Layer):
    def __init__(self):
        super().__init__()
        self.hidden = minidp.nn.Linear(4, 8)
        self.out = minidp.nn.Linear(8, 3)

    def forward(self, x):
        return self.out(minidp.tanh(self.hidden(x)))


@pytest.mark.parametrize("accumulate", [1, 2])
def test_fit_losses_equal_a_hand_written_loop(accumulate):
    case = fit_case()
    minidp.seed(3)
    net, reference = MLP(), MLP()
    reference.set_state_dict(net.state_dict())
    model = minidp.Model(net)
    model.prepare(minidp.optimizer.Adam(0.05, parameters=net.parameters()), minidp.nn.CrossEntropyLoss())
    seen = []

    class Losses(minidp.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            seen.append(logs["loss"][0])

    model.fit(
        dataset(case), batch_size=3, epochs=2, shuffle=False, verbose=0, callbacks=[Losses()],
        accumulate_grad_batches=accumulate,
    )  # fmt: skip
    optimizer = minidp.optimizer.Adam(0.05, parameters=reference.parameters())
    expected, starts = [], list(range(0, 10, 3))
    for _ in range(2):
        for step, start in enumerate(starts):
            x, y = minidp.to_tensor(case["x"][start : start + 3]), minidp.to_tensor(case["y"][start : start + 3])
            loss = minidp.nn.functional.cross_entropy(reference(x), y)
            loss.backward()
            if (step + 1) % accumulate == 0 or step + 1 == len(starts):
                optimizer.step()
                optimizer.clear_grad()
            expected.append(float(loss))
    np.testing.assert_allclose(seen, expected, rtol=1e-6)
    np.testing.assert_allclose(net.out.weight.numpy(), reference.out.weight.numpy(), rtol=1e-6)


def test_num_iters_stops_training_after_that_many_steps():
    case = fit_case()
    model, steps = linear_model(case), StepLog()
    model.fit(dataset(case), batch_size=4, epochs=5, verbose=0, num_iters=4, callbacks=[steps])
    assert len(steps.steps) == 4


def test_train_eval_predict_batch_return_paddle_shapes():
    case = fit_case()
    model = linear_model(case)
    losses, metrics = model.train_batch([case["x"][:4]], [case["y"][:4]])
    assert len(losses) == 1 and losses[0].shape == () and metrics == [0.25]
    losses, metrics = model.eval_batch([case["x"][:4]], [case["y"][:4]])
    assert isinstance(losses[0], np.ndarray) and len(metrics) == 1
    assert model.predict_batch([case["x"][:2]])[0].shape == (2, 3)
    assert model.parameters() == model.network.parameters()


def test_save_and_load_round_trip_network_and_optimizer(tmp_path):
    case = fit_case()
    net = minidp.nn.Linear(4, 3)
    model = minidp.Model(net)
    model.prepare(minidp.optimizer.Adam(0.1, parameters=net.parameters()), minidp.nn.CrossEntropyLoss())
    model.fit(dataset(case), batch_size=4, verbose=0)
    model.save(str(tmp_path / "ckpt" / "m"))
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["m.pdopt", "m.pdparams"]

    other_net = minidp.nn.Linear(4, 3)
    other = minidp.Model(other_net)
    other.prepare(minidp.optimizer.Adam(0.1, parameters=other_net.parameters()), minidp.nn.CrossEntropyLoss())
    other.load(str(tmp_path / "ckpt" / "m.pdparams"))
    np.testing.assert_array_equal(other_net.weight.numpy(), net.weight.numpy())
    saved, loaded = model._optimizer.state_dict(), other._optimizer.state_dict()
    moments = [(k, v) for k, v in saved.items() if isinstance(v, minidp.Tensor)]
    restored = [(k, v) for k, v in loaded.items() if isinstance(v, minidp.Tensor)]
    assert len(moments) == len(restored) > 0  # keys name each model's own parameters: compare in order
    for (_, value), (_, back) in zip(moments, restored):
        np.testing.assert_array_equal(back.numpy(), value.numpy())


def test_load_reports_or_skips_a_mismatched_parameter(tmp_path):
    model = minidp.Model(minidp.nn.Linear(4, 3))
    model.save(str(tmp_path / "m"))
    wider = minidp.Model(minidp.nn.Linear(4, 5))
    with pytest.raises(ValueError, match=r"weight has shape \[4, 3\].*expects \[4, 5\].*skip_mismatch"):
        wider.load(str(tmp_path / "m"))
    kept = wider.network.bias.numpy().copy()
    with pytest.warns(UserWarning) as caught:
        wider.load(str(tmp_path / "m"), skip_mismatch=True)
    assert [str(w.message).split(" has")[0] for w in caught] == [
        "Model.load: skipped weight",
        "Model.load: skipped bias",
    ]
    np.testing.assert_array_equal(wider.network.bias.numpy(), kept)
    with pytest.raises(FileNotFoundError, match="no parameters"):
        wider.load(str(tmp_path / "absent"))


def test_bad_input_is_refused_with_the_fix():
    model = minidp.Model(minidp.nn.Linear(4, 3))
    with pytest.raises(TypeError, match="network must be a minidp.nn.Layer"):
        minidp.Model(lambda x: x)
    with pytest.raises(RuntimeError, match=r"call model.prepare\(optimizer, loss\)"):
        model.train_batch([np.zeros((1, 4), "float32")], [np.zeros((1, 1), "int64")])
    with pytest.raises(TypeError, match="Metric protocol.*lacks compute, update, accumulate, reset, name"):
        model.prepare(metrics=[object()])
    with pytest.raises(TypeError, match="loss must be a Layer or a callable"):
        model.prepare(loss="mse")
    with pytest.raises(ValueError, match="no automatic mixed precision"):
        model.prepare(amp_configs="O1")
    with pytest.raises(ValueError, match="train_data must be given"):
        model.fit()
    with pytest.raises(ValueError, match="epochs must be a positive int"):
        model.fit(dataset(fit_case()), epochs=0)
    with pytest.raises(ValueError, match=r"Model.save\(path\) or minidp.save"):
        model.save("unused", training=False)
    with pytest.raises(ValueError, match="give input_size"):
        model.summary()


def test_summary_uses_the_shapes_of_inputs(capsys):
    class Spec:
        shape = [None, 4]

    info = minidp.Model(minidp.nn.Linear(4, 3), inputs=[Spec()]).summary()
    assert info == {"total_params": 15, "trainable_params": 15} and "[[1, 4]]" in capsys.readouterr().out


@pytest.mark.parametrize(
    "world_size, minidp_accuracy",
    [(2, False), (2, True), (3, True)],
    ids=["2-ranks-counting-metric", "2-ranks-minidp-accuracy", "3-ranks-minidp-accuracy"],
)
def test_ranks_fit_and_evaluate_over_every_sample_once(world_size, minidp_accuracy):
    samples = 7  # ranks of batch 2: the sampler repeats samples to pad the last round
    ranks = run_workers(
        distributed_fit_worker,
        world_size,
        args=(samples, minidp_accuracy),
        timeout=120,
        env={"PADDLE_DISTRI_BACKEND": "gloo"},
    )
    assert [r["rank"] for r in ranks] == list(range(world_size)) and {r["wrapped"] for r in ranks} == {"DataParallel"}
    for rank in ranks[1:]:
        np.testing.assert_array_equal(ranks[0]["weight"], rank["weight"])
    case = fit_case(samples)
    model = linear_model(case)
    model.network.set_state_dict(
        {"weight": minidp.to_tensor(ranks[0]["weight"]), "bias": minidp.to_tensor(ranks[0]["bias"])}
    )
    single = model.evaluate(dataset(case), batch_size=2, verbose=0)
    assert [r["acc"] for r in ranks] == [single["acc"]] * world_size
    assert [r["evaluated"] for r in ranks] == [samples] * world_size
