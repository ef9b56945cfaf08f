#!/usr/bin/env python3
"""Sends lines to a t2t-export model on TF Serving, over gRPC or REST, and prints the answers.

    pip install tensorflow-serving-api   # or: pip install -e '.[serving]'
    python examples/serving_client.py --server=localhost:8500 --model_name=t2t "1 2 3" "4 5"
    python examples/serving_client.py --rest=http://localhost:8501 --model_name=t2t "1 2 3"

Each answer line is: status <TAB> score <TAB> output.
"""

import json
import urllib.request

import tensorflow as tf
from absl import app, flags
from tensorflow_serving.apis import predict_pb2

FLAGS = flags.FLAGS


def define_flags() -> None:
    flags.DEFINE_string("server", "", "gRPC address host:port (tensorflow_model_server --port).")
    flags.DEFINE_string("rest", "", "REST base URL (tensorflow_model_server --rest_api_port).")
    flags.DEFINE_string("model_name", "t2t", "tensorflow_model_server --model_name.")
    flags.DEFINE_string("signature_name", "serving_default", "The text signature.")
    flags.DEFINE_float("timeout", 30.0, "Seconds to wait for an answer.")


def predict_request(texts: list[str], model_name: str, signature_name: str):
    """A PredictRequest carrying the batch as one string tensor of shape [N]."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    request.inputs["inputs"].CopyFrom(
        tf.make_tensor_proto(
            [t.encode("utf-8") for t in texts], dtype=tf.string, shape=[len(texts)]
        )
    )
    return request


def parse_response(response) -> list[tuple[str, float, str]]:
    """PredictResponse -> [(output, score, status), ...] in request order."""
    outputs = tf.make_ndarray(response.outputs["outputs"])
    scores = tf.make_ndarray(response.outputs["scores"])
    status = tf.make_ndarray(response.outputs["status"])
    return [
        (o.decode("utf-8"), float(s), st.decode("utf-8"))
        for o, s, st in zip(outputs, scores, status, strict=True)
    ]


def grpc_predict(
    server: str, texts: list[str], model_name: str, signature_name: str, timeout: float
) -> list[tuple[str, float, str]]:
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    with grpc.insecure_channel(server) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        request = predict_request(texts, model_name, signature_name)
        return parse_response(stub.Predict(request, timeout))


def rest_body(texts: list[str], signature_name: str) -> bytes:
    """The JSON of a row-format :predict request."""
    return json.dumps({"signature_name": signature_name, "instances": texts}).encode("utf-8")


def rest_predict(
    base_url: str, texts: list[str], model_name: str, signature_name: str, timeout: float
) -> list[tuple[str, float, str]]:
    """POST /v1/models/<name>:predict; each prediction is a dict of the outputs."""
    request = urllib.request.Request(
        f"{base_url}/v1/models/{model_name}:predict",
        data=rest_body(texts, signature_name),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        predictions = json.load(answer)["predictions"]
    return [(p["outputs"], p["scores"], p["status"]) for p in predictions]


def main(argv):
    texts = argv[1:]
    if not texts:
        raise app.UsageError("give the lines to decode as arguments")
    if bool(FLAGS.server) == bool(FLAGS.rest):
        raise app.UsageError("give exactly one of --server (gRPC) and --rest")
    options = (FLAGS.model_name, FLAGS.signature_name, FLAGS.timeout)
    if FLAGS.server:
        answers = grpc_predict(FLAGS.server, texts, *options)
    else:
        answers = rest_predict(FLAGS.rest, texts, *options)
    for output, score, status in answers:
        print(f"{status}\t{score:.4f}\t{output}")


if __name__ == "__main__":
    define_flags()
    app.run(main)
