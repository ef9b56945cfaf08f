"""Gettext catalogs (.po, .mo) -> translation pairs: reading, cleaning, splitting."""

import struct

import pytest

from t2t_lite.problems import gettext_catalogs, translate_gettext

PO = r"""# German translation.
msgid ""
msgstr ""
"Language: de\n"
"Content-Type: text/plain; charset=UTF-8\n"

#: main.c:1
msgid "_Open File"
msgstr "Datei _öffnen"

msgctxt "verb"
msgid "Print"
msgstr "Drucken"

#, fuzzy
msgid "Guessed"
msgstr "Geraten"

#, c-format
msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d Datei"
msgstr[1] "%d Dateien"

msgid ""
"A long "
"message\n"
"over lines"
msgstr "Eine lange \"Nachricht\"\n"
"über Zeilen"

msgid "Untranslated"
msgstr ""

#~ msgid "Old"
#~ msgstr "Alt"
"""


def mo_bytes(messages: dict[str, str]) -> bytes:
    """A little-endian .mo file of msgid -> msgstr (msgfmt's layout)."""
    keys = sorted(messages)
    ids = b"".join(k.encode() + b"\0" for k in keys)
    strs = b"".join(messages[k].encode() + b"\0" for k in keys)
    n = len(keys)
    start = 28 + 16 * n
    table, offset = [], start
    for k in keys:
        table += [len(k.encode()), offset]
        offset += len(k.encode()) + 1
    values, offset = [], start + len(ids)
    for k in keys:
        values += [len(messages[k].encode()), offset]
        offset += len(messages[k].encode()) + 1
    header = struct.pack("<7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, 0)
    return (
        header + struct.pack(f"<{2 * n}I", *table) + struct.pack(f"<{2 * n}I", *values) + ids + strs
    )


def test_a_po_file_gives_its_translated_entries_without_fuzzy_or_obsolete_ones(tmp_path):
    path = tmp_path / "po" / "de.po"
    path.parent.mkdir()
    path.write_text(PO, encoding="utf-8")
    entries = list(gettext_catalogs.read_catalog(str(path), str(tmp_path)))
    assert [(e.context, e.source, e.target) for e in entries] == [
        ("", "_Open File", "Datei _öffnen"),
        ("verb", "Print", "Drucken"),
        ("", "%d file", "%d Datei"),  # the singular and its first form
        ("", "A long message\nover lines", 'Eine lange "Nachricht"\nüber Zeilen'),
    ]
    assert {e.language for e in entries} == {"de"} and entries[0].domain == "po/<language>"


def test_a_mo_file_gives_contexts_and_plurals(tmp_path):
    path = tmp_path / "share" / "locale" / "de" / "LC_MESSAGES" / "app.mo"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        mo_bytes(
            {
                "": "Content-Type: text/plain; charset=UTF-8\n",
                "menu\x04Quit": "Beenden",
                "%d item\x00%d items": "%d Eintrag\x00%d Einträge",
            }
        )
    )
    entries = list(gettext_catalogs.read_catalog(str(path), str(tmp_path)))
    assert [(e.context, e.source, e.target, e.language) for e in entries] == [
        ("", "%d item", "%d Eintrag", "de"),
        ("menu", "Quit", "Beenden", "de"),
    ]
    assert entries[0].domain == "share/locale/app"
    (tmp_path / "bad.mo").write_bytes(b"not a catalog at all, no magic here")
    with pytest.raises(ValueError, match="bad.mo: not a .mo file"):
        list(gettext_catalogs.read_catalog(str(tmp_path / "bad.mo"), str(tmp_path)))


def test_cleaning_and_the_filters():
    assert translate_gettext.clean("Save _As…") == "Save As…"
    assert translate_gettext.clean("~Open &File\n  now") == "Open File now"
    assert translate_gettext.clean("snake_case &amp; more") == "snake_case &amp; more"
    assert not translate_gettext.has_words("%s: %d")
    assert not translate_gettext.has_words("$(ARG1) <b>%1</b> {0}")
    assert translate_gettext.has_words("%s files")


