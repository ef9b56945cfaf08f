"""Every shell command the README and docs/*.md print names flags its program
has: each t2t-* command line of a shell block is read as a shell reads it
(continuations joined, `&&`/`;`/`|` split, environment assignments and a
`.venv/bin/` or `bin/` prefix skipped), and each of its --flags must be one
the program defines (a boolean's --noflag too), each enum flag's value one
of its choices unless it is a placeholder, each --problem(s), --model and
--hparams_set a registered name; each `python bench/...`,
`experiments/...` or `tests/...` path must exist. The python blocks of
docs/keras.md and docs/python_api.md run as printed elsewhere
(tests/test_keras.py, tests/test_api.py, slow); commands that train for
minutes cannot run in this tier, but a renamed or removed flag, program or
script shows here."""

import importlib.metadata
import json
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
SHELL = {"", "bash", "sh", "shell", "console"}
PROGRAM = re.compile(r"^(?:\S*/)?(t2t-[a-z0-9-]+)$")
SCRIPT = re.compile(r"^(bench|experiments|tests|bin)/[\w./-]+$")
# A flag value written as a stand-in for the reader's own (D, W/ours/seedK, <dir>, $VAR, ...).
PLACEHOLDER = re.compile(r"[A-Z$<{]|\.\.\.")


def shell_blocks():
    """(doc, line number, text) of every fenced shell block."""
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        inside, start, body = None, 0, []
        for number, line in enumerate(lines, 1):
            fence = FENCE.match(line)
            if fence and inside is None:
                inside, start, body = fence.group(1), number, []
            elif line.strip() == "```" and inside is not None:
                if inside in SHELL:
                    yield path.relative_to(REPO).as_posix(), start, "\n".join(body)
                inside = None
            elif inside is not None:
                body.append(line)


def commands(text: str):
    """A block's commands, as word lists (comments dropped, continuations joined)."""
    text = re.sub(r"\\\n", " ", text)
    for line in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not line or line.startswith(("$ ", ">>>")):
            line = line[2:] if line.startswith("$ ") else ""
        if not line:
            continue
        try:
            words = shlex.split(line)
        except ValueError:  # an unbalanced quote in prose-like lines: not a command
            continue
        command = []
        for word in [*words, ";"]:
            if word in {"&&", ";", "|", "||", "&"} or word.endswith(";"):
                if word.endswith(";") and word != ";":
                    command.append(word[:-1])
                yield command
                command = []
            else:
                command.append(word)


def programs() -> dict[str, str]:
    """Installed program name -> its module (the console scripts, aliases too)."""
    return {
        entry.name: entry.value.split(":")[0]
        for entry in importlib.metadata.entry_points(group="console_scripts")
        if entry.value.startswith("t2t_lite.programs.")
    }


FLAG_DUMP = """
import importlib, json, sys
from absl import flags
importlib.import_module(sys.argv[1])
found = {}
for name in flags.FLAGS:
    flag = flags.FLAGS[name]
    choices = getattr(flag.parser, "enum_values", None)
    found[name] = {"boolean": flag.boolean, "choices": list(choices) if choices else None}
print(json.dumps(found))
"""


REGISTRY_DUMP = """
import json
import t2t_lite.models, t2t_lite.problems
from t2t_lite import registry
print(json.dumps({"problem": registry.PROBLEMS.names(), "model": registry.MODELS.names(),
                  "hparams_set": registry.HPARAMS.names()}))
"""
# Flags whose values are registry names (t2t-compare's --models name its entries instead).
REGISTERED = {
    "problem": "problem",
    "problems": "problem",
    "model": "model",
    "hparams_set": "hparams_set",
}


@pytest.fixture(scope="module")
def registered():
    out = subprocess.run(
        [sys.executable, "-c", REGISTRY_DUMP], capture_output=True, text=True, check=True
    ).stdout
    return {kind: set(names) for kind, names in json.loads(out.splitlines()[-1]).items()}


@pytest.fixture(scope="module")
def flags_of():
    """module -> its flags (each read in a fresh interpreter: the programs share flag names)."""
    cache = {}

    def read(module: str) -> dict:
        if module not in cache:
            out = subprocess.run(
                [sys.executable, "-c", FLAG_DUMP, module],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            cache[module] = json.loads(out.splitlines()[-1])
        return cache[module]

    return read


def program_of(words: list[str]) -> tuple[str | None, list[str]]:
    """(the t2t program a command runs, its arguments), or (None, []) for other commands."""
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):  # VAR=value
        words = words[1:]
    for skip in ("time", "nohup", "setsid", "exec"):
        if words and words[0] == skip:
            words = words[1:]
    if words and (match := PROGRAM.match(words[0])):
        return match.group(1), words[1:]
    return None, []


def problems(flags_of, installed, registered):
    """Every wrong flag, program or script path in the docs' shell blocks."""
    found = []
    checked = 0
    for doc, line, text in shell_blocks():
        for words in commands(text):
            for word in words:
                script = SCRIPT.match(word) and not PLACEHOLDER.search(word)
                if script and not (REPO / word.split("::")[0]).exists():
                    found.append(f"{doc}:{line}: {word}: no such file")
            name, arguments = program_of(words)
            if name is None:
                continue
            if name not in installed:
                found.append(f"{doc}:{line}: {name}: no such program")
                continue
            defined = flags_of(installed[name])
            checked += 1
            for argument in arguments:
                if not argument.startswith("--") or argument == "--":
                    continue
                key, _, value = argument[2:].partition("=")
                flag = defined.get(key)
                if (
                    flag is None
                    and key.startswith("no")
                    and defined.get(key[2:], {}).get("boolean")
                ):
                    continue
                if flag is None:
                    found.append(f"{doc}:{line}: {name} has no --{key}")
                elif flag["choices"] and value and not PLACEHOLDER.search(value):
                    if value not in flag["choices"]:
                        found.append(
                            f"{doc}:{line}: {name} --{key}={value}: not one of its choices"
                        )
                elif key in REGISTERED and value and not PLACEHOLDER.search(value):
                    kind = REGISTERED[key]
                    for item in value.split(","):
                        if item not in registered[kind]:
                            found.append(f"{doc}:{line}: {name} --{key}: no {kind} {item!r}")
    return found, checked


def test_every_documented_command_names_flags_its_program_has(flags_of, registered):
    found, checked = problems(flags_of, programs(), registered)
    assert checked >= 80  # the docs' t2t commands were all read
    assert not found, "\n".join(found)


def test_the_check_finds_a_wrong_flag_a_wrong_choice_and_a_missing_script(
    flags_of, registered, monkeypatch, tmp_path
):
    doc = tmp_path / "example.md"
    doc.write_text(
        "```bash\n"
        "t2t-decode --output_dir=O --decode_form_file=in.txt \\\n"
        "    --engine=tensorflow && .venv/bin/t2t-decode --output_dir=O --engine=onnx\n"
        "python bench/no_such_bench.py --x=1; t2t-nothing --a\n"
        "t2t-train --problem=algorithmic_reverse_binary40 --hparams_set=transformer_hueg --output_dir=O\n"
        "```\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "DOCS", [doc])
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    found, checked = problems(flags_of, programs(), registered)
    assert checked == 3
    assert [f.split(": ", 1)[1] for f in found] == [
        "t2t-decode has no --decode_form_file",
        "t2t-decode --engine=onnx: not one of its choices",
        "bench/no_such_bench.py: no such file",
        "t2t-nothing: no such program",
        "t2t-train --hparams_set: no hparams_set 'transformer_hueg'",
    ]
