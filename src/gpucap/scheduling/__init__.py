"""Karpenter's scheduling simulation, pure: no I/O, no clock, no global randomness."""
