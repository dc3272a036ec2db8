"""`make test-install`, second half: ccq-eval onto a machine without network from `ccq-eval wheelhouse`.

1. A fresh environment stands in for a GPU node's image: torch, triton, transformers, pandas and the other common
   libraries preinstalled, and nothing of ccq-eval's own (fla, lm-eval, datasets, nltk, ...).
2. ``ccq-eval wheelhouse --have <its pip list>`` (run from this checkout) makes the folder of wheels.
3. There, ``pip install --no-index --no-deps`` of that folder: nothing resolved, nothing fetched; then ``pip check``
   says every requirement of everything installed is met, and the image's versions are unchanged.
4. With the registry and the hub refused (PIP_NO_INDEX, HF_HUB_OFFLINE), the installed ccq-eval runs from outside
   the repository: ``ccq-eval env``, S-NIAH on the zoo, lm-eval's RULER through ``ccq-eval lm-eval``, and the GPU
   check's dry run.

Reaches the package registry for step 1 and 2 only.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_install import REPO, installed, python_name, run  # noqa: E402

# a CUDA image's usual libraries (the names a GPU node's image holds), at the lock's versions
IMAGE = ["torch==2.13.0", "triton", "transformers", "tokenizers", "huggingface-hub", "safetensors", "numpy", "pandas",
         "pyarrow", "matplotlib", "scipy", "scikit-learn", "accelerate", "peft", "sacrebleu", "einops", "jinja2",
         "requests", "tqdm", "pyyaml", "tabulate", "packaging", "setuptools"]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="ccq-wheelhouse-"))
    venv.create(work / "node", with_pip=True)
    python = work / "node" / "bin" / python_name()
    run(python, "-m", "pip", "install", "-q", "-c", REPO / "constraints.txt", *IMAGE, cwd=work)
    image = installed(python, work)
    (work / "have.txt").write_text(run(python, "-m", "pip", "list", "--format=freeze", cwd=work))

    target = f"{sys.version_info.major}.{sys.version_info.minor}"
    print(run(sys.executable, "-m", "ccq_eval", "wheelhouse", "--python", target, "--have", work / "have.txt",
              "--out", work / "wheels", cwd=REPO).strip().splitlines()[-2])
    offline = {**os.environ, "PIP_NO_INDEX": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "CCQ_EVAL_CACHE": str(work / "cache"), "OMP_NUM_THREADS": "1"}
    run(python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", *sorted((work / "wheels").glob("*.whl")),
        cwd=work, env=offline)
    run(python, "-m", "pip", "check", cwd=work, env=offline)
    after = installed(python, work)
    changed = {name: f"{version} -> {after.get(name)}" for name, version in image.items() if after.get(name) != version}
    if changed:
        sys.exit(f"check_wheelhouse: installing the wheels changed the image: {changed}")
    print(f"the wheels installed offline beside the image's {len(image)} packages, none changed; pip check passed")

    cli = work / "node" / "bin" / "ccq-eval"
    run(cli, "env", cwd=work, env=offline)
    store = work / "results.db"
    run(cli, "--model", "zoo:gla-tiny", "--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "2",
        "--store", store, "--device", "cpu", cwd=work, env=offline)
    run(cli, "lm-eval", "--model", "hf-no-truncation", "--model_args", "pretrained=zoo:gla-tiny,max_length=1200",
        "--tasks", "niah_single_1", "--metadata", '{"max_seq_lengths": [1024]}', "--limit", "2", "--device", "cpu",
        cwd=work, env=offline)
    run(python, REPO / "benchmarks" / "gpu_check.py", "--dry-run", "--part", "sniah", cwd=work, env=offline)
    shutil.rmtree(work)
    print("test-install (wheelhouse): passed")


if __name__ == "__main__":
    main()
