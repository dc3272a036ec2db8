"""The gated_deltanet family's model code (its row: ccq_eval/families/gated_deltanet/)."""
