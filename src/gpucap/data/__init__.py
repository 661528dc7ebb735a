"""Package data: the bundled catalog, AMI releases and the workshop example manifests."""
