"""convtune.nn: torch.nn's Conv2d and functional conv2d / max_pool2d / avg_pool2d on convtune's kernels."""
from . import functional
from .modules import Conv2d

__all__ = ["Conv2d", "functional"]
