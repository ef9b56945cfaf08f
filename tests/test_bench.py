"""Benchmarks run on a tiny setting (seconds, not figures), so they cannot rot unnoticed."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import heaps_corpus


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_the_heaps_corpus_is_seeded_aligned_and_keeps_meeting_new_words(tmp_path):
    paths = [str(tmp_path / "a.src"), str(tmp_path / "a.tgt")]
    heaps_corpus.write(*paths, pairs=4000, seed=3)
    again = [str(tmp_path / "b.src"), str(tmp_path / "b.tgt")]
    heaps_corpus.write(*again, pairs=4000, seed=3)
    for first, second in zip(paths, again, strict=True):
        assert read(first) == read(second)
    sources, targets = (read(path).decode("utf-8").splitlines() for path in paths)
    assert len(sources) == len(targets) == 4000 and all(sources) and all(targets)
    # Heaps-like: the second half of the corpus still brings many new words
    # (a fixed word list would bring almost none).
    first_half = heaps_corpus.distinct_words(paths[:1], max_lines=2000)
    whole = heaps_corpus.distinct_words(paths[:1])
    assert whole > 1.3 * first_half
    text = "\n".join(sources + targets)
    for feature in ("https://", "/usr/share/", "--", "%", "ß", ","):
        assert feature in text
    assert any(len(word) >= 20 for word in " ".join(targets).split())  # German compounds


def test_spelling_gives_every_rank_its_own_word():
    words = [heaps_corpus.spell(rank, heaps_corpus.EN_SYLLABLES) for rank in range(20_000)]
    assert len(set(words)) == len(words)


def run_bench(tmp_path, *flags, script="datagen_throughput.py") -> list[dict]:
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", script), *flags],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        check=True,
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_the_benchmark_prints_its_json_line_with_distinct_words_and_phases(tmp_path):
    (result,) = run_bench(
        tmp_path, "--pairs=300", "--vocab_size=300", "--reference_pairs=5", f"--workdir={tmp_path}"
    )
    assert result["benchmark"] == "datagen_throughput"
    assert result["examples"]["train"] == 300
    assert result["distinct_words"] >= result["vocab_sample_distinct_words"] > 300
    assert set(result["seconds"]) == {"vocabulary_sample", "vocabulary", "encode_and_write"}
    assert result["machine"]["cores"] >= 1
    (growth,) = run_bench(
        tmp_path,
        "--pairs=300",
        "--vocab_size=300",
        "--learner_growth=200,800",
        f"--workdir={tmp_path}",
    )
    rows = growth["rows"]
    assert [row["distinct_words"] >= 200 for row in rows] == [True, True]
    assert rows[1]["distinct_words"] >= 800
    assert rows[0]["lines"] < rows[1]["lines"]


@pytest.mark.slow
def test_the_decoding_benchmark_runs_against_ctranslate2_through_public_entry_points(tmp_path):
    rows = run_bench(
        tmp_path,
        "--shapes=transformer_test:20",
        "--batch_sizes=2",
        "--beam_sizes=1,2",
        "--input_length=4",
        "--output_length=6",
        "--repeats=1",
        script="decode_vs_ctranslate2.py",
    )
    assert [row["search"] for row in rows] == ["greedy", "beam2"]
    for row in rows:
        assert row["output_tokens"] == 7  # output_length symbols and EOS, on every side
        for key in ("t2t_decode", "serving", "serving_xla", "engine_ctranslate2", "ctranslate2"):
            assert row[f"{key}_tokens_per_sec"] > 0  # each side was measured in this run


@pytest.mark.slow
def test_the_decoding_throughput_benchmark_prints_a_line_per_family_and_search(tmp_path):
    results = run_bench(
        tmp_path,
        "--families=transformer:transformer_test,universal_transformer:universal_transformer_test",
        "--batch_size=2", "--input_length=4", "--extra_length=2", "--vocab_size=20",
        "--beam_sizes=1,2", "--repeats=1",
        script="decode_throughput.py",
    )  # fmt: skip
    assert len(results) == 4
    assert {r["benchmark"] for r in results} == {"decode_throughput"}


@pytest.mark.slow
def test_the_training_throughput_benchmark_prints_its_line(tmp_path):
    # The PyTorch reference runs only where torch is installed (never a dependency).
    try:
        import torch  # noqa: F401

        reference = "--torch_reference=true"
    except ImportError:
        reference = "--torch_reference=false"
    (result,) = run_bench(
        tmp_path,
        "--hparams_set=transformer_test", "--batch_size=64", "--length=8", "--vocab_size=50",
        "--steps=2", "--warmup_steps=1", "--repeats=1", reference,
        script="train_throughput.py",
    )  # fmt: skip
    assert result["benchmark"] == "train_throughput"
    # transformer_test at V=50, d=16, ff=32, 2+2 layers, by hand (as in test_transformer):
    # embedding 50*16, encoder blocks 4d^2 + FFN 1,072 + 2 norms, decoder blocks
    # 8d^2 + FFN + 3 norms, two final norms.
    ffn = 16 * 32 + 32 + 32 * 16 + 16
    blocks = 2 * (4 * 256 + ffn + 2 * 32) + 2 * (8 * 256 + ffn + 3 * 32)
    assert result["parameters"] == 50 * 16 + blocks + 2 * 32 == 11_616
    assert result["batch_tokens"] == 64  # 8 rows of length 8
    assert len(result["tokens_per_sec_repeats"]) == 1 and result["tokens_per_sec"] > 0
    assert ("torch_tokens_per_sec" in result) == reference.endswith("true")


def test_the_training_flops_per_token_by_hand():
    """The FLOPs behind the training bench's MFU, for transformer_test at V=50,
    d=16, ff=32, 2+2 layers, S=T=8, counted by hand: 2 FLOPs a multiply-add.
    Encoder layer: 4 d^2 (attention) + 2 d ff (FFN) = 2,048 weights; decoder
    layer: 8 d^2 + 2 d ff = 3,072; dense = 2 (2 * 2,048 + 2 * 3,072 + 16 * 50)
    = 22,080; attention scores and context 4 d (2 * 8 + 2 * (8 + 8)) = 3,072;
    training is 3 forwards: 3 * 25,152."""
    import common

    assert common.transformer_flops_per_token(16, 32, 2, 2, 50, 8, 8) == 3 * 25_152


@pytest.mark.slow
def test_the_decoding_profile_prints_op_times_through_public_entry_points(tmp_path):
    (row,) = run_bench(
        tmp_path,
        "--hparams_set=transformer_test",
        "--vocab_size=20",
        "--batch_size=2",
        "--beam_size=2",
        "--input_length=4",
        "--output_length=6",
        "--xla=off",
        "--by_node=ConcatV2",
        "--top=1000",
        script="profile_decode.py",
    )
    assert row["steps"] == 7 and row["ops_per_step"] > 10
    # --top=1000 lists every op type: the listed times add up to the total.
    assert sum(row["op_ms"].values()) == pytest.approx(
        row["op_ms_total"], abs=0.1 * len(row["op_ms"])
    )
    # oneDNN builds name them _MklMatMul / _MklEinsum on some CPUs.
    assert any(name.endswith(("MatMul", "Einsum")) for name in row["op_ms"])
    # Appends to the growing caches, listed by node: one per cache and step.
    assert any(name.endswith(":ConcatV2") for name in row["op_ms"])


@pytest.mark.slow
def test_the_bleu_benchmark_against_opennmt_prints_its_line(tmp_path):
    """t2t_lite's side always; OpenNMT-py's where T2T_ONMT_PYTHON names a venv with it."""
    import sacrebleu

    words = ["red", "blue", "cat", "dog", "big", "small", "runs", "sleeps"]
    german = ["rot", "blau", "Katze", "Hund", "groß", "klein", "läuft", "schläft"]
    files = {}
    for split, count in (("train", 120), ("dev", 10), ("test", 10)):
        for side, vocab in (("en", words), ("de", german)):
            lines = [f"{vocab[i % 8]} {vocab[(i * 3 + 1) % 8]}" for i in range(count)]
            files[f"{split}.{side}"] = tmp_path / f"{split}.{side}"
            files[f"{split}.{side}"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    onmt = os.environ.get("T2T_ONMT_PYTHON", "")
    flags = [
        f"--train={files['train.en']},{files['train.de']}",
        f"--dev={files['dev.en']},{files['dev.de']}",
        f"--test={files['test.en']},{files['test.de']}",
        f"--work_dir={tmp_path / 'work'}", f"--onmt_python={onmt}",
        "--layers=1", "--hidden_size=16", "--heads=2", "--filter_size=32", "--vocab_size=100",
        "--batch_tokens=256", "--warmup=10",
    ]  # fmt: skip
    curve = ["--curve_every=3", "--curve_examples=5"]
    (row,) = run_bench(tmp_path, *flags, "--steps=3", *curve, script="bleu_vs_opennmt.py")
    ours = row["budget"]["t2t_lite"]
    assert row["benchmark"] == "bleu_vs_opennmt" and ours["steps"] == 3

    def bleu(name: str, split: str, count: int) -> float:
        """sacrebleu's BLEU of a decoded file against the references, recomputed here."""
        out = tmp_path / "work" / name
        outputs = [o.split("\t")[0] for o in out.read_text(encoding="utf-8").split("\n")[:count]]
        references = files[f"{split}.de"].read_text(encoding="utf-8").split("\n")[:count]
        return sacrebleu.corpus_bleu(outputs, [references]).score

    assert ours["bleu"] == pytest.approx(bleu("t2t_test.3.out", "test", 10), abs=0.01)
    # The dev curve: the first 5 dev pairs at step 3, timed as the test point is.
    ((step, seconds, dev_bleu),) = row["dev_curve"]["t2t_lite"]
    assert (step, seconds) == (3, ours["wall_seconds"])
    assert dev_bleu == pytest.approx(bleu("curve/t2t_lite.3.5.out", "dev", 5), abs=0.01)
    assert ours["batch_tokens_per_sec"] == pytest.approx(3 * 256 / ours["wall_seconds"], rel=0.01)
    assert ("opennmt_py" in row["budget"]) == bool(onmt)
    if onmt:  # both stop at step 3: one point, equal steps and (about) equal time
        assert row["budget"]["opennmt_py"]["steps"] == 3 and "equal_steps" not in row
        ((step, seconds, dev_bleu_onmt),) = row["dev_curve"]["opennmt_py"]
        assert (step, seconds) == (3, row["budget"]["opennmt_py"]["wall_seconds"])
        assert 0.0 <= dev_bleu_onmt <= 100.0
    # The same command with a longer budget continues both sides from step 3, and
    # counts the first run's wall time too.
    (longer,) = run_bench(tmp_path, *flags, "--steps=5", *curve, script="bleu_vs_opennmt.py")
    resumed = longer["budget"]["t2t_lite"]
    # The curve keeps step 3's point, decoded once, and adds the newest step's.
    assert [point[0] for point in longer["dev_curve"]["t2t_lite"]] == [3, 5]
    assert longer["dev_curve"]["t2t_lite"][0] == [3, ours["wall_seconds"], dev_bleu]
    assert resumed["steps"] == 5 and resumed["wall_seconds"] > ours["wall_seconds"]
    assert resumed["batch_tokens_per_sec"] == pytest.approx(
        5 * 256 / resumed["wall_seconds"], rel=0.01
    )
    log = (tmp_path / "work" / "t2t_train.log").read_text(encoding="utf-8")
    assert "model.ckpt-3 at step 3." in log  # t2t-train's "Resumed from ..." line
    if onmt:
        assert longer["budget"]["opennmt_py"]["steps"] == 5
        onmt_log = (tmp_path / "work" / "onmt_train.log").read_text(encoding="utf-8")
        assert "Loading checkpoint from" in onmt_log and "model_step_3.pt" in onmt_log
        assert "equal_steps" not in longer
    # Other settings in the same work dir: one line naming the flag, exit 1.
    other = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "bleu_vs_opennmt.py"), *flags,
         "--steps=5", "--hidden_size=32"],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert other.returncode == 1
    assert other.stderr.strip().splitlines()[-1].startswith("bleu_vs_opennmt: --hidden_size: ")


