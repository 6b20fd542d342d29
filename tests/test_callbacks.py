"""minidp.callbacks (minidp.hapi.callbacks): the order in which Model calls the hooks, the
checkpoints ModelCheckpoint writes, EarlyStopping, the two learning-rate callbacks and the
progress logger's verbosity levels. The log text itself is checked against Paddle in
tests/test_model.py."""

import pytest

import minidp
from hapi_tasks import dataset, fit_case, linear_model


class Recorder(minidp.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        attribute = object.__getattribute__(self, name)
        if name.startswith("on_"):
            calls = object.__getattribute__(self, "calls")

            def recorded(*args):
                calls.append(name)
                return attribute(*args)

            return recorded
        return attribute


def test_hooks_fire_in_paddles_order():
    case = fit_case(6)
    model, data, recorder = linear_model(case), dataset(case), Recorder()
    model.fit(data, data, batch_size=3, epochs=2, eval_freq=2, verbose=0, callbacks=recorder)
    train_batches = ["on_train_batch_begin", "on_train_batch_end"] * 2
    eval_batches = ["on_eval_batch_begin", "on_eval_batch_end"] * 2
    assert recorder.calls == [
        "on_train_begin",
        *("on_epoch_begin", *train_batches, "on_epoch_end", "on_eval_begin", *eval_batches, "on_eval_end"),
        *("on_epoch_begin", *train_batches, "on_epoch_end"),
        "on_train_end",
    ]
    assert recorder.params == {"batch_size": None, "epochs": 2, "steps": 2, "verbose": 0, "metrics": ["loss", "acc"]}
    recorder.calls.clear()
    model.predict(data, batch_size=6, verbose=0, callbacks=[recorder])
    assert recorder.calls == ["on_predict_begin", "on_predict_batch_begin", "on_predict_batch_end", "on_predict_end"]


def test_model_checkpoint_saves_every_save_freq_epochs_and_at_the_end(tmp_path, capsys):
    case = fit_case(4)
    linear_model(case).fit(dataset(case), batch_size=2, epochs=3, save_dir=str(tmp_path), save_freq=2, verbose=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "0.pdopt", "0.pdparams", "2.pdopt", "2.pdparams", "final.pdopt", "final.pdparams",
    ]  # fmt: skip
    assert f"save checkpoint at {tmp_path / 'final'}" in capsys.readouterr().out
    restored = linear_model(case)
    restored.load(str(tmp_path / "final"))
    assert restored.network.weight.shape == [4, 3]


def test_early_stopping_stops_and_keeps_the_best_model(tmp_path, capsys):
    case = fit_case(6)
    model, data, recorder = linear_model(case), dataset(case), Recorder()
    stopper = minidp.callbacks.EarlyStopping(monitor="acc", mode="max", patience=1, baseline=1.01)
    model.fit(data, data, batch_size=3, epochs=5, save_dir=str(tmp_path), verbose=0, callbacks=[stopper, recorder])
    assert recorder.calls.count("on_epoch_begin") == 1 and model.stop_training
    assert "Epoch 1: Early stopping." in capsys.readouterr().out
    assert not (tmp_path / "best_model.pdparams").exists()  # the baseline was never beaten

    improving = minidp.callbacks.EarlyStopping(monitor="loss", patience=2)
    model.fit(data, data, batch_size=3, epochs=2, save_dir=str(tmp_path), verbose=0, callbacks=[improving])
    assert (tmp_path / "best_model.pdparams").exists() and improving.wait_epoch == 0


def test_lr_scheduler_steps_by_batch_or_by_epoch():
    case = fit_case(6)
    for callback, expected_epoch in (
        (minidp.callbacks.LRScheduler(), 4),
        (minidp.callbacks.LRScheduler(False, True), 2),
    ):
        model = linear_model(case)
        schedule = minidp.optimizer.lr.StepDecay(0.1, step_size=1)
        model.network.clear_gradients()
        model.prepare(minidp.optimizer.SGD(schedule, parameters=model.parameters()), minidp.nn.CrossEntropyLoss())
        model.fit(dataset(case), batch_size=3, epochs=2, verbose=0, callbacks=[callback])
        assert schedule.last_epoch == expected_epoch
    with pytest.raises(ValueError, match="by_step and by_epoch exclude each other"):
        minidp.callbacks.LRScheduler(by_step=True, by_epoch=True)


def test_reduce_lr_on_plateau_cuts_a_float_rate(capsys):
    case = fit_case(6)
    model, data = linear_model(case), dataset(case)
    reducer = minidp.callbacks.ReduceLROnPlateau(monitor="acc", mode="max", factor=0.5, patience=1, min_delta=2.0)
    model.fit(data, data, batch_size=3, epochs=2, verbose=0, callbacks=[reducer])
    assert model._optimizer.get_lr() == 0.25  # the first evaluation sets the best, the second waits and cuts
    assert "Epoch 2: ReduceLROnPlateau reducing learning rate to 0.25." in capsys.readouterr().out
    with pytest.raises(ValueError, match="factor must be below 1.0"):
        minidp.callbacks.ReduceLROnPlateau(factor=1.5)


def test_progress_logger_verbosity(capsys):
    case = fit_case(4)
    model, data = linear_model(case), dataset(case)
    model.fit(data, batch_size=2, verbose=0)
    assert capsys.readouterr().out == ""
    model.fit(data, batch_size=2, verbose=3, log_freq=1)
    line = capsys.readouterr().out.splitlines()[2]
    assert line.startswith("step 1/2 - loss: ") and "avg_reader_cost:" in line and "samples/sec" in line
    with pytest.raises(ValueError, match="log_freq must be a positive int"):
        minidp.callbacks.ProgBarLogger(log_freq=0)
    with pytest.raises(TypeError, match="must be Callback instances"):
        model.fit(data, verbose=0, callbacks=[print])


def test_the_namespaces_hold_the_same_classes():
    assert minidp.callbacks.EarlyStopping is minidp.hapi.callbacks.EarlyStopping
    assert minidp.Model is minidp.hapi.Model and minidp.summary is minidp.hapi.summary
    assert not minidp.callbacks.EarlyStopping(monitor="acc").minimise  # 'auto' maximises accuracies
    assert minidp.callbacks.EarlyStopping(monitor="loss").minimise
