"""The bundled EKS-optimized AMI releases and the diff between two of them.

Expected values are read from `../shared/data/eks-ami-releases.json` (the release notes of
awslabs/amazon-eks-ami) by hand; see that folder's README for the AL2023 NVIDIA driver table the
diff cases come from.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from gpucap.cloudprovider.aws.amifamily.releases import (
    AMIRelease,
    UnknownReleaseError,
    bundled_releases,
    coverage_end,
    diff_releases,
    find_release,
    latest_release,
    release_for_release_version,
    releases_for,
)

ROOT = Path(__file__).resolve().parents[3]
SHARED = ROOT.parent / "shared" / "data"


def versions(releases: tuple[AMIRelease, ...]) -> list[str]:
    return [r.version for r in releases]


def build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_ami_releases", ROOT / "scripts" / "build_ami_releases.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- the bundled data --------------------------------------------------------------------------


@pytest.mark.skipif(not (SHARED / "eks-ami-releases.json").exists(), reason="no shared data")
def test_the_bundled_file_is_what_the_build_script_makes_from_the_shared_data() -> None:
    bundled = ROOT / "src" / "gpucap" / "data" / "ami" / "eks-ami-releases.json"
    assert build_script().build(SHARED) == bundled.read_text(encoding="utf-8")


def test_the_build_gives_a_release_seen_for_one_variant_every_variant_of_that_minor() -> None:
    note = (
        "SSM /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/recommended/"
        "release_version returned 1.36.3-20260827"
    )
    seen = build_script().seen_in(note)
    assert [(s["kubernetes"], s["family"], s["arch"], s["variant"]) for s in seen] == [
        ("1.36", "al2023", "x86_64", "standard"),
        ("1.36", "al2023", "x86_64", "nvidia"),
        ("1.36", "al2023", "x86_64", "neuron"),
        ("1.36", "al2023", "arm64", "standard"),
        ("1.36", "al2023", "arm64", "nvidia"),
    ]


def test_releases_are_bundled_newest_first_with_unique_versions() -> None:
    releases = bundled_releases()
    assert len(releases) == 103
    assert versions(releases) == sorted(versions(releases), reverse=True)
    assert len(set(versions(releases))) == len(releases)
    assert [r.date for r in releases] == sorted((r.date for r in releases), reverse=True)


def test_coverage_ends_at_the_newest_bundled_release() -> None:
    assert coverage_end() == dt.date(2026, 8, 27)


def test_find_release_returns_a_release_with_its_per_minor_images() -> None:
    release = find_release("v20260714")
    assert release is not None
    assert (release.date, release.status, release.contents_known) == (
        dt.date(2026, 7, 14),
        "released",
        True,
    )
    assert release.kubernetes_versions == ("1.36", "1.35", "1.34", "1.33", "1.32", "1.31", "1.30")
    assert release.release_version("1.36") == "1.36.2-20260714"
    nvidia = release.image("1.36", "al2023", "x86_64", "nvidia")
    assert nvidia is not None
    assert (
        nvidia.name,
        nvidia.nvidia_driver,
        nvidia.cuda_from_driver,
        nvidia.containerd,
        nvidia.kernel,
        nvidia.kernel_series,
    ) == (
        "amazon-eks-node-al2023-x86_64-nvidia-1.36-v20260714",
        "580.159.03",
        "13.0",
        "2.2.4",
        "6.18.36-69.138.amzn2023",
        "6.18",
    )
    neuron = release.image("1.36", "al2023", "x86_64", "neuron")
    assert neuron is not None
    assert (neuron.neuron_driver, neuron.nvidia_driver) == ("2.29.0.0", None)
    assert release.image("1.36", "al2023", "arm64", "neuron") is None
    assert release.image("1.36", "al2", "x86_64", "standard") is None


@pytest.mark.parametrize("version", ["v20990101", "20260714", "al2023@v20260714", ""])
def test_find_release_is_none_for_a_version_not_bundled(version: str) -> None:
    assert find_release(version) is None


def test_abandoned_releases_are_found_but_left_out_of_release_lists() -> None:
    for version in ("v20260311", "v20260128"):
        release = find_release(version)
        assert release is not None
        assert release.abandoned
        assert version not in versions(releases_for("1.35"))
        assert version in versions(releases_for("1.35", include_abandoned=True))


@pytest.mark.parametrize(
    ("variant", "first"),
    [("nvidia", "v20260827"), (None, "v20260827"), ("standard", "v20260827")],
)
def test_releases_for_1_36_are_newest_first(variant: str | None, first: str) -> None:
    found = releases_for("1.36", "al2023", "x86_64", variant)
    assert versions(found)[0] == first
    assert versions(found) == sorted(versions(found), reverse=True)
    assert versions(found)[-1] == "v20260610"  # the first release with 1.36
    assert all(r.release_version("1.36") for r in found)


def test_a_release_known_from_one_variant_is_known_for_every_variant_of_its_minor() -> None:
    # EKS publishes standard, NVIDIA and Neuron, x86_64 and arm64 together: SSM showed the
    # x86_64 NVIDIA AMI of v20260827 for 1.36, so the CPU and arm64 AMIs exist too.
    release = find_release("v20260827")
    assert release is not None
    assert not release.contents_known
    assert release.images == ()
    for arch, variant in (
        ("x86_64", "standard"),
        ("x86_64", "nvidia"),
        ("x86_64", "neuron"),
        ("arm64", "standard"),
        ("arm64", "nvidia"),
    ):
        assert release.has("1.36", "al2023", arch, variant), (arch, variant)
    assert latest_release("1.36", variant="standard") == release
    known = latest_release("1.36", variant="nvidia", contents_known_only=True)
    assert known is not None
    assert known.version == "v20260714"


def test_a_release_known_from_one_minor_is_known_only_for_that_minor() -> None:
    release = find_release("v20260827")
    assert release is not None
    assert not release.has("1.35", "al2023", "x86_64", "nvidia")
    assert not release.has("1.36", "al2", "x86_64")


def test_the_bundled_data_says_why_a_release_has_all_its_variants() -> None:
    import json  # noqa: PLC0415
    from importlib import resources  # noqa: PLC0415

    doc = json.loads(
        resources.files("gpucap").joinpath("data/ami/eks-ami-releases.json").read_text()
    )
    assert "every variant of a release together" in doc["variants"]


@pytest.mark.parametrize(
    ("image", "latest", "oldest"),
    [
        (("1.35", "al2023", "x86_64", "standard"), "v20260714", "v20260114"),
        (("1.31", "al2023", "x86_64", "nvidia"), "v20260714", "v20240924"),
        (("1.31", "al2023", "arm64", "nvidia"), "v20260714", "v20250403"),
        (("1.32", "al2", "x86_64", "nvidia"), "v20251209", "v20241225"),
        (("1.32", "al2", "x86_64", "gpu"), "v20251209", "v20241225"),
    ],
)
def test_latest_and_oldest_release_per_image(
    image: tuple[str, str, str, str], latest: str, oldest: str
) -> None:
    found = releases_for(*image)
    assert (found[0].version, found[-1].version) == (latest, oldest)
    release = latest_release(*image)
    assert release is not None
    assert release.version == latest


def test_there_is_no_al2_release_for_1_33() -> None:
    assert latest_release("1.33", "al2") is None


def test_an_ami_name_karpenter_would_not_build_is_kept_and_flagged() -> None:
    release = find_release("v20240924")
    assert release is not None
    image = release.image("1.30", "al2023", "x86_64", "nvidia")
    assert image is not None
    assert image.name == "amazon-eks-node-al2023-x86_64-nvidia-560-1.30-v20240924"
    assert not image.name_matches_karpenter
    standard = release.image("1.30", "al2023", "x86_64", "standard")
    assert standard is not None
    assert standard.name_matches_karpenter


def test_the_shared_package_column_kernel_is_not_given_to_the_al2_gpu_ami() -> None:
    release = find_release("v20240209")
    assert release is not None
    gpu = release.image("1.29", "al2", "x86_64", "nvidia")
    standard = release.image("1.29", "al2", "x86_64", "standard")
    assert gpu is not None
    assert standard is not None
    assert (gpu.kernel, gpu.kernel_series, gpu.nvidia_driver) == (None, None, "535.129.03")
    assert standard.kernel == "5.10.209-198.812.amzn2"


@pytest.mark.parametrize(
    ("release_version", "expected"),
    [
        ("1.36.3-20260827", "v20260827"),
        ("1.35.6-20260714", "v20260714"),
        ("1.35.7-20260714", None),  # not the patch that release shipped
        ("1.36.2-20990101", None),
        ("v20260714", None),
    ],
)
def test_an_eks_release_version_maps_back_to_its_release(
    release_version: str, expected: str | None
) -> None:
    found = release_for_release_version(release_version)
    assert (found.version if found else None) == expected


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: releases_for("1.36", "bottlerocket"), "cover al2023, al2 only"),
        (lambda: releases_for("1.36", arch="s390x"), "architecture 's390x'"),
        (lambda: releases_for("1.36", variant="gpu"), "variant 'gpu' for al2023"),
        (lambda: releases_for("v1.36"), "expected major.minor"),
    ],
)
def test_questions_the_data_cannot_answer_are_value_errors(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=message):
        call()


# ---- diff_releases ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("releases", "k8s", "drivers", "cuda", "major_changed"),
    [
        # README table: v20250410 moved 1.25-1.31 from the 560 to the 570 branch.
        (("v20250403", "v20250410"), "1.31", ("560.35.05", "570.124.06"), ("12.6", "12.8"), True),
        # ... while 1.32 was already on 570 in v20250403.
        (("v20250403", "v20250410"), "1.32", ("570.124.06", "570.124.06"), ("12.8", "12.8"), False),
        # A minor driver update within the 570 branch.
        (("v20250410", "v20250419"), "1.31", ("570.124.06", "570.133.20"), ("12.8", "12.8"), False),
        # v20250807 went back from 575 to 570.
        (("v20250715", "v20250807"), "1.31", ("575.57.08", "570.172.08"), ("12.9", "12.8"), True),
        # 570 -> 580 on 1.34 in v20251023.
        (("v20251016", "v20251023"), "1.34", ("570.195.03", "580.95.05"), ("12.8", "13.0"), True),
    ],
)
def test_diff_flags_an_nvidia_driver_major_version_change_and_not_a_minor_one(
    releases: tuple[str, str],
    k8s: str,
    drivers: tuple[str, str],
    cuda: tuple[str, str],
    major_changed: bool,
) -> None:
    old, new = releases
    diff = diff_releases(old, new, k8s, family="al2023", arch="x86_64", variant="nvidia")
    driver = diff.field("nvidia_driver")
    assert (driver.old, driver.new) == drivers
    assert (diff.field("cuda_from_driver").old, diff.field("cuda_from_driver").new) == cuda
    assert diff.driver_major_changed is major_changed


def test_the_560_to_570_diff_in_human_lines() -> None:
    diff = diff_releases("v20250403", "v20250410", "1.31", variant="nvidia")
    assert diff.lines() == [
        "al2023 x86_64/nvidia, Kubernetes 1.31: v20250403 -> v20250410",
        "  kernel: 6.1.131-143.221.amzn2023 (unchanged)",
        "  containerd: 1.7.27 (unchanged)",
        "  NVIDIA driver: 560.35.05 -> 570.124.06  [driver major version 560 -> 570: "
        "test GPU workloads before rolling out]",
        "  CUDA (supported by the driver): 12.6 -> 12.8",
        "  NVIDIA container toolkit: 1.17.5 (unchanged)",
    ]
    assert [c.field for c in diff.changes] == ["nvidia_driver", "cuda_from_driver"]
    assert (diff.old_driver_major, diff.new_driver_major) == (560, 570)


def test_a_driver_branch_downgrade_is_flagged_as_such() -> None:
    diff = diff_releases("v20250715", "v20250807", "1.31")
    assert diff.driver_downgraded
    assert not diff.is_downgrade  # the release itself is newer
    assert "575 -> 570, a downgrade" in "\n".join(diff.lines())


def test_diffing_backwards_is_a_release_downgrade() -> None:
    diff = diff_releases("v20250410", "v20250403", "1.31")
    assert diff.is_downgrade
    assert diff.driver_major_changed
    assert "  v20250403 is older than v20250410" in diff.lines()


def test_a_standard_image_has_no_driver_to_flag() -> None:
    diff = diff_releases("v20250403", "v20250410", "1.31", variant="standard")
    assert diff.field("nvidia_driver").old is None
    assert not diff.driver_major_changed
    assert not any("NVIDIA" in line for line in diff.lines())


def test_the_neuron_image_diff_shows_the_neuron_driver() -> None:
    diff = diff_releases("v20260625", "v20260714", "1.35", variant="neuron")
    neuron = diff.field("neuron_driver")
    assert neuron.new == "2.29.0.0"
    assert any(line.startswith("  Neuron driver: ") for line in diff.lines())


def test_the_al2_nvidia_diff_reads_the_gpu_ami() -> None:
    diff = diff_releases("v20250715", "v20250807", "1.31", family="al2", variant="nvidia")
    assert diff.old_image is not None
    assert diff.old_image.variant == "gpu"
    assert diff.field("neuron_driver").changed


def test_a_diff_to_a_release_with_unknown_contents_says_so_and_flags_nothing() -> None:
    diff = diff_releases("v20260714", "v20260827", "1.36")
    assert diff.new_image is None
    assert not diff.driver_major_changed
    lines = diff.lines()
    assert lines[1].startswith("  v20260827: contents unknown (seed ")
    assert "  NVIDIA driver: 580.159.03 -> unknown" in lines


def test_a_diff_to_a_release_without_that_image_says_so() -> None:
    diff = diff_releases("v20260505", "v20260714", "1.36")
    assert diff.old_image is None
    assert "  v20260505 has no al2023 x86_64/nvidia AMI for Kubernetes 1.36" in diff.lines()


def test_a_diff_with_an_abandoned_release_says_so() -> None:
    diff = diff_releases("v20260304", "v20260311", "1.35")
    assert "  v20260311 is marked ABANDONED in the release notes" in diff.lines()


def test_a_diff_needs_bundled_releases() -> None:
    with pytest.raises(UnknownReleaseError, match="newest: v20260827, 2026-08-27"):
        diff_releases("v20260714", "v20990101", "1.36")
