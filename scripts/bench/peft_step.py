"""PEFT + torch's LoRA training step, the peer of Hearth's training bench (peers.ts starts it).

The same shape as Hearth's step (scripts/bench/train.ts): a model built from the shape's
config.json with random weights, LoRA rank r on all seven projections (q, k, v, o, gate, up,
down), alpha 2r, no dropout, one sequence of T tokens, the causal-LM loss, AdamW on the
adapters. One warm-up step, then the median of the timed steps (CUDA synchronised around each).

    python3 scripts/bench/peft_step.py --config '<config.json as JSON>' --tokens 2048 --rank 16 \
        --dtype float32|bfloat16 --steps 3 [--layers N] [--device cuda|cpu]

Prints one JSON line: {device, dtype, step_ms, tokens_per_second, peak_bytes, torch, transformers, peft}.
Needs torch, transformers and peft (the GPU machine's Python has them); npm test never runs it.
"""

import argparse
import json
import statistics
import time

import peft
import torch
import transformers
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

FAMILIES = {
    "LlamaForCausalLM": (LlamaConfig, LlamaForCausalLM),
    "Qwen2ForCausalLM": (Qwen2Config, Qwen2ForCausalLM),
}
MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--layers", type=int)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = p.parse_args()

    hf = json.loads(a.config)
    config_cls, model_cls = FAMILIES[hf["architectures"][0]]
    fields = {k: v for k, v in hf.items() if k not in ("architectures", "torch_dtype")}
    if a.layers:
        fields["num_hidden_layers"] = min(a.layers, fields["num_hidden_layers"])
    config = config_cls(**fields)
    dtype = getattr(torch, a.dtype)
    torch.manual_seed(0)
    model = model_cls(config).to(device=a.device, dtype=dtype)
    model = get_peft_model(
        model, LoraConfig(r=a.rank, lora_alpha=2 * a.rank, lora_dropout=0.0, target_modules=MODULES, task_type="CAUSAL_LM")
    )
    optimizer = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=1e-4, betas=(0.9, 0.99), eps=1e-8)
    ids = torch.randint(0, config.vocab_size, (1, a.tokens), device=a.device)
    cuda = a.device.startswith("cuda")

    def step() -> float:
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_([q for q in model.parameters() if q.requires_grad], 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1000

    step()  # warm-up: kernel selection, allocator
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    times = [step() for _ in range(a.steps)]
    step_ms = statistics.median(times)
    print(
        json.dumps(
            {
                "device": torch.cuda.get_device_name() if cuda else "cpu",
                "dtype": a.dtype,
                "layers": config.num_hidden_layers,
                "step_ms": step_ms,
                "tokens_per_second": a.tokens / (step_ms / 1000),
                "peak_bytes": torch.cuda.max_memory_allocated() if cuda else None,
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "peft": peft.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
