"""The simulated AWS account gpucap runs on by default: `ec2.py` (`SimulatedEC2`, EC2 and SSM in
memory over the catalog, on the simulator's clock). Apart from the EC2 API seam it implements
(`ec2/api.py`), as Karpenter AWS keeps its fake EC2 API apart (`pkg/fake/`) from the providers
that use the real one: it launches with the instance provider's model of EC2 Fleet's pick and
publishes the AMI releases the AMI provider resolves, so it sits above both and neither imports
it back."""
