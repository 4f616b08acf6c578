"""A method's parameters are declared with fedbench.param_fields (shared with server optimizers
and datasets); the names stay importable from here, where method modules and plugins find them."""

from fedbench.param_fields import (
    RANGES,
    NoParams,
    check_param_value,
    check_ranges,
    coerce_params,
    param,
)

__all__ = ["RANGES", "NoParams", "check_param_value", "check_ranges", "coerce_params", "param"]
