"""What t2t-decode does: load a trained run, decode files, stdin or an eval split."""

import json
import os
import sys
import time
from collections.abc import Iterable
from typing import TextIO

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from t2t_lite import files, run_dir, sequences
from t2t_lite.data import problem as problem_lib
from t2t_lite.data import tfrecord
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.decoding import lm_eval
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.scoring import bleu


def make_decoder(
    model: keras.Model,
    decode_hparams: str,
    xla_compile: bool | None = None,
    problem: problem_lib.Problem | None = None,
) -> decoder_lib.Decoder:
    """A decoder for `--decode_hparams`; xla_compile None: the Decoder's default;
    a `problem`'s decodes are held to what it may write (its decode_constraint:
    a parsing problem's trees)."""
    hp = decoder_lib.decode_hparams(decode_hparams)
    constraint = problem.decode_constraint(hp) if problem is not None else None
    return decoder_lib.Decoder(model, hp, xla_compile, constraint)


def encode_lines(
    problem: problem_lib.Problem, lines: list[str], source: str, first_line: int = 1
) -> tuple[list[list[int]], list[str]]:
    """Lines -> ids (an unencodable line gives [] and an error naming it), errors.

    Long lines stay whole: the Decoder truncates to its max_input_length.
    """
    try:
        return problem.encode_texts(lines), []  # together; a bad line is found line by line
    except ValueError:
        pass
    inputs, errors = [], []
    for number, line in enumerate(lines, start=first_line):
        try:
            ids = problem.encode_text(line)
        except ValueError as err:
            errors.append(f"{source}:{number}: {err}")
            ids = []
        inputs.append(ids)
    return inputs, errors


def format_hypotheses(
    problem: problem_lib.Problem,
    hypotheses: list[tuple[list[int], float]],
    hp: decoder_lib.DecodeHParams,
    source: str = "",
) -> str:
    """One output line for the input line `source`: the best hypothesis, or all
    beams tab-separated; scores if asked."""
    return format_outputs(problem, [hypotheses], hp, [source])[0]


def format_outputs(
    problem: problem_lib.Problem,
    outputs: list[list[tuple[list[int], float]]],
    hp: decoder_lib.DecodeHParams,
    sources: list[str],
) -> list[str]:
    """format_hypotheses of every input line, their texts decoded together."""
    kept = [hypotheses[: hp.num_outputs] for hypotheses in outputs]
    pairs = [(source, ids) for source, hyps in zip(sources, kept, strict=True) for ids, _ in hyps]
    texts = iter(problem.decoded_lines([s for s, _ in pairs], [ids for _, ids in pairs]))
    lines = []
    for hypotheses in kept:
        fields = []
        for _, score in hypotheses:
            fields.append(next(texts))
            if hp.write_beam_scores:
                fields.append(f"{score:.4f}")
        lines.append("\t".join(fields))
    return lines


def decode_file(
    decoder: decoder_lib.Decoder,
    problem: problem_lib.Problem,
    input_path: str,
    output_path: str,
) -> list[str]:
    """Decodes every line of input_path, in order, into output_path (written atomically).

    Empty lines give empty outputs. Lines that cannot be decoded give empty
    outputs too and are returned as errors naming the line; the others are
    decoded and written regardless.
    """
    if files.absolute(output_path) == files.absolute(input_path):
        raise ValueError(
            f"--decode_to_file {output_path!r} is the input file; name another file "
            "(default: <input>.decoded)"
        )
    if tf.io.gfile.isdir(output_path):
        raise ValueError(f"--decode_to_file {output_path!r} is a directory; name a file")
    errors: list[str] = []
    lines = problem.input_lines(files.read_lines(input_path, errors), decoder.hp)
    inputs, encode_errors = encode_lines(problem, lines, input_path)
    errors += encode_errors
    start = time.perf_counter()
    outputs = decoder.decode_ids(inputs, input_path)
    seconds = time.perf_counter() - start
    text = "".join(line + "\n" for line in format_outputs(problem, outputs, decoder.hp, lines))
    whole = time.perf_counter() - start  # the search and the text (a parser's trees)
    files.write_output(output_path, text)
    logging.info("Decoded %d lines of %s into %s.", len(lines), input_path, output_path)
    logging.info("%s", search_report(outputs, seconds))
    if problem.writes_trees:  # a parser: its speed in sentences, as parsers report it
        parsed = sum(1 for line in lines if line.strip())
        logging.info(
            "Parsed %d sentences in %.2f s (%.1f sentences/s; the search and the trees, "
            "the run's loading not counted).",
            parsed,
            whole,
            parsed / whole if whole > 0 else 0.0,
        )
    return errors


