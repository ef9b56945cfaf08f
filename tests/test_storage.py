"""Every file through tf.io.gfile: a whole run on TensorFlow's in-memory filesystem."""

import os
import uuid

import pytest
import tensorflow as tf
from test_text_problems import ENGLISH, GERMAN

from t2t_lite import experiment, run_dir
from t2t_lite.data import problem
from t2t_lite.decoding import runner
from t2t_lite.export import exporter
from t2t_lite.training import averaging, trainer


def write(path: str, lines: list[str]) -> None:
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))


@pytest.mark.slow
def test_datagen_train_resume_decode_average_export_on_ram(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)  # anything written locally by mistake would land here
    root = f"ram://t2t-{uuid.uuid4().hex}"
    sources = [f"{GERMAN[i % 5]} {i}" for i in range(40)]
    targets = [f"{ENGLISH[i % 5]} {i}" for i in range(40)]
    write(f"{root}/user/train.de", sources)
    write(f"{root}/user/train.en", targets)
    write(
        f"{root}/user/dev.tsv", [f"{s}\t{t}" for s, t in zip(sources[:8], targets[:8], strict=True)]
    )
    write(f"{root}/user/input.txt", ["zwei Hunde", "", "eine Katze"])
    data_dir, output_dir = f"{root}/data", f"{root}/run"

    prob = problem.get("translate_from_files")
    prob.configure(
        data_dir, [f"{root}/user/train.de", f"{root}/user/train.en"], [f"{root}/user/dev.tsv"], 120
    )
    assert prob.generate_data(data_dir) == {"train": 40, "dev": 8}

    exp = experiment.Experiment.resolve(
        "transformer", "translate_from_files", "transformer_test", "batch_size=128"
    )
    loop = {"local_eval_frequency": 2, "eval_bleu_examples": 4, "keep_best": "dev/loss"}
    trainer.train(exp, data_dir, output_dir, trainer.TrainConfig(train_steps=2, **loop))
    with caplog.at_level("INFO"):
        trainer.train(exp, data_dir, output_dir, trainer.TrainConfig(train_steps=4, **loop))
    assert "at step 2" in caplog.text  # resumed from the ram:// checkpoint
    assert tf.train.latest_checkpoint(output_dir) == f"{output_dir}/model.ckpt-4"

    decoded_path = f"{root}/user/input.txt.decoded"
    loaded, model, _ = run_dir.open_run(output_dir)
    decoder = runner.make_decoder(model, "extra_length=3")
    assert runner.decode_file(decoder, loaded, f"{root}/user/input.txt", decoded_path) == []
    assert len(tf.io.gfile.GFile(decoded_path).read().splitlines()) == 3
    _, _, best = run_dir.open_run(output_dir, f"{output_dir}/best")  # --keep_best's checkpoint
    assert best.startswith(f"{output_dir}/best/model.ckpt-")

    averaged = averaging.run(output_dir, 2, [])
    assert averaged == f"{output_dir}/averaged/model.ckpt-4"
    exported = exporter.export(output_dir, f"{root}/export", checkpoint_path=averaged)
    served = tf.saved_model.load(exported).signatures["serving_default"]
    assert served(inputs=tf.constant(["zwei Hunde"]))["status"].numpy().tolist() == [b"ok"]

    for name in (
        "data/translate_from_files.vocab",
        "data/translate_from_files-train-00000-of-00010",
        "run/experiment.json",
        "run/metrics.json",
        "run/metrics_best.json",
        "run/best/best.json",
        "run/translate_from_files.vocab",
        "run/averaged/model.ckpt-4.index",
        f"export/{os.path.basename(exported)}/saved_model.pb",
    ):
        assert tf.io.gfile.exists(f"{root}/{name}"), name
    assert tf.io.gfile.glob(f"{output_dir}/train/events.out.tfevents.*")
    assert not tf.io.gfile.exists(f"{output_dir}/.t2t-train.lock")  # released
    assert os.listdir(tmp_path) == []  # nothing on the local disk
