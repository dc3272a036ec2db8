"""A results store written through the store's own API with rows shaped as the suites write them (S-NIAH,
LongBench, long-context perplexity, lm, efficiency; a failed unit; a hostile prediction), at any scale: the
viewer's tests use a small one, benchmarks/viewer_scale.py the paper's full evaluation of two models."""

from __future__ import annotations

import math
import random
from pathlib import Path

from ccq_eval.store import Store

HOSTILE = "</script><img src=x onerror=\"window.pwned=1\"><b>bold</b> & \u2028 \u202e"
STARTED = "2026-01-01T00:00:00+00:00"
LONGBENCH = ("narrativeqa", "qasper", "multifieldqa_en", "hotpotqa", "2wikimqa", "musique", "gov_report", "qmsum",
             "multi_news", "trec", "triviaqa", "samsum", "lcc", "repobench-p")
LONGPPL = ("govreport", "qmsum", "narrativeqa", "qasper", "codeparrot", "pg19")
LM = ("wikitext", "lambada_openai", "piqa", "hellaswag", "winogrande", "arc_easy", "arc_challenge", "siqa", "boolq")


def _run(store: Store, label: str) -> str:
    return store.writes.begin_run({"label": label, "model_spec": f"ORG/{label}", "weights_sha256": "ab" * 32,
                                   "model_config": {"model_type": "gla"}, "ccq_overrides": {}, "dtype": "bfloat16",
                                   "device": "cuda", "batch_size": 1, "seeds": {"seed": 0}, "command_line": f"ccq-eval --model ORG/{label}",
                                   "versions": {"torch": "2.13.0", "checkpoint": f"ORG/{label}@{'c' * 40}",
                                                "machine": {"threads": {"torch": 16}}}})


def _unit(store, run, label, suite, task, length, metrics, samples, status="complete", reason=None, fingerprint=None):
    metric_rows = [{"label": label, "model": label, "metric": name, "value": value, "n": len(samples) or 1,
                    "higher_is_better": higher, "is_primary": primary} for name, value, higher, primary in metrics]
    store.writes.write_unit({"run_id": run, "suite": suite, "task": task, "context_length": length,
                             "unit_key": f"{label}/{suite}/{task}/{length}", "status": status, "reason": reason,
                             "started": STARTED, "finished": STARTED, "settings": {"haystack": None},
                             "dataset_fingerprint": fingerprint},
                            metric_rows if status == "complete" else [], samples if status == "complete" else [])


def sniah_prompts(rng: random.Random, n: int) -> list[dict]:
    """n S-NIAH sample rows (prompt hash, expected value, needle depth and key), answered by build_store."""
    out = []
    for i in range(n):
        value = str(rng.randrange(10 ** 6, 10 ** 7))
        out.append({"idx": i, "prompt_sha256": f"p{value}-{i}", "target": value,
                    "fields": {"depth": float(i * 37 % 100), "depth_used": float(i * 37 % 100), "key": f"key-{i}",
                               "prompt_tokens": 900}})
    return out


FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "


def freeze_prompts(task: str, length: int, rows: list[dict]) -> str:
    """The unit's prompts frozen in the data cache ($CCQ_EVAL_CACHE) as the S-NIAH generator freezes them (the
    needle at its depth in a haystack of about 4 characters per token); returns their content hash."""
    from ccq_eval.data.cache import cache_root, freeze
    from ccq_eval.suites.sniah.data import NEEDLE

    records = []
    for row in rows:
        haystack = FILLER * max(1, length * 4 // len(FILLER))
        cut = int(len(haystack) * row["fields"]["depth"] / 100)
        needle = NEEDLE.format(type_plural="numbers", key=row["fields"]["key"], value=row["target"])
        records.append({"index": row["idx"], "input": haystack[:cut] + needle + " " + haystack[cut:],
                        "outputs": [row["target"]], "key": row["fields"]["key"], "depth": row["fields"]["depth"]})
    return freeze(cache_root() / "sniah" / f"{task}-L{length}-n{len(rows)}-report.jsonl", records, {"task": task})


def build_store(path: Path, labels=("gla", "ccq-gla"), sniah_tasks=("sniah_1", "sniah_2"), lengths=(1024, 2048),
                samples: int = 20, longbench_tasks=LONGBENCH[:2], longbench_samples: int = 5,
                longppl_corpora=LONGPPL[:2], longppl_lengths=(4096, 6144), documents: int = 4,
                lm_tasks=LM[:3], hostile: bool = True, failed: bool = True, frozen: bool = False) -> Store:
    """``frozen``: freeze the S-NIAH prompts in the data cache too (the report shows each needle in context)."""
    store = Store(path)
    for rank, label in enumerate(labels):
        rng = random.Random(rank)
        run = _run(store, label)
        for task in sniah_tasks:
            for length in lengths:
                rows = sniah_prompts(random.Random(f"{task}{length}"), samples)
                fingerprint = freeze_prompts(task, length, rows) if frozen else None
                for row in rows:  # this model's answers to them
                    right = rng.random() < 0.9 - 0.3 * rank
                    row["prediction"] = row["target"] if right else f"{rng.randrange(10 ** 6, 10 ** 7)}. The special magic"
                    row["score"] = 100.0 if right else 0.0
                    row["fields"] = {**row["fields"], "answer_nll": rng.random() * (0.1 if right else 8)}
                if hostile and rank == 0:
                    rows[0]["prediction"], rows[0]["score"] = HOSTILE, 0.0
                score = sum(r["score"] for r in rows) / len(rows)
                _unit(store, run, label, "sniah", task, length,
                      [("score", score, True, True), ("correct", float(sum(r["score"] > 0 for r in rows)), True, False)],
                      rows, fingerprint=fingerprint)
        for task in longbench_tasks:
            rows = [{"idx": i, "prompt_sha256": f"lb-{task}-{i}", "target": f"answer {i}", "prediction": f"pred {i} " * 20,
                     "score": rng.random() * 100, "fields": {"id": f"id{i}", "prompt_tokens": 15000, "truncated_tokens": 0}}
                    for i in range(longbench_samples)]
            _unit(store, run, label, "longbench", f"longbench_{task}", 16384,
                  [("score", sum(r["score"] for r in rows) / len(rows), True, True)], rows)
        for corpus in longppl_corpora:
            for length in longppl_lengths:
                rows = []
                for i in range(documents):
                    nll = length * (2.0 + 0.1 * rank + 0.2 * rng.random())
                    rows.append({"idx": i, "prompt_sha256": f"doc-{corpus}-{length}-{i}", "target": corpus,
                                 "score": math.exp(nll / length), "fields": {"nll_sum": nll, "tokens": length}})
                ppl = math.exp(sum(r["fields"]["nll_sum"] for r in rows) / (length * documents))
                _unit(store, run, label, "longppl", f"longppl_{corpus}", length, [("perplexity", ppl, False, True)], rows)
        for task in lm_tasks:
            _unit(store, run, label, "lm", task, 2048, [("acc", 0.5 + 0.01 * rank, True, True)], [])
        if failed:
            _unit(store, run, label, "sniah", "sniah_3", 8192, [], [], status="failed",
                  reason=f"prompt would be cut: {HOSTILE}")
        store.writes.finish_run(run, "complete")
    return store
