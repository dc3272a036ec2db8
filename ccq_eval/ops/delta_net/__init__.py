"""delta_net: fused_recurrent.py (the one-token step writing its state in place: Triton, and torch's in-place ops); cpu.py (torch forms for fla's Triton-only functions on a CPU)."""
