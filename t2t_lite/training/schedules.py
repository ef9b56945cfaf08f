"""The learning-rate schedule and Adam, as in the paper and tensor2tensor."""

import keras
import tensorflow as tf


class RsqrtWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """constant * min(1, step/warmup) * rsqrt(max(step, warmup)) * rsqrt(hidden_size).

    With constant 1 this is the paper's d^-0.5 * min(step^-0.5, step * warmup^-1.5).
    `step` counts from 1 (the optimizer's iteration count plus one).
    """

    def __init__(self, constant: float, warmup_steps: int, hidden_size: int):
        self.constant = constant
        self.warmup_steps = warmup_steps
        self.hidden_size = hidden_size

    def __call__(self, iterations):
        step = tf.cast(iterations, tf.float32) + 1.0
        warmup = float(self.warmup_steps)
        ramp = tf.minimum(1.0, step / warmup) if self.warmup_steps else 1.0
        decay = tf.math.rsqrt(tf.maximum(step, warmup))
        return self.constant * ramp * decay * self.hidden_size**-0.5

    def get_config(self):
        return {
            "constant": self.constant,
            "warmup_steps": self.warmup_steps,
            "hidden_size": self.hidden_size,
        }


class SummedGradients:
    """Optimizer mixin: gradients arrive already summed over replicas.

    Keras's TensorFlow optimizers all-reduce inside `apply`, after clipping
    and, under LossScaleOptimizer, after the finiteness check, so both would
    see one replica's gradient. `steps.make_train_step` all-reduces once
    itself, before either; this hook keeps Keras from reducing again.
    """

    def _all_reduce_sum_gradients(self, grads_and_vars):
        return list(grads_and_vars)


if not hasattr(keras.optimizers.Adam, "_all_reduce_sum_gradients"):  # pragma: no cover
    raise ImportError(
        "this Keras has no Optimizer._all_reduce_sum_gradients; t2t_lite's explicit "
        "gradient all-reduce needs it (Keras 3 with the TensorFlow backend)"
    )


class Adam(SummedGradients, keras.optimizers.Adam):
    """Keras's Adam over gradients that the train step has all-reduced."""


def make_optimizer(hp) -> keras.optimizers.Optimizer:
    """Adam with the warmup/rsqrt schedule. Clipping (hp.clip_grad_norm) is the
    train step's: it clips the all-reduced gradient, which Keras cannot.
    """
    return Adam(
        learning_rate=RsqrtWarmup(
            hp.learning_rate_constant, hp.learning_rate_warmup_steps, hp.hidden_size
        ),
        beta_1=hp.optimizer_adam_beta1,
        beta_2=hp.optimizer_adam_beta2,
        epsilon=hp.optimizer_adam_epsilon,
    )
