"""Adding an operator is one folder under ops/ and one Family field: a copy of the package gains ops/toy_step/ (a GLA
one-token step that counts its calls and writes the state in place) and GLA's row names it in ``in_place_steps``,
nothing else; the engine's fixed slots then route every GLA layer's one-token read to it, the trust check checks
it against fla's function first, and the tokens are batch 1's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TOY_STEP = '''"""A stand-in operator: GLA's in-place step, counted."""

from ccq_eval.ops.gla.fused_recurrent import fused_recurrent_gla_in_place as real

CALLS = []


def fused_recurrent_gla_in_place(**kwargs):
    done = real(**kwargs)
    CALLS.append(done is not None)
    return done
'''

RUN = '''
import torch
from ccq_eval.generation.engine import generate
from ccq_eval.ops import trust
from ccq_eval.ops.cpu_forms import install_cpu_backend
from ccq_eval.ops.toy_step import fused_recurrent as toy
from tests.generation.test_engine import TOKENIZER, requests
from tests.helpers import tiny_model

install_cpu_backend()  # as loading a model on a CPU does
torch.manual_seed(0)
model = tiny_model("gla")
plain = [r.tokens for r in generate(model, TOKENIZER, requests(), batch_size=1, static=False)]
assert not toy.CALLS, "outside the fixed slots nothing routes to it"
fixed = [r.tokens for r in generate(model, TOKENIZER, requests(), batch_size=3, static=True)]
assert fixed == plain, (fixed, plain)
assert sum(toy.CALLS) > 10, toy.CALLS
(verdict,) = trust.verdicts().values()
assert verdict.startswith("own (agrees"), verdict
print("routed", sum(toy.CALLS))
'''


def test_a_new_operator_is_one_folder_and_one_family_field(tmp_path):
    root = tmp_path / "site"
    package = root / "ccq_eval"
    shutil.copytree(REPO / "ccq_eval", package, ignore=shutil.ignore_patterns("__pycache__", "zoo"))
    (package / "ops" / "toy_step").mkdir()
    (package / "ops" / "toy_step" / "__init__.py").write_text('"""toy_step: fused_recurrent.py."""\n')
    (package / "ops" / "toy_step" / "fused_recurrent.py").write_text(TOY_STEP)
    row = package / "families" / "gla" / "__init__.py"
    text = row.read_text()
    field = "ccq_eval.ops.gla.fused_recurrent:fused_recurrent_gla_in_place"
    assert text.count(field) == 1
    row.write_text(text.replace(field, "ccq_eval.ops.toy_step.fused_recurrent:fused_recurrent_gla_in_place"))
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{REPO}", "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("routed")
