"""bench/step_trace.py: an overlapped step's trace as intervals per stream."""
import pytest

from script_modules import load_script

st = load_script("bench/step_trace.py")


def entry(kind, name, stream, start, end, index=0, segment="forward"):
    return {"kind": kind, "name": name, "index": index, "stream": stream, "segment": segment,
            "start_ms": start, "end_ms": end}


def test_union_and_subtract():
    assert st.union([[3, 4], [0, 1], [0.5, 2], [5, 5]]) == [[0, 2], [3, 4]]
    assert st.subtract([[0, 10]], [[1, 2], [4, 6], [9, 12]]) == [[0, 1], [2, 4], [6, 9]]
    assert st.subtract([[0, 1], [3, 5]], [[0, 4]]) == [[4, 5]]
    assert st.length([[0, 1.5], [2, 3]]) == pytest.approx(2.5)


def test_exposed_collectives_and_gaps():
    # Stream 0: a GEMM 0-4, then waits for the all-gather (stream 1, 3-6),
    # then attention 6-8; the collective is covered 3-4 and exposed 4-6.
    trace = {"total_ms": 8.0, "entries": [
        entry("gemm", "gemm", 0, 0.0, 4.0, index=1),
        entry("collective", "all_gather", 1, 3.0, 6.0, index=2),
        entry("event", "wait_event", 0, 4.0, 6.0, index=3),
        entry("launch", "weft_attn_fwd", 0, 6.0, 8.0, index=4),
    ]}
    timing = {"entries": [
        {"kind": "gemm", "index": 1, "ms": 3.0},
        {"kind": "collective", "index": 2, "ms": 2.0},
        {"kind": "event", "index": 3, "ms": 0.0},
        {"kind": "launch", "index": 4, "ms": 2.0},
    ]}
    s = st.summarize(trace, timing)
    assert s["compute_busy_ms"] == pytest.approx(6.0)
    assert s["compute_idle_ms"] == pytest.approx(2.0)
    assert s["collective_ms"] == pytest.approx(3.0)
    assert s["collective_exposed_ms"] == pytest.approx(2.0)
    assert s["collective_exposed_by_segment_ms"] == {"forward": pytest.approx(2.0)}
    assert s["by_category_ms"] == {"gemm": 4.0, "collective": 3.0, "attention": 2.0}
    assert s["alone_by_category_ms"]["gemm"] == pytest.approx(3.0)
    assert s["gaps"][0]["ms"] == pytest.approx(2.0)
    assert s["gaps"][0]["next"].startswith("weft_attn_fwd (index 4")
    assert s["gaps"][0]["collectives_running"] == ["all_gather"]


def test_timing_of_another_package_refused():
    trace = {"total_ms": 1.0, "entries": [entry("gemm", "gemm", 0, 0.0, 1.0, index=1)]}
    with pytest.raises(SystemExit, match="another package"):
        st.summarize(trace, {"entries": [{"kind": "launch", "index": 1, "ms": 1.0}]})


def test_exposed_time_by_segment():
    # A forward all-gather 1 ms exposed; a backward reduce-scatter covered by
    # the weight gradient's GEMM but for its last 0.5 ms.
    trace = {"total_ms": 6.0, "entries": [
        entry("collective", "all_gather", 1, 0.0, 1.0, index=1),
        entry("gemm", "gemm", 0, 1.0, 3.0, index=2),
        entry("gemm", "gemm", 0, 3.0, 5.0, index=3, segment="backward"),
        entry("collective", "reduce_scatter", 1, 3.0, 5.5, index=4, segment="backward"),
    ]}
    s = st.summarize(trace)
    assert s["collective_exposed_ms"] == pytest.approx(1.5)
    assert s["collective_exposed_by_segment_ms"] == {"forward": pytest.approx(1.0),
                                                     "backward": pytest.approx(0.5)}
    assert "alone_by_category_ms" not in s
