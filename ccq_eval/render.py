"""Tables and figures as pure functions of the store: store -> tidy DataFrame -> table / figure.

Where a label has several complete units for one cell (reruns, other runs), the latest one counts.
Failed units never reach a table: they show as missing cells.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ccq_eval.store import Store
from ccq_eval.suites import SUITES, format_length

FORMATS = ("csv", "latex", "md")
EXTENSIONS = {"csv": "csv", "latex": "tex", "md": "md"}
TABLES = ("lm", "sniah", "sniah-partial", "longppl", "longbench", "seeds")
# lm table: column -> (task, metric); accuracies are x100 in the store
LM_COLUMNS = {"Wiki ppl": ("wikitext", "word_perplexity"), "LMB ppl": ("lambada_openai", "perplexity"),
              "LMB acc": ("lambada_openai", "acc"), "PIQA": ("piqa", "acc"), "Hella": ("hellaswag", "acc_norm"),
              "Wino": ("winogrande", "acc"), "ARC-e": ("arc_easy", "acc"), "ARC-c": ("arc_challenge", "acc_norm"),
              "SIQA": ("social_iqa", "acc"), "BoolQ": ("boolq", "acc")}
LM_ACCURACIES = ("lambada_openai", "piqa", "hellaswag", "winogrande", "arc_easy", "arc_challenge", "social_iqa", "boolq")
LOWER_IS_BETTER_COLUMNS = ("Wiki ppl", "LMB ppl")
REPORTED = " (reported)"
FIGURES = ("longppl", "sniah-depth")
TRAINING_LENGTH_KEYS = ("training_context_length", "train_context_length")
MAX_LENGTH_COLUMNS = 5  # per corpus in the longppl table; the curves show every length


def metrics_frame(store: Store) -> pd.DataFrame:
    """Every metric row of a complete unit, the latest unit per (label, suite, task, length, metric)."""
    frame = store.frame(
        "SELECT m.label, m.model, m.suite, m.task, m.context_length, m.metric, m.value, m.stderr, m.n, "
        "m.higher_is_better, m.is_primary, u.id AS unit_id, u.finished, u.settings "
        "FROM metrics m JOIN units u ON u.id = m.unit_id WHERE u.status = 'complete'")
    if frame.empty:
        return frame
    frame = frame.sort_values(["finished", "unit_id"])
    return frame.groupby(["label", "suite", "task", "context_length", "metric"], as_index=False).last()


def wilson_interval(successes: float, n: int) -> tuple[float, float]:
    """95% Wilson score interval for a proportion, in percent (stays inside [0, 100] at 0% and 100%)."""
    from scipy.stats import binomtest

    if not n:
        return (math.nan, math.nan)
    interval = binomtest(int(round(successes)), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return (100 * interval.low, 100 * interval.high)


def _haystack_of(settings: str) -> str | None:
    haystack = json.loads(settings).get("haystack")
    return haystack["name"] if haystack else None


def sniah_table(frame: pd.DataFrame, metric: str = "score") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(values, ci_low, ci_high): rows = labels, columns = S1/S2/S3 x lengths in the paper's order.
    S-NIAH-2/3 columns carry their haystack's name: numbers on another haystack are not the paper's.
    The Wilson bounds apply to the score (a proportion) only."""
    suite = SUITES["sniah"]
    rows = frame[(frame.suite == "sniah") & (frame.metric == metric)].copy()
    if rows.empty:
        return (pd.DataFrame(),) * 3
    rows["haystack"] = rows.settings.map(_haystack_of)
    rows["column"] = [
        f"{suite.display[t]}{f' ({h})' if isinstance(h, str) else ''} {format_length(L)}"
        for t, h, L in zip(rows.task, rows.haystack, rows.context_length)
    ]
    rows["order"] = [(suite.tasks.index(t), h if isinstance(h, str) else "", L) for t, h, L in zip(rows.task, rows.haystack, rows.context_length)]
    columns = [c for _, c in sorted(set(zip(rows.order, rows.column)))]
    bounds = ([wilson_interval(v / 100 * n, int(n)) for v, n in zip(rows.value, rows.n)] if metric == "score"
              else [(math.nan, math.nan)] * len(rows))
    rows["low"], rows["high"] = [b[0] for b in bounds], [b[1] for b in bounds]

    def pivot(field):
        return rows.pivot(index="label", columns="column", values=field).reindex(columns=columns)

    return pivot("value"), pivot("low"), pivot("high")


