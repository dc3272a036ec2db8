"""How reads compute, one folder an operator as fla keeps them (ccq/: CCQ's read; <family>/: a family's one-token
step and its CPU torch forms), and the routes that choose a form: in_place.py (the fixed slots' in-place steps),
cpu_forms.py (torch forms for fla's Triton-only names on a CPU), trust.py (an own kernel checked
against its reference on the device before use)."""
