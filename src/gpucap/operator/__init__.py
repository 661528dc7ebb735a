"""gpucap's composition root, named after Karpenter AWS's `pkg/operator`: where the provider
stack is assembled (`stack.py`, once for `plan` and the simulator alike) and where `plan` runs
the provisioning loop over it (`plan.py`). The layer sits between the commands and their
engines (`lint`, `sim`, `report`, `cli`) and the controllers below, so the controllers see only
the CloudProvider seam and never the AWS provider.
"""
