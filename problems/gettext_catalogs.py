"""Reading gettext catalogs (.mo and .po): the translated messages of a program.

Every entry is (context, English message id, translation) in the catalog's
language. The language comes from the catalog's path (.../<lang>/LC_MESSAGES/
<domain>.mo, as distributions install them, or <lang>.po in a source tree),
else from a .po file's Language header. Plural entries give their singular
and its first form; fuzzy and obsolete .po entries are left out, as msgfmt
leaves them out of .mo files. Text is decoded with the charset the catalog's
header declares (UTF-8 when it names none); a cut .mo file, a byte the
charset cannot decode or an unknown charset is one error naming the file,
never a partial read. Files are read through tf.io.gfile.
"""

import codecs
import dataclasses
import os
import re
import struct
from collections.abc import Iterator

import tensorflow as tf

from t2t_lite import files

MO_MAGIC = 0x950412DE
CONTEXT_SEPARATOR = "\x04"


@dataclasses.dataclass(frozen=True)
class Entry:
    """One translated message of a catalog."""

    domain: str  # the catalog's name (e.g. "gimp20"), with its package's path
    context: str
    source: str  # msgid (English by gettext's convention)
    target: str  # msgstr in `language`
    language: str


def find_catalogs(directory: str) -> list[str]:
    """Every .mo and .po file under `directory`, sorted (a folder reached again
    through a link read once: files.files_under)."""
    return files.files_under(directory, lambda name: name.endswith((".mo", ".po")))


def language_of(path: str, header: dict[str, str] | None = None) -> str:
    """The catalog's language, normalized to lower case with "_" (de, pt_br)."""
    parts = path.replace("\\", "/").split("/")
    if len(parts) >= 3 and parts[-2] == "LC_MESSAGES":
        language = parts[-3]
    elif path.endswith(".po") and re.fullmatch(
        r"[A-Za-z]{2,3}([_@-][A-Za-z0-9]+)*", parts[-1][:-3]
    ):
        language = parts[-1][:-3]
    else:
        language = (header or {}).get("Language", "")
    return language.split(".")[0].replace("-", "_").lower()


def domain_of(path: str, root: str) -> str:
    """What identifies one catalog across languages: its path below `root` with the
    language parts taken out (de/LC_MESSAGES/gimp20.mo and fr/... share it)."""
    relative = os.path.relpath(path, root).replace("\\", "/").split("/")
    if len(relative) >= 3 and relative[-2] == "LC_MESSAGES":
        relative = relative[:-3] + relative[-1:]
    elif path.endswith(".po"):
        relative = relative[:-1] + ["<language>.po"]
    return "/".join(relative).rsplit(".", 1)[0]


def read_catalog(path: str, root: str) -> Iterator[Entry]:
    """The translated entries of one .mo or .po file; ValueError names a broken file."""
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    messages, header = _mo(data, path) if path.endswith(".mo") else _po(data, path)
    language = language_of(path, header)
    domain = domain_of(path, root)
    for context, source, target in messages:
        if source and target:
            yield Entry(domain, context, source, target, language)


def _header(text: str) -> dict[str, str]:
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if value:
            fields[key.strip()] = value.strip()
    return fields


def _charset(content_type: str, path: str) -> str:
    """The codec of a catalog whose header's Content-Type is `content_type`
    (utf-8 when it names none, or the template's placeholder CHARSET)."""
    found = re.search(r"charset=([\w.:-]+)", content_type)
    charset = found.group(1) if found else "utf-8"
    if charset.upper() == "CHARSET":
        return "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:
        raise ValueError(f"{path}: unknown charset {charset!r} in its header") from None
    return charset


def _decode(data: bytes, charset: str, path: str) -> str:
    """`data` in the catalog's charset; a byte it cannot decode is one error naming the file."""
    try:
        return data.decode(charset)
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path}: not valid {charset} (its header's charset) at byte {err.start}"
        ) from None


