"""`python -m tests.rank_logging ARGS`: `ccq-eval ARGS` with each rank's engine calls logged (rank and request count,
a line each) to $RANK_LOG, so a data-parallel test sees how the ranks split the prompts."""

import os
import sys

from ccq_eval.cli import main
from ccq_eval.generation.generator import EngineGenerator

_engine = EngineGenerator._engine


def logged_engine(self, requests):
    with open(os.environ["RANK_LOG"], "a") as handle:
        handle.write(f"{self.ranks.rank} {len(requests)}\n")
    return _engine(self, requests)


if __name__ == "__main__":
    EngineGenerator._engine = logged_engine
    sys.exit(main(sys.argv[1:]))
