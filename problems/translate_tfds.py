"""Translation problems on TensorFlow Datasets' WMT data, under tensor2tensor's names.

    tfds build wmt14_translate/de-en        # once, where TFDS keeps its data
    t2t-datagen --problem=translate_ende_wmt32k --data_dir=D

TFDS's data dir is TFDS_DATA_DIR (default ~/tensorflow_datasets). Nothing is
downloaded here: a dataset that is not prepared is an error saying how to
prepare it. The split is streamed (never held in memory); the vocabulary
(2**15 subwords, shared) is learned from a seeded uniform sample of
vocab_sample_lines training lines, and progress is logged as pairs are encoded.
"""

import os

from t2t_lite.data import problem, text_problem


class TfdsTranslateProblem(text_problem.Text2TextProblem):
    tfds_name = ""
    source_key, target_key = "", ""
    tfds_splits = {"train": "train", "dev": "validation"}
    vocab_target_size = 2**15
    vocab_sample_lines = 1_000_000
    splits = {"train": (0, 100), "dev": (0, 1)}

    def text_pairs(self, data_dir: str, split: str):
        # Imported here, by the one method that reads TFDS: every program
        # registers these problems, and the import costs most of a second of
        # a start-up that reads none (docs/benchmarks.md, start-up).
        import tensorflow_datasets as tfds

        tfds_dir = os.environ.get("TFDS_DATA_DIR") or None
        try:
            dataset = tfds.load(
                self.tfds_name, split=self.tfds_splits[split], data_dir=tfds_dir, download=False
            )
        except (
            AssertionError,
            FileNotFoundError,
            tfds.core.registered.DatasetNotFoundError,
        ) as err:
            raise ValueError(
                f"TFDS dataset {self.tfds_name!r} is not prepared in "
                f"{tfds_dir or '~/tensorflow_datasets'} ({err}); run "
                f"`tfds build {self.tfds_name}` there (or set TFDS_DATA_DIR)"
            ) from None
        for index, example in enumerate(tfds.as_numpy(dataset)):
            source = example[self.source_key].decode("utf-8")
            target = example[self.target_key].decode("utf-8")
            yield source, target, f"{self.tfds_name}[{self.tfds_splits[split]}]:{index}"


@problem.register("translate_ende_wmt32k")
class TranslateEndeWmt32k(TfdsTranslateProblem):
    """English -> German, WMT14 (TFDS wmt14_translate/de-en; dev: newstest2013)."""

    tfds_name = "wmt14_translate/de-en"
    source_key, target_key = "en", "de"


@problem.register("translate_enfr_wmt32k")
class TranslateEnfrWmt32k(TfdsTranslateProblem):
    """English -> French, WMT14 (TFDS wmt14_translate/fr-en; dev: newstest2013)."""

    tfds_name = "wmt14_translate/fr-en"
    source_key, target_key = "en", "fr"