def _mo(data: bytes, path: str) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """A compiled catalog's (context, msgid, msgstr) triples and its header."""
    if len(data) < 28:
        raise ValueError(f"{path}: too short for a .mo file")
    for order in "<>":
        magic, _, count, originals, translations = struct.unpack(order + "5I", data[:20])
        if magic == MO_MAGIC:
            break
    else:
        raise ValueError(f"{path}: not a .mo file (bad magic number)")

    def string(table: int, i: int) -> bytes:
        """The i-th string of a table; a table or string past the file's end
        (a cut or damaged file) is an error, never a shorter string."""
        if table + 8 * i + 8 > len(data):
            raise ValueError(f"{path}: a truncated .mo file ({count} strings announced)")
        length, offset = struct.unpack(order + "2I", data[table + 8 * i : table + 8 * i + 8])
        if offset + length > len(data):
            raise ValueError(
                f"{path}: a truncated .mo file (string {i} ends at byte {offset + length}, "
                f"the file has {len(data)})"
            )
        return data[offset : offset + length]

    pairs = [(string(originals, i), string(translations, i)) for i in range(count)]
    header = {}
    for original, translation in pairs:
        if original == b"":
            header = _header(translation.decode("ascii", "replace"))  # for its charset
    charset = _charset(header.get("Content-Type", ""), path)
    messages = []
    for original, translation in pairs:
        if original == b"":
            header = _header(_decode(translation, charset, path))
            continue
        msgid = _decode(original, charset, path).split("\x00")[0]  # the singular
        msgstr = _decode(translation, charset, path).split("\x00")[0]  # its first form
        context, _, msgid = msgid.rpartition(CONTEXT_SEPARATOR)
        messages.append((context, msgid, msgstr))
    return messages, header


_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    '"': '"',
    "\\": "\\",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
}


def _unquote(text: str, path: str, number: int) -> str:
    text = text.strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise ValueError(f"{path}:{number}: expected a quoted string, got {text[:40]!r}")
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text[1:-1])


def _po(data: bytes, path: str) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """A source catalog's (context, msgid, msgstr) triples (fuzzy and obsolete
    entries left out) and its header. An entry ends where a comment or a new
    msgctxt/msgid follows its msgstr."""
    entries: list[dict[str, str]] = []
    entry: dict[str, str] = {}
    flags: set[str] = set()
    key = ""

    def finish():
        nonlocal entry, flags
        if "msgid" in entry and "fuzzy" not in flags:
            entries.append(entry)
        entry, flags = {}, set()

    # The header's charset, read from the raw bytes (ASCII in every charset gettext allows).
    declared = re.search(rb"Content-Type:[^\n\"]*", data)
    charset = _charset(declared.group(0).decode("ascii", "replace") if declared else "", path)
    for number, line in enumerate(_decode(data, charset, path).splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#~"):  # blank, or an obsolete entry
            continue
        complete = any(k.startswith("msgstr") for k in entry)
        if line.startswith("#"):
            if complete:
                finish()
            if line.startswith("#,"):
                flags.update(flag.strip() for flag in line[2:].split(","))
            continue
        found = re.match(r"(msgctxt|msgid_plural|msgid|msgstr)(?:\[(\d+)\])?\s+(.*)", line)
        if found:
            word, form, rest = found.groups()
            if word in ("msgctxt", "msgid") and complete:
                finish()
            key = word if form in (None, "0") else f"{word}[{form}]"
            entry[key] = _unquote(rest, path, number)
        elif line.startswith('"') and key:
            entry[key] = entry.get(key, "") + _unquote(line, path, number)
        else:
            raise ValueError(f"{path}:{number}: not a .po line: {line[:40]!r}")
    finish()
    header: dict[str, str] = {}
    messages = []
    for item in entries:
        if item["msgid"] == "" and "msgctxt" not in item:
            header = _header(item.get("msgstr", ""))
            continue
        messages.append((item.get("msgctxt", ""), item["msgid"], item.get("msgstr", "")))
    return messages, header