def sniah_partial_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The secondary S-NIAH view: for each cell, the share of the answer reproduced from its start
    (%, higher is better) and the answer's teacher-forced NLL per token (lower is better)."""
    prefix, nll = sniah_table(frame, "answer_prefix")[0], sniah_table(frame, "answer_nll")[0]
    if prefix.empty:
        return pd.DataFrame()
    parts = {}
    for column in prefix.columns:
        parts[f"{column} prefix %"] = prefix[column] * 100
        if column in nll.columns:
            parts[f"{column} NLL"] = nll[column]
    return pd.DataFrame(parts)


SEED_SUFFIX = r"-s\d+$"  # NAME, NAME-s1, NAME-s2: one model trained with three seeds (the zoo's naming)
# what the seeds table summarises: (suite, metric) -> column suffix, higher is better
SEED_METRICS = {("sniah", "score"): ("acc", True), ("sniah", "answer_nll"): ("answer NLL", False),
                ("longppl", "perplexity"): ("ppl", False)}


def seeds_table(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(mean, sample standard deviation, seed count) over the seeds of every model trained with more
    than one (labels NAME and NAME-s<k>); rows = models, columns = S-NIAH accuracy and answer NLL and
    long-context perplexity per task and length. Run-to-run spread is what a one-seed table hides."""
    keep = [(s, m) in SEED_METRICS for s, m in zip(frame.suite, frame.metric)]
    rows = frame[keep].copy()
    if rows.empty:
        return (pd.DataFrame(),) * 3
    rows["model"] = rows.label.str.replace(SEED_SUFFIX, "", regex=True)
    seeds = rows.groupby("model").label.nunique()
    rows = rows[rows.model.isin(seeds[seeds > 1].index)]
    if rows.empty:
        return (pd.DataFrame(),) * 3
    rows["column"] = [f"{SUITES[s].display[t]} {format_length(L)} {SEED_METRICS[(s, m)][0]}"
                      for s, t, L, m in zip(rows.suite, rows.task, rows.context_length, rows.metric)]
    rows["order"] = [(list(SUITES).index(s), list(SEED_METRICS).index((s, m)), SUITES[s].all_tasks.index(t), L)
                     for s, t, L, m in zip(rows.suite, rows.task, rows.context_length, rows.metric)]
    columns = [c for _, c in sorted(set(zip(rows.order, rows.column)))]
    stats = rows.groupby(["model", "column"]).value.agg(["mean", "std", "count"])
    mean, std, count = (stats[f].unstack("column").reindex(columns=columns) for f in ("mean", "std", "count"))
    return mean, std, count


def _seeds_rendered(frame: pd.DataFrame) -> dict[str, str] | None:
    mean, std, count = seeds_table(frame)
    if mean.empty:
        return None
    cells = pd.DataFrame({c: [f"{m:.2f} ± {s:.2f}" if not pd.isna(m) else "" for m, s in zip(mean[c], std[c])]
                          for c in mean.columns}, index=mean.index)
    names = {m: f"{m} ({int(count.loc[m].max())} seeds)" for m in mean.index}
    direction = {c: next(h for suffix, h in SEED_METRICS.values() if c.endswith(" " + suffix)) for c in mean.columns}
    long = (pd.concat({"mean": mean.stack(), "std": std.stack(), "seeds": count.stack()}, axis=1)
            .rename_axis(["model", "column"]).reset_index())
    caption = "Mean ± sample standard deviation over seeds (accuracy \\%, answer NLL per token, perplexity)"
    return {"csv": long.to_csv(index=False, float_format="%.4g"),
            "latex": to_latex(mean.rename(index=names), cells.rename(index=names), caption, direction),
            "md": to_markdown(mean.rename(index=names), cells.rename(index=names), direction)}


def _best_mask(values: pd.DataFrame, higher_is_better: bool | dict = True) -> pd.DataFrame:
    """Best value per column; higher_is_better may be one flag or one per column."""
    direction = higher_is_better if isinstance(higher_is_better, dict) else {c: higher_is_better for c in values.columns}
    best = pd.Series({c: (values[c].max() if direction.get(c, True) else values[c].min()) for c in values.columns})
    return values.eq(best) & values.notna()


def _escape_markdown(text: str) -> str:
    return "".join("\\" + ch if ch in "\\|*_`[]<>#" else ch for ch in str(text))


def to_latex(values: pd.DataFrame, cells: pd.DataFrame, caption: str | None = None,
             higher_is_better: bool | dict = True) -> str:
    """pandas Styler: booktabs rules, best value per column in bold, labels and headers escaped."""
    mask = _best_mask(values, higher_is_better).reindex(index=cells.index, columns=cells.columns, fill_value=False)
    cells = cells.rename_axis(index=None, columns=None)
    styler = cells.style.apply(lambda _: mask.replace({True: "textbf:--rwrap;", False: ""}), axis=None)
    styler = styler.format(escape="latex").format_index(escape="latex", axis=0).format_index(escape="latex", axis=1)
    return styler.to_latex(hrules=True, caption=caption, column_format="l" + "r" * len(cells.columns))


def to_markdown(values: pd.DataFrame, cells: pd.DataFrame, higher_is_better: bool | dict = True) -> str:
    mask = _best_mask(values, higher_is_better).reindex(index=cells.index, columns=cells.columns, fill_value=False)
    shown = cells.copy().astype(object)
    for i in range(shown.shape[0]):
        for j in range(shown.shape[1]):
            if mask.iat[i, j]:
                shown.iat[i, j] = f"**{shown.iat[i, j]}**"
    shown.index = [_escape_markdown(x) for x in shown.index]
    shown.columns = [_escape_markdown(x) for x in shown.columns]
    shown.index.name = "label"
    return shown.to_markdown(tablefmt="pipe")


def to_csv(values: pd.DataFrame, low: pd.DataFrame | None, high: pd.DataFrame | None) -> str:
    frame = values.copy()
    if low is not None:
        for column in values.columns:
            frame[f"{column} ci_low"], frame[f"{column} ci_high"] = low[column], high[column]
    frame.index.name = "label"
    return frame.to_csv(float_format="%.4g")


def longppl_interval(mean_nll: float, stderr: float, n: int) -> tuple[float, float]:
    """95% interval for a corpus perplexity: Student's t on the per-sequence mean NLLs, mapped through
    exp (so it is asymmetric, as perplexity is)."""
    from scipy.stats import t

    if not n or n < 2 or stderr is None or pd.isna(stderr):
        return (math.nan, math.nan)
    half = t.ppf(0.975, n - 1) * stderr
    return (math.exp(mean_nll - half), math.exp(mean_nll + half))


def longppl_table(frame: pd.DataFrame, metric: str = "perplexity") -> pd.DataFrame:
    """Rows = labels, columns = corpus x lengths (at most 5 evenly spaced per corpus, ends included).
    metric "ci_low" / "ci_high": the 95% interval bounds in the same layout."""
    if metric in ("ci_low", "ci_high"):
        rows = frame[(frame.suite == "longppl") & (frame.metric == "nll_per_token")].copy()
        bounds = [longppl_interval(v, se, n) for v, se, n in zip(rows.value, rows.stderr, rows.n)]
        rows["value"] = [b[0 if metric == "ci_low" else 1] for b in bounds]
        rows["metric"] = "perplexity"
        layout = longppl_table(frame)
        return longppl_table(rows).reindex(index=layout.index, columns=layout.columns)
    suite = SUITES["longppl"]
    rows = frame[(frame.suite == "longppl") & (frame.metric == metric)].copy()
    if rows.empty:
        return pd.DataFrame()
    columns = []
    for task in suite.all_tasks:
        lengths = sorted(rows[rows.task == task].context_length.unique())
        if len(lengths) > MAX_LENGTH_COLUMNS:
            picks = {round(i * (len(lengths) - 1) / (MAX_LENGTH_COLUMNS - 1)) for i in range(MAX_LENGTH_COLUMNS)}
            lengths = [lengths[i] for i in sorted(picks)]
        columns += [(task, L) for L in lengths]
    rows["column"] = [f"{suite.display[t]} {format_length(L)}" for t, L in zip(rows.task, rows.context_length)]
    names = [f"{suite.display[t]} {format_length(L)}" for t, L in columns]
    return rows.pivot(index="label", columns="column", values="value").reindex(columns=names)


def longbench_table(frame: pd.DataFrame, field: str = "value") -> pd.DataFrame:
    """Rows = labels, columns = the 14 tasks (x budgets when several) + the mean of the 14 cells."""
    suite = SUITES["longbench"]
    rows = frame[(frame.suite == "longbench") & (frame.metric == "score")].copy()
    if rows.empty:
        return pd.DataFrame()
    lengths = sorted(rows.context_length.unique())
    parts = []
    for length in lengths:
        at = rows[rows.context_length == length]
        suffix = f" {format_length(length)}" if len(lengths) > 1 else ""
        names = [suite.display[t] + suffix for t in suite.tasks]
        table = at.assign(column=[suite.display[t] + suffix for t in at.task]).pivot(
            index="label", columns="column", values=field).reindex(columns=names)
        # the mean of the 14 cells; missing while any task is missing
        table[f"Avg{suffix}"] = table[names].mean(axis=1, skipna=False) if field == "value" else float("nan")
        parts.append(table)
    return pd.concat(parts, axis=1)


def lm_table(frame: pd.DataFrame, average: list[str] | None = None, field: str = "value") -> pd.DataFrame:
    """Rows = labels, columns as the GDN paper's table, plus the average of the chosen accuracies
    (default its 8: LAMBADA acc and the 7 commonsense tasks); the header says how many."""
    rows = frame[frame.suite == "lm"]
    if rows.empty:
        return pd.DataFrame()
    table = pd.DataFrame(index=sorted(rows.label.unique()))
    for column, (task, metric) in LM_COLUMNS.items():
        cell = rows[(rows.task == task) & (rows.metric == metric)].set_index("label")[field]
        table[column] = cell
    chosen = list(average or LM_ACCURACIES)
    unknown = [t for t in chosen if t not in LM_ACCURACIES]
    if unknown:
        raise ValueError(f"--average: {', '.join(unknown)} has no accuracy column; choose from {', '.join(LM_ACCURACIES)}")
    columns = [c for c, (task, _) in LM_COLUMNS.items() if task in chosen and c not in LOWER_IS_BETTER_COLUMNS]
    table[f"Avg ({len(columns)})"] = table[columns].mean(axis=1, skipna=False) if field == "value" else float("nan")
    table.index.name = "label"
    return table


def reference_rows(table: str) -> pd.DataFrame:
    """The reported numbers for a table (results/reference/<table>.csv), one row per source and model."""
    import importlib.resources

    path = importlib.resources.files("ccq_eval.reference") / f"{table}.csv"
    if not path.is_file():
        return pd.DataFrame()
    ref = pd.read_csv(path)
    short = ref.source.str.split(",").str[0]
    ref["label"] = ref.model + " [" + short + "]" + REPORTED
    return ref.pivot_table(index="label", columns="column", values="value", sort=False)


def with_reference(values: pd.DataFrame, table: str) -> pd.DataFrame:
    ref = reference_rows(table)
    if ref.empty:
        return values
    if table == "longbench":  # the plain mean of the 14 cells beside the paper's reported average
        ref.insert(14, "Avg", ref[[SUITES["longbench"].display[t] for t in SUITES["longbench"].tasks]].mean(axis=1))
    if table == "lm":  # the mean of the 8 accuracies, as measured rows show it, beside the reported one
        accuracies = [c for c, (task, _) in LM_COLUMNS.items() if task in LM_ACCURACIES and c not in LOWER_IS_BETTER_COLUMNS]
        ref.insert(len(ref.columns) - 1, f"Avg ({len(accuracies)})", ref.reindex(columns=accuracies).mean(axis=1, skipna=False))
    columns = list(values.columns) + [c for c in ref.columns if c not in values.columns]
    return pd.concat([values.reindex(columns=columns), ref.reindex(columns=columns)])


def with_deltas(values: pd.DataFrame, baseline: str, paired: dict | None = None) -> pd.DataFrame:
    """Adds a 'label − baseline' row per measured label, as the paper's text quotes its deltas.
    ``paired[(label, column)] = (delta, half_width)`` adds a 95% interval where samples are shared."""
    if baseline not in values.index:
        raise ValueError(f"--baseline {baseline!r}: no such label in the table; labels: {', '.join(values.index)}")
    deltas = {}
    for label in values.index:
        if label == baseline or label.endswith(REPORTED):
            continue
        deltas[f"{label} − {baseline}"] = values.loc[label] - values.loc[baseline]
    frame = pd.DataFrame(deltas).T.reindex(columns=values.columns)
    return pd.concat([values, frame]) if not frame.empty else values


def sniah_paired_deltas(store: Store, baseline: str) -> dict:
    """(label, column) -> (mean paired difference, 95% half-width) over prompts both rows answered."""
    import numpy as np

    frame = store.frame(
        "SELECT r.label, u.task, u.context_length, u.settings, u.finished, u.id AS unit_id, s.prompt_sha256, s.score "
        "FROM samples s JOIN units u ON u.id = s.unit_id JOIN runs r ON r.id = u.run_id "
        "WHERE u.status = 'complete' AND u.suite = 'sniah'")
    if frame.empty:
        return {}
    latest = frame.sort_values(["finished", "unit_id"]).groupby(["label", "task", "context_length"]).unit_id.last()
    frame = frame[frame.unit_id.isin(set(latest))]
    suite = SUITES["sniah"]
    out = {}
    for (task, length), cell in frame.groupby(["task", "context_length"]):
        hay = _haystack_of(cell.settings.iloc[0])
        column = f"{suite.display[task]}{f' ({hay})' if isinstance(hay, str) else ''} {format_length(length)}"
        base = cell[cell.label == baseline].set_index("prompt_sha256").score
        for label, other in cell[cell.label != baseline].groupby("label"):
            shared = other.set_index("prompt_sha256").score.align(base, join="inner")
            if len(shared[0]) > 1:
                diff = (shared[0] - shared[1]).to_numpy()
                out[(f"{label} − {baseline}", column)] = (diff.mean(), 1.96 * diff.std(ddof=1) / np.sqrt(len(diff)))
    return out


def _number_cells(values: pd.DataFrame, digits: int = 2, signed_rows=()) -> pd.DataFrame:
    def cell(label, v):
        if pd.isna(v):
            return "–"
        return f"{v:+.{digits}f}" if label in signed_rows else f"{v:.{digits}f}"

    return pd.DataFrame([[cell(label, v) for v in row] for label, row in zip(values.index, values.values)],
                        index=values.index, columns=values.columns)


def render_table(store: Store, table: str, ci: bool = False, reference: bool = False,
                 baseline: str | None = None, strict: bool = True, average: list[str] | None = None) -> dict[str, str] | None:
    """{format: text} for every format (the files), or None when there is nothing to show.
    Reference rows render even when the store has no measured rows for the table. With strict=False
    a baseline missing from this table is skipped (tables --table all) instead of being an error."""
    if table not in TABLES:
        raise ValueError(f"--table {table!r}: unknown; available: {', '.join(TABLES)}")
    frame = metrics_frame(store)
    if table == "seeds":
        return None if frame.empty else _seeds_rendered(frame)
    measured = pd.DataFrame()
    low = high = None
    if not frame.empty:
        if table == "sniah":
            measured, low, high = sniah_table(frame)
        elif table == "lm":
            measured = lm_table(frame, average)
        elif table == "sniah-partial":
            measured = sniah_partial_table(frame)
        elif table == "longppl":
            measured = longppl_table(frame)
            if ci:
                low, high = longppl_table(frame, "ci_low"), longppl_table(frame, "ci_high")
        else:
            measured = longbench_table(frame)
    values = with_reference(measured, table) if reference else measured
    if values.empty:
        return None
    higher = table != "longppl"
    signed, paired = (), {}
    if baseline is not None and (strict or baseline in values.index):
        with_delta = with_deltas(values, baseline)
        signed = [label for label in with_delta.index if label not in values.index]
        if table == "sniah" and ci:
            paired = sniah_paired_deltas(store, baseline)
        values = with_delta
    digits = 1 if table in ("sniah", "longbench") else 2
    cells = _number_cells(values, digits, signed)
    if ci and low is not None:  # S-NIAH (Wilson) and longppl (t over sequences): "value [low, high]"
        for label in measured.index:
            for column in measured.columns:
                if not pd.isna(measured.at[label, column]) and not pd.isna(low.at[label, column]):
                    cells.at[label, column] = (f"{measured.at[label, column]:.{digits}f} "
                                               f"[{low.at[label, column]:.{digits}f}, {high.at[label, column]:.{digits}f}]")
    if ci and table in ("lm", "longbench") and not measured.empty:  # 95% normal intervals from lm-eval's stderr
        stderr = lm_table(frame, average, "stderr") if table == "lm" else longbench_table(frame, "stderr")
        for label in measured.index:
            for column in measured.columns:
                value, se = measured.at[label, column], stderr.at[label, column] if column in stderr.columns else None
                if not pd.isna(value) and se is not None and not pd.isna(se):
                    cells.at[label, column] = f"{value:.{digits}f} ± {1.96 * se:.{digits}f}"
    for (label, column), (delta, half) in paired.items():
        if label in cells.index and column in cells.columns:
            cells.at[label, column] = f"{delta:+.1f} ± {half:.1f}"
    ranked = values.drop(index=list(signed))
    captions = {"lm": "Language modelling (perplexity) and zero-shot accuracy (\\%); Avg over "
                      + ", ".join(average or LM_ACCURACIES),
                "sniah-partial": "S-NIAH partial retrieval: answer reproduced from its start (\\%) and the answer's "
                                 "teacher-forced NLL per token",
                "sniah": r"S-NIAH accuracy (\%)" + (r" with 95\% Wilson intervals" if ci else ""),
                "longppl": "Perplexity by context length (lower is better)"
                           + (r" with 95\% intervals over sequences" if ci else ""),
                "longbench": "LongBench scores; Avg is the mean of the 14 cells"}
    csv_low, csv_high = (low.reindex(index=values.index, columns=values.columns),
                         high.reindex(index=values.index, columns=values.columns)) if (ci and low is not None) else (None, None)
    if csv_low is not None and table == "longppl" and csv_low.isna().all().all():
        csv_low = csv_high = None  # no interval could be formed (one sequence per corpus)
    direction = {c: higher and c not in LOWER_IS_BETTER_COLUMNS and not c.endswith(" NLL") for c in values.columns}
    return {"csv": to_csv(values, csv_low, csv_high),
            "latex": to_latex(ranked, cells, captions[table], higher_is_better=direction),
            "md": to_markdown(ranked, cells, higher_is_better=direction)}


# --- figures -------------------------------------------------------------------------------------------

def sniah_depth_frame(store: Store) -> pd.DataFrame:
    """Per-sample scores with needle depth, for the latest complete unit of each (label, task, length)."""
    frame = store.frame(
        "SELECT r.label, u.task, u.context_length, u.id AS unit_id, u.finished, s.score, s.fields "
        "FROM samples s JOIN units u ON u.id = s.unit_id JOIN runs r ON r.id = u.run_id "
        "WHERE u.status = 'complete' AND u.suite = 'sniah'")
    if frame.empty:
        return frame
    latest = frame.sort_values(["finished", "unit_id"]).groupby(["label", "task", "context_length"]).unit_id.last()
    frame = frame[frame.unit_id.isin(set(latest))].copy()
    frame["depth"] = frame.fields.map(lambda f: json.loads(f)["depth"])
    return frame


def sniah_depth_figure(store: Store):
    """The needle heatmap: depth (10% bins) x context length, one panel per (task, label)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    frame = sniah_depth_frame(store)
    if frame.empty:
        return None
    frame["bin"] = np.minimum((frame.depth // 10).astype(int), 9)
    labels, tasks = sorted(frame.label.unique()), [t for t in SUITES["sniah"].tasks if t in set(frame.task)]
    lengths = sorted(frame.context_length.unique())
    fig, axes = plt.subplots(len(tasks), len(labels), figsize=(2.2 + 1.1 * len(lengths) * len(labels), 2.6 * len(tasks)),
                             squeeze=False, constrained_layout=True)
    image = None
    for i, task in enumerate(tasks):
        for j, label in enumerate(labels):
            sub = frame[(frame.task == task) & (frame.label == label)]
            grid = sub.pivot_table(index="bin", columns="context_length", values="score", aggfunc="mean")
            grid = grid.reindex(index=range(10), columns=lengths)
            ax = axes[i, j]
            image = ax.imshow(grid.values, vmin=0, vmax=100, cmap="RdYlGn", aspect="auto", origin="upper")
            ax.set_xticks(range(len(lengths)), [format_length(L) for L in lengths])
            ax.set_yticks(range(10), [f"{10 * b}%" for b in range(10)])
            ax.set_title(f"{label} · {SUITES['sniah'].display[task]}", fontsize=9)
            if j == 0:
                ax.set_ylabel("needle depth")
            if i == len(tasks) - 1:
                ax.set_xlabel("context length")
    fig.colorbar(image, ax=axes, shrink=0.8, label="accuracy (%)")
    return fig


def write_figure(fig, out_dir: Path, name: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    for path in paths:
        fig.savefig(path, dpi=150)
    return paths


def label_colours(store: Store) -> dict[str, tuple]:
    """One colour per label, fixed across every figure drawn from this store (sorted label order)."""
    import matplotlib

    labels = sorted(r["label"] for r in store.query("SELECT DISTINCT label FROM runs"))
    tab20 = matplotlib.colormaps["tab20"].colors
    palette = tab20[0::2] + tab20[1::2] + matplotlib.colormaps["Dark2"].colors  # 10 strong, then their light shades
    return {label: palette[i % len(palette)] for i, label in enumerate(labels)}


def training_lengths(store: Store) -> dict[str, int]:
    """label -> training context length, when the model's config records one."""
    found = {}
    for row in store.query("SELECT label, model_config FROM runs"):
        config = json.loads(row["model_config"])
        for key in TRAINING_LENGTH_KEYS:
            if isinstance(config.get(key), int):
                found[row["label"]] = config[key]
    return found


def longppl_figure(store: Store):
    """2 x 3 grid, one panel per corpus: perplexity against context length, one line per label."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = metrics_frame(store)
    if frame.empty:
        return None
    rows = frame[(frame.suite == "longppl") & (frame.metric == "perplexity")]
    if rows.empty:
        return None
    suite = SUITES["longppl"]
    colours, trained = label_colours(store), training_lengths(store)
    # the paper's six panels; the shipped corpora get panels only when they have data
    tasks = list(suite.tasks) if set(rows.task) & set(suite.tasks) else []
    tasks += [t for t in suite.extra_tasks if t in set(rows.task)]
    columns = min(3, len(tasks))
    fig, axes = plt.subplots(math.ceil(len(tasks) / columns), columns, figsize=(4 * columns, 3.25 * math.ceil(len(tasks) / columns) + 0.5),
                             constrained_layout=True, squeeze=False)
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    for ax, task in zip(axes.flat, tasks):
        sub = rows[rows.task == task]
        for label in sorted(sub.label.unique()):
            line = sub[sub.label == label].sort_values("context_length")
            ax.plot(line.context_length / 1024, line.value, marker="o", ms=3, color=colours[label], label=label)
            if label in trained:
                ax.axvline(trained[label] / 1024, color=colours[label], ls="--", lw=0.8)
        ax.set_title(suite.display[task])
        ax.set_xlabel("context length (K tokens)")
        ax.set_ylabel("perplexity (log scale)")
        if not sub.empty:
            ax.set_yscale("log")  # a collapse past the training length is orders of magnitude
        if sub.empty:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")
    handles, labels = [], []
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, loc="outside lower center", ncol=min(4, len(labels)))
    return fig


def draw_figure(store: Store, name: str):
    return {"longppl": longppl_figure, "sniah-depth": sniah_depth_figure}[name](store)
