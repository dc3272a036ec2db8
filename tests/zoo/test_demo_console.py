"""The demo's console: one progress line for all workers (count, elapsed, ETA from the jobs' costs, what
runs now) and the closing summary, every line within 100 columns."""

import io
import subprocess
import sys

from ccq_eval import demo_console
from ccq_eval.demo_console import WIDTH, progress_line, report, watch


def test_progress_line_counts_running_and_estimates_from_costs(tmp_path):
    events = tmp_path / "events.jsonl"
    costs = {"a sniah": 3.0, "b sniah": 1.0, "a longppl": 1.0, "b longppl": 1.0}
    report(events, "a sniah", "start")
    report(events, "b sniah", "start")
    report(events, "b sniah", "done", status="ok")
    report(events, "b longppl", "start")
    line = progress_line(demo_console.read_events(events), costs, started=0.0, now=60.0)
    # 1 of cost 6 done in 60 s -> 5 more units of cost at 60 s each
    assert line == "[ 1/4] 1:00 elapsed, ETA 5:00 | running: a sniah, b longppl"
    report(events, "a sniah", "done", status="FAILED")
    assert ", 1 failed |" in progress_line(demo_console.read_events(events), costs, 0.0, 90.0)
    many = {f"model-{i:02d}-with-a-long-name+ccq0.3 sniah": 1.0 for i in range(9)}
    for job in many:
        report(tmp_path / "many.jsonl", job, "start")
    assert len(progress_line(demo_console.read_events(tmp_path / "many.jsonl"), many, 0.0, 5.0)) == WIDTH


def test_watch_prints_a_line_per_finished_evaluation_when_not_a_terminal(tmp_path):
    events = tmp_path / "events.jsonl"
    code = ("import sys, time; from ccq_eval.demo_console import report; from pathlib import Path; "
            f"p = Path({str(events)!r}); report(p, 'x', 'start'); time.sleep(0.3); report(p, 'x', 'done', status='ok'); "
            "report(p, 'y', 'start'); time.sleep(0.3); report(p, 'y', 'done', status='ok')")
    proc = subprocess.Popen([sys.executable, "-c", code])
    out = io.StringIO()
    watch([proc], events, {"x": 1.0, "y": 1.0}, started=0.0, out=out, every=0.05)
    counts = [line.split("]")[0] for line in out.getvalue().splitlines()]
    assert counts == ["[ 0/2", "[ 1/2", "[ 2/2"], out.getvalue()


def test_summary_fits_100_columns(tmp_path):
    from ccq_eval.store import Store

    store = Store(tmp_path / "ccq.db")
    run = store.writes.begin_run({"label": "x" * 60, "model_spec": "m", "weights_sha256": "w", "model_config": {},
                                  "ccq_overrides": {}, "dtype": "float32", "device": "cpu", "batch_size": 1, "seeds": {},
                                  "command_line": "", "versions": {}})
    for task, length, value in (("sniah_1", 1024, 82.0), ("sniah_1", 8192, 4.0), ("longppl_essays_heldout", 1024, 3.25), ("longppl_essays", 8192, 1.5)):
        store.writes.write_unit({"run_id": run, "suite": "s", "task": task, "context_length": length, "unit_key": task + str(length),
                                 "status": "complete", "started": "t", "finished": "t", "settings": {}, "reason": None},
                                [{"label": "x" * 60, "model": "m", "metric": "score", "value": value, "stderr": None, "n": 1,
                                  "higher_is_better": True, "is_primary": True}], [])
    text = demo_console.summary(tmp_path / "ccq.db", [1024, 2048, 8192], tmp_path / "demo")
    lines = text.splitlines()
    assert all(len(line) <= WIDTH for line in lines)
    assert lines[1].split()[1:] == ["82", "4", "3.25", "-"]
    assert "tables" in text and "figures" in text


def test_an_interrupted_worker_starts_no_further_job(tmp_path, monkeypatch):
    from ccq_eval import cli, demo

    calls = []

    def fake_main(argv):
        calls.append(argv[2])
        return 130 if len(calls) == 1 else 0

    monkeypatch.setattr(cli, "main", fake_main)
    jobs = [{"name": f"job{i}", "args": ["--suite", f"s{i}"]} for i in range(3)]
    assert demo.run_share(jobs, str(tmp_path / "s.db"), str(tmp_path)) == 1
    assert calls == ["s0"]
    events = demo_console.read_events(tmp_path / demo.EVENTS)
    assert [(e["job"], e["event"], e.get("status")) for e in events] == [("job0", "start", None),
                                                                         ("job0", "done", "exit 130")]
