"""Karpenter AWS's capacity-reservation controllers (aws/karpenter-provider-aws
`pkg/controllers/capacityreservation/`): `expiration.py` deletes the NodeClaims of a Capacity
Block about to end, `capacitytype.py` relabels reserved NodeClaims whose instance left its
reservation as on-demand. Both are singletons the simulator runs every minute."""
