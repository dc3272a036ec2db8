"""`make demo` end to end on a one-step zoo (the real demo's models, data and renderers, with fewer
samples): every evaluation lands in one store, the sweep rows carry S-NIAH-1 only, the shipped corpora
give the perplexity columns, and the seeds table groups NAME with NAME-s1."""

import json
import re

import pandas as pd
import pytest

from ccq_eval import demo
from ccq_eval.cli import main


@pytest.mark.e2e
@pytest.mark.processes  # the demo's worker processes, as make demo starts them
def test_demo_on_a_one_step_zoo(tmp_path, monkeypatch):
    zoo, out = tmp_path / "zoo", tmp_path / "demo"
    models = "gla-tiny,gla-tiny-s1,gdn-tiny"
    assert main(["zoo", "build", "--steps", "1", "--models", models, "--work", str(tmp_path / "work"),
                 "--out", str(zoo)]) == 0
    monkeypatch.setenv("CCQ_EVAL_ZOO", str(zoo))
    assert demo.main(["--out", str(out), "--models", models, "--lengths", "1k,2k", "--samples", "2",
                      "--sequences", "2", "--lambdas", "0.3"]) == 0

    sniah = pd.read_csv(out / "tables" / "sniah.csv", index_col="label")
    assert sorted(sniah.index) == ["gdn-tiny", "gdn-tiny+ccq0.3", "gla-tiny", "gla-tiny+ccq0.3", "gla-tiny-s1"]
    s2 = [c for c in sniah.columns if c.startswith("S2 (ccq-essays)") and "ci_" not in c]
    assert [c for c in sniah.columns if "ci_" not in c] == ["family", "S1 1K", "S1 2K", *s2] and len(s2) == 2
    assert sniah.family.to_dict() == {"gdn-tiny": "Gated DeltaNet", "gdn-tiny+ccq0.3": "CCQ-GDN", "gla-tiny": "GLA",
                                      "gla-tiny+ccq0.3": "CCQ-GLA", "gla-tiny-s1": "GLA"}
    assert sniah.loc["gla-tiny+ccq0.3", s2].isna().all() and sniah.loc["gla-tiny", s2].notna().all()
    assert sniah.filter(like="ci_low").notna().any().any()  # the 95% intervals are there

    longppl = pd.read_csv(out / "tables" / "longppl.csv", index_col="label").drop(columns="family")
    assert list(longppl.columns[:8]) == ["Essays (seen) 1K", "Essays (seen) 2K", "Essays (held out) 1K",
                                         "Essays (held out) 2K", "PyDocs 1K", "PyDocs 2K", "PyCode 1K", "PyCode 2K"]
    assert (longppl.iloc[:, :8] > 1).all().all() and len(longppl) == 5
    assert (longppl["PyCode 2K ci_low"] < longppl["PyCode 2K"]).all()

    seeds = pd.read_csv(out / "tables" / "seeds.csv")
    assert set(seeds.model) == {"gla-tiny"} and (seeds.seeds == 2).all()
    assert "S1 1K acc" in set(seeds.column) and "PyCode 2K ppl" in set(seeds.column)
    pairs = pd.read_csv(out / "tables" / "pairs.csv")  # training-free CCQ against the same weights, tested
    assert set(zip(pairs.model, pairs.baseline)) == {("gla-tiny+ccq0.3", "gla-tiny"), ("gdn-tiny+ccq0.3", "gdn-tiny")}
    assert set(pairs.column) >= {"S1 1K acc", "PyCode 2K ppl"} and pairs.p_value.between(0, 1).all()
    columns = list(dict.fromkeys(pairs.column))  # in the suites' own tables' order (the sweep's S-NIAH: 1K only)
    assert columns[:4] == ["S1 1K acc", "Essays (seen) 1K ppl", "Essays (seen) 2K ppl", "Essays (held out) 1K ppl"]
    multi = pd.read_csv(out / "tables" / "multi-niah.csv", index_col="label")  # the models, not the sweep; at 1K
    assert sorted(multi.index) == ["gdn-tiny", "gla-tiny", "gla-tiny-s1"]
    assert [c for c in multi.columns if "ci_" not in c] == ["family", "MK1 (ccq-essays) 1K", "MK2 1K", "MK3 1K",
                                                           "MV (ccq-essays) 1K", "MQ (ccq-essays) 1K"]
    recall = pd.read_csv(out / "tables" / "recall-state.csv", index_col="label")
    assert recall.loc["gla-tiny · 1K", "multi-NIAH mean"] == pytest.approx(multi.loc["gla-tiny"].iloc[1:6].mean())
    assert pd.isna(recall.loc["gla-tiny · 2K", "multi-NIAH mean"])  # multi-NIAH at the training length only
    ruler = pd.read_csv(out / "tables" / "ruler.csv", index_col="label")  # the models, at 2K, with the S-NIAH there
    assert sorted(ruler.index) == sorted(sniah.index)
    assert [c for c in ruler.columns if c.endswith(" 2K")] == ["S1 2K", "S2 (ccq-essays) 2K", "VT 2K", "CWE 2K",
                                                               "FWE 2K", "avg 2K"]
    # QA at 4K: RULER's ten documents a question outgrow 2K; the 4K average is QA's alone (no S-NIAH at 4K here)
    assert [c for c in ruler.columns if c.endswith(" 4K")] == ["QA-1 4K", "avg 4K"]
    assert ruler["QA-1 4K"].notna().sum() == 3 and ruler["avg 4K"].equals(ruler["QA-1 4K"])
    assert ruler.loc["gla-tiny", "avg 2K"] == pytest.approx(ruler.loc["gla-tiny", [c for c in ruler.columns if
                                                                                  c.endswith(" 2K")][:-1]].mean(),
                                                            abs=1e-3)  # the CSV's 3 decimals
    recall = pd.read_csv(out / "tables" / "recall.csv", index_col="label")  # the shipped stand-in records, at 1K
    assert sorted(recall.index) == ["gdn-tiny", "gla-tiny", "gla-tiny-s1"]
    six = [f"{c} 1K" for c in ("SWDE", "SQD", "FDA", "TQA", "NQ", "Drop")]
    assert recall[six].notna().all().all()  # all six tasks, each document cut to 1K
    assert recall["Avg 1K"].tolist() == pytest.approx(recall[six].mean(axis=1).tolist())
    babilong = pd.read_csv(out / "tables" / "babilong.csv", index_col="label")  # qa1-qa2 at 1K, the models only
    assert sorted(babilong.index) == ["gdn-tiny", "gla-tiny", "gla-tiny-s1"]
    assert [c for c in babilong.columns if "ci_" not in c] == ["family", "QA1 (ccq-essays) 1K", "QA2 (ccq-essays) 1K"]
    assert babilong.filter(like="QA").notna().all().all()
    for name in ("sniah", "sniah-partial", "multi-niah", "ruler", "recall", "longppl", "recall-state", "seeds",
                 "pairs", "babilong"):
        assert all((out / "tables" / f"{name}.{ext}").stat().st_size > 0 for ext in ("csv", "tex", "md"))
    assert (out / "figures" / "longppl.png").exists() and (out / "figures" / "sniah-depth.png").exists()
    assert (out / "figures" / "recall-state.png").exists()
    report = (out / "report.html").read_text()  # the report of the same store: every label, both figures, the pairs
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', report, re.S).group(1))
    assert {run["label"] for run in data["runs"]} == set(sniah.index)
    assert {(e["a"], e["b"]) for e in data["compare"]} >= {("gla-tiny", "gla-tiny+ccq0.3"), ("gdn-tiny", "gdn-tiny+ccq0.3")}
    assert 'data-figure="longppl"' in report and 'data-figure="sniah-depth"' in report
    assert 'data-figure="babilong"' in report and (out / "figures" / "babilong.png").exists()


def test_demo_refuses_a_missing_zoo_model(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CCQ_EVAL_ZOO", str(tmp_path / "empty"))
    assert demo.main(["--out", str(tmp_path / "d"), "--models", "gla-tiny"]) == 2
    assert "ccq-eval zoo build" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
