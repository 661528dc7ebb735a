"""gpucap: Karpenter's GPU capacity model for Amazon EKS (lint, plan, simulate, render/ami)."""

__version__ = "0.1.0"
