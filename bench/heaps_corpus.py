"""A seeded parallel corpus whose vocabulary grows like real text's.

Real text keeps meeting new words: the number of distinct words grows
roughly as K * N^b (Heaps' law, b about 0.5-0.7), so a corpus of a million
sentence pairs holds hundreds of thousands of distinct words. A corpus
drawn from a fixed word list stops growing and flatters a vocabulary
learner. Here every token slot draws a word rank from an unbounded Zipf-Mandelbrot
law (exponent ZIPF_A: distinct words grow about as N^(1/ZIPF_A)),
and a rank names a word by a bijective spelling, so new ranks are new words.

The mix is news-like:

- sentence lengths from a log-normal law, median about 22 words, 1..100;
- the most frequent ranks are real function words (English source, German
  target), so a quarter to a half of the tokens are short and common;
- names (capitalised, from their own unbounded law), numbers (integers,
  decimals, thousands separators, percentages, years), acronyms, and a few
  technical strings (paths, URLs, command-line options, e-mail addresses);
- punctuation: commas, quotes, parentheses, sentence-final marks;
- the German side "translates" word by word (its own spelling of each
  rank, umlauts and eszett included), copies names, numbers and technical
  strings, capitalises nouns, and joins runs of two or three content words
  into long compounds (Bundesverkehrsministerium-like).

The same seed writes the same bytes.
"""

import numpy as np

# Word ranks follow a Zipf-Mandelbrot law, P(r) ~ (r + RANK_SHIFT)^-ZIPF_A, drawn
# as a discretised Pareto: the shift keeps "the" near real text's 6% of tokens,
# and distinct words grow about as N^(1 / ZIPF_A).
ZIPF_A = 1.6
RANK_SHIFT = 8.0
NAME_A = 1.45

FUNCTION_WORDS = (  # English:German, most frequent first
    "the:der of:von and:und to:zu a:ein in:in is:ist that:dass for:für it:es as:als "
    "was:war with:mit be:sein by:durch on:auf not:nicht he:er I:ich this:dies are:sind "
    "or:oder his:sein from:aus at:bei which:welche but:aber have:haben an:einen they:sie "
    "you:du were:waren her:ihr she:sie there:dort their:ihre one:eins all:alle we:wir "
    "can:kann has:hat been:gewesen will:wird more:mehr if:wenn no:kein would:würde so:so "
    "what:was up:hoch out:hinaus about:über who:wer into:hinein than:als them:ihnen "
    "its:seine also:auch new:neu after:nach two:zwei over:über other:andere some:einige "
    "these:diese our:unsere may:darf only:nur most:meiste any:jede could:könnte "
    "such:solche first:erste those:jene when:wann"
)
EN_FUNCTION = [pair.split(":")[0] for pair in FUNCTION_WORDS.split()]
DE_FUNCTION = [pair.split(":")[1] for pair in FUNCTION_WORDS.split()]

