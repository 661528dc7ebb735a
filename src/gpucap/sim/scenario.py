"""Loading a scenario (`gpucap simulate SCENARIO`): the YAML -> a `LoadedScenario`, checked.

The Scenario document (`apis/scenario.py`, format in contract.md) is read through the same
loader as every manifest (`apis/serde.load_text`, bounded by `apis/limits.py`), so its own
field errors are the loader's. Then what needs more than the document is checked and resolved:
the manifest files it names (relative to the scenario file, loaded exactly as `plan` loads
files, under one input budget), capacity events against the catalog, scale/delete events
against the objects applied before them (spec.manifests, then apply events in time order), the
NodeClaim names of interrupt events, `timings` keys and values, `addons`, `start` (an RFC 3339
time), `reservations` (a DescribeCapacityReservations document, a file relative to the scenario
or inline, read by `apis/capacityreservation.py`) and the reservations `reclaim` events name
(an interruptible one that the reservations hold).

Any problem is a `ScenarioError`: one line naming the scenario file and the field, with the
event's index (`basic.yaml: events[3].capacity.instanceType: 'g9.huge' is not in the catalog
(did you mean 'g6.xlarge'?)`); the CLI prints it and exits 2, as for any `InputError`. Field
paths are written from `spec` down, without `spec.`: the scenario's own fields are what people
write. Called by `sim/world.py` and the `simulate` command.
"""

from __future__ import annotations

import datetime as dt
import errno
import functools
import json
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gpucap.apis.apirules import dns1123_subdomain_problem
from gpucap.apis.capacityreservation import Reservations, load_reservations, parse_reservations
from gpucap.apis.duration import DurationError, format_seconds, parse_go_duration
from gpucap.apis.errors import FieldPath, closest_name, format_path
from gpucap.apis.limits import Budget, InputLimitError
from gpucap.apis.meta import NamespacedObjectMeta
from gpucap.apis.reading import InputError, manifest_files, os_reason, read_path
from gpucap.apis.scenario import EVENT_ACTIONS, EVENT_KINDS, Scenario, ScenarioEvent
from gpucap.apis.serde import (
    KINDS,
    Issue,
    LoadResult,
    Manifest,
    effective,
    load_documents,
    load_text,
    parse_text,
)
from gpucap.apis.yamltext import documents
from gpucap.cloudprovider.aws.coldstart import TIMING_FIELDS, TIMING_KEYS
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.instancetype.resolve import offered_zones
from gpucap.runtime.clock import EPOCH
from gpucap.runtime.rfc3339 import parse_rfc3339
from gpucap.sim.kubelet import Addon
from gpucap.sim.metrics import MetricFeed, load_metrics
from gpucap.sim.worldspec import WorldConfig, load_world

__all__ = [
    "SCALABLE_KINDS",
    "TIMING_KEYS",
    "Addon",
    "CapacityAction",
    "LoadedScenario",
    "ScenarioAction",
    "ScenarioError",
    "ami_release_problem",
    "load_scenario",
]

# The `spec.timings` keys (camelCase, as written) and the `Timings` fields they override.
_TIMING_FIELDS = TIMING_FIELDS

_T = TypeVar("_T")

# Kinds a scale event may change: the workloads with `spec.replicas`.
SCALABLE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "LeaderWorkerSet")


class ScenarioError(InputError):
    """A scenario gpucap cannot run: one line per problem, each naming the file and the field
    (`problems`; `str` joins them with newlines). The loader reports every problem it can find
    in one run (`_Loader.load`)."""

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems

    def lines(self) -> tuple[str, ...]:
        return self.problems


