"""The (Config, Model, ForCausalLM) classes of a CCQ family over any fla backbone whose layer reads o = S^T q from a
state its keys are written into: the layer becomes its CCQ subclass in place after fla builds the model
(ccq_read.attach_to_layers), and the config carries the CCQ fields. The training-free families
(families/delta_net, retnet, hgrn2) are made this way."""

from __future__ import annotations

from ccq_eval.models.ccq_read import attach_to_layers, set_ccq_fields


def ccq_family_classes(name: str, config_base, model_base, lm_base, backbone_layer: type, ccq_layer: type):
    """(Config, Model, ForCausalLM) of the CCQ family ``name`` over an fla backbone; ``ccq_layer.HEAD_DIM`` names the
    layer attribute holding the key head dimension."""
    module = ccq_layer.__module__

    def config_init(self, **kwargs):
        set_ccq_fields(self, kwargs)  # use_ccq, ccq_gate_bias_init, ccq_weighting, ccq_fixed_lambda, ccq_sigma_scale
        config_base.__init__(self, **kwargs)

    config = type(f"CCQ{config_base.__name__}", (config_base,), {
        "model_type": name, "__init__": config_init, "__module__": module})

    def model_init(self, cfg):
        model_base.__init__(self, cfg)
        attach_to_layers(self, backbone_layer, ccq_layer, cfg, ccq_layer.HEAD_DIM)

    def lm_init(self, cfg):
        lm_base.__init__(self, cfg)
        attach_to_layers(self.model, backbone_layer, ccq_layer, cfg, ccq_layer.HEAD_DIM)

    model = type(f"CCQ{model_base.__name__}", (model_base,), {
        "config_class": config, "__init__": model_init, "__module__": module})
    lm = type(f"CCQ{lm_base.__name__}", (lm_base,), {
        "config_class": config, "__init__": lm_init, "__module__": module})
    return config, model, lm
