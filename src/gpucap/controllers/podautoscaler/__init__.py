"""Kubernetes' HorizontalPodAutoscaler controller (kubernetes/kubernetes
`pkg/controller/podautoscaler`): the replica calculation per metric (`replica_calculator.py`)
and the controller's normalization, stabilization and rate limits (`horizontal.py`)."""
