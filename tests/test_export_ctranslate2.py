"""t2t-export --format=ctranslate2: the same model, run by CTranslate2."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import run_binary, tiny_translation

from t2t_lite import checkpoints, experiment, run_dir, sequences
from t2t_lite.data import problem
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.decoding import search
from t2t_lite.export import ctranslate2_model, exporter

ctranslate2 = pytest.importorskip("ctranslate2")


def _tokens(ids, tokens):
    return [tokens[i] for i in ids]


@pytest.mark.parametrize(
    "norm_position",
    [
        "pre",
        "post",
        "pre,position_embedding=learned,max_length=8",
        "pre,position_embedding=none",
        "pre,shared_embedding_and_softmax_weights=false",
        "pre,position_embedding=none,max_relative_position=3",
        "post,position_embedding=none,max_relative_position=2",
    ],
)
def test_every_token_log_prob_equals_teacher_forcing(norm_position, tmp_path):
    """An untrained model (weights are random, the mapping is what is tested):
    CTranslate2's log-probability of every target token, EOS included, equals
    t2t_lite's teacher-forced one, for sources and targets of mixed lengths
    (with a learned table of 8 positions too: the 12-token pairs read past it;
    relative positions: distances past the clip). Then CTranslate2's greedy
    search, one cached step at a time: each token it picks is t2t_lite's argmax
    on that prefix (up to a near-tie), and its score is t2t_lite's summed
    log-prob of the output."""
    exp = experiment.Experiment.resolve(
        "transformer",
        "test_identity_small",
        "transformer_algorithmic_tiny",
        f"hidden_size=32,filter_size=48,num_heads=4,norm_position={norm_position}",
    )
    vocab_size = 12
    model = exp.build_model(vocab_size)
    checkpoints.build_model(model)
    tokens = [sequences.PAD_TOKEN, sequences.EOS_TOKEN] + [f"s{i}" for i in range(vocab_size - 2)]
    ctranslate2_model.write(model, tokens, 32, str(tmp_path))
    translator = ctranslate2.Translator(str(tmp_path), device="cpu")
    rng = np.random.default_rng(5)
    pairs = [
        (rng.integers(2, vocab_size, n).tolist(), rng.integers(2, vocab_size, m).tolist())
        for n, m in ((1, 1), (7, 3), (4, 9), (12, 12))
    ]
    results = translator.score_batch(
        [_tokens(s, tokens) for s, _ in pairs], [_tokens(t, tokens) for _, t in pairs]
    )
    for (source, target), result in zip(pairs, results, strict=True):
        features = {
            "inputs": tf.constant([sequences.with_eos(source)]),
            "targets": tf.constant([sequences.with_eos(target)]),
        }
        log_probs = tf.nn.log_softmax(model(features)).numpy()[0]  # [T, V]
        expected = [log_probs[t, i] for t, i in enumerate(sequences.with_eos(target))]
        np.testing.assert_allclose(result.log_probs, expected, atol=1e-4)
    max_length = 14
    greedy = translator.translate_batch(
        [_tokens(s, tokens) for s, _ in pairs],
        beam_size=1,
        max_decoding_length=max_length,
        min_decoding_length=0,  # EOS allowed from the first step, as in t2t_lite
        length_penalty=0.0,  # the summed log-prob
        return_scores=True,
    )
    for (source, _), result in zip(pairs, greedy, strict=True):
        output = [tokens.index(token) for token in result.hypotheses[0]]
        ended = len(output) < max_length  # else stopped by the length, no EOS scored
        picked = output + [sequences.EOS_ID] * ended
        log_probs = _log_probs(model, source, output)[: len(picked)]  # [T, V]
        chosen = log_probs[np.arange(len(picked)), picked]
        assert np.all(log_probs.max(axis=-1) - chosen < NEAR_TIE), (source, output)
        np.testing.assert_allclose(result.scores[0], chosen.sum(), atol=1e-3)


@pytest.fixture(scope="module")
def ct2_export(copy_run, tmp_path_factory):
    """The copy run exported through the binary -> (export path, data dir, run dir)."""
    data_dir, run = copy_run
    export_dir = str(tmp_path_factory.mktemp("ct2"))
    result = run_binary(
        "t2t-export",
        f"--output_dir={run}",
        f"--export_dir={export_dir}",
        "--format=ctranslate2",
        "--decode_hparams=beam_size=4,extra_length=20",
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1], data_dir, run


# Log-prob gap under which two tokens are a tie that float32 rounding in two
# engines may break either way.
NEAR_TIE = 1e-3


def _log_probs(model, source, output) -> np.ndarray:
    """Teacher-forced log-probs [T, V] of output (+EOS) given source, under our model."""
    encoded, bias = model.encode(tf.constant([sequences.with_eos(source)]))
    logits = model.decode(tf.constant([sequences.with_eos(output)]), encoded, bias)[0]
    return tf.nn.log_softmax(logits).numpy()


def _divergence_gap(model, source, ours, theirs) -> float:
    """|log p(our token) - log p(their token)| where the outputs first differ."""
    ours_full, theirs_full = sequences.with_eos(ours), sequences.with_eos(theirs)
    # Different outputs: they differ at or before the shorter one's EOS.
    k = next(i for i, (a, b) in enumerate(zip(ours_full, theirs_full, strict=False)) if a != b)
    log_probs = _log_probs(model, source, ours)[k]
    return float(abs(log_probs[ours_full[k]] - log_probs[theirs_full[k]]))


def _score(model, source, output, alpha) -> float:
    """t2t_lite's beam score of output: summed log-prob over GNMT's length penalty."""
    full = sequences.with_eos(output)
    total = _log_probs(model, source, output)[np.arange(len(full)), full].sum()
    return float(total / float(search.length_penalty(len(full), alpha)))


@pytest.mark.slow  # the fast tier's budget: t2t-decode --engine=ctranslate2 against the tensorflow engine stays
def test_ctranslate2_decodes_the_trained_copy_model_as_t2t_decode(ct2_export):
    path, data_dir, run = ct2_export
    assert sorted(os.listdir(path)) == [
        "config.json",
        "model.bin",
        "shared_vocabulary.json",
        exporter.FLAT_METADATA_FILE,
    ]
    with open(os.path.join(path, exporter.FLAT_METADATA_FILE)) as f:
        metadata = json.load(f)
    assert metadata["format"] == "ctranslate2" and metadata["model"] == "transformer"
    options = metadata["translate_options"]
    problem_obj, model, _ = run_dir.open_run(run)
    tokens = problem_obj.graph_tokenizer(data_dir).vocabulary()
    with open(os.path.join(path, "shared_vocabulary.json")) as f:
        assert json.load(f) == tokens
    inputs = [
        example["inputs"]
        for example in problem.get("test_identity_small").generate_examples(
            "dev", np.random.default_rng(11)
        )
    ][:24]
    translator = ctranslate2.Translator(path, device="cpu")
    source = [_tokens(ids, tokens) for ids in inputs]
    for beam_size, alpha in ((1, 0.6), (4, 0.6), (4, 0.0)):
        hp = decoder_lib.DecodeHParams(beam_size=beam_size, alpha=alpha, extra_length=20)
        ours = decoder_lib.Decoder(model, hp).decode_ids(inputs)
        theirs = translator.translate_batch(
            source, **{**options, "beam_size": beam_size, "length_penalty": alpha}
        )
        for ids, mine, result in zip(inputs, ours, theirs, strict=True):
            if _tokens(mine[0][0], tokens) != result.hypotheses[0]:
                theirs_ids = [tokens.index(token) for token in result.hypotheses[0]]
                case = (beam_size, alpha, ids, mine[0][0], theirs_ids)
                if beam_size == 1:  # greedy: only a near-tie may be broken either way
                    gap = _divergence_gap(model, ids, mine[0][0], theirs_ids)
                    assert gap < NEAR_TIE, (*case, gap)
                # Beam search: CTranslate2 stops once its best beam has ended, where
                # t2t_lite searches on while a live beam can still win (and its length
                # penalty is GNMT's): ours must be at least as good under ours.
                mine_score = _score(model, ids, mine[0][0], alpha)
                assert mine_score >= _score(model, ids, theirs_ids, alpha) - 1e-4, case
        if beam_size == 1 or alpha == 0.0:  # t2t_lite's score is the summed log-prob
            theirs = translator.translate_batch(
                source,
                **{**options, "beam_size": beam_size, "length_penalty": 0.0},
                return_scores=True,
            )
            np.testing.assert_allclose(
                [result.scores[0] for result in theirs], [mine[0][1] for mine in ours], atol=1e-3
            )


def test_what_ctranslate2_cannot_run_is_refused_in_one_line(tmp_path):
    run = str(tmp_path / "ut")
    experiment.Experiment.resolve(
        "universal_transformer", "test_identity_small", "universal_transformer_tiny"
    ).save(run)
    result = run_binary(
        "t2t-export", f"--output_dir={run}", f"--export_dir={tmp_path}/e", "--format=ctranslate2"
    )
    assert result.returncode == 1
    refusal = (
        "t2t-export: error: --format=ctranslate2: the run's model is 'universal_transformer'; "
        "only 'transformer' maps to CTranslate2 (the Universal Transformer's recurrence and "
        "ACT have no equivalent there); export it as a SavedModel (--format=saved_model) instead"
    )
    assert refusal in result.stderr.splitlines()
    assert "Traceback" not in result.stderr
    result = run_binary(
        "t2t-export", f"--output_dir={run}", f"--export_dir={tmp_path}/e", "--format=onnx"
    )
    assert result.returncode == 1
    assert (
        "t2t-export: error: --format must be one of saved_model, ctranslate2, keras, got 'onnx'"
        in result.stderr.splitlines()
    )
    assert not os.path.exists(tmp_path / "e" / "1")


def test_a_ctranslate2_export_is_written_through_gfile(copy_run):
    """On a filesystem without local paths: the files arrive whole, nothing temporary is left."""
    export_dir = "ram://ct2_export"
    path = exporter.export(copy_run[1], export_dir, export_format=exporter.CTRANSLATE2)
    assert path == f"{export_dir}/1"
    names = sorted(name.rstrip("/") for name in tf.io.gfile.listdir(export_dir))
    assert names == ["1"]
    for name in ("config.json", "model.bin", "shared_vocabulary.json"):
        assert tf.io.gfile.stat(f"{path}/{name}").length > 0


@pytest.mark.parametrize(
    "overrides, named",
    [
        ({"position_coupling": "reverse"}, "position_coupling='reverse'"),
        ({"position_every_layer": True}, "position_every_layer=True"),
        ({"attention_key_channels": 8}, "attention_key_channels"),
        ({"causal_encoder": True}, "causal_encoder=True"),
        ({"attention_length_scale": 40}, "attention_length_scale=40"),
        ({"max_relative_position": 4}, "max_relative_position=4 with position_embedding="),
    ],
)
def test_positions_ctranslate2_cannot_express_are_refused(overrides, named):
    from test_transformer import tiny_model

    model = tiny_model(**overrides)
    with pytest.raises(ValueError, match=named) as refused:
        ctranslate2_model.build_spec(model, [str(i) for i in range(11)], 64)
    assert "--format=saved_model" in str(refused.value)


def test_t2t_decode_engine_ctranslate2_writes_what_the_tensorflow_engine_writes(
    copy_run, tmp_path, monkeypatch
):
    """Greedy and beam decodes of the trained copy model through both engines:
    the same outputs and scores; the conversion is made once per checkpoint
    and reused."""
    import io

    from t2t_lite.decoding import options as options_lib
    from t2t_lite.decoding import runner
    from t2t_lite.export import ctranslate2_engine

    _, trained = copy_run
    run = tmp_path / "run"
    run.mkdir()
    for name in os.listdir(trained):  # the fixture's run is shared: work on a copy
        if os.path.isfile(os.path.join(trained, name)):
            with open(os.path.join(trained, name), "rb") as f, open(run / name, "wb") as g:
                g.write(f.read())
    lines = ["1 2 3", "3 3 0 1", "", "2 1 0 3 2 1"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    conversions = []
    write = ctranslate2_model.write
    monkeypatch.setattr(
        ctranslate2_model, "write", lambda *a: conversions.append(a[-1]) or write(*a)
    )
    for hparams in ("beam_size=1", "beam_size=4,alpha=0.6"):
        outputs = {}
        for engine, repeat in (("tensorflow", 1), ("ctranslate2", 2)):
            for _ in range(repeat):
                out = str(tmp_path / f"{engine}.txt")
                options = options_lib.DecodeOptions(
                    output_dir=str(run), decode_from_file=str(tmp_path / "in.txt"),
                    decode_to_file=out, decode_hparams=f"{hparams},write_beam_scores=true",
                    engine=engine,
                )  # fmt: skip
                engines = {"ctranslate2": ctranslate2_engine.from_run}
                runner.run(options, stdout=io.StringIO(), engines=engines)
                outputs[engine] = (tmp_path / f"{engine}.txt").read_text().splitlines()
        assert [line.split("\t")[0] for line in outputs["ctranslate2"]] == [
            line.split("\t")[0] for line in outputs["tensorflow"]
        ]
        for ours, theirs in zip(outputs["tensorflow"], outputs["ctranslate2"], strict=True):
            if "\t" in ours:  # the score as t2t_lite computes it (sum, or GNMT-penalized)
                assert float(theirs.split("\t")[1]) == pytest.approx(
                    float(ours.split("\t")[1]), abs=1e-3
                )
    assert len(conversions) == 1  # the second decode reused it
    (converted,) = os.listdir(run / "ctranslate2")
    assert converted.startswith("model.ckpt-800-")
    # The binary's flag reaches the engine: the beam-4 file again, from the conversion.
    result = run_binary(
        "t2t-decode", f"--output_dir={run}", f"--decode_from_file={tmp_path / 'in.txt'}",
        f"--decode_to_file={tmp_path / 'binary.txt'}", "--engine=ctranslate2",
        "--decode_hparams=beam_size=4,alpha=0.6,write_beam_scores=true",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "binary.txt").read_text().splitlines() == outputs["ctranslate2"]
    assert os.listdir(run / "ctranslate2") == [converted]


def test_engine_ctranslate2_refuses_a_ut_run_and_a_missing_extra(tmp_path, monkeypatch):
    from t2t_lite.export import ctranslate2_engine

    run = str(tmp_path / "ut")
    experiment.Experiment.resolve(
        "universal_transformer", "test_identity_small", "universal_transformer_tiny"
    ).save(run)
    hp = decoder_lib.DecodeHParams()
    with pytest.raises(ValueError, match="--engine=ctranslate2: the run's model is 'universal.*"
                       "decode it with --engine=tensorflow"):  # fmt: skip
        ctranslate2_engine.from_run(run, "", None, None, hp)
    # A Transformer option CTranslate2 lacks: t2t-decode's refusal speaks of its own
    # flags, not t2t-export's, and comes before any conversion.
    scaled = str(tmp_path / "scaled")
    experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_test", "attention_length_scale=20"
    ).save(scaled)
    with pytest.raises(ValueError) as refused:
        ctranslate2_engine.from_run(scaled, "", None, None, hp)
    assert str(refused.value).startswith("--engine=ctranslate2: the run scales attention")
    assert str(refused.value).endswith("decode it with --engine=tensorflow")
    assert "--format" not in str(refused.value)
    monkeypatch.setitem(__import__("sys").modules, "ctranslate2", None)  # not installed
    with pytest.raises(ValueError, match="--engine=ctranslate2 needs the ctranslate2 package"):
        ctranslate2_model.library("--engine")


def test_engine_loads_a_conversion_on_another_filesystem_from_a_local_copy(tmp_path):
    from t2t_lite.export import ctranslate2_engine

    assert ctranslate2_engine.LocalCopy(str(tmp_path)).path == str(tmp_path)  # local: itself
    remote = "ram://ct2-engine/model-1"
    tf.io.gfile.makedirs(remote)
    for name, data in (("model.bin", b"\x00\x01weights"), ("config.json", b"{}")):
        with tf.io.gfile.GFile(f"{remote}/{name}", "wb") as f:
            f.write(data)
    local = ctranslate2_engine.LocalCopy(remote)
    assert "://" not in local.path and sorted(os.listdir(local.path)) == [
        "config.json",
        "model.bin",
    ]
    with open(os.path.join(local.path, "model.bin"), "rb") as f:
        assert f.read() == b"\x00\x01weights"
    local.close()
    assert not os.path.exists(local.path)  # the temporary copy is removed


def test_a_damaged_half_made_or_unwritable_conversion_is_made_again_elsewhere_if_need_be(
    tmp_path, monkeypatch
):
    """The engine's conversion: reused while whole; a cut, overwritten or missing
    model.bin (a killed or damaged conversion) is converted again, not loaded or
    blocking; the checkpoint file itself is never read (a trainer may have
    pruned it); a run that cannot be written converts into a temporary place."""
    from test_transformer import tiny_model

    from t2t_lite.export import ctranslate2_engine

    model = tiny_model()
    checkpoints.build_model(model)
    tokens = [sequences.PAD_TOKEN, sequences.EOS_TOKEN] + [str(i) for i in range(9)]
    hp = decoder_lib.DecodeHParams(max_input_length=16)
    writes = []
    write = ctranslate2_model.write
    monkeypatch.setattr(ctranslate2_model, "write", lambda *a: writes.append(a[-1]) or write(*a))
    run = tmp_path / "run"
    run.mkdir()
    pruned = str(run / "model.ckpt-7")  # no such file: pruned after the weights were read

    def convert():
        return ctranslate2_engine.converted(str(run), pruned, model, tokens, hp)

    first = convert()
    assert os.path.basename(first).startswith("model.ckpt-7-") and len(writes) == 1
    assert convert() == first and len(writes) == 1  # whole: reused
    model_bin = os.path.join(first, "model.bin")
    with open(model_bin, "r+b") as f:
        f.truncate(100)  # damaged
    assert convert() == first and len(writes) == 2
    assert ctranslate2.Translator(first, device="cpu")  # loads again
    size = os.path.getsize(model_bin)
    with open(model_bin, "r+b") as f:  # overwritten from a quarter on, its size kept
        f.seek(size // 4)
        f.write(bytes(size - size // 4))
    assert os.path.getsize(model_bin) == size
    assert convert() == first and len(writes) == 3
    assert ctranslate2.Translator(first, device="cpu")
    os.remove(model_bin)  # half-made
    assert convert() == first and len(writes) == 4
    assert sorted(os.listdir(run / "ctranslate2")) == [os.path.basename(first)]
    # Other weights: a conversion of their own.
    model.weights[0].assign(model.weights[0] + 1.0)
    assert convert() != first
    # A run whose ctranslate2/ cannot be a directory: a temporary conversion.
    other = tmp_path / "archived"
    other.mkdir()
    (other / "ctranslate2").write_text("not a directory")
    elsewhere = ctranslate2_engine.converted(str(other), pruned, model, tokens, hp)
    assert not elsewhere.startswith(str(other)) and os.path.exists(elsewhere + "/model.bin")


def test_both_engines_hold_an_output_that_never_ends_to_its_own_input_length(tmp_path):
    """A model that never emits EOS: the softmax's EOS and PAD columns are zero
    and two other columns are opposite, so for any decoder state one of them has a
    logit above EOS's 0. The TensorFlow Decoder stops each line at its own
    length + extra_length symbols; the CTranslate2 engine, batching lines of
    other lengths together, writes the same ids and the same scores."""
    from t2t_lite.export import ctranslate2_engine

    exp = experiment.Experiment.resolve(
        "transformer",
        "test_identity_small",
        "transformer_algorithmic_tiny",
        "hidden_size=32,filter_size=48,num_heads=4,shared_embedding_and_softmax_weights=false",
    )
    vocab_size = 12
    model = exp.build_model(vocab_size)
    checkpoints.build_model(model)
    matrix = model.softmax.weights_matrix
    columns = matrix.numpy()  # [V, C]
    columns[sequences.EOS_ID] = 0.0
    columns[sequences.PAD_ID] = 0.0  # PAD ends an output too (until_eos): never chosen either
    columns[3] = -columns[2]
    matrix.assign(columns)
    tokens = [sequences.PAD_TOKEN, sequences.EOS_TOKEN] + [f"s{i}" for i in range(vocab_size - 2)]
    hp = decoder_lib.DecodeHParams(extra_length=5, batch_size=8)
    ctranslate2_model.write(model, tokens, hp.max_output_positions + 1, str(tmp_path))
    engine = ctranslate2_engine.Ctranslate2Decoder(
        ctranslate2.Translator(str(tmp_path), device="cpu"), tokens, hp
    )
    rng = np.random.default_rng(3)
    inputs = [rng.integers(2, vocab_size, n).tolist() for n in (1, 7, 3, 15, 2)]
    ours = decoder_lib.Decoder(model, hp).decode_ids(inputs)
    theirs = engine.decode_ids(inputs)
    for source, [(ids, score)], [(their_ids, their_score)] in zip(
        inputs, ours, theirs, strict=True
    ):
        assert len(ids) == len(source) + hp.extra_length  # never ended: held at its limit
        assert their_ids == ids
        assert their_score == pytest.approx(score, abs=1e-3)


def python_docstring_lines() -> list[str]:
    """Real English nobody here wrote, on every machine that runs the tests:
    the first paragraph of the standard library's documentation strings
    (20-100 characters, one sentence or two), sorted."""
    import importlib
    import inspect
    import re

    modules = [
        "argparse",
        "calendar",
        "collections",
        "configparser",
        "csv",
        "difflib",
        "email.utils",
        "fnmatch",
        "functools",
        "glob",
        "gzip",
        "heapq",
        "http.client",
        "inspect",
        "json",
        "logging",
        "pathlib",
        "pprint",
        "queue",
        "random",
        "shlex",
        "shutil",
        "socket",
        "statistics",
        "string",
        "subprocess",
        "tarfile",
        "tempfile",
        "textwrap",
        "threading",
        "unittest",
        "urllib.parse",
        "zipfile",
    ]
    lines = set()
    for name in modules:
        module = importlib.import_module(name)
        for attribute in dir(module):
            doc = None if attribute.startswith("_") else inspect.getdoc(getattr(module, attribute))
            if doc:
                first = re.sub(r"\s+", " ", doc.split("\n\n")[0]).strip()
                if 20 <= len(first) <= 100 and first[0].isupper():
                    lines.add(first)
    return sorted(lines)


@pytest.mark.slow
def test_both_engines_decode_a_real_text_file_alike(tmp_path, train_seed):
    """A small Transformer trained on real English (the standard library's
    documentation strings, each line its own target) decodes a held-out
    real-text file through t2t-decode's two engines: greedy writes the same
    line on every line but where the two engines' float rounding breaks a
    near-tie. Under beam 4 CTranslate2 takes an ended hypothesis only from the
    beam's best K candidates, t2t_lite (as tensor2tensor) from its best 2K
    (docs/decoding.md): where the lines differ, the TensorFlow engine's scores
    at least as well under t2t_lite's score."""
    import io

    from t2t_lite.decoding import options as options_lib
    from t2t_lite.decoding import runner
    from t2t_lite.export import ctranslate2_engine
    from t2t_lite.training import trainer

    lines = python_docstring_lines()
    assert len(lines) > 300  # the standard library always documents this much
    held_out = lines[::12]
    train = [line for line in lines if line not in held_out]
    (tmp_path / "test.txt").write_text("".join(f"{s}\n" for s in held_out))
    data_dir, exp, run = tiny_translation(
        tmp_path,
        [(line, line) for line in train],
        [(line, line) for line in held_out[:8]],
        400,
        "batch_size=1024,learning_rate_warmup_steps=100",
    )
    config = trainer.TrainConfig(
        train_steps=300, local_eval_frequency=300, eval_bleu_examples=0, random_seed=train_seed
    )
    trainer.train(exp, data_dir, run, config)
    prob_run, model, checkpoint = run_dir.open_run(run)
    inputs = prob_run.encode_texts(held_out)
    for hparams in ("beam_size=1", "beam_size=4,alpha=0.6"):
        hp = decoder_lib.decode_hparams(hparams)
        texts, ids = {}, {}
        for engine in ("tensorflow", "ctranslate2"):
            out = tmp_path / f"{engine}.txt"
            options = options_lib.DecodeOptions(
                output_dir=run, decode_from_file=str(tmp_path / "test.txt"),
                decode_to_file=str(out), decode_hparams=hparams, engine=engine,
            )  # fmt: skip
            engines = {"ctranslate2": ctranslate2_engine.from_run}
            runner.run(options, stdout=io.StringIO(), engines=engines)
            texts[engine] = out.read_text().splitlines()
            # The same decode on ids, to look into the lines that differ.
            if engine == "tensorflow":
                decoder = decoder_lib.Decoder(model, hp)
            else:
                decoder = ctranslate2_engine.from_run(run, checkpoint, prob_run, model, hp)
            ids[engine] = [best[0][0] for best in decoder.decode_ids(inputs)]
            assert texts[engine] == prob_run.decode_texts(ids[engine])
        differing = [
            (source, ours, theirs)
            for source, ours, theirs in zip(
                inputs, ids["tensorflow"], ids["ctranslate2"], strict=False
            )
            if ours != theirs
        ]
        for source, ours, theirs in differing:
            if hp.beam_size == 1:  # greedy: only a near-tie may be broken either way
                assert _divergence_gap(model, source, ours, theirs) < NEAR_TIE, (source, ours)
            else:  # the beam: the TensorFlow engine's line is at least as good under its score
                mine = _score(model, source, ours, hp.alpha)
                assert mine >= _score(model, source, theirs, hp.alpha) - 1e-4, (source, ours)
        if hp.beam_size == 1:  # a trained model is peaked: near-ties are rare
            assert len(differing) <= len(held_out) // 10, differing


