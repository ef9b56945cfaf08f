"""Translation pairs from gettext catalogs: human translations of program messages.

    t2t-datagen --problem=translate_gettext --data_dir=D \
        --train_files=CATALOG_DIR[,CATALOG_DIR...] --language_pair=en-de

Every .mo and .po file under the named directories is read
(gettext_catalogs.py). With English as the source, a pair is a message id
and its translation; for two other languages, the two translations of the
same message (same catalog, context and id) make a pair. Each text is
cleaned (menu accelerators such as "_File", "~Open" and "&Save" lose their
marker, white space and line breaks become single spaces), then pairs are
dropped, and counted in the log, when the translation is missing or equals
the source (untranslated), when a side holds no letter once placeholders and
markup are taken out (format-only: "%s: %s", "$(ARG1)", "<b>%1</b>"), or
when a side is longer than MAX_CHARS. Duplicate pairs are kept once.

Splits come from a hash of the source text, so no source is in two splits:
dev and test hold HELD_OUT_PER_MILLE per mille of the sources each, with
one translation per source (its most frequent; ties: the first in sort
order) as their reference; train holds every distinct pair of the others.
"""

import collections
import hashlib
import re

import tensorflow as tf
from absl import logging

from t2t_lite import files
from t2t_lite.data import configured, problem, text_problem
from t2t_lite.problems import gettext_catalogs

HELD_OUT_PER_MILLE = 20
MAX_CHARS = 1000
_ACCELERATOR = re.compile(r"(?<![\w&~_])(?:[~_]|&(?![A-Za-z]+;|#\d+;))(?=\w)")
_PLACEHOLDER = re.compile(
    r"%(\d+\$)?[-+ #0']*(\d+|\*)?(\.\d+)?(l|ll|h|z|j|t|L)?[a-zA-Z%]"  # printf
    r"|%\([^)]*\)[a-z]|%\d+|\{[^{}]*\}|\$\([^)]*\)|\$\{[^}]*\}|\$\w+"  # Python, Qt, LibreOffice
    r"|<[^<>]+>|&[A-Za-z]+;|&#\d+;"  # markup and entities
)
_LETTER = re.compile(r"[^\W\d_]")


def clean(text: str) -> str:
    """Accelerator markers out, white space (line breaks included) as single spaces."""
    return " ".join(_ACCELERATOR.sub("", text).split())


def has_words(text: str) -> bool:
    """Whether any letter is left once placeholders and markup are taken out."""
    return bool(_LETTER.search(_PLACEHOLDER.sub(" ", text)))


def parse_language_pair(text: str) -> tuple[str, str]:
    """ "en-de" -> ("en", "de"); ValueError names the flag."""
    parts = text.lower().replace("_", "-").split("-")
    if len(parts) != 2 or not all(re.fullmatch(r"[a-z]{2,3}", part) for part in parts):
        raise ValueError(
            f"--language_pair: expected two language codes such as en-de, got {text!r}"
        )
    if parts[0] == parts[1]:
        raise ValueError(f"--language_pair: {text!r} names one language twice")
    return parts[0], parts[1]


def _speaks(language: str, wanted: str) -> bool:
    """de and de_de are German; de_ch (another spelling) is not taken for de."""
    return language in (wanted, f"{wanted}_{wanted}")


def collect_pairs(
    directories: list[str], source: str, target: str
) -> tuple[dict[str, list[tuple[str, str]]], collections.Counter]:
    """Every split's (source, target) pairs from the catalogs, and what was dropped."""
    counts: collections.Counter = collections.Counter()
    by_key: dict[str, dict[tuple, str]] = {source: {}, target: {}}
    catalogs = 0
    for root in directories:
        if not tf.io.gfile.isdir(root):
            raise ValueError(f"--train_files: {root!r} is not a directory of catalogs")
        for path in gettext_catalogs.find_catalogs(root):
            language = gettext_catalogs.language_of(path)
            wanted = [side for side in (source, target) if _speaks(language, side)]
            if not wanted:
                continue
            catalogs += 1
            for entry in gettext_catalogs.read_catalog(path, root):
                key = (entry.domain, entry.context, entry.source)
                by_key[wanted[0]].setdefault(key, entry.target)
    if not catalogs:
        raise ValueError(f"no {source} or {target} catalog (.mo or .po) under {directories}")
    raw = []
    if source == "en":
        raw = [(msgid, text) for (_, _, msgid), text in by_key[target].items()]
    else:
        raw = [
            (by_key[source][k], text) for k, text in by_key[target].items() if k in by_key[source]
        ]
        counts["without a source-language translation"] = len(by_key[target]) - len(raw)
    distinct: collections.Counter = collections.Counter()
    for left, right in raw:
        left, right = clean(left), clean(right)
        if not right or left == right:
            counts["untranslated (empty, or equal to the source)"] += 1
        elif not (has_words(left) and has_words(right)):
            counts["format-only (no word outside placeholders and markup)"] += 1
        elif len(left) > MAX_CHARS or len(right) > MAX_CHARS:
            counts[f"longer than {MAX_CHARS} characters"] += 1
        else:
            distinct[(left, right)] += 1
    counts["duplicates"] = sum(distinct.values()) - len(distinct)
    return _split(distinct), counts


