"""The compiled training step and the state it updates (model, optimizer, step)."""

import keras
import tensorflow as tf

from t2t_lite import experiment as experiment_lib
from t2t_lite.layers import masks
from t2t_lite.training import checkpoints, losses, schedules

SUM = tf.distribute.ReduceOp.SUM
# --mixed_precision -> Keras dtype policy. Variables, logits and the loss stay float32.
PRECISIONS = {"none": "float32", "fp16": "mixed_float16", "bf16": "mixed_bfloat16"}


def build_training_state(
    experiment: experiment_lib.Experiment, vocab_size: int, mixed_precision: str = "none"
) -> tuple[keras.Model, keras.optimizers.Optimizer, tf.Variable]:
    """A built model, an optimizer built over its weights, and the step counter.

    Call inside the strategy's scope: variables are created here. Under
    mixed precision the model's layers compute in float16/bfloat16 (their
    variables stay float32); fp16 wraps the optimizer in Keras's
    LossScaleOptimizer. The global dtype policy is restored afterwards.
    """
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(PRECISIONS[mixed_precision])
    try:
        model = experiment.build_model(vocab_size)
        checkpoints.build_model(model)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    optimizer = schedules.make_optimizer(experiment.hparams)
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
):
    """A compiled step: k distributed micro-batches -> (loss sum, tokens, grad norm, metrics).

    Gradients of the k micro-batches are summed and applied once, the loss
    normalised by the global count of non-pad target tokens over all of them:
    the update equals one step on their union. metrics are the model's
    auxiliary outputs (e.g. ponder time), averaged over replicas and
    micro-batches, plus "aux_loss" when the model adds a loss of its own.
    """
    replicas = float(strategy.num_replicas_in_sync)
    scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)

    def loss_and_gradients(batch, global_weight):
        with tf.GradientTape() as tape:
            logits, aux = model.forward(batch, training=True)
            loss_sum, _ = losses.smoothed_cross_entropy(logits, batch["targets"], label_smoothing)
            # Gradients are summed over replicas, so normalise by the global count.
            loss = loss_sum / global_weight
            metrics = dict(aux)
            extra = metrics.pop("loss", None)
            if extra is not None:  # e.g. ACT's ponder cost, a per-replica mean
                loss += extra / (replicas * accumulation_steps)
                metrics["aux_loss"] = extra
            if scaled:  # fp16: gradients of the scaled loss; apply_gradients unscales
                loss = optimizer.scale_loss(loss)
        grads = tape.gradient(loss, model.trainable_variables)
        return loss_sum, grads, metrics

    # XLA covers forward and backward; the optimizer update stays outside the
    # compiled function, where distribution strategies can merge across replicas.
    compiled = tf.function(loss_and_gradients, jit_compile=xla_compile)

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
        grad_norm = tf.linalg.global_norm(grads)
        if scaled:
            # Report the unscaled norm; an overflowing step is skipped by the
            # optimizer (and its scale lowered), so it is not an error here.
            grad_norm /= tf.cast(optimizer.dynamic_scale, grad_norm.dtype)
            grad_norm = tf.where(tf.math.is_finite(grad_norm), grad_norm, 0.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss_sum, weight, grad_norm, metrics

    # With several micro-batches, each of its own bucket shape, traced
    # shapes are generalised rather than traced per combination.
    @tf.function(reduce_retracing=accumulation_steps > 1)
    def train_step(batches):
        loss_sum, weight, grad_norm, metrics = strategy.run(replica_step, args=(batches,))
        step.assign_add(1)
        mean = tf.distribute.ReduceOp.MEAN
        return (
            strategy.reduce(SUM, loss_sum, axis=None),
            strategy.reduce(SUM, weight, axis=None),
            # Mean of per-replica norms: exact on one replica; NaN if any is.
            strategy.reduce(mean, grad_norm, axis=None),
            {key: strategy.reduce(mean, value, axis=None) for key, value in metrics.items()},
        )

    return train_step
