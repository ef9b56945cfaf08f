"""Frozen hparams: override parsing and JSON round trip."""

import dataclasses
import json
import typing
from typing import Any

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


def _cast(key: str, field_type: Any, text: str) -> Any:
    """Casts an override string to the field's type, or raises naming the key."""
    text = text.strip()
    try:
        if field_type is bool:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError
        if field_type is int:
            return int(text)
        if field_type is float:
            return float(text)
        if field_type is str:
            return text
    except ValueError:
        pass
    else:
        raise TypeError(f"hparam {key!r} has unsupported type {field_type}")
    raise ValueError(f"hparam {key!r} expects a value of type {field_type.__name__}, got {text!r}")


def _field_types(hparams: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(type(hparams))
    return {f.name: hints[f.name] for f in dataclasses.fields(hparams)}


def override(hparams: Any, overrides: str | dict[str, Any]) -> Any:
    """Returns `hparams` with overrides applied.

    `overrides` is either "k=v,k2=v2" (values cast to each field's type) or a
    dict of already-typed values. Unknown keys and bad values raise ValueError
    naming the key.
    """
    types = _field_types(hparams)
    if isinstance(overrides, str):
        parsed: dict[str, Any] = {}
        for item in filter(None, (part.strip() for part in overrides.split(","))):
            if "=" not in item:
                raise ValueError(f"hparams override {item!r} is not of the form key=value")
            key, value = (s.strip() for s in item.split("=", 1))
            if key not in types:
                raise ValueError(_unknown_key_message(key, types))
            if key in parsed:
                raise ValueError(f"hparams override {key!r} is given twice; give it once")
            parsed[key] = _cast(key, types[key], value)
        overrides = parsed
    for key, value in overrides.items():
        if key not in types:
            raise ValueError(_unknown_key_message(key, types))
        if types[key] is float and isinstance(value, int) and not isinstance(value, bool):
            overrides[key] = float(value)
        elif not isinstance(value, types[key]) or (types[key] is int and isinstance(value, bool)):
            raise ValueError(f"hparam {key!r} expects {types[key].__name__}, got {value!r}")
    return dataclasses.replace(hparams, **overrides)


def _unknown_key_message(key: str, types: dict[str, Any]) -> str:
    return f"unknown hparam {key!r}; valid keys: {', '.join(sorted(types))}"


def to_dict(hparams: Any) -> dict[str, Any]:
    """The hparams as a plain JSON-serializable dict."""
    return dataclasses.asdict(hparams)


def complete(hparams_class: type, values: dict[str, Any]) -> dict[str, Any]:
    """`values` as a file written before some of the class's keys existed holds
    them, with each such key at the value that reproduces what ran then (the
    class's KEYS_ADDED), so an older run or record reads back as what it ran."""
    return {**getattr(hparams_class, "KEYS_ADDED", {}), **values}


def from_dict(hparams_class: type, values: dict[str, Any]) -> Any:
    """Rebuilds hparams of `hparams_class` from a dict (completed: keys added
    since it was written take their earlier behaviour), validating every key."""
    return override(hparams_class(), complete(hparams_class, values))


def dumps(hparams: Any) -> str:
    """JSON text of the hparams, keys sorted."""
    return json.dumps(to_dict(hparams), indent=2, sort_keys=True)


def require(condition: bool, keys: str, message: str) -> None:
    """Raises ValueError naming the hparams `keys` when `condition` is false."""
    if not condition:
        raise ValueError(f"invalid hparams ({keys}): {message}")
