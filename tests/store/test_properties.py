"""Property-based tests: the chain check finds exactly what was removed or changed, and the
derived conversation keeps tool results in call order whatever order they finish in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from monkey import events as ev
from monkey.store.chain import check_chain, link, unpack
from monkey.store.conversation import Conversation


def _chain(n: int) -> list[tuple[int, str, bytes, bytes]]:
    rows, h = [], b""
    for seq in range(1, n + 1):
        data = f"row {seq}".encode()
        h = link(h, seq, "t", data)
        rows.append((seq, "t", data, h))
    return rows


@given(st.integers(min_value=2, max_value=60), st.data())
def test_chain_check_reports_exactly_the_damage(n: int, data: st.DataObject) -> None:
    rows = _chain(n)
    removed = set(data.draw(st.sets(st.integers(min_value=2, max_value=n), max_size=n // 2)))
    kept = [r for r in rows if r[0] not in removed]
    candidates = [i for i, r in enumerate(kept) if r[0] - 1 not in removed and i > 0]
    altered: set[int] = set()
    if candidates and data.draw(st.booleans()):
        i = data.draw(st.sampled_from(candidates))
        seq, tag, body, h = kept[i]
        kept[i] = (seq, tag, body + b"!", h)
        altered.add(seq)
    result = check_chain(kept)
    missing = {s for a, b in result.missing for s in range(a, b + 1)}
    last = max(r[0] for r in kept)
    assert missing == {s for s in removed if s < last}, "a cut-off tail is found by the row count instead"
    assert set(result.altered) == altered
    assert result.ok == (not missing and not altered)


@given(st.permutations(range(5)))
def test_tool_results_follow_call_order(order: list[int]) -> None:
    conv = Conversation()
    calls = [ev.ToolCallSpec(id=f"c{i}", name="file_read", arguments={"path": f"f{i}"}) for i in range(5)]
    conv.apply(ev.TurnStarted(turn=1, prompt="go"))
    conv.apply(ev.MessageCompleted(text="", tool_calls=calls))
    for i in order:
        conv.apply(ev.ToolResult(call_id=f"c{i}", name="file_read", ok=True, output=f"out {i}"))
    conv.apply(ev.IterationStarted(turn=1, iteration=2, max_iterations=20))
    tools = [m for m in conv.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tools] == [f"c{i}" for i in range(5)]
    assert [n.seq for n in conv.nodes] == list(range(1, 8))


_KINDS = st.sampled_from(["text_delta", "thinking_delta", "tool_result"])
_BODY = st.binary(max_size=40).map(lambda b: b'{"t":"' + b.hex().encode() + b'"}')


@given(st.lists(st.tuples(_KINDS, _BODY), min_size=1, max_size=80), st.integers(min_value=20, max_value=400), st.data())
def test_runs_of_deltas_unpack_to_the_same_chain(
    events: list[tuple[str, bytes]], run_bytes: int, data: st.DataObject
) -> None:
    """Rows written as runs of deltas read back as exactly the events added, with the chain whole;
    changing one byte of any row is found."""
    from monkey.store import recorder

    rows, h = [], b""
    for seq, (kind, body) in enumerate(events, start=1):
        h = link(h, seq, kind, body)
        rows.append(("s", seq, kind, 0.0, body, h))
    saved = recorder.RUN_BYTES
    recorder.RUN_BYTES = run_bytes
    try:
        packed = recorder._runs(rows)
    finally:
        recorder.RUN_BYTES = saved
    assert sum(r[6] for r in packed) == len(events)
    assert all(r[6] == 1 or r[2] in recorder.STREAMING for r in packed)
    stored = [(r[1], r[2], r[4], r[5], r[6]) for r in packed]
    back = list(unpack(stored))
    assert [(s, k, d) for s, k, d, _ in back] == [(s, k, d) for _, s, k, _, d, _ in rows]
    result = check_chain(back)
    assert result.ok and result.last_seq == len(events) and result.last_hash == h
    i = data.draw(st.integers(min_value=0, max_value=len(stored) - 1))
    seq, kind, body, stored_hash, n = stored[i]
    stored[i] = (seq, kind, body.replace(b"}", b"!}", 1), stored_hash, n)
    assert not check_chain(unpack(stored)).ok
