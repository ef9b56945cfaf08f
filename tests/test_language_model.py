"""Decoder-only language models: structure, cached decoding from a prompt,
evaluations (LAMBADA-style, agreement) on known answers, old runs, export."""

import json
import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import checkpoints, experiment, registry, sequences
from t2t_lite import hparams as hparams_lib
from t2t_lite import run_dir as run_dir_lib
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.decoding import lm_eval
from t2t_lite.training import evaluation

MODELS = [
    ("transformer", "transformer_test", ""),
    ("universal_transformer", "universal_transformer_test", ""),
    ("universal_transformer", "adaptive_universal_transformer_test", "act_halting_bias_init=-1.0"),
]


def decoder_only(name, hparams_set, overrides, vocab_size=13):
    tf.keras.utils.set_random_seed(3)
    hp = hparams_lib.override(registry.HPARAMS.get(hparams_set)(), overrides)
    model = registry.MODELS.get(name)(hp, vocab_size, "none")
    checkpoints.build_model(model)
    return model


@pytest.mark.parametrize("name, hparams_set, overrides", MODELS)
def test_decoder_only_has_no_encoder_and_decodes_as_teacher_forced(name, hparams_set, overrides):
    model = decoder_only(name, hparams_set, overrides)
    names = [w.path for w in model.weights]
    assert not [n for n in names if "encoder" in n or "encdec" in n], names
    targets = tf.constant([[5, 6, 7, 8, 1], [9, 3, 1, 0, 0]])
    logits = model({"inputs": tf.ones([2, 1], tf.int32), "targets": targets})
    encoded, bias = model.encode(tf.ones([2, 1], tf.int32))
    assert encoded.shape[1] == 0
    cache = model.init_cache(encoded, bias, None)
    previous = tf.zeros([2], tf.int32)
    for index in range(5):
        step_logits, cache = model.decode_step(previous, tf.constant(index), cache)
        real = (targets[:, index] > 0).numpy()
        np.testing.assert_allclose(
            step_logits.numpy()[real], logits.numpy()[real, index], atol=1e-4
        )
        previous = targets[:, index]


