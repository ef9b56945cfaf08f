"""Sequence conventions and the one line reader."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import files, sequences


def test_reserved_ids_and_eos_helpers():
    assert (sequences.PAD_ID, sequences.EOS_ID) == (0, 1)
    assert sequences.with_eos([5, 6]) == [5, 6, 1]
    assert sequences.strip_eos([5, 6, 1]) == [5, 6]
    assert sequences.strip_eos([5, 6]) == [5, 6]
    assert sequences.until_eos([5, 6, 1, 7]) == [5, 6]
    assert sequences.until_eos([5, 0, 7]) == [5]
    assert sequences.until_eos([]) == []


def test_truncation_warns_with_the_place(caplog):
    assert sequences.truncate([3, 4, 5], 3, "f:1") == [3, 4, 5]
    assert sequences.truncate([3, 4, 5, 6], 2, "f:2") == [3, 4]
    assert "f:2: 4 symbols, longer than max_input_length=2; truncated" in caplog.text


def test_bucket_lengths_double_from_eight():
    assert sequences.bucket_lengths(41, 2.0) == [8, 16, 32, 48]
    assert sequences.bucket_lengths(8, 2.0) == [8]
    assert [sequences.doubling_bucket(n) for n in (1, 8, 9, 17, 100)] == [8, 8, 16, 32, 128]


def test_read_lines_through_gfile_strict_and_lenient():
    path = "ram://lines/a.txt"
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write("\ufeffeins\r\nzwei\n".encode() + b"\xff\xfe\n" + b"vier")
    with pytest.raises(ValueError, match=r"ram://lines/a.txt:3: not valid UTF-8"):
        files.read_lines(path)
    errors = []
    assert files.read_lines(path, errors) == ["eins", "zwei", "", "vier"]
    assert errors == ["ram://lines/a.txt:3: not valid UTF-8 (invalid start byte)"]
    with pytest.raises(FileNotFoundError, match="ram://lines/none.txt: no such file"):
        files.read_lines("ram://lines/none.txt")
    with pytest.raises(ValueError, match="a directory"):
        files.read_lines("ram://lines")


def test_nul_bytes_and_cr_only_line_ends_are_named():
    path = "ram://lines/b.txt"
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(b"eins\nzw\x00ei\ndrei\r\n")
    with pytest.raises(ValueError, match=r"ram://lines/b.txt:2: holds a NUL byte"):
        files.read_lines(path)
    errors = []
    assert files.read_lines(path, errors) == ["eins", "", "drei"]  # CR LF is a line end
    mac = "ram://lines/c.txt"
    with tf.io.gfile.GFile(mac, "wb") as f:
        f.write(b"eins\rzwei\rdrei\r")  # CR-only: one "line" with CRs inside
    with pytest.raises(ValueError, match=r"c.txt:1: holds a carriage return inside the line"):
        files.read_lines(mac)


def test_symbol_lengths_are_until_eos_in_the_graph():
    rows = [[3, 4, 1, 0], [1, 0, 0, 0], [3, 0, 4, 1], [5, 6, 7, 8]]
    assert sequences.symbol_lengths(tf.constant(rows)).numpy().tolist() == [2, 0, 1, 4]
    rng = np.random.default_rng(0)
    batch = rng.integers(0, 6, size=(50, 9))  # PAD and EOS anywhere, as in decoded rows
    lengths = sequences.symbol_lengths(tf.constant(batch)).numpy()
    assert lengths.tolist() == [len(sequences.until_eos(row)) for row in batch]


def test_pad_batch_pads_each_row_after_its_ids():
    batch = sequences.pad_batch([[5, 6, 1], [1], []], 4)
    assert batch.dtype == np.int32
    assert batch.tolist() == [[5, 6, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
