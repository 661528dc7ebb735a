"""The event log (`sim/recorder.py`): canonical events, JSON lines written as the run goes, the
same bytes for the same run, and nothing in a line that a terminal would act on."""

from __future__ import annotations

import io
import json

import pytest

from gpucap.sim.recorder import Event, Recorder, json_line, read_events

GPU = {"nvidia.com/gpu": 1}


def launched(r: Recorder, t: float = 3.0, **over: object) -> Event:
    fields: dict[str, object] = {
        "nodeClaim": "gpu-1",
        "nodePool": "gpu",
        "instanceType": "g5.xlarge",
        "zone": "us-east-1a",
        "capacityType": "spot",
        "pricePerHour": 0.3112,
        "gpus": 1,
    }
    fields.update(over)
    return r.emit(t, "NodeClaimLaunched", **fields)


def test_keys_come_out_in_one_order_whatever_order_they_were_passed_in() -> None:
    a = Recorder().emit(1, "PodEvicted", reason="Drained", node="n1", pod="default/a", extra=2)
    b = Recorder().emit(1, "PodEvicted", extra=2, pod="default/a", node="n1", reason="Drained")
    expected = (
        '{"t": 1.0, "type": "PodEvicted", "pod": "default/a", "node": "n1", "extra": 2, '
        '"reason": "Drained"}'
    )
    assert json_line(a) == json_line(b) == expected


def test_times_are_rounded_to_milliseconds_and_prices_to_six_decimals() -> None:
    r = Recorder()
    e = launched(r, t=12.34567, pricePerHour=0.31123456789)
    assert e.t == 12.346
    assert e.get("pricePerHour") == 0.311235
    ready = r.emit(
        13, "PodReady", pod="default/a", node="n1", pullSeconds=245.33333, loadSeconds=-0.0
    )
    assert json_line(ready) == (
        '{"t": 13.0, "type": "PodReady", "pod": "default/a", "node": "n1", '
        '"loadSeconds": 0.0, "pullSeconds": 245.333}'
    )


def test_nested_mappings_have_sorted_keys_and_tuples_become_lists() -> None:
    e = Recorder().emit(
        0,
        "NodeClaimCreated",
        nodeClaim="gpu-1",
        nodePool="gpu",
        instanceTypes=("g6.xlarge", "g5.xlarge"),
        extra={"b": 1, "a": {"d": 1, "c": 2}},
    )
    assert json_line(e) == (
        '{"t": 0.0, "type": "NodeClaimCreated", "nodeClaim": "gpu-1", "nodePool": "gpu", '
        '"extra": {"a": {"c": 2, "d": 1}, "b": 1}, "instanceTypes": ["g6.xlarge", "g5.xlarge"]}'
    )


def test_the_sink_gets_each_event_as_a_line_the_moment_it_is_emitted() -> None:
    sink = io.StringIO()
    r = Recorder(sink=sink)
    r.emit(0, "PodCreated", pod="default/a", gpus=GPU)
    assert sink.getvalue() == (
        '{"t": 0.0, "type": "PodCreated", "pod": "default/a", "gpus": {"nvidia.com/gpu": 1}}\n'
    )
    r.emit(1.5, "PodDeleted", pod="default/a")
    assert sink.getvalue().splitlines()[1] == '{"t": 1.5, "type": "PodDeleted", "pod": "default/a"}'
    assert [e.type for e in r.events] == ["PodCreated", "PodDeleted"]


def test_the_same_emits_give_the_same_bytes() -> None:
    def run() -> str:
        sink = io.StringIO()
        r = Recorder(sink=sink)
        r.emit(0, "PodCreated", pod="default/é-0", gpus={"nvidia.com/gpu": 2, "amd.com/gpu": 0})
        launched(r, t=1 / 3)
        r.emit(2, "LimitReached", nodePool="gpu", resource="nvidia.com/gpu", message="limit 6")
        return sink.getvalue()

    assert run() == run()
    assert "é" in run()  # printable text stays readable


HOSTILE = "default/\x1b[2Jx\n\r\t\x7f\x85\u202e\u200b\U000e0001y\\"


def test_a_hostile_name_cannot_reach_the_terminal_raw_but_reads_back_exactly() -> None:
    sink = io.StringIO()
    r = Recorder(sink=sink)
    r.emit(0, "PodDeleted", pod=HOSTILE)
    text = sink.getvalue()
    assert text.endswith("\n")
    assert text.count("\n") == 1
    assert text[:-1].isprintable()
    for escaped in ("\\u001b[2J", "\\u202e", "\\u0085", "\\udb40\\udc01"):
        assert escaped in text
    assert json.loads(text)["pod"] == HOSTILE
    assert read_events(io.StringIO(text)) == r.events


def test_events_read_back_from_their_lines_equal_the_events_written() -> None:
    sink = io.StringIO()
    r = Recorder(sink=sink)
    r.emit(0, "PodCreated", pod="default/a", gpus=GPU)
    launched(r, t=2.0004)
    r.emit(9, "NodeInitialized", nodeClaim="gpu-1", node="n1", gpusAdvertised={"nvidia.com/gpu": 4})
    back = read_events(io.StringIO(sink.getvalue() + "\n"))
    assert back == r.events
    assert [json_line(e) for e in back] == sink.getvalue().splitlines()


def test_a_bad_line_names_its_number() -> None:
    with pytest.raises(ValueError, match="line 2: an event needs a numeric 't'"):
        read_events(['{"t": 0, "type": "PodDeleted", "pod": "a"}', '{"type": "X"}'])
    with pytest.raises(ValueError, match="line 1: not a JSON object"):
        read_events(["[1]"])


def test_a_known_event_missing_a_field_the_summary_needs_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"NodeClaimLaunched event needs field\(s\) pricePerHour, gpus"
    ):
        Recorder().emit(
            0,
            "NodeClaimLaunched",
            nodeClaim="a",
            nodePool="p",
            instanceType="g5.xlarge",
            zone="z",
            capacityType="spot",
        )


def test_unknown_event_types_are_recorded_as_given() -> None:
    e = Recorder().emit(4, "SomethingNew", detail="x")
    assert e.to_json() == {"t": 4.0, "type": "SomethingNew", "detail": "x"}


def test_time_never_goes_backwards() -> None:
    r = Recorder()
    r.emit(5, "PodDeleted", pod="a")
    with pytest.raises(ValueError, match="events are emitted in time order"):
        r.emit(4.999, "PodDeleted", pod="b")
    r.emit(5, "PodDeleted", pod="c")  # equal times are fine


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"loadSeconds": float("nan")}, ValueError),
        ({"loadSeconds": float("inf")}, ValueError),
        ({"when": object()}, TypeError),
        ({"gpus": {1: 2}}, TypeError),
        ({"type": "x"}, ValueError),
    ],
)
def test_values_that_are_not_json_are_refused_where_they_are_emitted(
    fields: dict[str, object], error: type[Exception]
) -> None:
    with pytest.raises(error):
        Event(0.0, "PodReady", {"pod": "a", "node": "n", **fields})


def test_an_event_is_immutable() -> None:
    e = Recorder().emit(0, "PodDeleted", pod="a")
    with pytest.raises(TypeError):
        e.fields["pod"] = "b"  # type: ignore[index]
