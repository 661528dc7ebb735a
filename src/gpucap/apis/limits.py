"""gpucap's input limits: how much input one run reads, and how far it lets input expand.

Every limit here is enforced where the input is read or expanded, with a one-line error naming
the file (and the document and field where there is one) and exit status 2; the README's
"Errors" section lists them and `docs/design/apis.md` says how the numbers were chosen. They are
sized so that the largest real cluster export fits with room to spare: Kubernetes' own
scalability thresholds stop a cluster at 150,000 pods, and a pod as `kubectl get pods -A -o
json` prints it takes about 5-9 KB, so a whole cluster's pods are about 1 GiB of JSON.

`Budget` carries the counters of one run across the files it reads (`apis/serde.load_paths`
makes one; `apis/reading` and the YAML reader in `apis/serde` charge it). The fuzzer
(`tests/fuzz/`) and the README cite these constants.

Not overridable: a real export fits every limit with room to spare, and a limit a user can lift
is one a CI job feeding untrusted manifests would have to remember not to lift.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_DIRECTORY_ENTRIES",
    "MAX_FILE_BYTES",
    "MAX_INPUT_BYTES",
    "MAX_INT_DIGITS",
    "MAX_OBJECTS",
    "MAX_PODS",
    "MAX_WORKLOAD_PODS",
    "Budget",
    "InputLimitError",
]

# One file, or stdin: ~130,000 pods of `kubectl get pods -A -o json` (8 KB each).
MAX_FILE_BYTES = 1 << 30
# Everything one run reads (files, directories, stdin).
MAX_INPUT_BYTES = 2 << 30
# Nested mappings and sequences in one document. Kubernetes objects go about 20 deep (a pod's
# required node affinity inside a JobSet's job template); a CustomResourceDefinition's
# openAPIV3Schema embedding a pod template about 60. libyaml stops at 1,000 either way.
MAX_DEPTH = 128
# Digits of one integer. Every integer field Kubernetes has is an int64 (19 digits); the room
# above it lets the field's own check say what is wrong (`int32 out of range`).
MAX_INT_DIGITS = 100
# YAML nodes one file may add by aliases and merge keys (`*anchor`, `<<: *defaults`), beyond the
# nodes written out: a "billion laughs" file is refused after about a million, in about a second.
MAX_ALIAS_NODES = 1_000_000
# YAML documents and `kind: List` items one run reads (150,000 pods and what owns them).
MAX_OBJECTS = 500_000
# Files and directories a run looks through in the directories it is given (every entry counts,
# manifest or not): a repository of manifests has thousands; `/` or a runaway tree is refused in
# a few seconds instead of being walked for minutes.
MAX_DIRECTORY_ENTRIES = MAX_OBJECTS
# Pods one workload may make (replicas x group size...): Kubernetes' 150,000 pods per cluster.
MAX_WORKLOAD_PODS = 150_000
# Pods all of the input may make, Pods and workloads together.
MAX_PODS = 150_000


class InputLimitError(ValueError):
    """Input beyond one of the limits above; the message is one line naming the limit."""


def _count(n: int) -> str:
    return f"{n:,}"


def size_text(n: int) -> str:
    """`1 GiB`, `512 MiB`, `2,000 bytes`: how the errors print a byte limit."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{_count(n >> shift)} {unit}"
    return f"{_count(n)} bytes"


@dataclass(slots=True)
class Budget:
    """What one run has read so far, checked against the limits (one per `load_paths` call)."""

    input_bytes: int = 0
    objects: int = 0
    pods: int = 0
    entries: int = 0
    # Set once a run-wide limit is hit: the loader stops reading, so the error is said once.
    exhausted: bool = False

    def charge_bytes(self, n: int) -> None:
        """Count `n` more bytes read; raises once the whole input is over MAX_INPUT_BYTES."""
        self.input_bytes += n
        if self.input_bytes > MAX_INPUT_BYTES:
            self.exhausted = True
            raise InputLimitError(
                f"the input is larger than {size_text(MAX_INPUT_BYTES)} in all "
                "(gpucap's limit for one run)"
            )

    def charge_object(self) -> None:
        """Count one more document or `kind: List` item; raises past MAX_OBJECTS."""
        self.objects += 1
        if self.objects > MAX_OBJECTS:
            self.exhausted = True
            raise InputLimitError(
                f"more than {_count(MAX_OBJECTS)} documents and List items in all "
                "(gpucap's limit for one run)"
            )

    def charge_entry(self) -> None:
        """Count one more directory entry looked at; raises past MAX_DIRECTORY_ENTRIES."""
        self.entries += 1
        if self.entries > MAX_DIRECTORY_ENTRIES:
            self.exhausted = True
            raise InputLimitError(
                f"more than {_count(MAX_DIRECTORY_ENTRIES)} files and directories to look "
                "through in all (gpucap's limit for one run)"
            )

    def charge_pods(self, n: int) -> str | None:
        """Count `n` more pods; past MAX_PODS, the message to report (once per run)."""
        self.pods += n
        if self.pods > MAX_PODS and not self.exhausted:
            self.exhausted = True
            return (
                f"the input makes more than {_count(MAX_PODS)} pods in all "
                "(gpucap's limit, Kubernetes' own for one cluster)"
            )
        return None


__all__ += ["size_text"]
