"""The PyTorch reference for the training benchmark: torch.nn.Transformer, same shapes.

Same architecture as t2t_lite's Transformer at the given hparams: encoder
and decoder layers of the same width, heads and filter size, ReLU, pre- or
post-norm as the hparams say, a shared embedding/softmax matrix scaled by
sqrt(d), sinusoidal positions, dropout rates, label-smoothed cross-entropy
and Adam with the same betas and epsilon. torch is imported here only: it is
never a dependency of the package.
"""

import math
import time
import warnings

import torch

# torch.nn.Transformer warns that pre-norm layers cannot use nested tensors.
warnings.filterwarnings("ignore", message="enable_nested_tensor is True")


class Reference(torch.nn.Module):
    def __init__(self, hp, vocab_size: int, length: int):
        super().__init__()
        self.hidden = hp.hidden_size
        self.embedding = torch.nn.Embedding(vocab_size, hp.hidden_size)
        torch.nn.init.normal_(self.embedding.weight, std=hp.hidden_size**-0.5)
        self.transformer = torch.nn.Transformer(
            d_model=hp.hidden_size,
            nhead=hp.num_heads,
            num_encoder_layers=hp.encoder_layers,
            num_decoder_layers=hp.decoder_layers,
            dim_feedforward=hp.filter_size,
            dropout=hp.layer_prepostprocess_dropout,
            activation="relu",
            batch_first=True,
            norm_first=hp.norm_position == "pre",
        )
        position = torch.arange(length, dtype=torch.float32)[:, None]  # [L, 1]
        rates = torch.exp(
            -math.log(10000.0) * torch.arange(hp.hidden_size // 2) / (hp.hidden_size // 2 - 1)
        )  # [C/2]
        signal = torch.cat([torch.sin(position * rates), torch.cos(position * rates)], 1)
        self.register_buffer("signal", signal)  # [L, C]
        self.register_buffer("causal", torch.nn.Transformer.generate_square_subsequent_mask(length))

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        scale = self.hidden**0.5
        source = self.embedding(inputs) * scale + self.signal  # [B, S, C]
        shifted = torch.nn.functional.pad(targets[:, :-1], (1, 0))  # [B, T]
        target = self.embedding(shifted) * scale + self.signal  # [B, T, C]
        out = self.transformer(source, target, tgt_mask=self.causal, tgt_is_causal=True)
        return out @ self.embedding.weight.T  # [B, T, V]


def tokens_per_second(
    hp, vocab_size: int, rows: int, length: int, steps: int, warmup: int, repeats: int
) -> tuple[float, list[float], int]:
    """Median non-pad target tokens/s of full training steps on a fixed random batch,
    the repeats, and the parameter count (torch's layers have biases; t2t's do not)."""
    torch.manual_seed(1)
    model = Reference(hp, vocab_size, length)
    model.train()
    optimizer = torch.optim.Adam(
        model.parameters(),
        lr=1e-4,
        betas=(hp.optimizer_adam_beta1, hp.optimizer_adam_beta2),
        eps=hp.optimizer_adam_epsilon,
    )
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=hp.label_smoothing)
    inputs = torch.randint(2, vocab_size, (rows, length))
    targets = torch.randint(2, vocab_size, (rows, length))

    def step():
        optimizer.zero_grad(set_to_none=True)
        logits = model(inputs, targets)
        loss = loss_fn(logits.reshape(-1, vocab_size), targets.reshape(-1))  # [B*T, V]
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(warmup):
        step()
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        rates.append(rows * length * steps / (time.perf_counter() - start))
    rates_sorted = sorted(rates)
    parameters = sum(p.numel() for p in model.parameters())
    return rates_sorted[len(rates) // 2], rates, parameters
