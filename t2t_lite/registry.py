"""Name -> object registries for models, hparams sets and problems.

The registries are filled by the packages that define the entries: importing
`t2t_lite.models` registers the models and hparams sets, importing
`t2t_lite.problems` the problems. The layers that look names up
(`experiment.py`, the binaries) import those packages; this module imports
nothing above it.
"""

import re
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_SNAKE_CASE = re.compile(r"^[a-z][a-z0-9_]*$")


class Registry(Generic[T]):
    """A mapping from snake_case names to registered objects."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator that registers its target under `name`."""
        if not _SNAKE_CASE.match(name):
            raise ValueError(f"{self.kind} name {name!r} is not snake_case")

        def decorator(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = obj
            return obj

        return decorator

    def get(self, name: str) -> T:
        """The object registered as `name`; an unknown name lists the known ones."""
        if name not in self._items:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; known {self.kind}s: {known}")
        return self._items[name]

    def names(self) -> list[str]:
        """All registered names, sorted."""
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        return name in self._items


MODELS: Registry = Registry("model")
HPARAMS: Registry = Registry("hparams set")
PROBLEMS: Registry = Registry("problem")
