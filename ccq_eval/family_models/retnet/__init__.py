"""The retnet family's model code (its row: ccq_eval/families/retnet/)."""