def test_the_engine_decodes_each_output_limit_in_a_call_of_its_own():
    """CTranslate2 takes one output limit per call, and a longer limit changes a
    search wherever a hypothesis would have reached the row's own limit (even one
    dropped later): rows are grouped by limit, each decoded at exactly its own."""
    import types

    from t2t_lite.export import ctranslate2_engine

    calls = []

    class Recorder:
        def translate_batch(self, batch, max_decoding_length, **options):
            calls.append((max_decoding_length, [len(tokens) for tokens in batch]))
            answer = types.SimpleNamespace(hypotheses=[["1", sequences.EOS_TOKEN]], scores=[-1.0])
            return [answer for _ in batch]

    tokens = [sequences.PAD_TOKEN, sequences.EOS_TOKEN, "1", "2"]
    hp = decoder_lib.DecodeHParams(extra_length=5, batch_size=8, max_input_length=16)
    engine = ctranslate2_engine.Ctranslate2Decoder(Recorder(), tokens, hp)
    inputs = [[2, 3, 2], [2], [3, 3, 2], [2, 2, 2, 2, 2]]
    results = engine.decode_ids(inputs)
    assert sorted(calls) == [(6, [1]), (8, [3, 3]), (10, [5])]
    assert engine.calls == 3  # what t2t-decode logs of a file's decode
    assert [best[0][0] for best in results] == [[2]] * 4