def search_report(outputs: list[list[tuple[list[int], float]]], seconds: float) -> str:
    """One line of a file's search speed: its best hypotheses' tokens (EOS not
    counted) over the seconds of `decode_ids` (the search and its batching,
    tracing included; the run's loading, reading and writing the text not), as
    onmt_translate's -report_time reports its own."""
    tokens = sum(len(hypotheses[0][0]) for hypotheses in outputs if hypotheses)
    rate = tokens / seconds if seconds > 0 else 0.0
    return (
        f"Search: {tokens} output tokens of {len(outputs)} lines in {seconds:.2f} s "
        f"({rate:.1f} tokens/s)"
    )


# What one line's text can raise on its way through the problem's input and
# output handling (a tokenizer, a tree built from the output), as opposed to
# the model or the machine: an interactive session answers the line and goes on.
LINE_ERRORS = (ValueError, RecursionError)


def decode_interactive(
    decoder: decoder_lib.Decoder,
    problem: problem_lib.Problem,
    stdin: Iterable[str] = sys.stdin,
    stdout: TextIO = sys.stdout,
) -> None:
    """Reads lines until EOF and prints each decode; a bad line prints an error line.

    Lines may be bytes (stdin's buffer): a line that is not UTF-8 is reported
    as such, as in file decoding.
    """
    for number, line in enumerate(stdin, start=1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError:
                print(f"error: <stdin>:{number}: not valid UTF-8", file=stdout, flush=True)
                continue
        try:
            [line] = problem.input_lines([line.rstrip("\r\n")], decoder.hp)
            inputs, errors = encode_lines(problem, [line], "<stdin>", number)
            if errors:
                print(f"error: {errors[0]}", file=stdout, flush=True)
                continue
            hypotheses = decoder.decode_ids(inputs, "<stdin>", number)[0]
            text = format_hypotheses(problem, hypotheses, decoder.hp, line)
        except LINE_ERRORS as err:  # this line's input or output: the session goes on
            reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
            print(f"error: <stdin>:{number}: {reason}", file=stdout, flush=True)
            continue
        print(text, file=stdout, flush=True)


def decode_split(
    decoder: decoder_lib.Decoder,
    problem: problem_lib.Problem,
    data_dir: str,
    split: str,
    max_examples: int = -1,
) -> dict[str, float]:
    """Decodes a split's inputs -> char accuracy, sequence accuracy, examples.

    char accuracy: target positions (EOS included) where the decoded sequence
    has the target's symbol; sequence accuracy: exact matches.
    """
    paths = problem.split_files(data_dir, split)
    examples = tfrecord.read_examples(paths, max_examples)
    if any(not 0 <= i < problem.vocab_size for e in examples for i in e["inputs"] + e["targets"]):
        raise tfrecord.find_outside(paths, problem.vocab_size)
    inputs = [sequences.strip_eos(e["inputs"]) for e in examples]
    outputs = decoder.decode_ids(inputs)
    correct = total = exact = 0
    for example, hypotheses in zip(examples, outputs, strict=True):
        target = sequences.with_eos(sequences.strip_eos(example["targets"]))
        predicted = sequences.with_eos(hypotheses[0][0])
        matches = np.equal(target, (predicted + [sequences.PAD_ID] * len(target))[: len(target)])
        correct += int(matches.sum())
        total += len(target)
        exact += int(predicted == target)
    count = max(len(examples), 1)
    metrics = {
        "char_accuracy": correct / max(total, 1),
        "sequence_accuracy": exact / count,
        "examples": len(examples),
    }
    if problem.reports_bleu:
        metrics["bleu"] = bleu.decoded_bleu(problem, examples, outputs)
    return metrics


def file_bleu(output_path: str, reference_path: str) -> float:
    """BLEU of a decoded file's first column against a reference file, line by line."""
    hypotheses = [line.split("\t")[0] for line in files.read_lines(output_path)]
    references = files.read_lines(reference_path)
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{output_path} has {len(hypotheses)} lines but --decode_reference "
            f"{reference_path} has {len(references)}"
        )
    return bleu.corpus_bleu(hypotheses, references)


