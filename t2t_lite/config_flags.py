"""absl flags from a frozen config dataclass, and the config back from the flags.

A field's default, its help (metadata "help") and its choices (metadata
"choices") become the flag's; binaries repeat none of them.
"""

import dataclasses
import sys
import types

from absl import flags


def _kind(field: dataclasses.Field):
    """A field's type, without an "| None" (such flags default to None: unset)."""
    kind = field.type
    if isinstance(kind, types.UnionType):
        kinds = [k for k in kind.__args__ if k is not type(None)]
        kind = kinds[0] if len(kinds) == 1 else kind
    return kind if isinstance(kind, type) else str(kind)


def define(config_class, flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """One flag per field of config_class: int, float, bool, str (enum with choices), tuple.

    They are key flags of the calling module (a program's --help lists them).
    """
    caller = sys._getframe(1).f_globals.get("__name__", "")
    for field in dataclasses.fields(config_class):
        help_text = field.metadata.get("help", field.name)
        choices = field.metadata.get("choices")
        kind = _kind(field)
        args = (field.name, field.default, help_text)
        if choices:
            flags.DEFINE_enum(field.name, field.default, list(choices), help_text, flag_values)
        elif kind is bool:
            flags.DEFINE_bool(*args, flag_values=flag_values)
        elif kind is int:
            flags.DEFINE_integer(*args, flag_values=flag_values)
        elif kind is float:
            flags.DEFINE_float(*args, flag_values=flag_values)
        elif kind is str:
            flags.DEFINE_string(*args, flag_values=flag_values)
        elif str(kind).startswith("tuple"):
            flags.DEFINE_list(field.name, list(field.default), help_text, flag_values)
        else:
            raise TypeError(f"{config_class.__name__}.{field.name}: no flag type for {kind}")
        flag_values.register_key_flag_for_module(caller, flag_values[field.name])


def build(config_class, flag_values: flags.FlagValues = flags.FLAGS):
    """The config from the parsed flags (validated by its __post_init__)."""
    values = {}
    for field in dataclasses.fields(config_class):
        value = flag_values[field.name].value
        values[field.name] = tuple(value) if isinstance(field.default, tuple) else value
    return config_class(**values)