def catalog_tree(root, language: str, messages: dict[str, str], package: str = "pkg") -> None:
    folder = root / package / "usr" / "share" / "locale" / language / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "app.mo").write_bytes(mo_bytes({"": "charset=UTF-8", **messages}))


def test_pairs_are_filtered_deduplicated_and_split_by_source(tmp_path):
    english = [f"Message number {i}" for i in range(400)]
    messages = {text: f"Nachricht Nummer {i}" for i, text in enumerate(english)}
    messages.update({"Same": "Same", "%s: %s": "%s : %s", "Empty": "", "_Help": "_Hilfe"})
    catalog_tree(tmp_path / "a", "de", messages)
    other = {"_Help": "_Hilfe", "Message number 3": "Meldung 3"}
    catalog_tree(tmp_path / "b", "de", other, package="other")  # another program's catalog
    catalog_tree(tmp_path / "a", "fr", {"Message number 1": "Message numéro 1"})
    splits, dropped = translate_gettext.collect_pairs(
        [str(tmp_path / "a"), str(tmp_path / "b")], "en", "de"
    )
    assert (
        dropped["untranslated (empty, or equal to the source)"] == 1
    )  # "Same" ("Empty": no entry)
    assert dropped["format-only (no word outside placeholders and markup)"] == 1
    assert dropped["duplicates"] == 1  # Help -> Hilfe, in both trees
    every = [pair for split in splits.values() for pair in split]
    assert ("Help", "Hilfe") in every and len(every) == 402  # 400 + Help + "Meldung 3"
    sources = {split: {s for s, _ in pairs} for split, pairs in splits.items()}
    assert not (sources["train"] & sources["dev"] or sources["train"] & sources["test"])
    for split, pairs in splits.items():
        assert all(translate_gettext.split_of(s) == split for s, _ in pairs)
    assert 0 < len(splits["dev"]) < 30 and 0 < len(splits["test"]) < 30  # 2% each, of 401
    # Another pair of languages meets through the English message.
    pivot, _ = translate_gettext.collect_pairs([str(tmp_path / "a")], "fr", "de")
    assert [p for split in pivot.values() for p in split] == [
        ("Message numéro 1", "Nachricht Nummer 1")
    ]


def test_datagen_builds_the_splits_from_a_catalog_tree(tmp_path):
    from t2t_lite.problems import datagen

    words = ["red", "green", "blue", "small", "large", "fast", "slow", "open", "closed"]
    german = ["rot", "grün", "blau", "klein", "groß", "schnell", "langsam", "offen", "zu"]
    messages = {
        f"The {a} {b} window {i}": f"Das {x} {y} Fenster {i}"
        for i in range(30)
        for (a, x), (b, y) in [(pair, pair2) for pair in zip(words, german, strict=True)
                               for pair2 in zip(words[:2], german[:2], strict=True)]
    }  # fmt: skip
    catalog_tree(tmp_path / "catalogs", "de", messages)
    counts = datagen.generate(
        "translate_gettext", str(tmp_path / "data"), 1, [str(tmp_path / "catalogs")],
        vocab_size=300, language_pair="en-de",
    )  # fmt: skip
    assert sum(counts.values()) == len(messages) and set(counts) == {"train", "dev", "test"}
    with pytest.raises(ValueError, match="--language_pair: expected two language codes"):
        datagen.generate(
            "translate_gettext", str(tmp_path / "d2"), 1, [str(tmp_path / "catalogs")],
            language_pair="english",
        )  # fmt: skip


