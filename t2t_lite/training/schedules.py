"""The learning-rate schedule and Adam, as in the paper and tensor2tensor."""

import keras
import tensorflow as tf


class RsqrtWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """constant * min(1, step/warmup) * rsqrt(max(step, warmup)) * rsqrt(hidden_size),
    times tensor2tensor's linear decay when decay_steps > 0.

    With constant 1 this is the paper's d^-0.5 * min(step^-0.5, step * warmup^-1.5).
    `step` counts from 1 (the optimizer's iteration count plus one). The decay
    factor is min(1, (train_steps - iterations) / decay_steps): 1 until the last
    decay_steps steps of the budget, then falling linearly, 1/decay_steps on the
    budget's last step, so the rate would reach 0 just after it.
    """

    def __init__(
        self,
        constant: float,
        warmup_steps: int,
        hidden_size: int,
        decay_steps: int = 0,
        train_steps: int = 0,
    ):
        if decay_steps and train_steps <= 0:
            raise ValueError("a linear decay (decay_steps > 0) needs the budget's train_steps")
        self.constant = constant
        self.warmup_steps = warmup_steps
        self.hidden_size = hidden_size
        self.decay_steps = decay_steps
        self.train_steps = train_steps

    def __call__(self, iterations):
        done = tf.cast(iterations, tf.float32)
        step = done + 1.0
        warmup = float(self.warmup_steps)
        ramp = tf.minimum(1.0, step / warmup) if self.warmup_steps else 1.0
        decay = tf.math.rsqrt(tf.maximum(step, warmup))
        rate = self.constant * ramp * decay * self.hidden_size**-0.5
        if self.decay_steps:
            left = (float(self.train_steps) - done) / float(self.decay_steps)
            rate *= tf.clip_by_value(left, 0.0, 1.0)
        return rate

    def get_config(self):
        return {
            "constant": self.constant,
            "warmup_steps": self.warmup_steps,
            "hidden_size": self.hidden_size,
            "decay_steps": self.decay_steps,
            "train_steps": self.train_steps,
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


def make_optimizer(hp, train_steps: int = 0) -> keras.optimizers.Optimizer:
    """Adam with the warmup/rsqrt schedule, decayed to the budget's end
    (train_steps) when hp.learning_rate_decay_steps > 0. Clipping
    (hp.clip_grad_norm) is the train step's: it clips the all-reduced
    gradient, which Keras cannot.
    """
    return Adam(
        learning_rate=RsqrtWarmup(
            hp.learning_rate_constant,
            hp.learning_rate_warmup_steps,
            hp.hidden_size,
            hp.learning_rate_decay_steps,
            train_steps,
        ),
        beta_1=hp.optimizer_adam_beta1,
        beta_2=hp.optimizer_adam_beta2,
        epsilon=hp.optimizer_adam_epsilon,
    )
