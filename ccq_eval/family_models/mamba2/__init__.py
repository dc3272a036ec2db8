"""The mamba2 family's model code (its row: ccq_eval/families/mamba2/)."""
