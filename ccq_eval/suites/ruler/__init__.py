"""RULER's non-needle tasks: variable tracking, common and frequent words extraction (compose.py: a prompt from its
draws, as NVIDIA/RULER composes it)."""
