"""CCQ's operator, one folder as fla keeps an operator: state.py, read.py (the entry points), chunk.py, packed.py,
fused_chunk.py, step.py, naive.py."""

from ccq_eval.ops.ccq.chunk import running_key_sums
from ccq_eval.ops.ccq.read import contract_query
from ccq_eval.ops.ccq.naive import naive_contract_query
from ccq_eval.ops.ccq.state import BF16_BOUND, FP32_BOUND, SIGMA_SCALES, TRACE_EPS, CCQState
from ccq_eval.ops.ccq.step import contract_query_step

__all__ = ["BF16_BOUND", "CCQState", "FP32_BOUND", "SIGMA_SCALES", "TRACE_EPS", "contract_query", "contract_query_step",
           "naive_contract_query", "running_key_sums"]
