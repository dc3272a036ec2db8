"""S-NIAH's protocol numbers, each stated once: the tokens generated after each prompt (RULER's budget: the
prompt plus these fit the context length) and the task version the plugins and the units record."""

TOKENS_TO_GENERATE = 128
TASK_VERSION = 1.0
