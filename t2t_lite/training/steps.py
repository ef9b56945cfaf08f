"""The compiled training step and the state it updates (model, optimizer, step)."""

import keras
import tensorflow as tf

from t2t_lite import checkpoints
from t2t_lite import experiment as experiment_lib
from t2t_lite.layers import masks
from t2t_lite.training import losses, schedules
from t2t_lite.training.config import PRECISIONS

SUM = tf.distribute.ReduceOp.SUM


def build_training_state(
    experiment: experiment_lib.Experiment,
    vocab_size: int,
    mixed_precision: str = "none",
    train_steps: int = 0,
) -> tuple[keras.Model, keras.optimizers.Optimizer, tf.Variable]:
    """A built model, an optimizer built over its weights, and the step counter.

    Call inside the strategy's scope: variables are created here. Under
    mixed precision the model's layers compute in float16/bfloat16 (their
    variables stay float32); fp16 wraps the optimizer in Keras's
    LossScaleOptimizer. The global dtype policy is restored afterwards.
    train_steps: the budget a learning-rate decay ends at (hp.learning_rate_decay_steps).
    """
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(PRECISIONS[mixed_precision])
    try:
        model = experiment.build_model(vocab_size)
        checkpoints.build_model(model)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    optimizer = schedules.make_optimizer(experiment.hparams, train_steps)
    if mixed_precision == "fp16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    optimizer.build(model.trainable_variables)
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    return model, optimizer, step


def make_train_step(
    model: keras.Model,
    optimizer: keras.optimizers.Optimizer,
    strategy: tf.distribute.Strategy,
    label_smoothing: float,
    step: tf.Variable,
    xla_compile: bool = False,
    accumulation_steps: int = 1,
    clip_grad_norm: float = 0.0,
):
    """A compiled step: k distributed micro-batches -> (loss sum, tokens, grad norm, metrics).

    Each replica sums the gradients of its k micro-batches; the sum is
    all-reduced once over replicas, then unscaled (fp16), clipped to
    `clip_grad_norm` (0: off), checked for finiteness and applied once, so a
    step on N replicas is the step on their union of examples on one device.
    The loss is normalised by the global count of non-pad target tokens.
    grad norm: the global norm of that reduced, unscaled gradient before
    clipping (0 for an fp16 step skipped as non-finite). metrics are the
    model's auxiliary outputs (e.g. ponder time), averaged over replicas and
    micro-batches, plus "aux_loss" when the model adds a loss of its own.
    """
    replicas = float(strategy.num_replicas_in_sync)
    scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    inner = optimizer.inner_optimizer if scaled else optimizer
    if not isinstance(inner, schedules.SummedGradients):
        raise TypeError(
            f"{type(inner).__name__} would all-reduce gradients a second time; "
            "use an optimizer with schedules.SummedGradients"
        )
    variables = model.trainable_variables

    def loss_and_gradients(batch, global_weight):
        with tf.GradientTape() as tape:
            logits, aux = model.logits_and_aux(batch, training=True)
            loss_sum, _ = losses.smoothed_cross_entropy(logits, batch["targets"], label_smoothing)
            # Gradients are summed over replicas, so normalise by the global count.
            loss = loss_sum / global_weight
            metrics = dict(aux)
            extra = metrics.pop("loss", None)
            if extra is not None:  # e.g. ACT's ponder cost, a per-replica mean
                loss += extra / (replicas * accumulation_steps)
                metrics["aux_loss"] = extra
            if scaled:  # fp16: gradients of the scaled loss
                loss = optimizer.scale_loss(loss)
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
        return loss_sum, grads, metrics

    # XLA covers forward and backward; the reduction and the update stay
    # outside the compiled function, where strategies merge across replicas.
    compiled = tf.function(loss_and_gradients, jit_compile=xla_compile, autograph=False)

    def replica_step(batches):
        weight = tf.add_n([tf.reduce_sum(masks.padding_mask(b["targets"])) for b in batches])
        context = tf.distribute.get_replica_context()
        global_weight = tf.maximum(context.all_reduce(SUM, weight), 1.0)
        loss_sum, grads, metrics = compiled(batches[0], global_weight)
        for batch in batches[1:]:
            more_loss, more_grads, more_metrics = compiled(batch, global_weight)
            loss_sum += more_loss
            grads = [g + h for g, h in zip(grads, more_grads, strict=True)]
            metrics = {key: metrics[key] + more_metrics[key] for key in metrics}
        metrics = {key: value / len(batches) for key, value in metrics.items()}
        grads = context.all_reduce(SUM, grads)  # the same gradient on every replica
        grad_norm = apply_update(optimizer, grads, variables, clip_grad_norm)
        return loss_sum, weight, grad_norm, metrics

    # Traced once for any shape by trace_for_every_shape; otherwise (batches
    # of per-replica values) for the first batch's shape, then as its rows and
    # length are generalised (each at most once): not once per length bucket
    # (42 for length 256 at length_bucket_step 1.1) or per micro-batch
    # combination. An XLA-compiled step still compiles once per shape.
    @tf.function(reduce_retracing=True, autograph=False)
    def train_step(batches):
        loss_sum, weight, grad_norm, metrics = strategy.run(replica_step, args=(batches,))
        step.assign_add(1)
        mean = tf.distribute.ReduceOp.MEAN
        return (
            strategy.reduce(SUM, loss_sum, axis=None),
            strategy.reduce(SUM, weight, axis=None),
            strategy.experimental_local_results(grad_norm)[0],  # equal on every replica
            {key: strategy.reduce(mean, value, axis=None) for key, value in metrics.items()},
        )

    return train_step


