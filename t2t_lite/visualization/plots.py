"""Pictures (PNG, via matplotlib, the `viz` extra) of maps, ponder times and results."""

import io
from typing import NamedTuple

import numpy as np

from t2t_lite import files
from t2t_lite.parsing import trees

INSTALL_HINT = "plotting needs matplotlib: pip install -e '.[viz]' (or pip install matplotlib)"


class PlottingUnavailable(ValueError):
    """matplotlib (the `viz` extra) is not installed."""


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend; a clear error without it."""
    try:
        import matplotlib
    except ImportError as err:
        raise PlottingUnavailable(INSTALL_HINT) from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def available() -> bool:
    """Whether matplotlib can be imported."""
    try:
        pyplot()
    except PlottingUnavailable:
        return False
    return True


def save(figure, path: str) -> None:
    """Writes the figure as a PNG through tf.io.gfile (any TF filesystem), then closes it."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    pyplot().close(figure)
    files.write_bytes_atomically(path, buffer.getvalue())


def _label_axes(axis, queries: list[str], keys: list[str], fontsize: float) -> None:
    axis.set_xticks(range(len(keys)))
    axis.set_xticklabels(keys, rotation=90, fontsize=fontsize)
    axis.set_yticks(range(len(queries)))
    axis.set_yticklabels(queries, fontsize=fontsize)


