"""The hgrn2 family's model code (its row: ccq_eval/families/hgrn2/)."""
