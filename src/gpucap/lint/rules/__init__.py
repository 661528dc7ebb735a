"""The lint rules, one module per family; importing this package registers them all."""

from . import ami, disruption, gpu, nodepool, pods, schema, sharing, spot, storage

__all__ = ["ami", "disruption", "gpu", "nodepool", "pods", "schema", "sharing", "spot", "storage"]
