"""Results in other tools' layouts, in and out of the store (lm-eval's results JSON)."""