@dataclass(frozen=True, slots=True)
class CapacityAction:
    """A capacity event: `available` for the offerings it names, from its time for `duration`
    seconds (None: to the end). `instance_type` None: every type (of `instance_family` when it
    is set); `zone`/`capacity_type` None: every zone / capacity type. `instance_types`: the
    catalog's types it names (what the world closes or opens)."""

    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    available: bool
    duration: float | None
    instance_family: str | None = None
    instance_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScenarioAction:
    """One timed event, resolved. `kind` is the YAML's name of its action."""

    index: int
    t: float
    kind: str  # "apply" | "scale" | "delete" | "capacity" | "interrupt" | "amiRelease" | "reclaim"
    documents: tuple[dict[str, Any], ...] = ()  # apply: the documents as written
    source: str = ""  # apply: the file, or "<scenario>:events[i].apply.manifest"
    ref: tuple[str, str, str] | None = None  # scale/delete: (kind, namespace or "", name)
    replicas: int | None = None  # scale
    capacity: CapacityAction | None = None
    interrupt_node_claim: str | None = None
    ami_release: tuple[str, str] | None = None  # (kubernetesVersion, version)
    reclaim_reservation: str | None = None  # reclaim: the reservation's id
    # apply: the documents loaded and validated (the later of an object twice), as `plan` loads
    # them; not in SIM-INTERFACES, added because the world applies objects, not dicts.
    manifests: tuple[Manifest, ...] = ()


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario ready to run: everything checked, times in seconds, files loaded."""

    path: str
    name: str
    region: str
    kubernetes_version: str
    seed: int
    duration: float
    initial: tuple[Manifest, ...]  # spec.manifests, as `plan` loads files (later wins)
    actions: tuple[ScenarioAction, ...]  # sorted by (t, index)
    images: dict[str, tuple[int, int]]  # bytes (compressed, uncompressed)
    ami_releases: dict[str, list[str]] | None
    addons: tuple[Addon, ...]
    timings: dict[str, float]  # overrides, keyed by the `Timings` field names
    # The loader's warnings (unfilled placeholders, ignored kinds, duplicates), one line each,
    # for the CLI to print as `plan` prints them. Not in SIM-INTERFACES.
    warnings: tuple[str, ...] = ()
    # Every file the scenario read (itself first), so that the CLI can refuse to write an
    # output over one of them (`--events`, `--report`). Not in SIM-INTERFACES.
    inputs: tuple[str, ...] = ()
    # `spec.start`: the simulated clock's start (EPOCH unless given).
    start: dt.datetime = EPOCH
    # `spec.reservations`: the account's capacity reservations; None when the scenario has none.
    reservations: Reservations | None = None
    # `spec.world` (`sim/worldspec.py`); None when the scenario has no `world` block.
    world: WorldConfig | None = None
    # `spec.metrics`: the traces feeding HorizontalPodAutoscalers (`sim/metrics.py`).
    metrics: tuple[MetricFeed, ...] = ()
    # `--cost-floor` (simulate, sweep): record the cost floor (`sim/costfloor.py`); set by the
    # command, not the document, as it changes what is recorded, not the world.
    cost_floor: bool = False


CatalogSource = Catalog | Callable[[str], Catalog]


def load_scenario(
    path: str,
    catalog: CatalogSource,
    *,
    reservations: Reservations | None = None,
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> LoadedScenario:
    """Load and check the scenario at `path`. `catalog` is the region's catalog, or a function
    from the scenario's region to it (so the caller need not read the region first).
    `reservations` (`simulate --reservations`) replace the scenario's `spec.reservations`.
    `edit` changes the parsed document in place before it is checked (a sweep's Scenario axes,
    `sim/sweep.py`); what it raises reaches the caller."""
    return _Loader(path, reservations, edit).load(catalog)


# ---- the loader -------------------------------------------------------------------------------
_REF = tuple[str, str, str]
_K8S_VERSION = re.compile(r"[0-9]{1,9}\.[0-9]{1,9}")
_AMI_VERSION = re.compile(r"v[0-9]{8}")


class _Loader:
    def __init__(
        self,
        path: str,
        reservations: Reservations | None = None,
        edit: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.path = path
        self.given_reservations = reservations
        self.edit = edit
        self.first_apply: dict[_REF, ScenarioAction] = {}
        self.warnings: list[str] = []
        self.inputs: list[str] = [path]
        self.base = Path(path).parent
        self.budget = Budget()  # one budget for the scenario and every file it names
        self.problems: list[str] = []  # what `load` found so far (see `_gather`)

    def fail(self, path: FieldPath, message: str) -> ScenarioError:
        return ScenarioError(f"{self.path}: {format_path(path)}: {message}")

    # -- the document
    def _gather(self, fn: Callable[[], _T]) -> _T | None:
        """`fn()`, or None with its problems kept: the parts of a scenario that do not depend on
        one another are each checked, so one run reports every problem."""
        try:
            return fn()
        except ScenarioError as e:
            self.problems.extend(e.problems)
            return None

    def load(self, catalog_source: CatalogSource) -> LoadedScenario:
        sc = self.document()
        s = sc.spec
        self._gather(lambda: self.versions(sc))
        if isinstance(catalog_source, Catalog):
            catalog = catalog_source
            if catalog.region != s.region:
                raise self.fail(
                    ("region",), f"{s.region!r}, but the catalog is for {catalog.region}"
                )
        else:
            catalog = catalog_source(s.region)
        initial: list[Manifest] = []
        for i, name in enumerate(s.manifests):
            files = self._gather(functools.partial(self.files, ("manifests", i), name))
            if files is not None:
                initial.extend(files[0])
        gathered = [
            self._gather(functools.partial(self.action, i, e, catalog))
            for i, e in enumerate(s.events)
        ]
        actions = [a for a in gathered if a is not None]
        actions.sort(key=lambda a: (a.t, a.index))
        start = self._gather(lambda: self.start(sc))
        reservations = self._gather(lambda: self.reservations(sc))
        if reservations is not None or s.reservations is None:
            # (a file that did not load says so once; its ids are not then unknown too)
            for a in actions:
                if a.reclaim_reservation is not None:
                    self._gather(functools.partial(self.check_reclaim, a, reservations))
        metrics: tuple[MetricFeed, ...] | None = ()
        if not self.problems:
            # Only over a whole scenario: a file that did not load would make its objects look
            # never applied.
            self._gather(lambda: self.check_refs(effective(initial), actions))
            # spec.metrics against the HPAs applied (sim/metrics.py)
            metrics = self._gather(lambda: load_metrics(self, s, initial, actions))
        images = self._gather(lambda: self.images(sc))
        timings = self._gather(lambda: self.timings(sc))
        world = self._gather(lambda: load_world(sc, catalog, self.fail))  # sim/worldspec.py
        if self.problems:
            raise ScenarioError(*self.problems)
        assert images is not None
        assert timings is not None
        return LoadedScenario(
            path=self.path,
            name=sc.metadata.name,
            region=s.region,
            kubernetes_version=s.kubernetes_version,
            seed=s.seed,
            duration=parse_go_duration(s.duration),
            initial=tuple(effective(initial)),
            actions=tuple(actions),
            images=images,
            ami_releases=None if s.ami_releases is None else dict(s.ami_releases),
            addons=tuple(
                Addon(
                    a.name,
                    a.time_slicing.replicas if a.time_slicing else 1,
                    a.time_slicing.rename_by_default if a.time_slicing else False,
                )
                for a in s.addons
            ),
            timings=timings,
            warnings=tuple(self.warnings),
            inputs=tuple(self.inputs),
            start=start or EPOCH,
            reservations=reservations,
            world=world,
            metrics=metrics or (),
        )

    # -- time and reservations
    def start(self, sc: Scenario) -> dt.datetime:
        """`spec.start`: an RFC 3339 time with a zone, in UTC."""
        text = sc.spec.start
        if text is None:
            return EPOCH
        try:
            when = parse_rfc3339(text)
        except ValueError:
            raise self.fail(
                ("start",), f"{text!r} is not an RFC 3339 time (e.g. 2026-03-01T00:00:00Z)"
            ) from None
        if when.tzinfo is None:
            raise self.fail(("start",), f"{text!r} has no zone: add Z (UTC) or an offset")
        return when.astimezone(dt.timezone.utc)

    def reservations(self, sc: Scenario) -> Reservations | None:
        """`spec.reservations`: the file (relative to the scenario) or the inline document,
        read as `plan --reservations` reads a file; its errors are this field's."""
        if self.given_reservations is not None:
            return self.given_reservations
        given = sc.spec.reservations
        if given is None:
            return None
        try:
            if isinstance(given, str):
                target = given if os.path.isabs(given) else str(self.base / given)
                self.inputs.append(target)
                return load_reservations(target)
            return parse_reservations(given, source=f"{self.path}:reservations")
        except InputError as err:
            raise self.fail(("reservations",), str(err)) from None

    def check_reclaim(self, action: ScenarioAction, reservations: Reservations | None) -> None:
        """A `reclaim` event names an interruptible reservation of `spec.reservations`."""
        rid = action.reclaim_reservation
        field = ("events", action.index, "reclaim", "reservation")
        known = reservations.by_id() if reservations is not None else {}
        item = known.get(rid or "")
        if item is None:
            hint = closest_name(rid or "", sorted(known))
            raise self.fail(
                field,
                f"{rid!r} is not among spec.reservations"
                + (f" (did you mean {hint!r}?)" if hint else ""),
            )
        if not item.interruptible:
            raise self.fail(
                field,
                f"{rid} is not an interruptible reservation (Interruptible: true); only those "
                "can be reclaimed by their owner",
            )

    def document(self) -> Scenario:
        text = read_path(self.path, self.budget)  # InputError names the file
        result = self._edited(text) if self.edit is not None else None
        if result is None:
            result = load_text(text, self.path, budget=self.budget)
        if result.errors:
            raise ScenarioError(*(self.scenario_issue(issue) for issue in result.errors))
        self.warnings.extend(str(w) for w in result.warnings)
        loaded = [m.obj for m in result.manifests]
        if len(loaded) != 1 or not isinstance(loaded[0], Scenario):
            kinds = ", ".join(o.kind for o in loaded) or "nothing gpucap reads"
            raise ScenarioError(
                f"{self.path}: a scenario file holds one document of kind Scenario "
                f"(apiVersion gpucap.dev/v1alpha1); found {kinds}"
            )
        return loaded[0]

    def _edited(self, text: str) -> LoadResult | None:
        """The document parsed, changed by `edit` and loaded; None when the text is not one
        mapping (the plain load then says what it is)."""
        assert self.edit is not None
        parsed = parse_text(text, self.path, self.budget)
        if isinstance(parsed, str) or len(parsed) != 1 or not isinstance(parsed[0][0], dict):
            return None
        data, lines = parsed[0]
        self.edit(data)
        return load_documents([(data, lines)], self.path, budget=self.budget)

    def scenario_issue(self, issue: Issue) -> str:
        """An error the loader found in the scenario document, as one line: the file, then the
        field from `spec` down."""
        if issue.source is None or issue.source.file != self.path or not issue.path:
            return str(issue)
        path = issue.path[1:] if issue.path[0] == "spec" and len(issue.path) > 1 else issue.path
        message = issue.message
        if len(path) == 3 and path[0] == "events" and message.startswith("unknown field"):
            # A misspelt action: say it is the event's kind, with the kind it most likely meant.
            word = str(path[2])
            hint = closest_name(word, ("at", *EVENT_KINDS))
            message = f"unknown event kind {word!r}" + (
                f" (did you mean {hint!r}?)"
                if hint
                else f"; an event has 'at' and one of {', '.join(EVENT_KINDS)}"
            )
        return f"{self.path}: {format_path(path)}: {message}"

    # -- files
    def files(
        self, field: FieldPath, name: str
    ) -> tuple[list[Manifest], tuple[dict[str, Any], ...]]:
        """The manifests (and raw documents) of the file or directory `name` (relative to the
        scenario), loaded as `plan` loads them; any error is this scenario's, at `field`."""
        target = name if os.path.isabs(name) else str(self.base / name)
        try:
            is_dir = stat.S_ISDIR(os.stat(target).st_mode)
        except OSError as err:
            if err.errno in {errno.ENOENT, errno.ENOTDIR}:
                where = "" if target == name else f" (looked for {target})"
                raise self.fail(field, f"{name!r} does not exist{where}") from None
            raise self.fail(field, f"{name!r}: {os_reason(err)}") from None
        except ValueError:  # a NUL in the name
            raise self.fail(field, f"{name!r} is not a valid path") from None
        paths = [target]
        if is_dir:
            try:
                found = manifest_files(target, self.budget)
            except InputError as err:
                raise self.fail(field, str(err)) from None
            paths = sorted(str(f) for f in found)
            if not paths:
                raise self.fail(field, f"{name!r}: no *.yaml, *.yml or *.json files")
        result = LoadResult()
        raw: list[dict[str, Any]] = []
        for p in paths:
            self.inputs.append(p)
            try:
                text = read_path(p, self.budget)
            except InputError as err:
                raise self.fail(field, str(err)) from None
            # Grouped placeholder errors and duplicates as `plan` reports them, per file.
            loaded = load_text(text, p, budget=self.budget)
            self.check_loaded(field, loaded, None)
            raw.extend(_raw_documents(text, p))
            result.extend(loaded)
        return result.manifests, tuple(raw)

    def inline(self, field: FieldPath, manifest: dict[str, Any]) -> list[Manifest]:
        source = f"{self.path}:{format_path(field)}"
        try:
            self.budget.charge_bytes(len(json.dumps(manifest)))
        except InputLimitError as err:
            raise self.fail(field, str(err)) from None
        loaded = load_text(json.dumps(manifest), source, budget=self.budget)
        self.check_loaded(field, loaded, source)
        if not loaded.manifests:
            raise self.fail(
                field,
                f"kind {manifest.get('kind')!r} is not a kind gpucap reads (nothing to apply)",
            )
        return loaded.manifests

    def check_loaded(self, field: FieldPath, loaded: LoadResult, inline: str | None) -> None:
        self.warnings.extend(str(w) for w in loaded.warnings)
        for issue in loaded.errors:
            text = str(issue)
            if inline is not None and issue.source is not None:
                # The inline manifest has no file of its own: name the object and its field.
                text = text.removeprefix(f"{issue.source}").lstrip()
            raise self.fail(field, text)
        for m in loaded.manifests:
            if isinstance(m.obj, Scenario):
                raise self.fail(field, f"{m.source}: a Scenario cannot be applied by a scenario")

    # -- events
    def action(self, i: int, e: ScenarioEvent, catalog: Catalog) -> ScenarioAction:
        at: FieldPath = ("events", i)
        t = parse_go_duration(e.at)  # checked by the loader (apis/validation.py)
        (attr,) = e.actions  # exactly one, checked by the loader
        kind = EVENT_KINDS[EVENT_ACTIONS.index(attr)]
        if e.apply is not None:
            if e.apply.file is not None:
                manifests, raw = self.files((*at, "apply", "file"), e.apply.file)
                source = e.apply.file
            else:
                assert e.apply.manifest is not None  # exactly one, checked by the loader
                field = (*at, "apply", "manifest")
                manifests, raw = self.inline(field, e.apply.manifest), (e.apply.manifest,)
                source = f"{self.path}:{format_path(field)}"
            # As `plan` reads files: the same object twice, the later one wins.
            return ScenarioAction(
                i, t, kind, documents=raw, manifests=tuple(effective(manifests)), source=source
            )
        if e.scale is not None:
            ref = self.ref((*at, "scale"), e.scale.kind, e.scale.namespace, e.scale.name)
            if ref[0] not in SCALABLE_KINDS:
                raise self.fail(
                    (*at, "scale", "kind"),
                    f"{ref[0]} cannot be scaled; a scale event changes the replicas of a "
                    f"{', '.join(SCALABLE_KINDS)}",
                )
            return ScenarioAction(i, t, kind, ref=ref, replicas=e.scale.replicas)
        if e.delete is not None:
            ref = self.ref((*at, "delete"), e.delete.kind, e.delete.namespace, e.delete.name)
            return ScenarioAction(i, t, kind, ref=ref)
        if e.capacity is not None:
            return ScenarioAction(i, t, kind, capacity=self.capacity(at, e, catalog))
        if e.interrupt is not None:
            name = e.interrupt.node_claim
            problem = dns1123_subdomain_problem(name)
            if problem is not None:
                raise self.fail((*at, "interrupt", "nodeClaim"), f"not a NodeClaim name: {problem}")
            return ScenarioAction(i, t, kind, interrupt_node_claim=name)
        if e.reclaim is not None:
            return ScenarioAction(i, t, kind, reclaim_reservation=e.reclaim.reservation)
        assert e.ami_release is not None
        r = e.ami_release
        if not _K8S_VERSION.fullmatch(r.kubernetes_version):
            raise self.fail(
                (*at, "amiRelease", "kubernetesVersion"),
                f'{r.kubernetes_version!r} is not a Kubernetes minor version (e.g. "1.36")',
            )
        problem = ami_release_problem(r.version)
        if problem is not None:
            raise self.fail((*at, "amiRelease", "version"), problem)
        return ScenarioAction(i, t, kind, ami_release=(r.kubernetes_version, r.version))

    def ref(self, field: FieldPath, kind: str, namespace: str, name: str) -> _REF:
        if kind not in KINDS or kind == "Scenario":
            hint = closest_name(kind, [k for k in KINDS if k != "Scenario"])
            raise self.fail(
                (*field, "kind"),
                f"unknown kind {kind!r}" + (f" (did you mean {hint!r}?)" if hint else ""),
            )
        namespaced = KINDS[kind][2]
        return (kind, namespace if namespaced else "", name)

    def capacity(self, at: FieldPath, e: ScenarioEvent, catalog: Catalog) -> CapacityAction:
        """The capacity event resolved against the catalog: the types it names (one, a
        family's, or all), each checked to exist; a zone checked to be the region's and to
        offer at least one of them."""
        c = e.capacity
        assert c is not None
        field = (*at, "capacity")
        if (c.instance_type, c.instance_family, c.zone, c.capacity_type) == (None,) * 4:
            raise self.fail(
                field,
                "names no offerings: give an instanceType or instanceFamily, a zone, a "
                "capacityType, or a combination",
            )
        names = catalog.names
        if c.instance_type is not None and c.instance_type not in names:
            hint = closest_name(c.instance_type, names)
            raise self.fail(
                (*field, "instanceType"),
                f"{c.instance_type!r} is not in the catalog of {catalog.region}"
                + (f" (did you mean {hint!r}?)" if hint else ""),
            )
        families = sorted({i.family for i in catalog.infos})
        if c.instance_family is not None and c.instance_family not in families:
            hint = closest_name(c.instance_family, families)
            raise self.fail(
                (*field, "instanceFamily"),
                f"{c.instance_family!r} is not an instance family of the catalog of "
                f"{catalog.region}" + (f" (did you mean {hint!r}?)" if hint else ""),
            )
        if c.instance_type is not None:
            types: tuple[str, ...] = (c.instance_type,)
            family = catalog.info(c.instance_type).family
            if c.instance_family is not None and family != c.instance_family:
                raise self.fail(
                    (*field, "instanceFamily"),
                    f"{c.instance_type} is of family {family}, not {c.instance_family}",
                )
        else:
            types = tuple(i.name for i in catalog.infos if c.instance_family in (None, i.family))
        if c.zone is not None:
            if c.zone not in catalog.zones:
                raise self.fail(
                    (*field, "zone"),
                    f"{c.zone!r} is not a zone of the catalog of {catalog.region} "
                    f"({', '.join(catalog.zones)})",
                )
            zone, region, known = c.zone, catalog.region, catalog.zones
            types = tuple(t for t in types if zone in offered_zones(catalog.info(t), region, known))
            if not types and c.instance_type is not None:
                offered = catalog.info(c.instance_type).offerings or {}
                zones = ", ".join(offered.get(catalog.region, ())) or "none"
                raise self.fail(
                    (*field, "zone"),
                    f"{c.instance_type} is not offered in {c.zone} (its zones: {zones})",
                )
            if not types:
                raise self.fail(
                    (*field, "zone"),
                    f"no instance type of family {c.instance_family} is offered in {c.zone}"
                    if c.instance_family
                    else f"no instance type is offered in {c.zone}",
                )
        duration = None if c.for_ is None else parse_go_duration(c.for_)  # checked
        return CapacityAction(
            c.instance_type,
            c.zone,
            c.capacity_type,
            c.available,
            duration,
            instance_family=c.instance_family,
            instance_types=types,
        )

    def check_refs(self, initial: Sequence[Manifest], actions: Sequence[ScenarioAction]) -> None:
        """Each scale/delete names an object applied before it and not deleted since."""
        present: dict[_REF, str] = {_manifest_ref(m): "spec.manifests" for m in initial}
        deleted: dict[_REF, ScenarioAction] = {}
        for a in actions:
            for m in a.manifests:
                self.first_apply.setdefault(_manifest_ref(m), a)
        for a in actions:
            if a.kind == "apply":
                for m in a.manifests:
                    present[_manifest_ref(m)] = f"events[{a.index}]"
                    deleted.pop(_manifest_ref(m), None)
                continue
            if a.ref is None:
                continue
            if a.ref not in present:
                raise self.fail(("events", a.index, a.kind), self.missing(a, present, deleted))
            if a.kind == "delete":
                del present[a.ref]
                deleted[a.ref] = a

    def missing(
        self, a: ScenarioAction, present: dict[_REF, str], deleted: dict[_REF, ScenarioAction]
    ) -> str:
        assert a.ref is not None
        shown = _show_ref(a.ref)
        gone = deleted.get(a.ref)
        if gone is not None:
            return (
                f"{shown} was deleted by events[{gone.index}] at {format_seconds(gone.t)}, "
                f"before this event at {format_seconds(a.t)}"
            )
        later = self.first_apply.get(a.ref)
        if later is not None:
            return (
                f"{shown} is applied only later, by events[{later.index}] at "
                f"{format_seconds(later.t)}, not before this event at {format_seconds(a.t)}"
            )
        hint = closest_name(_show_ref(a.ref), [_show_ref(r) for r in present if r[0] == a.ref[0]])
        return (
            f"{shown} is never applied before {format_seconds(a.t)} (not in spec.manifests nor "
            "an earlier apply event)" + (f"; did you mean {hint}?" if hint else "")
        )

    # -- the rest
    def versions(self, sc: Scenario) -> None:
        s = sc.spec
        if not _K8S_VERSION.fullmatch(s.kubernetes_version):
            raise self.fail(
                ("kubernetesVersion",),
                f'{s.kubernetes_version!r} is not a Kubernetes minor version (e.g. "1.36")',
            )
        for minor, releases in (s.ami_releases or {}).items():
            if not _K8S_VERSION.fullmatch(minor):
                raise self.fail(
                    ("amiReleases", minor),
                    f'{minor!r} is not a Kubernetes minor version (e.g. "1.36")',
                )
            for j, version in enumerate(releases):
                problem = ami_release_problem(version)
                if problem is not None:
                    raise self.fail(("amiReleases", minor, j), problem)

    def timings(self, sc: Scenario) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, value in sc.spec.timings.items():
            field = _TIMING_FIELDS.get(key)
            if field is None:
                hint = closest_name(key, TIMING_KEYS)
                raise self.fail(
                    ("timings", key),
                    f"unknown timing {key!r}"
                    + (
                        f" (did you mean {hint!r}?)"
                        if hint
                        else f"; known: {', '.join(TIMING_KEYS)}"
                    ),
                )
            try:
                seconds = parse_go_duration(value)
            except DurationError as err:
                raise self.fail(("timings", key), str(err)) from None
            if seconds < 0:
                raise self.fail(("timings", key), f"{value!r} must not be negative")
            out[field] = seconds
        return out

    def images(self, sc: Scenario) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for image, size in sc.spec.images.items():
            compressed = size.compressed.value()
            # Without an uncompressed size, twice the compressed one (as lint's --image-size).
            uncompressed = (
                2 * compressed if size.uncompressed is None else size.uncompressed.value()
            )
            if compressed <= 0:
                raise self.fail(("images", image, "compressed"), "must be a positive size")
            if uncompressed < compressed:
                raise self.fail(
                    ("images", image, "uncompressed"),
                    f"{size.uncompressed} is smaller than the compressed size {size.compressed}",
                )
            out[image] = (compressed, uncompressed)
        return out


