"""The gla family's model code (its row: ccq_eval/families/gla/)."""
