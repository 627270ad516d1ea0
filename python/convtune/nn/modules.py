"""convtune.nn.Conv2d: a drop-in for torch.nn.Conv2d whose forward and backward run convtune's kernels."""
import torch

from . import functional


class Conv2d(torch.nn.Conv2d):
    """torch.nn.Conv2d with the same arguments, parameters, initialisation and state_dict; the convolution
    runs on convtune's layer kernels (strict fp32, functional.conv2d). A state_dict saved from either
    loads into the other.

    Allowed beyond torch's own checks: dilation 1, groups 1, padding_mode 'zeros', padding smaller than the
    kernel; anything else is a ValueError here, at construction.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        if self.dilation != (1, 1):
            raise ValueError(f"dilation: {dilation!r}; allowed: 1 (convtune's layer kernels are not dilated)")
        if self.groups != 1:
            raise ValueError(f"groups: {groups!r}; allowed: 1 (convtune's layer kernels are dense)")
        if self.padding_mode != "zeros":
            raise ValueError(f"padding_mode: {padding_mode!r}; allowed: 'zeros'")
        pads = self.padding if isinstance(self.padding, tuple) else (0, 0)
        if any(p >= k for p, k in zip(pads, self.kernel_size)):
            raise ValueError(f"padding: {padding!r} with kernel_size {self.kernel_size}; allowed: padding smaller "
                             "than the kernel in each dimension")

    def _conv_forward(self, input, weight, bias):
        return functional.conv2d(input, weight, bias, self.stride, self.padding)

    @classmethod
    def from_torch(cls, conv):
        """A convtune Conv2d with conv's arguments, device, dtype and a copy of its parameters."""
        new = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.dilation,
                  conv.groups, conv.bias is not None, conv.padding_mode, conv.weight.device, conv.weight.dtype)
        new.load_state_dict(conv.state_dict())
        return new
