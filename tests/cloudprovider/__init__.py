"""Tests of the cloud-provider layer (`gpucap.cloudprovider`)."""
