"""The CCQ model classes of each family (its config, model and causal-LM classes with the CCQ layer), registered with
transformers' Auto classes by models/registration.py."""
