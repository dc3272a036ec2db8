import sys

from ccq_eval.cli import main

sys.exit(main())
