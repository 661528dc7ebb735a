"""Cluster state: the nodes, NodeClaims and pods that exist, as Karpenter's cluster state sees
them (`pkg/controllers/state`)."""