def run(
    options: DecodeOptions, stdin=None, stdout: TextIO = sys.stdout, engines: dict | None = None
) -> None:
    """t2t-decode: one of its four modes (language-model scoring, stdin, a file, a split).

    engines: --engine name -> a factory (output_dir, checkpoint, problem, model,
    DecodeHParams) -> an object with the Decoder's `decode_ids` and `hp`
    (the program supplies them from above this level; "tensorflow" is the Decoder).

    Prints the mode's figures (a JSON line, BLEU, or split metrics) to stdout;
    a file's lines that could not be decoded raise one error naming them after
    every other line was written.
    """
    source = options.decode_from_file
    if source and not options.decode_to_file and not options.lm_eval:
        local = not files.scheme(source)  # a device or a pipe is local by nature
        if local and os.path.exists(source) and not os.path.isfile(source):
            raise ValueError(
                f"--decode_from_file {source!r} is not a regular file (a device or a pipe), "
                f"so there is no place for {source}.decoded; name it with --decode_to_file"
            )
    problem, model, path = run_dir.open_run(options.output_dir, options.checkpoint_path)
    logging.info("Decoding with %s.", path)
    if options.lm_eval:
        if not options.decode_from_file:
            raise ValueError("--lm_eval needs --decode_from_file")
        metrics = lm_eval.evaluate_file(
            options.lm_eval, model, problem, options.decode_from_file, options.decode_to_file
        )
        print(json.dumps({"lm_eval": options.lm_eval, **metrics}), file=stdout)
        return
    if options.engine != "tensorflow":
        if options.engine not in (engines or {}):
            raise ValueError(f"--engine={options.engine!r} is not available here")
        hp = decoder_lib.decode_hparams(options.decode_hparams)
        decoder = engines[options.engine](options.output_dir, path, problem, model, hp)
    else:
        decoder = make_decoder(model, options.decode_hparams, options.xla_compile, problem)
    if options.decode_interactive:
        decode_interactive(decoder, problem, stdin or sys.stdin.buffer, stdout)
    elif options.decode_from_file:
        output = options.decode_to_file or options.decode_from_file + ".decoded"
        errors = decode_file(decoder, problem, options.decode_from_file, output)
        if options.decode_reference:
            score = file_bleu(output, options.decode_reference)
            print(f"BLEU = {score:.2f}", file=stdout)
        if errors:
            raise ValueError(
                f"{len(errors)} line(s) could not be decoded (empty outputs written "
                f"for them in {output}): " + "; ".join(errors)
            )
    elif options.data_dir:
        split = options.eval_split or problem.eval_split
        metrics = decode_split(decoder, problem, options.data_dir, split, options.max_examples)
        text = (f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in metrics.items())
        print(" ".join(text), file=stdout)
    else:
        raise ValueError("give --decode_from_file, --decode_interactive or --data_dir")
