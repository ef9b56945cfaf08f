"""t2t-export: a SavedModel that decodes like t2t-decode, loaded without t2t_lite."""

import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf
from conftest import ROOT, run_binary
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow_serving.apis import predict_pb2

from t2t_lite import run_dir as run_dir_lib
from t2t_lite import sequences
from t2t_lite.data import problem
from t2t_lite.decoding import runner
from t2t_lite.export import exporter, serving

EXPORT_HPARAMS = "beam_size=2,alpha=0.6,max_input_length=8"
NEG = serving.REJECTED_SCORE

# Loads an export and answers requests, importing only tensorflow and
# tensorflow_text, as a server would. Text goes in and out as hex (it may
# not be UTF-8).
FRESH_PROCESS = """
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the tokenizer ops
export, requests = sys.argv[1], json.loads(sys.argv[2])
loaded = tf.saved_model.load(export)
answers = []
for name, batch in requests:
    if name == "serving_default":
        batch = tf.constant([bytes.fromhex(text) for text in batch], tf.string)
    else:
        batch = tf.constant(batch, tf.int32)
    out = {k: v.numpy().tolist() for k, v in loaded.signatures[name](inputs=batch).items()}
    if name == "serving_default":
        out["outputs"] = [text.decode("utf-8") for text in out["outputs"]]
    out["status"] = [status.decode() for status in out["status"]]
    answers.append(out)
assert not any(m.startswith("t2t_lite") for m in sys.modules), "t2t_lite was imported"
print(json.dumps(answers))
"""


def serve(export_path: str, requests: list) -> list[dict]:
    """Answers [(signature, batch), ...] from a fresh process without t2t_lite."""
    encoded = [
        (name, [t.hex() if isinstance(t, bytes) else t.encode().hex() for t in batch])
        if name == "serving_default"
        else (name, batch)
        for name, batch in requests
    ]
    return fresh_process(FRESH_PROCESS, export_path, json.dumps(encoded))


def fresh_process(code: str, *args: str):
    """The last stdout line, as JSON, of `code` run with args in a process that
    imports no t2t_lite (as a server would)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH="")
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def exported(copy_run, tmp_path_factory):
    _, run_dir = copy_run
    export_dir = str(tmp_path_factory.mktemp("export"))
    return exporter.export(run_dir, export_dir, overrides=EXPORT_HPARAMS)


@pytest.fixture(scope="module")
def in_process(copy_run):
    """Decodes lines with t2t-decode's decoder: line -> (text, score)."""
    _, run_dir = copy_run
    prob, model, _ = run_dir_lib.open_run(run_dir)
    decoder = runner.make_decoder(model, EXPORT_HPARAMS)

    def decode(lines: list[str]) -> list[tuple[str, float]]:
        inputs, errors = runner.encode_lines(prob, lines, "test")
        assert not errors
        return [(prob.decode_text(hyps[0][0]), hyps[0][1]) for hyps in decoder.decode_ids(inputs)]

    return decode


def assert_same(answer: dict, expected: list[tuple[str, float]]) -> None:
    assert answer["outputs"] == [text for text, _ in expected]
    assert answer["scores"] == pytest.approx([score for _, score in expected], abs=1e-4)


def test_a_fresh_process_serves_what_t2t_decode_decodes(exported, in_process):
    one, three = ["3 1 2"], ["0 1 2 3 3", "2", "1 0"]
    answers = serve(exported, [("serving_default", one), ("serving_default", three)])
    assert_same(answers[0], in_process(one))
    assert_same(answers[1], in_process(three))
    assert answers[1]["status"] == ["ok"] * 3


