"""`make test-install`: ccq-eval installed the way a researcher installs it, into an environment of their own.

1. A fresh virtual environment gets every dependency at the lower bound pyproject.toml allows (tests/install/
   floors.py): torch 2.13, transformers 5.6.2, pandas 2.2.3, huggingface-hub 1.31, ... (several older than
   constraints.txt, the lock make installs).
2. ``pip install <repository>`` there (ranges only, no lock) must add ccq-eval and change nothing else.
3. The installed package runs from outside the repository: ``ccq-eval env``, an S-NIAH run, its table, its report.
4. The tests that lean on those libraries' APIs pass there (models and generation, hub downloads, tables).
5. transformers upgraded to the newest release the range admits: generation, the lm-eval wrapper and S-NIAH pass.

Reaches the package registry, as ``make install`` does; the tests themselves stay offline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from floors import floors  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TESTS_ON_NEWEST_TRANSFORMERS = ["tests/models/test_models.py", "tests/lm", "tests/suites/sniah/test_sniah_suite.py",
                                "tests/suites/test_lm_eval_cli.py"]
TESTS_ON_FLOORS = ["tests/models/test_models.py", "tests/models/test_loading.py", "tests/data/test_hub_fetch.py",
                   "tests/report", "tests/suites/sniah", "tests/suites/lm", "tests/store/test_old_store.py",
                   "tests/suites/test_lm_eval_cli.py"]


def run(*command, cwd: Path, env: dict | None = None) -> str:
    print("+", " ".join(map(str, command)), flush=True)
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, text=True, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"check_install: {' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
                 f"{done.stderr[-3000:]}")
    return done.stdout


def installed(python: Path, cwd: Path) -> dict[str, str]:
    listing = json.loads(run(python, "-m", "pip", "list", "--format=json", cwd=cwd))
    return {item["name"].lower().replace("_", "-"): item["version"] for item in listing}


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="ccq-install-"))
    venv.create(work / "env", with_pip=True)
    python = work / "env" / "bin" / python_name()
    pip = [python, "-m", "pip", "install", "-q"]
    run(*pip, "--upgrade", "pip", cwd=work)
    run(*pip, *floors(), cwd=work)
    before = installed(python, work)
    print("floors:", ", ".join(f"{name} {before[name]}" for name in ("torch", "transformers", "pandas",
                                                                    "huggingface-hub", "flash-linear-attention")))
    run(*pip, str(REPO), cwd=work)
    after = installed(python, work)
    changed = {name: f"{version} -> {after.get(name, 'removed')}" for name, version in before.items()
               if after.get(name) != version}
    added = sorted(set(after) - set(before))
    if changed or added != ["ccq-eval"]:
        sys.exit(f"check_install: pip install . changed the environment: {changed}, added {added}")
    print("pip install . kept every preinstalled version and added only ccq-eval")

    env = {**os.environ, "CCQ_EVAL_CACHE": str(work / "cache"), "OMP_NUM_THREADS": "1"}
    cli = work / "env" / "bin" / "ccq-eval"
    report = run(cli, "env", cwd=work, env=env)
    if f"transformers {before['transformers']}" not in report:
        sys.exit(f"check_install: ccq-eval env does not report transformers {before['transformers']}:\n{report}")
    store = work / "results.db"
    run(cli, "--model", "zoo:gla-tiny", "--suite", "sniah", "--tasks", "1,2", "--lengths", "1k", "--samples", "2",
        "--store", store, "--device", "cpu", cwd=work, env=env)
    table = run(cli, "tables", "--store", store, "--table", "sniah", "--out", work / "tables", cwd=work, env=env)
    if "gla-tiny" not in table:
        sys.exit(f"check_install: the sniah table has no gla-tiny row:\n{table}")
    run(cli, "view", "--store", store, "--out", work / "report.html", cwd=work, env=env)
    if 'id="report-data"' not in (work / "report.html").read_text():  # the page's script and style ship with it
        sys.exit("check_install: ccq-eval view wrote no report")
    print("the installed ccq-eval ran S-NIAH and rendered its table and report")

    run(*pip, "--no-deps", "-e", str(REPO), cwd=work)  # the repository's tests import the repository's code
    run(*pip, *floors(extra="test"), cwd=work)
    print(run(python, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider",
              *TESTS_ON_FLOORS, cwd=REPO, env=env).strip().splitlines()[-1])
    # the other end of the transformers range: its newest release, whose generate() renamed the cache it hands a
    # model (models/generate_cache.py), with what it needs upgraded beside it
    run(*pip, "--upgrade", "transformers", cwd=work)
    print("newest transformers:", installed(python, work)["transformers"])
    print(run(python, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider",
              *TESTS_ON_NEWEST_TRANSFORMERS, cwd=REPO, env=env).strip().splitlines()[-1])
    shutil.rmtree(work)
    print("test-install: passed")


def python_name() -> str:
    return "python.exe" if os.name == "nt" else "python"


if __name__ == "__main__":
    main()
