"""The lm suite's protocol number, stated once: lm-eval's window (its default max_length), in which wikitext's
rolling loglikelihood is scored; the other tasks' items are short."""

WINDOW = 2048
