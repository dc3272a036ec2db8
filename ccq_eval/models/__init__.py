"""Models: the CCQ operator and the one way CCQ attaches to a family's layer, the CPU backend, and loading. Each
family's row (patch targets, cache formula and layout) is in ccq_eval/families/, below this package; its CCQ classes
and CPU ops, which build on this package's shared parts, in ccq_eval/family_models/, above it.

The CCQ families register with transformers' Auto classes where models load (``register_ccq_models``, which
``load_model`` calls); the CLI never imports this package.
"""

from ccq_eval.models.ccq import CCQState, contract_query, contract_query_step, naive_contract_query
from ccq_eval.models.ccq_read import CCQSettings
from ccq_eval.models.cpu_backend import install_cpu_backend
from ccq_eval.models.loading import LoadedModel, ModelLoadError, load_model
from ccq_eval.models.registration import register_ccq_models

__all__ = [
    "CCQSettings", "CCQState", "LoadedModel", "ModelLoadError", "contract_query", "contract_query_step",
    "install_cpu_backend", "load_model", "naive_contract_query", "register_ccq_models",
]