EN_SYLLABLES = [
    c + v
    for c in ("b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v", "st", "tr")
    for v in ("a", "e", "i", "o", "u", "ea", "ou")
]
DE_SYLLABLES = [
    c + v
    for c in ("b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "w", "sch", "ß")
    for v in ("a", "e", "i", "o", "u", "ä", "ö", "ü", "ei", "au")
]
NAME_SYLLABLES = [c + v for c in "bdgklmnprstvz" for v in ("a", "e", "i", "o", "u", "y", "an")]
SUFFIXES = ("", "", "", "s", "ed", "ing", "ly", "er", "ion")
TLDS = ("org", "com", "net", "de", "io")


def spell(rank: int, syllables: list[str]) -> str:
    """A distinct word for every rank >= 0: rank written in base len(syllables)."""
    base = len(syllables)
    parts = [syllables[rank % base]]
    rank //= base
    while rank:
        rank -= 1
        parts.append(syllables[rank % base])
        rank //= base
    return "".join(reversed(parts))


class _Words:
    """Rank -> (English word, German word), memoised."""

    def __init__(self):
        self._en: dict[int, str] = {}
        self._de: dict[int, str] = {}
        self._names: dict[int, str] = {}

    def en(self, rank: int) -> str:
        word = self._en.get(rank)
        if word is None:
            if rank <= len(EN_FUNCTION):
                word = EN_FUNCTION[rank - 1]
            else:
                stem = spell(rank // len(SUFFIXES), EN_SYLLABLES)
                word = stem + SUFFIXES[rank % len(SUFFIXES)]
            self._en[rank] = word
        return word

    def de(self, rank: int) -> str:
        word = self._de.get(rank)
        if word is None:
            word = DE_FUNCTION[rank - 1] if rank <= len(DE_FUNCTION) else spell(rank, DE_SYLLABLES)
            self._de[rank] = word
        return word

    def name(self, rank: int) -> str:
        word = self._names.get(rank)
        if word is None:
            word = spell(rank + 20, NAME_SYLLABLES).capitalize()
            self._names[rank] = word
        return word


def zipf_mandelbrot(rng: np.random.Generator, size: int) -> np.ndarray:
    """Ranks >= 1 with P(r) about (r + RANK_SHIFT)^-ZIPF_A (an unbounded tail)."""
    pareto = RANK_SHIFT * rng.random(size) ** (-1.0 / (ZIPF_A - 1.0))  # >= RANK_SHIFT
    return np.minimum(pareto - RANK_SHIFT, 2**62).astype(np.int64) + 1


def _number(rng: np.random.Generator) -> str:
    kind = rng.integers(0, 6)
    if kind == 0:
        return str(int(rng.integers(1, 100)))
    if kind == 1:
        return str(int(rng.integers(1900, 2030)))
    if kind == 2:
        return f"{int(rng.integers(1, 1000))},{int(rng.integers(0, 1000)):03d}"
    if kind == 3:
        return f"{rng.integers(0, 100)}.{rng.integers(0, 100):02d}"
    if kind == 4:
        return f"{int(rng.integers(1, 100))}%"
    return str(int(rng.integers(100, 10**7)))


def _technical(rng: np.random.Generator, words: _Words, ranks: np.ndarray) -> str:
    a, b, c = (words.en(int(r) + len(EN_FUNCTION)) for r in ranks)
    kind = rng.integers(0, 4)
    if kind == 0:
        return f"/usr/share/{a}/{b}-{c}.conf"
    if kind == 1:
        tld = TLDS[int(rng.integers(0, len(TLDS)))]
        return f"https://www.{a}.{tld}/{b}/{c}?id={int(rng.integers(1, 10**5))}"
    if kind == 2:
        return f"--{a}-{b}={int(rng.integers(1, 10**4))}"
    return f"{a}.{b}@{c}.{TLDS[int(rng.integers(0, len(TLDS)))]}"


def _sentence_pair(rng: np.random.Generator, words: _Words, length: int) -> tuple[str, str]:
    ranks = zipf_mandelbrot(rng, length)
    kinds = rng.random(length)  # < 0.04 name, < 0.07 number, < 0.075 technical, < 0.085 acronym
    extra = rng.zipf(NAME_A, size=(length, 3))
    commas = rng.random(length) < 0.06
    compound = rng.random(length) < 0.25
    en: list[str] = []
    de: list[str] = []
    pending: list[str] = []  # German content words waiting to form a compound

    def flush():
        if pending:
            de.append("".join(w if i == 0 else w.lower() for i, w in enumerate(pending)))
            pending.clear()

    for i in range(length):
        kind = kinds[i]
        if kind < 0.04:
            token_en = token_de = words.name(int(extra[i, 0]))
        elif kind < 0.07:
            token_en = token_de = _number(rng)
        elif kind < 0.075:
            token_en = token_de = _technical(rng, words, extra[i])
        elif kind < 0.085:
            token_en = token_de = words.en(int(ranks[i]) + len(EN_FUNCTION))[:4].upper()
        else:
            rank = int(ranks[i])
            token_en, token_de = words.en(rank), words.de(rank)
            if rank > len(EN_FUNCTION):  # a content word: a German noun, maybe in a compound
                pending.append(token_de.capitalize())
                if not compound[i] or len(pending) == 3:
                    flush()
                en.append(token_en + ("," if commas[i] else ""))
                continue
        flush()
        en.append(token_en + ("," if commas[i] else ""))
        de.append(token_de + ("," if commas[i] else ""))
    flush()
    end = ".?!"[int(rng.choice(3, p=[0.9, 0.07, 0.03]))]
    source, target = " ".join(en).rstrip(","), " ".join(de).rstrip(",")
    if rng.random() < 0.05:
        source, target = f'"{source}"', f"„{target}“"
    elif rng.random() < 0.03:
        source, target = f"({source})", f"({target})"
    return source[:1].upper() + source[1:] + end, target[:1].upper() + target[1:] + end


def write(source_path: str, target_path: str, pairs: int, seed: int = 1) -> None:
    """Writes `pairs` aligned lines to the two (local) files."""
    rng = np.random.default_rng(seed)
    words = _Words()
    lengths = np.clip(np.round(rng.lognormal(np.log(22.0), 0.5, size=pairs)), 1, 100).astype(int)
    with (
        open(source_path, "w", encoding="utf-8") as src,
        open(target_path, "w", encoding="utf-8") as tgt,
    ):
        for length in lengths:
            source, target = _sentence_pair(rng, words, int(length))
            src.write(source + "\n")
            tgt.write(target + "\n")


def distinct_words(paths: list[str], max_lines: int | None = None) -> int:
    """Distinct whitespace-separated words over the files (the figure printed beside results)."""
    seen: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f):
                if max_lines is not None and number >= max_lines:
                    break
                seen.update(line.split())
    return len(seen)
