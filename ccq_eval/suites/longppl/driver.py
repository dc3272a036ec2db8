"""The long-context perplexity suite's driver. Default engine "one-pass": one forward per sequence at
L_max (chunked, cache carried) gives every length from prefix sums of the per-token NLL. Engine
"lm-eval": lm-eval's loglikelihood_rolling on the sequences truncated to each length, through the
tasks/longppl plugins (the cross-check; it evaluates every length separately)."""

from __future__ import annotations

from ccq_eval.data.cache import load_or_build, stable_hash
from ccq_eval.lm.harness import evaluate, plugin_config, with_records, without_samples
from ccq_eval.suites.longppl import corpora as longppl
from ccq_eval.suites.longppl.perplexity import bucket_sums, check_finite, perplexity, prefix_nll_sums, sequence_nll
from ccq_eval.suites.outcomes import Metric, Sample, UnitOutcome, failure, mean_metric

BUCKET = 1024  # tokens per position bucket in the per-position view
CHUNK = 2048  # tokens per forward chunk in the one-pass engine


class LongpplDriver:
    def __init__(self, plan):
        self.plan = plan
        self.selections: dict[str, longppl.Selection] = {}

    def corpus(self, task: str) -> str:
        return self.plan.suite.short(task)

    def check_inputs(self) -> None:
        plan = self.plan
        self.engine = plan.options["engine"]
        self.l_max = max(plan.lengths)
        longppl.check_available([self.corpus(t) for t in plan.tasks], plan.request.data_dir)
        for task in plan.tasks:  # malformed files fail here, before the model loads
            longppl.read_documents(longppl.local_path(self.corpus(task), plan.request.data_dir))

    def max_length(self) -> int:
        return self.l_max

    def check_with_tokenizer(self) -> None:
        plan = self.plan
        for task in plan.tasks:
            corpus = self.corpus(task)
            self.selections[task] = longppl.select(corpus, longppl.local_path(corpus, plan.request.data_dir),
                                                   plan.evaluand.tokenizer, self.l_max, plan.samples)

    def unit_settings(self, task: str, length: int) -> tuple[dict, dict]:
        selection = self.selections[task]
        settings = {"engine": self.engine, "l_max": self.l_max, "max_length": self.l_max,
                    "selection": selection.record(), "definition": "exp(sum NLL / scored tokens), BOS context",
                    "task_version": longppl.SELECTION_VERSION}
        return settings, {"corpus": self.corpus(task), "fingerprint": selection.fingerprint}

    def run_units(self, units):
        task = units[0].task
        try:
            per_length = (self._one_pass(task, units) if self.engine == "one-pass" else self._lm_eval(task, units))
        except Exception as exc:  # noqa: BLE001 - the corpus's units fail together, with the reason
            for unit in units:
                yield unit, failure(exc)
            return
        yield from per_length

    def _one_pass(self, task: str, units):
        from tqdm import tqdm

        plan = self.plan
        if plan.evaluand.lm.rank != 0:
            return []  # one process scores the sequences; other data-parallel ranks have nothing to add
        selection = self.selections[task]
        lengths = [u.context_length for u in units]
        model = plan.evaluand.lm.model
        sums = {L: [] for L in lengths}
        buckets = []
        for ids, name in tqdm(list(zip(selection.sequences, selection.names)), desc=f"{task} one pass",
                              disable=None, leave=False):
            nll = sequence_nll(model, ids[: max(lengths) + 1], CHUNK)
            check_finite(nll, f"{task} {name}")
            for L, total in prefix_nll_sums(nll, lengths).items():
                sums[L].append(total)
            buckets.append(bucket_sums(nll, BUCKET))
        return [(unit, self._outcome(unit, sums[unit.context_length],
                                     buckets if unit.context_length == max(lengths) else None))
                for unit in units]

    def _lm_eval(self, task: str, units):
        plan = self.plan
        results = []
        selection = self.selections[task]
        for unit in units:  # each length's documents built once, frozen, handed to lm-eval in process
            key = longppl.lm_eval_docs_key(selection, unit.context_length)
            docs = load_or_build(longppl.lm_eval_docs_path(key), key, lambda: longppl.lm_eval_docs(
                selection, plan.evaluand.tokenizer, unit.context_length))[0]
            out = evaluate(plan.evaluand.lm, with_records(plugin_config(task), docs), plan.request.seed, self.l_max)
            if out is None:  # a data-parallel rank other than 0
                continue
            logged = sorted(out["samples"][task], key=lambda e: e["doc_id"])
            nll_sums = [-float(e["resps"][0][0]) if isinstance(e["resps"][0], list) else -float(e["resps"][0])
                        for e in logged]
            results.append((unit, self._outcome(unit, nll_sums, None, raw=without_samples(out))))
        return results

    def _outcome(self, unit, nll_sums: list[float], buckets, raw=None) -> UnitOutcome:
        selection = self.selections[unit.task]
        L = unit.context_length
        tokens = L * len(nll_sums)
        total = sum(nll_sums)
        ppl = perplexity(total, tokens)
        n = len(nll_sums)
        metrics = [Metric("perplexity", ppl, n=n, higher_is_better=False, is_primary=True),
                   Metric("nll_sum", total, n=n, higher_is_better=False),
                   Metric("tokens", float(tokens), n=n, higher_is_better=False)]
        if n > 1:  # every sequence has L tokens: log ppl is the mean of per-sequence means
            metrics.append(mean_metric("nll_per_token", [value / L for value in nll_sums], higher_is_better=False))
        samples = []
        for index, (value, name) in enumerate(zip(nll_sums, selection.names)):
            fields = {"nll_sum": value, "tokens": L, "source": name}
            if buckets is not None:
                fields["bucket_nll"] = buckets[index]
                fields["bucket_tokens"] = BUCKET
            samples.append(Sample(index, perplexity(value, L), target=name,
                                  prompt_sha256=stable_hash(selection.sequences[index][: L + 1]), fields=fields))
        return UnitOutcome(status="complete", metrics=metrics, samples=samples, fingerprint=selection.fingerprint,
                           settings={"n_sequences": len(nll_sums)}, raw=raw)
