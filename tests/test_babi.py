"""bAbI: the published format's reader, the story generator (checked by a
reference simulator), the problems' files and the fact encoding."""

import re

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import tfrecord
from t2t_lite.layers import embedding, facts
from t2t_lite.problems import babi, babi_format, babi_generator

SAMPLE = """1 Mary moved to the bathroom.
2 John went to the hallway.
3 Where is Mary? \tbathroom\t1
4 Daniel went back to the hallway.
5 Sandra moved to the garden.
6 Where is Daniel? \thallway\t4
1 Sandra picked up the milk there.
2 Sandra took the football there.
3 What is Sandra carrying? \tmilk,football\t1 2
"""


def test_reader_on_the_published_format():
    examples = babi_format.parse_lines(SAMPLE.splitlines(), "qa1_train.txt", 1)
    assert [e.answer for e in examples] == [("bathroom",), ("hallway",), ("milk", "football")]
    first, second, third = examples
    assert first.facts == (
        ("mary", "moved", "to", "the", "bathroom"),
        ("john", "went", "to", "the", "hallway"),
    )
    assert first.question == ("where", "is", "mary")
    assert first.supporting == (0,)
    # Questions are not facts: line 4 is the story's third statement.
    assert len(second.facts) == 4 and second.supporting == (2,)
    assert second.facts[2] == ("daniel", "went", "back", "to", "the", "hallway")
    # Line 1 starts a new story.
    assert len(third.facts) == 2 and third.supporting == (0, 1)
    assert first.where == "qa1_train.txt:3"
    assert babi_format.task_of("en-valid-10k/qa3_three-supporting-facts_train.txt") == 3
    assert babi_format.task_of("stories.txt") == 0


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            ["1 Mary moved to the bathroom.", "3 John went to the hallway."],
            "f.txt:2: line number 3",
        ),
        (["x Mary moved."], "f.txt:1: expected '<number> <sentence>'"),
        (["1 Mary moved to the bathroom.", "2 Where is Mary?\t\t1"], "f.txt:2: a question needs"),
        (["1 Mary moved to the bathroom.", "2 Where is Mary?\tbathroom\t7"], "f.txt:2: supporting"),
    ],
)
def test_reader_names_the_bad_line(lines, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        babi_format.parse_lines(lines, "f.txt")


_MOVE = re.compile(r"^(\w+) (?:moved|went|journeyed|travelled|went back) to the (\w+)$")
_TAKE = re.compile(r"^(\w+) (?:got|grabbed|picked up|took) the (\w+) there$")
_DROP = re.compile(r"^(\w+) (?:dropped|discarded|put down|left) the (\w+)$")


def simulate(example):
    """An independent reading of the story: the answer its facts imply."""
    place, holder, trail = {}, {}, {}

    def arrive(obj, loc):
        if not trail.get(obj) or trail[obj][-1] != loc:
            trail.setdefault(obj, []).append(loc)

    for fact in example.facts:
        sentence = " ".join(fact)
        if m := _MOVE.match(sentence):
            place[m[1]] = m[2]
            for obj, person in holder.items():
                if person == m[1]:
                    arrive(obj, m[2])
        elif m := _TAKE.match(sentence):
            assert m[2] not in holder, f"{sentence}: already held"
            holder[m[2]] = m[1]
            arrive(m[2], place[m[1]])
        elif m := _DROP.match(sentence):
            assert holder.pop(m[2]) == m[1], f"{sentence}: not held by {m[1]}"
        else:
            raise AssertionError(f"unknown statement {sentence!r}")
    question = " ".join(example.question)
    if m := re.fullmatch(r"where is (\w+)", question):
        return place[m[1]]
    if m := re.fullmatch(r"where is the (\w+)", question):
        return trail[m[1]][-1]
    m = re.fullmatch(r"where was the (\w+) before the (\w+)", question)
    places = trail[m[1]]
    assert places.count(m[2]) == 1, "the question must be unambiguous"
    return places[places.index(m[2]) - 1]


@pytest.mark.parametrize("task", babi_generator.TASKS)
def test_every_generated_answer_follows_from_its_story(task):
    rng = np.random.default_rng(7)
    questions = 0
    for _ in range(150):
        statements, asked = babi_generator.story(task, rng)
        lines = babi_format.story_lines(statements, asked)
        for example in babi_format.parse_lines(lines, "generated", task):
            assert example.answer == (simulate(example),), example.where
            assert all(0 <= i < len(example.facts) for i in example.supporting)
            questions += 1
    assert questions >= 600  # most stories ask several questions


def test_generator_is_seeded():
    def stories(seed):
        rng = np.random.default_rng(seed)
        return [babi_generator.story(t, rng) for t in (1, 2, 3, 3)]

    assert stories(3) == stories(3)
    assert stories(3) != stories(4)


def test_task1_supporting_fact_is_the_last_move():
    rng = np.random.default_rng(0)
    statements, asked = babi_generator.story(1, rng)
    for example in babi_format.parse_lines(babi_format.story_lines(statements, asked), "g", 1):
        person = example.question[-1]
        moves = [i for i, fact in enumerate(example.facts) if fact[0] == person]
        assert example.supporting == (moves[-1],)


class SmallBabi(babi.GeneratedBabi):
    questions_per_task = {"train": 40, "dev": 9}
    test_questions = 6


def test_problem_files_vocabulary_and_task_splits(tmp_path):
    prob = SmallBabi()
    prob.name = "babi_small"
    counts = prob.generate_data(str(tmp_path), seed=2)
    assert counts == {"train": 120, "dev": 27, "test_qa1": 6, "test_qa2": 6, "test_qa3": 6}
    fresh = SmallBabi()
    fresh.name = "babi_small"
    assert fresh.has_data(str(tmp_path)) and fresh.tasks == (1, 2, 3)
    assert fresh.tokens[: sequences.FACT_END_ID + 1] == ["<pad>", "<EOS>", "."]
    for split in fresh.splits:
        for ex in tfrecord.read_records(fresh.filepaths(str(tmp_path), split)[0]):
            inputs, targets = ex["inputs"], ex["targets"]
            assert all(0 <= i < fresh.vocab_size for i in inputs + targets)
            # Facts, each closed by FACT_END, the question last, then EOS.
            assert inputs[-2:] == [sequences.FACT_END_ID, sequences.EOS_ID]
            assert sequences.EOS_ID not in inputs[:-1] and len(targets) == 2
            question = fresh.decode_text(inputs[:-2]).split(" . ")[-1]
            assert question.startswith("where")
    # Text in t2t-decode's input form encodes to the same ids as the files.
    ids = fresh.encode_text("Mary moved to the bathroom. Where is Mary?")
    assert fresh.decode_text(ids) == "mary moved to the bathroom . where is mary ."
    with pytest.raises(ValueError, match="'flew' is not in the vocabulary"):
        fresh.encode_text("Mary flew to the moon. Where is Mary?")


def test_problem_reads_the_users_files(tmp_path):
    for name in ("qa1_x_train.txt", "qa1_x_valid.txt", "qa2_x_valid.txt"):
        (tmp_path / name).write_text(SAMPLE)
    prob = babi.BabiFromFiles()
    data_dir = str(tmp_path / "data")
    tf.io.gfile.makedirs(data_dir)
    prob.configure(
        data_dir,
        [str(tmp_path / "qa1_x_train.txt")],
        [str(tmp_path / "qa1_x_valid.txt"), str(tmp_path / "qa2_x_valid.txt")],
    )
    counts = prob.generate_data(data_dir)
    assert counts == {"train": 3, "dev": 6, "dev_qa1": 3, "dev_qa2": 3}
    milk, football = prob.tokens.index("milk"), prob.tokens.index("football")
    assert prob.decode_text([milk, football]) == "milk football"
    # A decoded answer ends at its EOS, as every problem's decode_text does (problem.py).
    eos, pad = sequences.EOS_ID, sequences.PAD_ID
    assert prob.decode_text([milk, eos, football, pad]) == "milk"
    assert prob.decode_text([football, pad, pad]) == "football"


def test_fact_encoding_is_a_masked_sum_of_word_embeddings():
    words = embedding.SharedEmbedding(12, 4)
    layer = facts.FactEmbedding(words)
    fact_end, eos = sequences.FACT_END_ID, sequences.EOS_ID
    ids = tf.constant([[5, 6, 7, fact_end, 8, fact_end, 9, 10, fact_end, eos, 0]])
    permuted = tf.constant([[7, 5, 6, fact_end, 8, fact_end, 10, 9, fact_end, eos, 0]])
    out, nonpadding = layer(ids)
    assert out.shape == (1, 3, 4) and nonpadding.numpy().tolist() == [[1.0, 1.0, 1.0]]
    # The mask starts at ones: a fact is the sum of its words, in any order.
    # (atol too: a sum near zero of a random init has no relative precision.)
    np.testing.assert_allclose(layer(permuted)[0], out, rtol=1e-6, atol=1e-6)
    # With distinct mask rows, word order matters, and only through the mask.
    mask = np.arange(1, 1 + facts.MAX_FACT_WORDS * 4, dtype=np.float32).reshape(-1, 4) / 50
    layer.position_mask.assign(mask)
    e = words.embed(tf.range(12)[tf.newaxis])[0].numpy()  # [V, C], scaled as in the model
    out = layer(ids)[0].numpy()[0]
    np.testing.assert_allclose(
        out[0], e[5] * mask[0] + e[6] * mask[1] + e[7] * mask[2], rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(out[1], e[8] * mask[0], rtol=1e-5, atol=1e-6)
    moved = layer(permuted)[0].numpy()[0]
    np.testing.assert_allclose(
        moved[0], e[7] * mask[0] + e[5] * mask[1] + e[6] * mask[2], rtol=1e-5, atol=1e-6
    )
    assert not np.allclose(moved[0], out[0])
    np.testing.assert_allclose(moved[1], out[1], rtol=1e-6, atol=1e-6)  # other facts unchanged


def test_fact_structure_pads_rows_with_fewer_facts():
    fact_end, eos = sequences.FACT_END_ID, sequences.EOS_ID
    ids = tf.constant([[5, fact_end, 6, fact_end, eos], [7, 7, fact_end, eos, 0]])
    membership, place, nonpadding = facts.fact_structure(ids)
    assert nonpadding.numpy().tolist() == [[1, 1], [1, 0]]
    assert place.numpy().tolist() == [[0, 0, 0, 0, 0], [0, 1, 0, 0, 0]]
    assert membership.numpy()[1].tolist() == [[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]]


def test_table1_rows_from_per_task_metrics():
    from t2t_lite.reproduction import babi_report, comparison

    def split(seq, ponder=None):
        metrics = {"sequence_accuracy": seq, "accuracy": seq, "loss": 0.1, "examples": 100}
        if ponder is not None:
            metrics["encoder_ponder_time"] = ponder
        return metrics

    results = {
        "dev": split(0.9),
        "test_qa1": split(1.0, 2.0),
        "test_qa2": split(0.93, 2.5),
        "test_qa3": split(0.96, 3.5),
    }
    assert babi_report.task_errors(results) == pytest.approx({1: 0.0, 2: 7.0, 3: 4.0})
    assert babi_report.task_ponder(results) == {1: 2.0, 2: 2.5, 3: 3.5}
    entry = comparison.ENTRIES["adaptive_universal_transformer"]
    table = babi_report.markdown_table([{"problem": "p", "entry": entry, "results": results}])
    row = table.splitlines()[-1]
    assert row == ("| p | UT + ACT | 0.0 | 7.0 | 4.0 | 3.7 | 1/3 | 0.21 | 0 | 2.00 / 2.50 / 3.50 |")
    other = {**results, "test_qa2": split(0.99, 2.0), "test_qa3": split(0.5, 4.5)}
    third = {**results, "test_qa1": split(0.9, 2.0)}
    rows = [{"problem": "p", "entry": entry, "results": [results, other, third]}]
    row = babi_report.markdown_table(rows).splitlines()[-1]
    # per seed: averages (0+7+4)/3, (0+1+50)/3, (10+7+4)/3; failed 1, 1, 2.
    assert row == (
        "| p | UT + ACT | 0.0 [0.0, 10.0] | 7.0 [1.0, 7.0] | 4.0 [4.0, 50.0] | 7.0 [3.7, 17.0] "
        "| 1 [1, 2]/3 | 0.21 | 0 | 2.00 [2.00, 2.00] / 2.50 [2.00, 2.50] / 3.50 [3.50, 4.50] |"
    )
    assert entry.hparams_set_for("babi_qa_generated") == "adaptive_universal_transformer_babi_tiny"
    assert comparison.babi_problems(["babi_qa_generated_1k"])
    with pytest.raises(ValueError, match="compare bAbI problems and other problems separately"):
        comparison.babi_problems(["babi_qa_generated", "algorithmic_identity_binary40"])
    with pytest.raises(ValueError, match="has no bAbI configuration"):
        comparison.ENTRIES["universal_transformer_offsets"].hparams_set_for("babi_qa_generated")


def test_ponder_map_has_one_bar_per_fact(tmp_path):
    from t2t_lite import checkpoints, registry
    from t2t_lite.visualization import inspection

    prob = SmallBabi()
    prob.name = "babi_small"
    prob.generate_data(str(tmp_path), seed=2)
    hp = registry.HPARAMS.get("adaptive_universal_transformer_test")()
    model = registry.MODELS.get("universal_transformer")(hp, prob.vocab_size, "facts")
    checkpoints.build_model(model)
    ids = prob.encode_text("Mary moved to the bathroom. John went to the office. Where is Mary?")
    found = inspection.inspect(model, prob, ids, prob._word_ids(["bathroom"], "answer"))
    assert found.input_tokens == [
        "mary moved to the bathroom",
        "john went to the office",
        "where is mary",
    ]
    assert found.attention["encoder"].shape[-2:] == (3, 3)
    assert found.attention["encdec"].shape[-2:] == (2, 3)
    record = inspection.ponder_record(found)
    assert len(record["encoder"]["ponder_time"]) == 3
    # Each fact's bar is the model's own N + R for that fact.
    _, _, stats = model.encode_with_stats(tf.constant([ids]))
    np.testing.assert_allclose(
        record["encoder"]["ponder_time"], stats.ponder_time().numpy()[0, :3], rtol=1e-6
    )
