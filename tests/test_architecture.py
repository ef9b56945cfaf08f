"""Imports run from higher levels to lower ones only (docs/architecture.md).

Every Python file of the package (t2t_lite/, and problems/, installed as
t2t_lite.problems), of bench/, of experiments/ and of bin/ is read; `import`, `from ... import`
and `importlib.import_module("...")` with a literal name all count.
"""

import ast
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
# Bottom to top; a module may import its own level or any level below.
LEVELS = [
    ("registry", "hparams", "sequences", "files", "config_flags", "run_lock", "cli", "progress"),
    ("layers",),
    ("models",),
    ("data", "parsing"),
    ("problems",),
    ("scoring",),
    ("experiment", "checkpoints", "stamp", "run_dir"),
    ("decoding",),
    ("training",),
    ("export", "visualization", "reproduction", "api"),
    ("programs",),
]
# Programs above the package: they may import any of it, and nothing of the tests.
PROGRAM_LEVEL = len(LEVELS)


def package_files() -> dict[str, pathlib.Path]:
    """Module name -> file, for t2t_lite/ and problems/ (as t2t_lite.problems)."""
    found = {}
    for folder, prefix in (
        (REPO / "t2t_lite", ("t2t_lite",)),
        (REPO / "problems", ("t2t_lite", "problems")),
    ):
        for path in sorted(folder.rglob("*.py")):
            parts = prefix + path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def program_files() -> list[pathlib.Path]:
    scripts = sorted((REPO / "bench").glob("*.py")) + sorted((REPO / "experiments").glob("*.py"))
    return scripts + sorted((REPO / "bin").glob("t2t-*"))


def level_of(module: str) -> int:
    """'t2t_lite.training.steps' -> the index of its level."""
    first = module.split(".")[1] if "." in module else ""
    for index, names in enumerate(LEVELS):
        if first in names:
            return index
    raise AssertionError(f"{module}: not placed in a level of docs/architecture.md")


def imports(path: pathlib.Path) -> list[str]:
    """Every module a file imports (`from t2t_lite.x import y`: t2t_lite.x.y, y may be a module)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "t2t_lite":  # the name may be a module
                found += [f"{node.module}.{a.name}" for a in node.names]
            else:
                found.append(node.module)
        elif (
            isinstance(node, ast.Call)
            and _name(node.func) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append(str(node.args[0].value))
    return found


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def test_every_import_goes_to_the_same_level_or_below():
    violations = []
    for module, path in package_files().items():
        if module == "t2t_lite":
            continue  # the package marker
        own = level_of(module) if module != "t2t_lite.problems" else LEVELS.index(("problems",))
        for target in imports(path):
            if (
                target.split(".")[0] in ("tests", "conftest", "bench")
                or target.startswith("t2t_lite.")
                and level_of(target) > own
            ):
                violations.append(f"{module} imports {target}")
    assert not violations, violations


def test_programs_do_not_import_the_tests():
    violations = [
        f"{path.relative_to(REPO)} imports {target}"
        for path in program_files()
        for target in imports(path)
        if target.split(".")[0] in ("tests", "conftest")
    ]
    assert not violations, violations


def test_the_levels_cover_every_module():
    for module in package_files():
        if module != "t2t_lite":
            level_of(module)


def test_a_planted_upward_import_is_seen(tmp_path):
    # The checker itself: an importlib call and a from-import both count.
    path = tmp_path / "planted.py"
    path.write_text(
        "import importlib\nfrom t2t_lite import training\n"
        "importlib.import_module('t2t_lite.export.serving')\n"
    )
    found = imports(path)
    assert "t2t_lite.training" in found and "t2t_lite.export.serving" in found
    assert level_of("t2t_lite.export.serving") > level_of("t2t_lite.registry")


def closure(path: pathlib.Path) -> set[str]:
    """The t2t_lite modules a file loads, directly or through other t2t_lite modules."""
    known = package_files()
    seen: set[str] = set()
    todo = [path]
    while todo:
        for target in imports(todo.pop()):
            parts = target.split(".")
            # "from t2t_lite.x import name": the module x.name if there is one, else x
            while parts and ".".join(parts) not in known:
                parts.pop()
            module = ".".join(parts)
            for depth in range(2, len(parts) + 1):  # a module loads its packages too
                package = ".".join(parts[:depth])
                if package not in seen and package in known:
                    seen.add(package)
                    todo.append(known[package])
            if module and module not in seen and module in known:
                seen.add(module)
                todo.append(known[module])
    return seen


def test_t2t_decode_loads_no_training_code():
    loaded = closure(REPO / "bin" / "t2t-decode")
    assert "t2t_lite.decoding.runner" in loaded  # the checker follows the imports
    assert not [m for m in loaded if m.startswith("t2t_lite.training")], sorted(loaded)
    assert "t2t_lite.training.trainer" in closure(REPO / "bin" / "t2t-train")  # would be seen


def test_only_problems_joins_the_package_from_the_repository_root():
    """t2t_lite.problems is the root's problems/ folder; the root's other
    folders and files (bench, tests, setup) are not package modules."""
    import importlib

    import t2t_lite.problems

    assert os.path.basename(os.path.dirname(t2t_lite.problems.__file__)) == "problems"
    for name in ("bench", "tests", "setup", "experiments"):
        with pytest.raises(ImportError):
            importlib.import_module(f"t2t_lite.{name}")
