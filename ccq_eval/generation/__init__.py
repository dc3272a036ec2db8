"""ccq-eval's own generation engine: greedy decoding of many prompts through a model's recurrent (or key/value) cache,
prompts prefilled packed where the family allows it, rows leaving the batch as they finish and the batch refilled
from the queue; transformers' ``generate()`` is not on this path. ``engine.generate`` is the entry point,
``reference.generate_one`` the slow reference it is tested against."""
