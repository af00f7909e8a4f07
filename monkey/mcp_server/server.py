"""The MCP server: ``tools/list`` and ``tools/call`` over monkey's tools, the same for stdio and HTTP.

Built on the ``mcp`` SDK's low-level :class:`mcp.server.Server`; the SDK answers the
protocol (the ``initialize`` handshake and the stateless revision, JSON-RPC errors for
malformed requests and unknown methods); a tool's failure is a result with ``isError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from monkey.mcp_server.approver import REQUEST, client_name
from monkey.mcp_server.host import ToolHost
from monkey.mcp_server.tasks import AGENT_TOOLS, AgentTasks
from monkey.mcp_server.tools import agent_definitions, definitions

if TYPE_CHECKING:
    from mcp.server import Server

__all__ = ["build_server", "INSTRUCTIONS"]

INSTRUCTIONS = (
    "monkey's workspace tools: read, write, edit and delete files, run shell commands, list and search. "
    "Paths are relative to the workspace and cannot leave it. Every change is checkpointed so "
    "`monkey undo` reverts it; monkey's deny rules and protected paths (.git, .monkey) apply, and shell "
    "commands run in its sandbox."
)


def build_server(host: ToolHost) -> Server[Any]:
    """The SDK server whose handlers run calls through ``host`` (and whole tasks through its ``tasks``)."""
    import mcp_types as types
    from mcp.server import Server

    from monkey import __version__
    from monkey.tools.registry import default_tools

    own = {tool.name for tool in default_tools()}  # never another MCP server's tools the agent may have
    tools = definitions(tool for tool in host.agent.tools if tool.name in own)
    tasks = host.tasks
    if tasks is not None:
        tools += agent_definitions()
    names = {tool.name for tool in tools}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in names:
            text = f"unknown tool {params.name!r}; monkey serve has: {', '.join(sorted(names))}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        arguments = dict(params.arguments or {})
        if tasks is not None and params.name in AGENT_TOOLS:
            return await _task(tasks, params.name, arguments)
        token = REQUEST.set(ctx)  # the turn's task inherits it: the approver may ask the client's user
        try:
            result = await host.call(params.name, arguments, via=client_name(ctx))
        finally:
            REQUEST.reset(token)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.output)], is_error=not result.ok
        )

    return Server(
        "monkey",
        version=__version__,
        title="monkey",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _task(tasks: AgentTasks, name: str, arguments: dict[str, Any]) -> Any:
    """Run ``agent`` or ``agent_reply``; the answer as text and as structured content."""
    import mcp_types as types

    prompt, session_id = arguments.get("prompt"), arguments.get("session_id")
    if not isinstance(prompt, str) or (name == "agent_reply" and not isinstance(session_id, str)):
        need = "prompt (a string)" if name == "agent" else "session_id and prompt (strings)"
        text = f"invalid arguments for {name}: it needs {need}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
    done = await (tasks.start(prompt) if name == "agent" else tasks.reply(str(session_id), prompt))
    text = done.result + (f"\n\n[monkey session {done.session_id}: {done.reason}]" if done.session_id else "")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=done.structured(), is_error=not done.ok
    )
