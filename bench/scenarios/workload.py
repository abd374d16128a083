"""A real workload: the tensors each aten kernel of a transformer decode step touches.

``decode_step_ops`` builds a stack of ``torch.nn.TransformerDecoderLayer`` (eval mode,
float32, on the CPU or the given device), runs one decode step (one new token attending to itself and to an
encoder memory) under a ``TorchDispatchMode`` and records, for every aten op that
launches a kernel, the tensors it reads and writes: weights, biases, activations and
outputs. Ops that only make a view (``OpOverload.is_view``) launch nothing and are
left out. This is the list a kernel-launch library bridges, op by op, each step.
``Step.run`` is the step itself, for timing what the bridging is a share of.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class Step:
    """One decode step's kernel launches.

    ``ops``: one tuple of tensors per launched aten op (inputs then outputs, strided
    tensors with storage only); ``names``: the aten op of each; ``config``: the model's
    shape (layers, d_model, heads, ffn width, memory length); ``dropped``: tensors left
    out because the bridge cannot view them (counted, with the reason); ``run``: one
    real decode step of the same model on the same inputs (``torch.no_grad()``, no
    capture; on a GPU it synchronises at the end), so a benchmark can time a step
    beside the bridging of its tensors.
    """

    ops: list
    names: list
    config: dict
    dropped: dict
    run: Callable[[], object]


def decode_step_ops(torch, bridge, layers=6, d_model=512, nhead=8, dim_ff=2048,
                    memory_len=64, seed=0, device="cpu") -> Step:
    """Capture the kernel launches of one decode step; see the module docstring."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    torch.manual_seed(seed)
    layer = torch.nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=dim_ff,
                                             batch_first=True)
    model = torch.nn.TransformerDecoder(layer, num_layers=layers).eval().to(device)
    tgt = torch.randn(1, 1, d_model, device=device)
    memory = torch.randn(1, memory_len, d_model, device=device)
    ops, names = [], []

    class Capture(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not getattr(func, "is_view", False):
                flat, _ = tree_flatten((args, kwargs or {}, out))
                tensors = tuple(x for x in flat if isinstance(x, torch.Tensor))
                if tensors:
                    ops.append(tensors)
                    names.append(str(func))
            return out

    with torch.no_grad(), Capture():
        model(tgt, memory)
    dropped = {}
    kept_ops, kept_names = [], []
    for op, name in zip(ops, names):
        kept = []
        for t in op:
            try:
                bridge.view_fallback(t) if bridge.available_paths()["fallback"].available \
                    else bridge.view(t)
                kept.append(t)
            except (BufferError, TypeError) as exc:
                key = f"{type(exc).__name__}: {exc}"
                dropped[key] = dropped.get(key, 0) + 1
        if kept:
            kept_ops.append(tuple(kept))
            kept_names.append(name)
    config = {"model": "torch.nn.TransformerDecoder(TransformerDecoderLayer, batch_first)",
              "layers": layers, "d_model": d_model, "nhead": nhead,
              "dim_feedforward": dim_ff, "memory_len": memory_len, "new_tokens": 1,
              "dtype": "float32", "device": str(torch.device(device)),
              "params": sum(p.numel() for p in model.parameters())}
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)

    def run():
        with torch.no_grad():
            out = model(tgt, memory)
        sync()  # on a GPU, the step is done when its kernels are, not when they are queued
        return out

    return Step(kept_ops, kept_names, config, dropped, run)
