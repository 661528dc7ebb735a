"""Karpenter AWS's capacity reservations (`pkg/providers/capacityreservation`): which On-Demand
Capacity Reservations, Capacity Blocks for ML and interruptible reservations an EC2NodeClass's
`capacityReservationSelectorTerms` select, how many instances each can still take, and the
node class's `status.capacityReservations`.

- `types.py`: the DescribeCapacityReservations queries of the selector terms, and the
  availability counts between two queries;
- `describe.py`: EC2's answer over a reservations file at a given time (offline);
- `provider.py`: `CapacityReservationProvider` (Karpenter's `List` and the marks), `select`;
- `status.py`: the node class status entries.

The reservations come from a reservations file (`apis/capacityreservation.py`) or from real
AWS through the `EC2API` seam.
"""