def split_of(text: str) -> str:
    """The split of a source text: a hash of it, so a source is in one split only."""
    bucket = int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:8], 16) % 1000
    if bucket < HELD_OUT_PER_MILLE:
        return "dev"
    return "test" if bucket < 2 * HELD_OUT_PER_MILLE else "train"


def _split(distinct: collections.Counter) -> dict[str, list[tuple[str, str]]]:
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "dev": [], "test": []}
    references: dict[str, tuple[int, str]] = {}
    for (left, right), count in sorted(distinct.items()):
        split = split_of(left)
        if split == "train":
            splits["train"].append((left, right))
        elif left not in references or count > references[left][0]:
            references[left] = (count, right)
    for left, (_, right) in sorted(references.items()):
        splits[split_of(left)].append((left, right))
    return splits


@problem.register("translate_gettext")
class TranslateGettext(configured.ConfiguredByFiles, text_problem.Text2TextProblem):
    """Pairs of any language pair from gettext catalogs under the user's directories."""

    splits = {"train": (0, 10), "dev": (0, 1), "test": (0, 1)}

    config_suffix = ".catalogs.json"
    reads = "gettext catalogs"
    datagen_flags = "--train_files=DIR --language_pair=en-de"

    def configure_catalogs(
        self, data_dir: str, directories: list[str], language_pair: str, vocab_size: int = 0
    ) -> None:
        """Records the catalog directories and the language pair for generate_data."""
        if not directories:
            raise ValueError(f"problem {self.name!r} needs --train_files=DIR[,DIR...] of catalogs")
        source, target = parse_language_pair(language_pair)
        config = {
            "directories": [files.absolute(d) for d in directories],
            "source": source,
            "target": target,
            "vocab_size": vocab_size or self.vocab_target_size,
        }
        self.write_config(data_dir, config)

    def generate_data(self, data_dir: str, seed: int = 1) -> dict[str, int]:
        config = self._config(data_dir)
        self.vocab_target_size = int(config["vocab_size"])
        pairs, dropped = collect_pairs(config["directories"], config["source"], config["target"])
        self._pairs = pairs
        logging.info(
            "%s %s-%s: kept %s; dropped %s.",
            self.name,
            config["source"],
            config["target"],
            ", ".join(f"{split} {len(pairs[split]):,}" for split in ("train", "dev", "test")),
            ", ".join(f"{n:,} {why}" for why, n in sorted(dropped.items())) or "none",
        )
        empty = [split for split in ("dev", "test") if not pairs[split]]
        if empty:  # a trainer would refuse the data dir: say so now, before writing
            raise ValueError(
                f"{self.name}: the {' and '.join(empty)} split(s) got no pair of the "
                f"{sum(len(p) for p in pairs.values()):,} kept (each holds "
                f"{HELD_OUT_PER_MILLE / 10:g}% of the sources, by a hash); give more catalogs"
            )
        try:
            return super().generate_data(data_dir, seed)
        finally:
            del self._pairs

    def text_pairs(self, data_dir: str, split: str):
        pairs = getattr(self, "_pairs", None)
        if pairs is None:  # outside generate_data: read the catalogs again
            config = self._config(data_dir)
            pairs, _ = collect_pairs(config["directories"], config["source"], config["target"])
        for number, (left, right) in enumerate(pairs[split], start=1):
            yield left, right, f"{self.name} {split} pair {number}"
