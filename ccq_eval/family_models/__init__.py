"""What attaches to the models, family by family: each family's CCQ model classes (``<family>/ccq.py``, registered
with transformers where models load) and its CPU ops (``<family>/cpu_ops.py``, the torch implementations the CPU
backend installs in place of fla's Triton-only names). They import models/' shared parts, so they sit above models/;
the families' plain rows (ccq_eval/families/) sit below it and name these modules by string."""
