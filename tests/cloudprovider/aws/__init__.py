"""Tests of the AWS provider: the instance-type catalog and Karpenter's capacity model."""