def xla_functions(export_path: str) -> int:
    """Functions of the export's graph that TensorFlow must compile with XLA."""
    saved = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(export_path, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    library = saved.meta_graphs[0].graph_def.library
    return sum(f.attr["_XlaMustCompile"].b for f in library.function)


@pytest.mark.slow
def test_small_batches_run_xla_compiled_when_asked_and_serve_the_same(
    exported, copy_run, in_process, tmp_path
):
    _, run_dir = copy_run
    compiled = exporter.export(run_dir, str(tmp_path), overrides=EXPORT_HPARAMS, xla_max_rows=4)
    assert xla_functions(exported) == 0  # the default: stock TF Serving runs it
    assert xla_functions(compiled) >= 1
    # Beam 2: one and two inputs (2 and 4 rows) are compiled, three are not.
    batches = [["3 1 2"], ["0 1 2 3 3", "2"], ["0 1 2 3 3", "2", "1 0"]]
    answers = serve(compiled, [("serving_default", batch) for batch in batches])
    for answer, batch in zip(answers, batches, strict=True):
        assert_same(answer, in_process(batch))
    ids = serve(compiled, [("decode_ids", [[5, 3, 4, 0, 0, 0, 0, 0, 0]])])[0]
    assert ids["scores"] == pytest.approx([in_process(["3 1 2"])[0][1]], abs=1e-4)
    with pytest.raises(ValueError, match="--xla_max_rows"):
        exporter.export(run_dir, str(tmp_path), xla_max_rows=4, export_format="ctranslate2")


def test_the_ids_signature_decodes_padded_ids(exported, in_process):
    # Rows end at their first PAD or EOS: [5 3 4], [2], [3 2].
    batch = [[5, 3, 4, 0, 0], [2, 1, 3, 0, 0], [3, 2, 1, 0, 0]]
    answer = serve(exported, [("decode_ids", batch)])[0]
    expected = in_process(["3 1 2", "0", "1 0"])
    prob = problem.get("test_identity_small")
    texts = [
        prob.decode_text([i for i in row if i > sequences.EOS_ID]) for row in answer["outputs"]
    ]
    assert texts == [text for text, _ in expected]
    assert answer["scores"] == pytest.approx([s for _, s in expected], abs=1e-4)


@pytest.mark.slow
def test_bad_elements_get_defined_answers_and_the_rest_is_decoded(exported, in_process):
    too_long = "1 2 3 0 1 2 3 0 1 2"  # 10 symbols > max_input_length=8
    batch = ["", b"\xff\xfe 1", "1 9", too_long, "2 2"]
    answer = serve(exported, [("serving_default", batch)])[0]
    assert answer["status"] == ["empty", "invalid_utf8", "unknown_token", "truncated", "ok"]
    truncated, ok = in_process([too_long, "2 2"])
    assert_same(answer, [("", 0.0), ("", NEG), ("", NEG), truncated, ok])

    ids = serve(exported, [("decode_ids", [[0, 0], [2, 99], [-1, 2], [2, 0]])])[0]
    assert ids["status"] == ["empty", "unknown_token", "unknown_token", "ok"]
    assert ids["scores"][:3] == [0.0, NEG, NEG]
    # An empty batch is an empty answer (it was an InvalidArgumentError).
    empty = serve(exported, [("serving_default", [])])[0]
    assert empty == {"outputs": [], "scores": [], "status": []}


@pytest.mark.slow  # fast tier budget: a fresh process serves both signatures in the fast tier
def test_saved_model_cli_lists_both_signatures(exported):
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    shown = subprocess.run(
        [cli, "show", "--dir", exported, "--all"],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    ).stdout
    signatures = {}
    for block in shown.split("signature_def['")[1:]:
        name = block.split("'")[0]
        tensors = re.findall(
            r"(inputs|outputs)\['(\w+)'\] tensor_info:\s+dtype: (\w+)\s+shape: (\S+)", block
        )
        signatures[name] = {f"{kind}.{key}": (dtype, shape) for kind, key, dtype, shape in tensors}
    assert signatures["serving_default"] == {
        "inputs.inputs": ("DT_STRING", "(-1)"),
        "outputs.outputs": ("DT_STRING", "(-1)"),
        "outputs.scores": ("DT_FLOAT", "(-1)"),
        "outputs.status": ("DT_STRING", "(-1)"),
    }
    assert signatures["decode_ids"] == {
        "inputs.inputs": ("DT_INT32", "(-1,"),
        "outputs.outputs": ("DT_INT32", "(-1,"),
        "outputs.scores": ("DT_FLOAT", "(-1)"),
        "outputs.status": ("DT_STRING", "(-1)"),
    }
    assert "shape: (-1, -1)" in shown


REGISTERED_OPS = """
import json
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session as c
import tensorflow

def registered():
    ops = op_def_pb2.OpList()
    ops.ParseFromString(c.TF_GetBuffer(c.TF_GetAllOpList()))
    return {op.name for op in ops.op}

core = registered()
import tensorflow_text
print(json.dumps({"core": sorted(core), "text": sorted(registered() - core)}))
"""
# Registered in TensorFlow, but they call back into Python: no server has them.
PYTHON_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}


