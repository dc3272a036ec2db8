"""`make demo`: until the trained zoo ships, a CPU check of the models the suites evaluate —
the CCQ operator against its float64 reference, and every model family running forward and cached
decoding on the torch CPU backend."""

from __future__ import annotations

import time
import warnings

import torch


def main() -> None:
    warnings.filterwarnings("ignore")
    from transformers import AutoConfig, AutoModelForCausalLM

    from ccq_eval.models import contract_query, install_cpu_backend, naive_contract_query

    install_cpu_backend()
    torch.manual_seed(0)
    q, k, lam = torch.randn(1, 512, 2, 16), torch.randn(1, 512, 2, 16) + 10, torch.rand(1, 512, 2)
    out, _ = contract_query(q, k, lam)
    ref = naive_contract_query(q, k, lam)
    rel = ((out.double() - ref).norm(dim=-1) / ref.norm(dim=-1)).max().item()
    print(f"CCQ operator, fp32 chunked vs float64 reference (keys ~ N(10, 1), T=512): max rel err {rel:.1e}")

    tiny = dict(hidden_size=128, num_hidden_layers=2, num_heads=2, vocab_size=256)
    print(f"{'family':<20}{'fwd 2K s':>10}{'cached decode == full forward':>32}")
    for kind, extra in (("gla", {}), ("ccq_gla", {}), ("gated_deltanet", {"head_dim": 64}),
                        ("ccq_gated_deltanet", {"head_dim": 64}), ("transformer", {})):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(kind, **tiny, **extra)).eval()
        x = torch.randint(0, 256, (1, 2048))
        with torch.no_grad():
            start = time.perf_counter()
            full = model(x).logits
            elapsed = time.perf_counter() - start
            step = model(x[:, :2000], use_cache=True)
            cache, logits = step.past_key_values, [step.logits]
            for t in range(2000, 2048):
                step = model(x[:, t : t + 1], past_key_values=cache, use_cache=True)
                cache = step.past_key_values
                logits.append(step.logits)
        err = (torch.cat(logits, 1) - full).abs().max().item()
        print(f"{kind:<20}{elapsed:>10.2f}{f'max |diff| {err:.1e}':>32}")
    print("Next: evaluate a checkpoint with `ccq-eval --model CKPT --suite sniah|longppl|longbench|lm|all` "
          "(see README); the trained tiny zoo for an offline end-to-end demo is being built (`ccq-eval zoo build`).")


if __name__ == "__main__":
    main()