def attention_figure(
    weights: np.ndarray, queries: list[str], keys: list[str], title: str, unit: str
):
    """A grid of heat maps: one row per layer/step, one column per head ([N, H, Q, K]).

    Rows attend from `queries` (y axis) to `keys` (x axis); each row sums to 1.
    """
    plt = pyplot()
    rows, heads = weights.shape[:2]
    cell = max(1.6, 0.22 * max(len(queries), len(keys)))
    figure, axes = plt.subplots(
        rows, heads, figsize=(cell * heads + 1.0, cell * rows + 0.8), squeeze=False
    )
    fontsize = 8 if max(len(queries), len(keys)) <= 24 else 5
    for row in range(rows):
        for head in range(heads):
            axis = axes[row][head]
            axis.imshow(weights[row, head], cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
            _label_axes(axis, queries, keys, fontsize)
            name = "mean of heads" if heads == 1 else f"head {head}"
            axis.set_title(f"{unit} {row + 1 if unit == 'step' else row}, {name}", fontsize=8)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


def ponder_figure(record: dict, title: str):
    """Per side (encoder, decoder), bars of N and R over the tokens (UT paper, Figure 3)."""
    plt = pyplot()
    sides = list(record)
    width = max(4.0, 0.35 * max(len(record[s]["tokens"]) for s in sides))
    figure, axes = plt.subplots(len(sides), 1, figsize=(width, 2.4 * len(sides)), squeeze=False)
    for axis, side in zip(axes[:, 0], sides, strict=True):
        tokens = record[side]["tokens"]
        n = np.asarray(record[side]["n_updates"])
        r = np.asarray(record[side]["remainders"])
        positions = np.arange(len(tokens))
        axis.bar(positions, n, color="#4c72b0", label="N (steps)")
        axis.bar(positions, r, bottom=n, color="#dd8452", label="R (remainder)")
        axis.set_xticks(positions)
        axis.set_xticklabels(tokens, rotation=90, fontsize=8)
        axis.set_ylabel("ponder time")
        axis.set_title(f"{side}: mean N + R = {np.mean(n + r):.2f}", fontsize=9)
        axis.legend(fontsize=7, loc="upper right")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


def comparison_figure(bars: list[dict]):
    """Grouped bars of test char-acc per task and model, the paper's value as a marker.

    bars: [{"task", "model", "value", "paper" (or None)}], in table order.
    """
    plt = pyplot()
    tasks = list(dict.fromkeys(b["task"] for b in bars))
    models = list(dict.fromkeys(b["model"] for b in bars))
    width = 0.8 / len(models)
    figure, axis = plt.subplots(figsize=(max(4.0, 1.6 * len(tasks) * len(models) / 2), 3.4))
    for m, model in enumerate(models):
        for b in (b for b in bars if b["model"] == model):
            x = tasks.index(b["task"]) + (m - (len(models) - 1) / 2) * width
            axis.bar(x, b["value"], width, color=f"C{m}", label=model)
            if b["paper"] is not None:
                axis.plot(x, b["paper"], "k_", markersize=14, markeredgewidth=2)
    handles, labels = axis.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    paper = axis.plot([], [], "k_", markersize=14, markeredgewidth=2)[0]
    axis.legend([*unique.values(), paper], [*unique, "paper"], fontsize=8)
    axis.set_xticks(range(len(tasks)))
    axis.set_xticklabels(tasks)
    axis.set_ylim(0, 1.05)
    axis.set_ylabel("char-acc, test (10x length)")
    return figure


def curves_figure(curves: dict[str, dict[str, list[tuple[int, float]]]]):
    """Dev loss and dev accuracy over steps, one line per run.

    curves: run label -> metric ("loss", "accuracy", "sequence_accuracy") -> [(step, value)].
    """
    plt = pyplot()
    metrics = ("loss", "accuracy", "sequence_accuracy")
    figure, axes = plt.subplots(1, len(metrics), figsize=(4.0 * len(metrics), 3.2))
    for axis, metric in zip(axes, metrics, strict=True):
        for label, series in curves.items():
            points = series.get(metric, [])
            if points:
                steps, values = zip(*points, strict=True)
                axis.plot(steps, values, marker=".", label=label)
        axis.set_title(f"dev {metric}", fontsize=9)
        axis.set_xlabel("step")
    axes[0].legend(fontsize=7)
    figure.tight_layout()
    return figure


class Placed(NamedTuple):
    """A tree node's place in a drawing."""

    x: float  # preterminals at 0, 1, ... in sentence order; a constituent over its children
    depth: int  # the root at 0
    label: str
    parent: int  # the parent's index among the placed nodes; -1: the root
    word: str | None  # a preterminal's word


def tree_layout(tree: trees.Tree) -> list[Placed]:
    """Every node of `tree`, in preorder, placed: a constituent sits over the
    middle of its first and last child."""
    nodes: list[Placed] = []
    words = 0

    def place(node: trees.Tree, depth: int, parent: int) -> float:
        nonlocal words
        index = len(nodes)
        nodes.append(Placed(0.0, depth, node.label, parent, node.word))
        if node.is_preterminal or not node.children:
            x = float(words)
            words += node.is_preterminal
        else:
            xs = [place(child, depth + 1, index) for child in node.children]
            x = (xs[0] + xs[-1]) / 2
        nodes[index] = nodes[index]._replace(x=x)
        return x

    place(tree, 0, -1)
    return nodes


def tree_figure(panels: list[tuple[str, trees.Tree]]):
    """Constituency trees drawn one above the other, each titled (a decoded tree
    and the gold tree of its sentence): labels joined to their parents, the
    words on one line under their tags."""
    plt = pyplot()
    layouts = [tree_layout(tree) for _, tree in panels]
    words = max(sum(node.word is not None for node in nodes) for nodes in layouts)
    depth = max(node.depth for nodes in layouts for node in nodes)
    figure, axes = plt.subplots(
        len(panels),
        1,
        figsize=(max(4.0, 0.75 * words), (0.45 * (depth + 2) + 0.6) * len(panels)),
        squeeze=False,
    )
    box = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"}
    bottom = -(depth + 1)  # the words' line, under the deepest tag of any panel
    for axis, (title, _), nodes in zip(axes[:, 0], panels, layouts, strict=True):
        for node in nodes:
            if node.parent >= 0:
                parent = nodes[node.parent]
                axis.plot([parent.x, node.x], [-parent.depth, -node.depth], color="0.6", lw=0.8)
        for node in nodes:
            axis.text(
                node.x, -node.depth, node.label, ha="center", va="center", fontsize=8, bbox=box
            )
            if node.word is not None:
                axis.plot([node.x, node.x], [-node.depth, bottom], color="0.8", lw=0.6, ls=":")
                axis.text(
                    node.x, bottom, node.word, ha="center", va="top", fontsize=8, color="#1f4e8c"
                )
        axis.set_xlim(-0.7, max(words, 1) - 0.3)
        axis.set_ylim(bottom - 0.8, 0.5)
        axis.set_title(title, fontsize=9, loc="left")
        axis.axis("off")
    figure.tight_layout()
    return figure
