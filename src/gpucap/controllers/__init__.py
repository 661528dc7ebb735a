"""Karpenter's controllers (provisioning, lifecycle, disruption, ...), over a CloudProvider and
cluster state; they take a Clock and never sleep."""
