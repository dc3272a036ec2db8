"""The delta_net family's model code (its row: ccq_eval/families/delta_net/)."""
