"""`python -m tests.rank_logging ARGS`: `ccq-eval ARGS` with each rank's generate_until calls logged (rank and
request count, a line each) to $RANK_LOG, so a data-parallel test sees how the ranks split the prompts."""

import os
import sys

from ccq_eval.cli import main
from ccq_eval.lm.wrapper import CCQEvalLM

_generate_until = CCQEvalLM.generate_until


def logged_generate_until(self, requests, disable_tqdm: bool = False):
    with open(os.environ["RANK_LOG"], "a") as handle:
        handle.write(f"{self.rank} {len(requests)}\n")
    return _generate_until(self, requests, disable_tqdm=disable_tqdm)


if __name__ == "__main__":
    CCQEvalLM.generate_until = logged_generate_until
    sys.exit(main(sys.argv[1:]))