def trace_for_every_shape(
    function,
    element_spec,
    copies: int | None = None,
) -> None:
    """Traces `function` once for batches of any rows and length (the dataset's
    element spec with every dimension unknown), so that the batches of every
    length bucket and the partial last batch reuse one trace instead of
    retracing as new shapes arrive (three traces on a short run, seconds
    each). `copies`: the function takes a tuple of that many batches (the
    micro-batches of one step). Datasets of per-replica values (several
    local devices) are left to trace per shape as they are called.
    """
    trace = getattr(function, "get_concrete_function", None)  # None: not a tf.function
    specs = tf.nest.flatten(element_spec)
    if trace is None or not all(isinstance(spec, tf.TensorSpec) for spec in specs):
        return
    relaxed = tf.nest.map_structure(
        lambda spec: tf.TensorSpec([None] * spec.shape.rank, spec.dtype), element_spec
    )
    trace(relaxed if copies is None else (relaxed,) * copies)


def apply_update(
    optimizer: keras.optimizers.Optimizer,
    grads: list[tf.Tensor],
    variables: list,
    clip_grad_norm: float,
) -> tf.Tensor:
    """Clips and applies an all-reduced gradient -> its unscaled norm before clipping.

    Under fp16 `grads` are of the scaled loss: they are unscaled first
    (exactly: the dynamic scale is a power of two), and LossScaleOptimizer
    skips the update and halves its scale when they are not finite, a
    decision every replica now takes on the same values.
    """
    scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    if scaled:
        scale = tf.cast(optimizer.dynamic_scale, tf.float32)
        grads = [g / scale for g in grads]
    norm = tf.linalg.global_norm(grads)
    if clip_grad_norm > 0:  # a non-finite norm makes every entry NaN: skipped under fp16
        grads, _ = tf.clip_by_global_norm(grads, clip_grad_norm, use_norm=norm)
    if scaled:
        # LossScaleOptimizer unscales what it is given; hand it the scaled values.
        optimizer.apply([g * scale for g in grads], variables)
        return tf.where(tf.math.is_finite(norm), norm, 0.0)
    optimizer.apply(grads, variables)
    return norm
