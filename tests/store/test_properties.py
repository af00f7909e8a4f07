"""Property-based tests: the chain check finds exactly what was removed or changed, and the
derived conversation keeps tool results in call order whatever order they finish in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from monkey import events as ev
from monkey.store.chain import check_chain, link
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