@pytest.mark.parametrize("name, hparams_set, overrides", MODELS)
# XLA's search in the slow tier (the fast tier's budget; the cached-decoding tests compile it)
@pytest.mark.parametrize("xla", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_greedy_continuation_of_a_prompt_is_the_teacher_forced_argmax(
    name, hparams_set, overrides, xla
):
    model = decoder_only(name, hparams_set, overrides)
    hp = decoder_lib.DecodeHParams(extra_length=6, batch_size=3)
    decoder = decoder_lib.Decoder(model, hp, xla_compile=xla)
    prompts = [[5, 6, 7], [9], []]
    for prompt, [(continuation, score)] in zip(prompts, decoder.decode_ids(prompts), strict=True):
        assert len(continuation) <= hp.extra_length
        full = prompt + continuation
        ended = len(continuation) < hp.extra_length
        sequence = full + [sequences.EOS_ID] if ended else full
        logits = model({"inputs": tf.ones([1, 1], tf.int32), "targets": tf.constant([sequence])})
        log_probs = tf.nn.log_softmax(logits[0]).numpy()
        chosen = range(len(prompt), len(sequence))
        assert [int(np.argmax(log_probs[t])) for t in chosen] == sequence[len(prompt) :]
        expected = sum(log_probs[t, sequence[t]] for t in chosen)
        assert score == pytest.approx(expected, abs=1e-3)


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_sampling_from_a_prompt_is_seeded_and_top_1_is_greedy():
    model = decoder_only(*MODELS[0])

    def decode(overrides):
        hp = hparams_lib.override(decoder_lib.DecodeHParams(extra_length=8), overrides)
        return decoder_lib.Decoder(model, hp, xla_compile=False).decode_ids([[5, 6], [7]])

    greedy = decode("")
    assert decode("temperature=1.0,top_k=1") == greedy
    assert decode("temperature=1.5,seed=4") == decode("temperature=1.5,seed=4")
    samples = {str(decode(f"temperature=5.0,seed={s}")) for s in range(4)}
    assert len(samples) > 1


def test_beam_search_continues_a_prompt():
    model = decoder_only(*MODELS[0])
    hp = decoder_lib.DecodeHParams(extra_length=5, beam_size=3, batch_size=2)
    beams = decoder_lib.Decoder(model, hp, xla_compile=False).decode_ids([[5, 6], [7]])
    greedy = decoder_lib.Decoder(model, decoder_lib.DecodeHParams(extra_length=5)).decode_ids(
        [[5, 6], [7]]
    )
    for (best, best_score), [(greedy_ids, greedy_score)] in zip(
        [b[0] for b in beams], greedy, strict=True
    ):
        assert len(best) <= 5
        # The beam's best is at least as likely as greedy's, under the same penalty.
        penalty = decoder_lib.search.length_penalty
        assert best_score >= greedy_score / float(penalty(len(greedy_ids) + 1, 0.6)) - 1e-3 or (
            best == greedy_ids
        )


class BigramModel:
    """A language model with a known bigram table, in the decoder API lm_eval uses."""

    input_encoding = "none"

    def __init__(self, table: np.ndarray):
        self.log_table = np.log(table)  # [V, V]: p(next | previous), row 0 = start

    def encode(self, inputs):
        return tf.zeros([tf.shape(inputs)[0], 0, 1]), tf.zeros([tf.shape(inputs)[0], 1, 1, 0])

    def decode(self, targets, encoded, bias):
        previous = tf.pad(targets, [[0, 0], [1, 0]])[:, :-1]
        return tf.gather(tf.constant(self.log_table, tf.float32), previous)  # [B, T, V]


class WordProblem:
    input_encoding = "none"
    name = "words"
    words = ["<pad>", "<EOS>", "the", "cat", "dog", "keys", "key", "are", "is", "sat"]

    def encode_text(self, text):
        return [self.words.index(w) for w in text.split()]


def bigram_table():
    words = WordProblem.words
    table = np.full([len(words), len(words)], 1.0)
    for previous, following, weight in [
        ("the", "cat", 6.0), ("cat", "sat", 9.0), ("keys", "are", 5.0), ("key", "is", 5.0),
        ("the", "keys", 2.0), ("the", "key", 2.0),
    ]:  # fmt: skip
        table[words.index(previous), words.index(following)] = weight
    return table / table.sum(axis=1, keepdims=True)


def test_lambada_accuracy_and_perplexity_by_hand():
    table, words = bigram_table(), WordProblem.words
    model, problem = BigramModel(table), WordProblem()
    lines = ["the dog sat the cat", "the cat sat", "the dog the dog"]
    metrics, details = lm_eval.lambada(model, problem, lines, "passages.txt")
    # "cat" after "the" and "sat" after "cat" are each row's argmax; "dog" after "the" is not.
    assert [d.split("\t")[0] for d in details] == ["1", "1", "0"]
    p = [
        table[words.index(a), words.index(b)]
        for a, b in [("the", "cat"), ("cat", "sat"), ("the", "dog")]
    ]
    assert metrics["accuracy"] == pytest.approx(2 / 3)
    assert metrics["perplexity"] == pytest.approx(math.exp(-np.mean(np.log(p))), rel=1e-5)
    with pytest.raises(ValueError, match="passages.txt:1: expected a passage"):
        lm_eval.lambada(model, problem, ["cat"], "passages.txt")


def test_agreement_ranks_the_verbs_by_hand():
    model, problem = BigramModel(bigram_table()), WordProblem()
    lines = ["the keys\tare\tis", "the key\tis\tare", "the key\tare\tis"]
    metrics, details = lm_eval.agreement(model, problem, lines, "sva.tsv")
    assert [d.split("\t")[0] for d in details] == ["1", "1", "0"]
    assert metrics == {"accuracy": pytest.approx(2 / 3), "examples": 3}
    with pytest.raises(ValueError, match="sva.tsv:1: expected prefix<TAB>correct verb<TAB>wrong"):
        lm_eval.agreement(model, problem, ["the keys\tare"], "sva.tsv")


def test_perplexity_is_the_exponent_of_the_unsmoothed_loss():
    totals = {"loss_sum": 9.0, "nll_sum": 6.0, "weight": 3.0, "tokens": 3.0,
              "correct_tokens": 1.0, "correct_sequences": 0.0, "sequences": 1.0, "batches": 1.0}  # fmt: skip
    assert evaluation.summarize(totals)["perplexity"] == pytest.approx(math.exp(2.0))


def lm_run(tmp_path, input_encoding=None):
    from t2t_lite.data import problem as problem_lib
    from t2t_lite.training import trainer

    text = "".join(f"the cat sat {i % 3}\nthe keys are here\nthe key is here\n" for i in range(8))
    (tmp_path / "train.txt").write_text(text)
    (tmp_path / "dev.txt").write_text("the cat sat 1\n")
    prob = problem_lib.get("languagemodel_from_files")
    data_dir = str(tmp_path / "data")
    prob.configure(data_dir, [str(tmp_path / "train.txt")], [str(tmp_path / "dev.txt")], 60)
    prob.generate_data(data_dir)
    exp = experiment.Experiment.resolve(
        "transformer", "languagemodel_from_files", "transformer_test", "batch_size=128"
    )
    if input_encoding:
        exp = experiment.dataclasses.replace(exp, input_encoding=input_encoding)
    run = str(tmp_path / "run")
    config = trainer.TrainConfig(train_steps=3, local_eval_frequency=3)
    metrics = trainer.train(exp, data_dir, run, config)
    return run, data_dir, metrics


@pytest.mark.slow
def test_a_language_model_run_decodes_evaluates_and_exports(tmp_path):
    from t2t_lite.export import exporter

    run, _, metrics = lm_run(tmp_path)
    assert (
        json.loads((tmp_path / "run" / "experiment.json").read_text())["input_encoding"] == "none"
    )
    assert metrics["dev"]["perplexity"] > 1.0
    problem, model, _ = run_dir_lib.open_run(run)
    assert not model.has_encoder
    (tmp_path / "sva.tsv").write_text("the keys\tare\tis\nthe key\tis\tare\n")
    result = lm_eval.evaluate_file("agreement", model, problem, str(tmp_path / "sva.tsv"))

    # By hand: one unbatched, unpadded pass per verb; the correct verb must score higher.
    def log_likelihood(prefix: str, verb: str) -> float:
        context = problem.encode_text(prefix)
        ids = problem.encode_text(f"{prefix} {verb}")
        encoded, bias = model.encode(tf.constant([[sequences.EOS_ID]]))
        log_probs = tf.nn.log_softmax(model.decode(tf.constant([ids]), encoded, bias))[0]
        return sum(float(log_probs[t, ids[t]]) for t in range(len(context), len(ids)))

    right = [
        log_likelihood("the keys", "are") > log_likelihood("the keys", "is"),
        log_likelihood("the key", "is") > log_likelihood("the key", "are"),
    ]
    assert result["examples"] == 2 and result["accuracy"] == sum(right) / 2

    decoder = decoder_lib.Decoder(model, decoder_lib.DecodeHParams(extra_length=4))
    [[(expected, _)]] = decoder.decode_ids([problem.encode_text("the cat")])
    path = exporter.export(run, str(tmp_path / "export"), overrides="extra_length=4")
    served = tf.saved_model.load(path).signatures["serving_default"]
    out = served(inputs=tf.constant(["the cat"]))
    assert out["status"].numpy().tolist() == [b"ok"]
    assert out["outputs"].numpy()[0].decode() == problem.decode_text(expected)


@pytest.mark.slow
def test_an_encoder_decoder_language_model_run_keeps_loading(tmp_path):
    from t2t_lite.training import trainer

    run, data_dir, _ = lm_run(tmp_path, input_encoding="tokens")
    path = tmp_path / "run" / "experiment.json"
    saved = json.loads(path.read_text())
    del saved["input_encoding"]  # as written before decoder-only models existed
    path.write_text(json.dumps(saved))
    problem, model, _ = run_dir_lib.open_run(run)
    assert model.has_encoder
    decoder = decoder_lib.Decoder(model, decoder_lib.DecodeHParams(extra_length=3))
    prompt = problem.encode_text("the cat")  # a source here: outputs may be len + 3 long
    assert len(decoder.decode_ids([prompt])[0][0][0]) <= len(prompt) + 3
    exp = experiment.Experiment.resolve(
        "transformer", "languagemodel_from_files", "transformer_test", "batch_size=128"
    )
    with pytest.raises(ValueError, match="differs in: input_encoding"):
        trainer.train(exp, data_dir, run, trainer.TrainConfig(train_steps=4))


@pytest.mark.parametrize("xla", [False, True])
def test_min_length_counts_the_continuation_not_the_prompt(xla):
    model = decoder_only(*MODELS[0])
    bias = np.zeros([13], np.float32)
    bias[sequences.EOS_ID] = 50.0  # EOS is every step's argmax
    hp = decoder_lib.DecodeHParams(extra_length=6, min_length=3)

    class EosFirst:
        has_encoder = False
        encode, init_cache = model.encode, model.init_cache

        def decode_step(self, ids, index, cache):
            logits, cache = model.decode_step(ids, index, cache)
            return logits + bias, cache

    outputs = decoder_lib.Decoder(EosFirst(), hp, xla_compile=xla).decode_ids([[5, 6, 7, 8], []])
    assert [len(hyps[0][0]) for hyps in outputs] == [3, 3]