def ami_release_problem(version: str) -> str | None:
    """Why `version` is not an EKS AMI release version (`v` and the release date, YYYYMMDD), or
    None. The date must be one (`v20260230` is not): found here, where the scenario gives it,
    rather than by every launch that would look the release up."""
    if not _AMI_VERSION.fullmatch(version):
        return f"{version!r} is not an EKS AMI release version (e.g. v20261001)"
    year, month, day = version[1:5], version[5:7], version[7:9]
    try:
        dt.date(int(year), int(month), int(day))
    except ValueError:
        return f"{version!r} is not an EKS AMI release version: {year}-{month}-{day} is not a date"
    return None


def _manifest_ref(m: Manifest) -> _REF:
    obj = m.obj
    meta = obj.metadata
    namespace = meta.namespace if isinstance(meta, NamespacedObjectMeta) else ""
    return (obj.kind, namespace, meta.name)


def _show_ref(ref: _REF) -> str:
    kind, namespace, name = ref
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def _raw_documents(text: str, file: str) -> list[dict[str, Any]]:
    """The documents of a file that already loaded, as written (lists' items flattened)."""
    out: list[dict[str, Any]] = []
    for data, _ in documents(text, file, Budget()):
        if isinstance(data, dict) and data.get("kind") == "List":
            out.extend(d for d in data.get("items") or [] if isinstance(d, dict))
        elif isinstance(data, dict):
            out.append(data)
    return out
