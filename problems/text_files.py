"""Problems on the user's own files: translation (Text2Text), language
modelling (Text2Self) and classification (Text2Class) shapes.

    t2t-datagen --problem=translate_from_files --data_dir=D \
        --train_files=train.tsv --dev_files=dev.tsv [--vocab_size=8000]
    t2t-datagen --problem=translate_from_files --data_dir=D \
        --train_files=train.en,train.de --dev_files=dev.en,dev.de

Files: one TSV (source<TAB>target per line) or a source and a target file
aligned line by line, named in that order: SOURCE,TARGET (above, English
into German). The file names are saved in the data dir
(<problem>.files.json), so t2t-train can find them again.
"""

from absl import logging

from t2t_lite import files
from t2t_lite.data import configured, problem, text_files, text_problem


class FilesProblem(configured.ConfiguredByFiles, text_problem.Text2TextProblem):
    """Pairs from the files configured for the data dir."""

    datagen_flags = "--train_files=... --dev_files=..."

    def configure(
        self, data_dir: str, train_files: list[str], dev_files: list[str], vocab_size: int = 0
    ) -> None:
        if not train_files or not dev_files:
            raise ValueError(f"problem {self.name!r} needs --train_files and --dev_files")
        config = {
            "train": [files.absolute(p) for p in train_files],
            "dev": [files.absolute(p) for p in dev_files],
            "vocab_size": vocab_size or self.vocab_target_size,
        }
        for split in ("train", "dev"):
            chosen = config[split]
            if len(chosen) == 2 and self.has_source:
                logging.info(
                    "%s %s: source (the model reads) %s; target (it writes) %s.",
                    self.name,
                    split,
                    chosen[0],
                    chosen[1],
                )
        self.write_config(data_dir, config)

    def generate_data(self, data_dir: str, seed: int = 1) -> dict[str, int]:
        self.vocab_target_size = int(self._config(data_dir)["vocab_size"])
        return super().generate_data(data_dir, seed)

    def text_pairs(self, data_dir: str, split: str):
        return text_files.read_pairs(self._config(data_dir)[split])


@problem.register("translate_from_files")
class TranslateFromFiles(FilesProblem):
    """Subword (WordPiece) vocabulary shared by source and target."""


@problem.register("translate_from_files_characters")
class TranslateFromFilesCharacters(FilesProblem):
    """One token per character."""

    max_sequence_length = 1024

    def learn_vocabulary(self, lines: list[str]) -> list[str]:
        return text_problem.CharacterVocabulary.learn(lines)


@problem.register("languagemodel_from_files")
class LanguageModelFromFiles(FilesProblem):
    """Text2Self: one plain text file per split, one document per line.

    The target is the line; inputs are empty (EOS only) and the models are
    decoder-only (input_encoding "none"): they learn p(line). Runs trained
    before decoder-only models existed keep their encoder-decoder model
    (experiment.json says "tokens"). LAMBADA-style evaluations fit here.
    """

    has_source = False
    input_encoding = "none"
    reports_bleu = False  # decoding from no input is sampling, not translation

    def text_pairs(self, data_dir: str, split: str):
        return text_files.read_documents(self._config(data_dir)[split])


@problem.register("classify_from_files")
class ClassifyFromFiles(FilesProblem):
    """Text2Class: a TSV of text<TAB>label; the target is the label's text.

    Labels share the subword vocabulary, so a label decodes back to its name
    and sequence accuracy is classification accuracy; no BLEU.
    """

    reports_bleu = False

    def text_pairs(self, data_dir: str, split: str):
        for source, label, where in text_files.read_pairs(self._config(data_dir)[split]):
            yield source, label.strip(), where