def test_a_cpu_budget_stops_a_busy_process_by_its_cpu_time_and_resumes_with_what_is_left(
    tmp_path,
):
    """bench/budget.py, the parsing head-to-head's budget: a busy child (and its
    own child) is stopped once the tree has used the budget's CPU time; an
    idle one is not (wall time passes, CPU time does not); a rerun with the
    same file gets only what is left."""
    import budget

    # The root and a child it forks spin; the child stops when the root is gone.
    busy = (
        "import os, time\nroot = os.getpid()\nos.fork()\nend = time.time() + 60\n"
        "while time.time() < end and root in (os.getpid(), os.getppid()): pass"
    )
    spent = str(tmp_path / "budget.json")
    used = budget.run([sys.executable, "-c", busy], 0.05, "cpu", spent)  # 3 s of CPU
    assert used["stopped"] and used["returncode"] != 0
    # Two busy processes share the budget: it is spent in about half the wall time.
    assert 3.0 <= used["seconds"] < 3.0 + 4 * budget.POLL_S
    assert json.loads((tmp_path / "budget.json").read_text())["seconds"] == used["seconds"]
    again = budget.run([sys.executable, "-c", busy], 0.05, "cpu", spent)
    assert again == {**again, "stopped": True, "wall_seconds": 0.0}  # nothing left: not run
    idle = budget.run([sys.executable, "-c", "import time; time.sleep(3)"], 0.05, "cpu")
    assert not idle["stopped"] and idle["returncode"] == 0 and idle["seconds"] < 1.0
    with pytest.raises(ValueError, match="clock must be one of"):
        budget.run(["true"], 1, "gpu")
