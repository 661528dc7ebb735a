"""Karpenter's disruption controllers (consolidation, drift, expiration; issue 11) and the
constants they and `gpucap lint` share (`constants.py`)."""
