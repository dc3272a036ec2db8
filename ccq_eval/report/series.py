"""What a figure draws per model: a series is one model (its seeds together), styled so a CCQ model reads
beside its backbone. One colour per backbone; the backbone dashed, its trained CCQ version (``ccq-NAME``)
solid, its training-free CCQ versions (``NAME+ccq<lambda>``) dash-dotted in lighter shades of that colour.
Labels NAME, NAME-s1, ... are one series (a mean line and a band over the seeds), not one line each.
The pairing is the labels' convention (report/labels.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ccq_eval.report.labels import ALONE, TRAINED_CCQ, TRAINING_FREE_CCQ, backbone_and_role, model_name

BACKBONE = "backbone"
LINESTYLES = {BACKBONE: "--", TRAINED_CCQ: "-", TRAINING_FREE_CCQ: "-.", ALONE: "-"}
MARKERS = ("o", "s", "^", "D", "v", "P")


@dataclass(frozen=True)
class Series:
    name: str  # the model, without seed suffix
    labels: tuple[str, ...]  # its labels in the store (one per seed)
    group: str  # the backbone it belongs with
    role: str  # BACKBONE, TRAINED_CCQ, TRAINING_FREE_CCQ or ALONE
    colour: tuple
    linestyle: str
    marker: str

    @property
    def display(self) -> str:
        return self.name if len(self.labels) == 1 else f"{self.name} ({len(self.labels)} seeds)"


def _shade(colour: tuple, amount: float) -> tuple:
    """``colour`` mixed with white by ``amount`` (0: itself)."""
    return tuple(c + (1 - c) * amount for c in colour[:3])


def series_of(labels) -> list[Series]:
    """Every model of ``labels`` as a series, ordered by backbone (backbone first, then its CCQ versions)."""
    import matplotlib

    by_model: dict[str, list[str]] = {}
    for label in sorted(labels):
        by_model.setdefault(model_name(label), []).append(label)
    names = set(by_model)
    placed = {name: backbone_and_role(name, names) for name in names}
    groups = sorted({group for group, _ in placed.values()})
    has_versions = {group for group, role in placed.values() if role != ALONE}
    palette = matplotlib.colormaps["tab10"].colors
    rank = {BACKBONE: 0, ALONE: 0, TRAINED_CCQ: 1, TRAINING_FREE_CCQ: 2}
    out = []
    for g, group in enumerate(groups):
        members = sorted((name for name in names if placed[name][0] == group),
                         key=lambda n: (rank[placed[n][1]] if n != group else 0, n))
        free = 0
        for m, name in enumerate(members):
            role = placed[name][1]
            if name == group:
                role = BACKBONE if group in has_versions else ALONE
            colour = palette[g % len(palette)]
            if role == TRAINING_FREE_CCQ:
                free += 1
                colour = _shade(colour, min(0.6, 0.2 * free))
            out.append(Series(name, tuple(by_model[name]), group, role, tuple(colour), LINESTYLES[role],
                              MARKERS[m % len(MARKERS)]))
    return out


def label_lines(rows, y_scale: float = 1.0) -> dict:
    """label -> (context length in K tokens, value / y_scale), sorted by length, from metric rows."""
    return {label: (line.context_length.to_numpy() / 1024, line.value.to_numpy() / y_scale)
            for label, line in ((label, rows[rows.label == label].sort_values("context_length"))
                                for label in rows.label.unique())}


def plot_series(ax, series: Series, lines: dict, label: str) -> None:
    """One series on ``ax``: ``lines`` maps each of its labels to (x, y) arrays; several seeds draw their mean
    and a band from the lowest to the highest seed at each x the seeds share."""
    import numpy as np

    present = [lines[lab] for lab in series.labels if lab in lines]
    if not present:
        return
    style = dict(color=series.colour, ls=series.linestyle, marker=series.marker, ms=3.5, lw=1.6, label=label)
    if len(present) == 1:
        ax.plot(*present[0], **style)
        return
    shared = sorted(set.intersection(*(set(np.asarray(x).tolist()) for x, _ in present)))
    stack = np.array([[dict(zip(np.asarray(x).tolist(), y))[v] for v in shared] for x, y in present], float)
    ax.fill_between(shared, stack.min(axis=0), stack.max(axis=0), color=series.colour, alpha=0.2, lw=0)
    ax.plot(shared, stack.mean(axis=0), **style)


def legend_beside(fig, axes, series: list[Series]) -> None:
    """One legend for the figure, outside the plots on the right (a legend below them grew with every model),
    titled with the line styles it uses."""
    handles, names = [], []
    for ax in axes:
        for handle, name in zip(*ax.get_legend_handles_labels()):
            if name not in names:
                handles.append(handle)
                names.append(name)
    if not handles:
        return
    roles = {s.role for s in series}
    notes = [note for role, note in ((BACKBONE, "dashed: backbone"), (TRAINED_CCQ, "solid: CCQ"),
                                     (TRAINING_FREE_CCQ, "dash-dot: training-free CCQ")) if role in roles]
    if BACKBONE not in roles:
        notes = []
    if any(len(s.labels) > 1 for s in series):
        notes.append("band: lowest to highest seed")
    fig.legend(handles, names, loc="outside right upper", fontsize=8, frameon=False,
               title="\n".join(notes) or None, title_fontsize=7)
