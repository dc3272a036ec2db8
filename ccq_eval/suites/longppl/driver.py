"""The long-context perplexity suite's driver. Default engine "one-pass": one forward per sequence at
L_max (chunked, cache carried) gives every length from prefix sums of the per-token NLL. Engine
"lm-eval": lm-eval's loglikelihood_rolling on the sequences truncated to each length, through the
tasks/longppl plugins as stock lm-eval runs them, each building its documents from the metadata (the cross-check; it
evaluates every length separately). A measurement, not a scored
output: it overrides run_units rather than the three stages, and `ccq-eval rescore` refuses it."""

from __future__ import annotations

from ccq_eval.data.cache import stable_hash
from ccq_eval.lm.harness import evaluate, without_samples
from ccq_eval.suites.driver import Driver
from ccq_eval.suites.longppl import corpora as longppl
from ccq_eval.suites.longppl.perplexity import bucket_sums, check_finite, perplexity, prefix_nll_sums, sequence_nll
from ccq_eval.suites.outcomes import Metric, Sample, UnitOutcome, failure, mean_metric

BUCKET = 1024  # tokens per position bucket in the per-position view
CHUNK = 2048  # tokens per forward chunk in the one-pass engine


class LongpplDriver(Driver):
    def __init__(self, inputs):
        super().__init__(inputs)
        self._selections: dict[tuple[str, int], longppl.Selection] = {}  # (task, tokenizer) -> its documents

    def corpus(self, task: str) -> str:
        return self.inputs.suite.short(task)

    @property
    def engine(self) -> str:
        return self.inputs.options["engine"]

    @property
    def l_max(self) -> int:
        return self.max_length()

    @property
    def model_calls(self) -> str:
        return "perplexity chunks with the cache" if self.engine == "one-pass" else "log-likelihoods"

    def exercise(self, model, length: int, batch: int) -> None:
        """One-pass: a sequence in chunks, the second continuing the first's cache (sequence_nll); lm-eval: its HF
        model's forward without a cache over a batch of windows."""
        from ccq_eval.generation.exercise import forward_without_cache, random_prompts

        if self.engine == "one-pass":
            sequence_nll(model, random_prompts(model, min(length, 2 * CHUNK) + 1, 1)[0], CHUNK)
        else:
            forward_without_cache(model, length, batch)

    def check_inputs(self) -> None:
        inputs = self.inputs
        longppl.check_available([self.corpus(t) for t in inputs.tasks], inputs.data_dir)
        for task in inputs.tasks:  # malformed files fail here, before the model loads
            longppl.read_documents(longppl.local_path(self.corpus(task), inputs.data_dir))

    def selection(self, task: str, tokenizer) -> longppl.Selection:
        """The corpus's documents long enough for L_max under this tokenizer (chosen once per task and tokenizer)."""
        if (task, id(tokenizer)) not in self._selections:
            corpus = self.corpus(task)
            self._selections[(task, id(tokenizer))] = longppl.select(
                corpus, longppl.local_path(corpus, self.inputs.data_dir), tokenizer, self.l_max, self.inputs.samples)
        return self._selections[(task, id(tokenizer))]

    def check_with_tokenizer(self, tokenizer) -> None:
        for task in self.inputs.tasks:
            self.selection(task, tokenizer)

    def unit_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        selection = self.selection(task, model.tokenizer)
        settings = {"engine": self.engine, "l_max": self.l_max, "max_length": self.l_max,
                    "selection": selection.record(), "definition": "exp(sum NLL / scored tokens), BOS context",
                    "task_version": longppl.SELECTION_VERSION}
        return settings, {"corpus": self.corpus(task), "fingerprint": selection.fingerprint}

    def run_units(self, units, model):
        task = units[0].task
        try:
            per_length = (self._one_pass(task, units, model) if self.engine == "one-pass"
                          else self._lm_eval(task, units, model))
        except Exception as exc:  # noqa: BLE001 - the corpus's units fail together, with the reason
            for unit in units:
                yield unit, failure(exc)
            return
        yield from per_length

    def _one_pass(self, task: str, units, evaluand):
        from tqdm import tqdm

        if evaluand.ranks.rank != 0:
            return []  # one process scores the sequences; other data-parallel ranks have nothing to add
        selection = self.selection(task, evaluand.tokenizer)
        lengths = [u.context_length for u in units]
        model = evaluand.model
        sums = {L: [] for L in lengths}
        buckets = []
        for ids, name in tqdm(list(zip(selection.sequences, selection.names)), desc=f"{task} one pass",
                              disable=None, leave=False):
            nll = sequence_nll(model, ids[: max(lengths) + 1], CHUNK)
            check_finite(nll, f"{task} {name}")
            for L, total in prefix_nll_sums(nll, lengths).items():
                sums[L].append(total)
            buckets.append(bucket_sums(nll, BUCKET))
        return [(unit, self._outcome(unit, selection, sums[unit.context_length],
                                     buckets if unit.context_length == max(lengths) else None))
                for unit in units]

    def _lm_eval(self, task: str, units, evaluand):
        results = []
        selection = self.selection(task, evaluand.tokenizer)
        for unit in units:  # one length at a time; the plugin selects and cuts the same documents from the metadata
            metadata = {"tokenizer": evaluand.tokenizer_path, "max_seq_lengths": [unit.context_length],
                        "num_samples": self.inputs.samples, "l_max": self.l_max, "data_dir": self.inputs.data_dir or "",
                        "max_length": self.l_max}
            out = evaluate(evaluand.lm, task, self.inputs.seed, self.l_max, metadata=metadata)
            if out is None:  # a data-parallel rank other than 0
                continue
            logged = sorted(out["samples"][task], key=lambda e: e["doc_id"])
            if len(logged) != len(selection.sequences):
                raise RuntimeError(f"lm-eval scored {len(logged)} {task} documents; the selection holds "
                                   f"{len(selection.sequences)}")
            nll_sums = [-float(e["resps"][0][0]) if isinstance(e["resps"][0], list) else -float(e["resps"][0])
                        for e in logged]
            results.append((unit, self._outcome(unit, selection, nll_sums, None, raw=without_samples(out))))
        return results

    def _outcome(self, unit, selection, nll_sums: list[float], buckets, raw=None) -> UnitOutcome:
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
