"""Karpenter's NodePool controllers (kubernetes-sigs/karpenter `pkg/controllers/nodepool/`):
readiness (`readiness.py`)."""
