"""A method's parameters are declared with fedbench.params (shared with server optimizers and
datasets); the names stay importable from here, where method modules and plugins find them."""

from fedbench.params import RANGES, NoParams, check_param_value, check_ranges, coerce_params, param

__all__ = ["RANGES", "NoParams", "check_param_value", "check_ranges", "coerce_params", "param"]
