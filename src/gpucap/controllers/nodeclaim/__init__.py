"""Karpenter's NodeClaim controllers: the lifecycle (launch, registration, initialization,
liveness) and the constants and status conditions it shares with termination."""
