"""The GPU vendors gpupaas knows: what a profile, a cluster's nodes and an instance template name."""

from __future__ import annotations

from enum import Enum


class Vendor(str, Enum):
    NVIDIA = "NVIDIA"
    AMD = "AMD"
    INTEL = "INTEL"
    ASCEND = "ASCEND"
    CPU = "CPU"
