"""What follows from a request alone: -0.0 and 0 are one contraction (one label, one set of overrides, so one unit
key), and a label taken from a model's folder name meets the same check as --label, before anything loads."""

from __future__ import annotations

from ccq_eval.cli import main
from ccq_eval.run.request import RunRequest, ccq_overrides, default_label


def test_minus_zero_and_zero_are_one_contraction():
    zero, minus = (RunRequest(model="zoo:gla-tiny", suite="sniah", ccq_lambda=x) for x in (0.0, -0.0))
    assert ccq_overrides(zero) == ccq_overrides(minus) == {"ccq_fixed_lambda": 0.0, "ccq_sigma_scale": "trace"}
    assert default_label(zero) == default_label(minus) == "gla-tiny+ccq0"
    assert str(ccq_overrides(minus)["ccq_fixed_lambda"]) == "0.0"  # not "-0.0" in any record


def test_a_label_taken_from_a_folder_name_is_checked_as_label_is(tmp_path, capsys):
    folder = tmp_path / "gla\nlarge"
    folder.mkdir()
    store = tmp_path / "s.db"
    assert main(["--model", str(folder), "--suite", "sniah", "--store", str(store), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "the label taken from its name" in err and "control character" in err and "pass --label NAME" in err
    assert "\n" not in err and not store.exists()
    main(["--model", str(folder), "--suite", "sniah", "--label", "gla-large", "--store", str(store), "--device", "cpu"])
    assert "label taken from its name" not in capsys.readouterr().err  # with --label the name is not the label
