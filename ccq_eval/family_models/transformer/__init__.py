"""The transformer family's model code (its row: ccq_eval/families/transformer/)."""
