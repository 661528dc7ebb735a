"""Karpenter AWS's AMI provider (aws `pkg/providers/amifamily/`), in four files:

- `resolver.py`: an EC2NodeClass's `amiSelectorTerms` to AMIs with requirements (aliases, SSM
  parameters, DescribeImages), as `ami.go`, `types.go` and the per-family files resolve them;
- `images.py`: the `ImageProvider` the cloud provider asks, with Karpenter's 24-hour cache, the
  type-to-AMI mapping (`MapToInstanceTypes`) and the AMIsReady condition;
- `releases.py`: the bundled EKS-optimized AMI release list and release diffs (gpucap's own);
- `ami.py`: the queries behind `gpucap ami` (recommended and listed releases).
"""
