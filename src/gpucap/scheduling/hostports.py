"""Host ports in use on a node (Karpenter's `HostPortUsage`, `pkg/scheduling/hostportusage.go`).

Two pods conflict when they ask for the same host port and protocol on the same IP, an
unspecified IP (0.0.0.0 or ::) overlapping every IP. Only regular containers' ports count, as in
Karpenter. Called by the scheduler for new, in-flight and existing nodes.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from gpucap.apis.core import Pod

__all__ = ["HostPort", "HostPortUsage", "host_ports"]


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    port: int
    protocol: str

    def matches(self, other: HostPort) -> bool:
        if self.protocol != other.protocol or self.port != other.port:
            return False
        return self.ip == other.ip or _unspecified(self.ip) or _unspecified(other.ip)


def _unspecified(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).is_unspecified
    except ValueError:
        return False


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    return tuple(
        HostPort(p.host_ip or "0.0.0.0", p.host_port, p.protocol)
        for c in pod.spec.containers
        for p in c.ports
        if p.host_port
    )


@dataclass(slots=True)
class HostPortUsage:
    """Ports reserved on one node, by pod key."""

    reserved: dict[str, tuple[HostPort, ...]] = field(default_factory=dict)

    def copy(self) -> HostPortUsage:
        return HostPortUsage(dict(self.reserved))

    def add(self, pod: Pod, ports: tuple[HostPort, ...]) -> None:
        if ports:
            self.reserved[pod.key] = ports

    def conflict(self, pod: Pod, ports: tuple[HostPort, ...]) -> str | None:
        """Why `pod` cannot use `ports` here (Karpenter's wording), or None."""
        for new in ports:
            for owner, entries in self.reserved.items():
                if owner == pod.key:
                    continue
                for existing in entries:
                    if new.matches(existing):
                        return (
                            "pod hostport conflicts with existing hostport configuration "
                            f"({new.ip}:{new.port}/{new.protocol} used by {owner})"
                        )
        return None
