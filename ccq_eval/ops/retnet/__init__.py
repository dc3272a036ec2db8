"""retnet: cpu.py (torch forms for fla's Triton-only functions on a CPU)."""
