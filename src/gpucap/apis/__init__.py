"""Manifest models (Karpenter v1, EC2NodeClass, core Kubernetes, GPU Operator), their defaults,
CRD validation and (de)serialisation. The boundary layer: everything above it works on typed,
defaulted, validated objects."""
