"""The layers a layer holds, at any depth, found through its attributes.

Keras keeps its own walk (`_flatten_layers`) private; the package's
containers hold their sublayers as attributes, tuples or dicts, so a walk
over those finds every one with public Python alone: the dtype policy handed
down (policy.py), the attention maps recorded (attention.recording), the
leaves built by a dummy batch (models/transformer.py). `build_each` is
what a container's `build(input_shape)` does with its sublayers.
"""

import keras


def nested(layer: keras.layers.Layer, include_self: bool = False) -> list[keras.layers.Layer]:
    """Every layer reachable from layer's attributes (looking into lists,
    tuples and dicts), each once, outermost first."""
    found, seen, todo = [], {id(layer)}, [layer]
    while todo:
        current = todo.pop(0)
        for sublayer in _layers_in(list(vars(current).values())):
            if id(sublayer) not in seen:
                seen.add(id(sublayer))
                found.append(sublayer)
                todo.append(sublayer)
    return [layer, *found] if include_self else found


def _layers_in(values: list) -> list[keras.layers.Layer]:
    """The layers among values, looking into lists, tuples and dicts."""
    found, todo = [], list(values)
    while todo:
        value = todo.pop(0)
        if isinstance(value, keras.layers.Layer):
            found.append(value)
        elif isinstance(value, list | tuple):
            todo.extend(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
    return found


def build_each(input_shape, *layers) -> None:
    """Builds each of `layers` (None skipped) not yet built for `input_shape`:
    a container's weights made in its own `build(input_shape)`, as Keras and
    keras-hub expect, not at its first call."""
    for layer in layers:
        if layer is not None and not layer.built:
            layer.build(input_shape)
