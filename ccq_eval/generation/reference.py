"""The slow reference for engine.py: one request at a time, each token from a full forward over the prompt and
everything generated so far (no cache, no batch, no padding), under the same stop rule."""

from __future__ import annotations

import torch

from ccq_eval.generation.request import Request, Result, StopRule, greedy


def generate_one(model, tokenizer, request: Request) -> tuple[Result, list[torch.Tensor]]:
    """The request's result and the next-token logits behind each generated token (to tell a tie from a fault)."""
    rule, result, history = StopRule(request, tokenizer), Result(), []
    ids = list(request.prompt)
    with torch.no_grad():
        if request.score:
            full = torch.tensor([ids + list(request.score)], device=model.device)
            logits = model(full).logits[0, len(ids) - 1: -1].double()
            logp = torch.log_softmax(logits, dim=-1)[torch.arange(len(request.score)), torch.tensor(request.score)]
            result.continuation_nll = -float(logp.mean())
        while True:
            logits = model(torch.tensor([ids], device=model.device)).logits[0, -1]
            history.append(logits)
            (token,) = greedy(logits[None], [rule.banned(len(result.tokens))])
            ids.append(token)
            result.tokens.append(token)
            if rule.done(result):
                return result, history
