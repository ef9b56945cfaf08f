import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def quickstart_commands():
    section = read("README.md").split("## Quickstart", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.DOTALL).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_quickstart_has_exactly_two_commands():
    commands = quickstart_commands()
    assert len(commands) == 2
    assert "t2t-compare" in commands[0] and "universal_transformer" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_then_the_slow_tier():
    ci_lines = [line.strip() for line in read(".ci/run").splitlines()]
    fast = quickstart_commands()[1]
    assert fast in ci_lines and '-m "not slow"' in fast
    after = ci_lines[ci_lines.index(fast) + 1 :]
    slow = next(line for line in after if "pytest" in line)
    assert "-m slow" in slow and slow.endswith(" tests")
    assert "--durations=15" in fast and "--durations=15" in slow  # the slowest, every round


def _anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_relative_link_of_the_readme_and_docs_names_a_file_and_heading_that_exist():
    pages = ["README.md"] + [
        os.path.join("docs", name) for name in os.listdir(os.path.join(ROOT, "docs"))
    ]
    pages = [page for page in pages if page.endswith(".md")]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", read(page)):
            if "://" in target or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(os.path.join(ROOT, where)):
                broken.append(f"{page}: {target} (no file)")
            elif anchor and where.endswith(".md"):
                headings = re.findall(r"^#+ (.*)$", read(where), re.MULTILINE)
                if anchor not in {_anchor(h) for h in headings}:
                    broken.append(f"{page}: {target} (no heading)")
    assert not broken, broken
