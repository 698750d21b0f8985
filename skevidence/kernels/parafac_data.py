"""Where :class:`PARAFACData` was defined; it is now :class:`skevidence.kernels.blocks.PARAFACData`."""

from .blocks import PARAFACData, group_tensor_by_blocks

__all__ = ["PARAFACData", "group_tensor_by_blocks"]
