"""Models: how a checkpoint loads and how CCQ attaches to a family's layer (the CCQ layer, and each family's CCQ
model classes in ccq_models/). How the reads compute (CCQ's operator, the families' steps and CPU torch forms) is in
ccq_eval/ops/, below this package; each family's row (patch targets, cache formula and layout) in ccq_eval/families/,
below that.

The CCQ families register with transformers' Auto classes where models load (``register_ccq_models``, which
``load_model`` calls); the CLI never imports this package.
"""

from ccq_eval.ops.ccq import CCQState, contract_query, contract_query_step, naive_contract_query
from ccq_eval.models.ccq_read import CCQSettings
from ccq_eval.ops.cpu_forms import install_cpu_backend
from ccq_eval.models.loading import LoadedModel, ModelLoadError, load_model
from ccq_eval.models.registration import register_ccq_models

__all__ = [
    "CCQSettings", "CCQState", "LoadedModel", "ModelLoadError", "contract_query", "contract_query_step",
    "install_cpu_backend", "load_model", "naive_contract_query", "register_ccq_models",
]
