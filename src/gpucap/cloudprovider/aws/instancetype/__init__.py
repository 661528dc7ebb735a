"""The AWS provider's instance types, grouped as aws/karpenter-provider-aws groups them
(`pkg/providers/instancetype/`; review-2026-12-b §3.4).

Bottom up (an import-linter contract keeps this order):

- `capacity.py`: Karpenter's capacity model, every constant and formula (`types.go`).
- `data.py`: `InstanceTypeInfo` rows, the `--catalog` file parser, the bundled data and its
  column packing, `CatalogError`. File formats: `docs/catalog-format.md`.
- `pricing.py`: a type's prices in one region, `--prices` overrides, spot estimates.
- `settings.py`: `NodeClassSettings`, the EC2NodeClass inputs the types are resolved for.
- `resolve.py`: a row resolved for a region and node class as the scheduler's `InstanceType`
  (`NewInstanceType` and the base offerings), plus `InstanceTypeDetails` for the few callers
  that show the overhead and prices.
- `catalog.py`: `Catalog` (a region's types, resolved once per node class) and `load_catalog`.

Import from the module that defines a name; this package re-exports nothing.
"""
