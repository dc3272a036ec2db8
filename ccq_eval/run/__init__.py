"""Running suites: the request, units and their identity, the evaluand, and the runner."""

from ccq_eval.run.evaluand import Evaluand, checkpoint_evaluand, load_evaluand
from ccq_eval.run.request import RunRequest
from ccq_eval.run.runner import Runner, run_suite
from ccq_eval.suites.outcomes import Unit, UnitOutcome

__all__ = ["Evaluand", "RunRequest", "Runner", "Unit", "UnitOutcome", "checkpoint_evaluand", "load_evaluand", "run_suite"]
