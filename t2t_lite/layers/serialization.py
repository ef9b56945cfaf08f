"""Keras serialization of the package's layers: `get_config` / `from_config`
made from the arguments each layer was constructed with, and registration
under the package's name ("t2t_lite>ClassName"), so that a layer inside a
user's model round-trips through `model.save("m.keras")` and
`keras.models.load_model`, and `keras.models.clone_model` copies it.

An argument is kept as JSON: numbers, strings, booleans and None as they
are; a tuple, a list or a dict element by element; a layer (a stack's
blocks, a block's ACT) as Keras serializes it; a dataclass the package
declares with `config_dataclass` (`BlockConfig`, `LengthDepth`) as its
fields. `from_config` reverses each, then constructs the layer as Keras
does (its name, dtype policy and trainable flag included).
"""

import copy
import dataclasses
import functools
import inspect

import keras

from t2t_lite.layers import policy

PACKAGE = "t2t_lite"
_LAYER, _TUPLE, _DATACLASS = "__layer__", "__tuple__", "__dataclass__"
_DATACLASSES: dict[str, type] = {}


def config_dataclass(cls: type) -> type:
    """Declares a frozen dataclass that layers take as an argument."""
    _DATACLASSES[cls.__name__] = cls
    return cls


def serializable(cls: type) -> type:
    """Class decorator: the layer remembers its constructor's arguments, and its
    `get_config` / `from_config` write and read them (module docstring)."""
    init = cls.__init__
    signature = inspect.signature(init)
    variadic = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = {
            name: value
            for name, value in list(bound.arguments.items())[1:]
            if signature.parameters[name].kind not in variadic
        }
        init(self, *args, **kwargs)
        if type(self) is cls:  # the outermost constructor's arguments
            object.__setattr__(self, "_constructor_arguments", arguments)
            if kwargs.get("dtype") is not None:  # a policy for this layer: for all it made
                policy.hand_down(self)

    def get_config(self) -> dict:
        base = super(cls, self).get_config()
        return {**base, **{k: _encode(v) for k, v in self._constructor_arguments.items()}}

    @classmethod
    def from_config(klass, config: dict):
        decoded = {key: _decode(value) for key, value in config.items()}
        return keras.layers.Layer.from_config.__func__(klass, decoded)

    # Keras reads the constructor's signature (getfullargspec, which does not
    # follow __wrapped__): it is the wrapped constructor's.
    del __init__.__wrapped__
    __init__.__signature__ = signature
    cls.__init__ = __init__
    cls.get_config = get_config
    cls.from_config = from_config
    return keras.saving.register_keras_serializable(package=PACKAGE)(cls)


def _encode(value):
    if isinstance(value, keras.layers.Layer):
        return {_LAYER: keras.saving.serialize_keras_object(value)}
    if dataclasses.is_dataclass(value) and type(value).__name__ in _DATACLASSES:
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {_DATACLASS: type(value).__name__, "fields": fields}
    if isinstance(value, tuple):
        return {_TUPLE: [_encode(item) for item in value]}
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if isinstance(value, dict):
        return {key: _encode(item) for key, item in value.items()}
    return value


def _decode(value):
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if _LAYER in value:
        return keras.saving.deserialize_keras_object(copy.deepcopy(value[_LAYER]))
    if _TUPLE in value:
        return tuple(_decode(item) for item in value[_TUPLE])
    if _DATACLASS in value:
        fields = {key: _decode(item) for key, item in value["fields"].items()}
        return _DATACLASSES[value[_DATACLASS]](**fields)
    return {key: _decode(item) for key, item in value.items()}