def mo_catalog(tmp_path, data: bytes, name: str = "app.mo"):
    path = tmp_path / "share" / "locale" / "de" / "LC_MESSAGES" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_cut_mo_file_is_refused_by_name_never_read_in_part(tmp_path):
    # Cut by 40 bytes: the last translation ends past the file's end. Cut to
    # three quarters: most strings do. Either way one error, no partial entries.
    messages = {"": "Content-Type: text/plain; charset=UTF-8\n", "Open": "Öffnen"}
    whole = mo_bytes({**messages, "Window tab view": "Fenster Reiter Ansicht"})
    assert len(list(gettext_catalogs.read_catalog(str(mo_catalog(tmp_path, whole)), "."))) == 2
    for cut in (whole[:-10], whole[: len(whole) * 3 // 4], whole[:40]):
        path = mo_catalog(tmp_path, cut, "cut.mo")
        with pytest.raises(ValueError, match=r"cut.mo: a truncated .mo file"):
            list(gettext_catalogs.read_catalog(str(path), str(tmp_path)))


def test_a_catalog_is_read_in_the_charset_its_header_declares(tmp_path):
    # A Latin-1 .po and .mo: ß and ü decoded as Latin-1, not replaced by U+FFFD.
    po = (
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=ISO-8859-1\\n"\n\n'
        'msgid "Close"\nmsgstr "Schließen"\n\nmsgid "Paste"\nmsgstr "Einfügen"\n'
    )
    path = tmp_path / "po" / "de.po"
    path.parent.mkdir()
    path.write_bytes(po.encode("latin-1"))
    entries = list(gettext_catalogs.read_catalog(str(path), str(tmp_path)))
    assert [e.target for e in entries] == ["Schließen", "Einfügen"]
    header = "Content-Type: text/plain; charset=ISO-8859-1\n"
    data = bytearray(mo_bytes({"": header, "Close": "Schliexen"}))
    data[data.index(b"Schliexen") + 6] = 0xDF  # ß in Latin-1 (an invalid byte in UTF-8)
    mo = mo_catalog(tmp_path, bytes(data))
    assert [e.target for e in gettext_catalogs.read_catalog(str(mo), str(tmp_path))] == [
        "Schließen"
    ]
    # Bytes the declared charset cannot decode, and a charset nobody knows: one error each.
    utf8 = tmp_path / "po" / "fr.po"
    utf8.write_bytes(po.replace("ISO-8859-1", "UTF-8").encode("latin-1"))
    with pytest.raises(ValueError, match=r"fr.po: not valid UTF-8 \(its header's charset\)"):
        list(gettext_catalogs.read_catalog(str(utf8), str(tmp_path)))
    klingon = {"": "Content-Type: text/plain; charset=KLINGN\n", "Close": "x"}
    odd = mo_catalog(tmp_path, mo_bytes(klingon), "odd.mo")
    with pytest.raises(ValueError, match=r"odd.mo: unknown charset 'KLINGN' in its header"):
        list(gettext_catalogs.read_catalog(str(odd), str(tmp_path)))


def test_a_link_loop_in_a_catalog_tree_reads_each_catalog_once(tmp_path, caplog):
    import os

    catalog_tree(tmp_path, "de", {"Open": "Öffnen"})
    folder = tmp_path / "pkg" / "usr" / "share" / "locale" / "de" / "LC_MESSAGES"
    os.symlink("../..", folder / "up")  # back to locale/: a loop
    found = gettext_catalogs.find_catalogs(str(tmp_path))
    assert found == [str(folder / "app.mo")]
    assert "a link to a folder already read; skipped" in caplog.text


def test_a_catalog_set_too_small_for_dev_and_test_is_refused_and_nothing_is_left(tmp_path):
    from t2t_lite.problems import datagen

    catalog_tree(
        tmp_path / "catalogs", "de", {f"Open window {i}": f"Fenster {i}" for i in range(5)}
    )
    data = tmp_path / "data"
    with pytest.raises(ValueError, match=r"translate_gettext: the dev and test split\(s\) got no"):
        datagen.generate(
            "translate_gettext", str(data), 1, [str(tmp_path / "catalogs")], language_pair="en-de"
        )
    assert [name for name in data.iterdir() if not name.name.startswith(".")] == []