@pytest.mark.slow  # fast tier budget
def test_the_graph_holds_only_tensorflow_and_tensorflow_text_ops(exported):
    result = subprocess.run(
        [sys.executable, "-c", REGISTERED_OPS],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    registered = json.loads(result.stdout.strip().splitlines()[-1])
    allowed = (set(registered["core"]) | set(registered["text"])) - PYTHON_OPS

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(exported, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    graph = saved.meta_graphs[0].graph_def
    used = {node.op for node in graph.node}
    used |= {node.op for function in graph.library.function for node in function.node_def}
    assert used - allowed == set()
    # Tokenization runs in the graph, with tensorflow-text's tokenizer.
    assert used & set(registered["text"]) == {"TFText>WhitespaceTokenizeWithOffsetsV2"}


def test_the_export_records_its_search_and_never_overwrites(exported, copy_run, monkeypatch):
    _, run_dir = copy_run
    with open(os.path.join(exported, exporter.METADATA_FILE), encoding="utf-8") as f:
        metadata = json.load(f)
    assert metadata["decode_hparams"]["beam_size"] == 2
    assert metadata["decode_hparams"]["alpha"] == 0.6
    assert metadata["problem"] == "test_identity_small"
    assert metadata["model"] == "transformer"

    export_dir = os.path.dirname(exported)
    assert os.listdir(export_dir) == ["1"]
    with pytest.raises(ValueError, match="exists; pick another --version"):
        exporter.export(run_dir, export_dir, version=1)
    with pytest.raises(ValueError, match="temperature, top_k"):
        exporter.export(run_dir, export_dir, overrides="temperature=0.7")

    def fails_midway(module, path, signatures):
        os.makedirs(path)
        with open(os.path.join(path, "saved_model.pb"), "w") as f:
            f.write("half")
        raise OSError("disk full")

    monkeypatch.setattr(tf.saved_model, "save", fails_midway)
    with pytest.raises(OSError, match="disk full"):
        exporter.export(run_dir, export_dir)
    assert os.listdir(export_dir) == ["1"]  # nothing half-written is left


@pytest.mark.slow
def test_an_averaged_checkpoint_decodes_and_exports_through_the_binaries(copy_run, tmp_path):
    data_dir, run_dir = copy_run
    averaged = run_binary(
        "t2t-avg-checkpoints",
        f"--model_dir={run_dir}",
        "--num_last_checkpoints=2",
        f"--output_path={tmp_path}/averaged/model.ckpt-800",
    )
    assert averaged.returncode == 0, averaged.stderr[-2000:]
    assert averaged.stdout.strip() == f"{tmp_path}/averaged/model.ckpt-800"

    decoded = run_binary(
        "t2t-decode",
        f"--output_dir={run_dir}",
        f"--checkpoint_path={tmp_path}/averaged",
        f"--data_dir={data_dir}",
        "--max_examples=8",
    )
    assert decoded.returncode == 0, decoded.stderr[-2000:]
    assert "examples=8" in decoded.stdout

    export = run_binary(
        "t2t-export",
        f"--output_dir={run_dir}",
        f"--checkpoint_path={tmp_path}/averaged/model.ckpt-800",
        f"--export_dir={tmp_path}/export",
        "--decode_hparams=beam_size=1",
    )
    assert export.returncode == 0, export.stderr[-2000:]
    assert export.stdout.strip() == f"{tmp_path}/export/1"
    answer = serve(f"{tmp_path}/export/1", [("serving_default", ["1 2", ""])])[0]
    assert answer["status"] == ["ok", "empty"]


def test_binary_errors_name_the_flag(tmp_path):
    result = run_binary("t2t-avg-checkpoints", f"--model_dir={tmp_path}")
    assert result.returncode == 1
    assert "t2t-avg-checkpoints: error: no checkpoint" in result.stderr
    result = run_binary("t2t-export", f"--output_dir={tmp_path}", f"--export_dir={tmp_path}/e")
    assert result.returncode == 1
    assert "experiment.json not found" in result.stderr
    assert "Traceback" not in result.stderr
    assert not os.path.exists(f"{tmp_path}/e")  # a refused export leaves no empty export dir


def load_example_client():
    path = os.path.join(ROOT, "examples", "serving_client.py")
    spec = importlib.util.spec_from_file_location("serving_client", path)
    client = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(client)
    return client


def test_the_example_client_speaks_to_the_export_through_serving_protos(exported, in_process):
    """The client's PredictRequest, answered by the export as a server would, parses back."""
    client = load_example_client()
    lines = ["1 2", "3 0 0"]
    request = client.predict_request(lines, "t2t", "serving_default")
    assert request.inputs["inputs"].tensor_shape.dim[0].size == 2

    loaded = tf.saved_model.load(exported)
    signature = loaded.signatures[request.model_spec.signature_name]
    outputs = signature(inputs=tf.constant(tf.make_ndarray(request.inputs["inputs"])))
    response = predict_pb2.PredictResponse()
    for key, value in outputs.items():
        response.outputs[key].CopyFrom(tf.make_tensor_proto(value.numpy()))
    answers = client.parse_response(response)
    expected = in_process(lines)
    assert [(text, status) for text, _, status in answers] == [(t, "ok") for t, _ in expected]
    assert [score for _, score, _ in answers] == pytest.approx([s for _, s in expected], abs=1e-4)
    body = json.loads(client.rest_body(lines, "serving_default"))
    assert body == {"signature_name": "serving_default", "instances": lines}


HOSTILE = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # registers the tokenizer ops
loaded = tf.saved_model.load(sys.argv[1])
rows = int(sys.argv[2])
cases = [
    ("serving_default", tf.constant(b"3")),
    ("serving_default", tf.constant([[b"3"], [b"2 1"]])),
    ("serving_default", tf.constant([[[b"3"]]])),
    ("serving_default", tf.constant([b"3"] * rows)),
    ("decode_ids", tf.constant(3, tf.int32)),
    ("decode_ids", tf.constant([3, 4], tf.int32)),
    ("decode_ids", tf.constant([[[3, 4]]], tf.int32)),
    ("decode_ids", tf.constant(np.full([rows, 1], 3, np.int32))),
]
answers = []
for name, value in cases:
    try:
        out = loaded.signatures[name](inputs=value)
        answers.append("answered " + str(out["status"].shape))
    except tf.errors.InvalidArgumentError as err:
        lines = str(err).splitlines()
        answers.append(next(line for line in lines if "Shape of" in line or "at most" in line))
print(json.dumps(answers))
"""


def assert_hostile_shapes_are_refused(export_path: str) -> None:
    """Both signatures of an export, called with a shape they do not take or with
    too many rows, in a fresh process: an error naming the input, the process
    alive (a scalar once crashed it), and never an answer of another shape."""
    answers = fresh_process(HOSTILE, export_path, str(serving.MAX_REQUEST_ROWS + 1))
    shapes = ["[]", "[2,1]", "[1,1,1]", None, "[]", "[2]", "[1,1,2]", None]
    for answer, shape in zip(answers, shapes, strict=True):
        if shape is None:
            assert f"a request holds at most {serving.MAX_REQUEST_ROWS} rows" in answer
        else:
            assert f"Shape of tensor inputs {shape} is not compatible" in answer, answer


@pytest.mark.slow  # fast tier budget
def test_an_export_refuses_hostile_shapes_and_oversized_requests(exported):
    assert_hostile_shapes_are_refused(exported)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, model, hparams_set",
    [
        ("parsing_from_files_labels", "universal_transformer_encoder", "universal_transformer_parsing_tagger"),
        ("parsing_from_files_xx", "transformer", "transformer_parsing_cpu"),
    ],
)  # fmt: skip
def test_a_parsers_export_serves_what_t2t_decode_writes_held_to_trees(
    tmp_path, name, model, hparams_set
):
    """A parser exported (the recipe's UT tagger, one label per word; a
    linearized-tree Transformer): a fresh process without t2t_lite answers each
    sentence with what t2t-decode's decoder writes, held by the same constraint
    (one label per word; a tree over the words), though one training step
    leaves the model's own choices anything but that."""
    from test_parsing import TINY_PARSER, tiny_treebank_data

    from t2t_lite import api
    from t2t_lite.parsing import trees

    data, run = tiny_treebank_data(tmp_path, name), str(tmp_path / "run")
    api.train(name, model, hparams_set, data, run, hparams=TINY_PARSER,
              train_steps=1, local_eval_frequency=1)  # fmt: skip
    search = "beam_size=1,parse_input=tokens,extra_length=40"
    path = exporter.export(run, str(tmp_path / "export"), overrides=search)
    sentences = ["The dog barks .", "It rained .", "Ann sees a cat ."]
    answer = serve(path, [("serving_default", sentences)])[0]
    loaded = api.load(run)
    decoder = runner.make_decoder(loaded.model, search, problem=loaded.problem)
    inputs = [loaded.problem.encode_text(s) for s in sentences]
    expected = [loaded.problem.decode_text(hyps[0][0]) for hyps in decoder.decode_ids(inputs)]
    assert answer["outputs"] == expected
    for sentence, written in zip(sentences, answer["outputs"], strict=True):
        if name == "parsing_from_files_labels":
            assert len(written.split()) == len(sentence.split())
        else:
            assert trees.is_tree_over(written.split(), len(sentence.split()))
