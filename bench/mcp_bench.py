"""MCP benchmark: what a tool call through an MCP server costs, next to a built-in tool.

Run: `python bench/mcp_bench.py [--calls N] [--runs R]`. Prints figures; asserts nothing.

Each call goes through ToolRegistry.call (argument validation included), as the agent makes it:
(a) a built-in-style in-process async tool that echoes its text (the baseline);
(b) the test MCP server's echo tool (tests/fakes/mcp_server.py, FastMCP) over stdio;
(c) the same over streamable HTTP on loopback.
Per transport: the start-up time (connect, initialize, list tools), then R runs of N calls one
after another; the median and p95 call latency over all calls, and the median of the runs'
calls per second; also 20 concurrent calls' wall time. Ratios are against (a).

Part of bench/: imports agent/ and the test server; never imported by the product.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.tools.mcp import McpTools, parse_mcp_config  # noqa: E402
from agent.tools.registry import ToolContext, ToolRegistry  # noqa: E402
from tests.fakes.mcp_http import McpHttpServer, stdio_entry  # noqa: E402
from bench.figures import percentile  # noqa: E402

CTX = ToolContext(user_id="1", channel_id="2", guild_id="3")


async def measure(registry: ToolRegistry, name: str, calls: int, runs: int) -> dict[str, float]:
    latencies: list[float] = []
    rates: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        for i in range(calls):
            t0 = time.perf_counter()
            result = await registry.call(name, {"text": f"ping {i}"}, CTX)
            latencies.append((time.perf_counter() - t0) * 1000.0)
            if not result.ok:
                raise RuntimeError(f"{name}: {result.observation}")
        rates.append(calls / (time.perf_counter() - started))
    t0 = time.perf_counter()
    await asyncio.gather(*(registry.call(name, {"text": "x"}, CTX) for _ in range(20)))
    burst_ms = (time.perf_counter() - t0) * 1000.0
    return {"p50_ms": statistics.median(latencies), "p95_ms": percentile(latencies, 95),
            "calls_per_s": statistics.median(rates), "burst20_ms": burst_ms}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"{args.runs} runs x {args.calls} sequential calls each")

    baseline = ToolRegistry()

    @baseline.tool
    async def echo(text: str) -> str:
        """Say the text back."""
        return text

    rows = [("in-process tool", 0.0, await measure(baseline, "echo", args.calls, args.runs))]
    async with McpHttpServer() as http:
        for label, entry in (("MCP stdio", stdio_entry()), ("MCP streamable HTTP", {"url": http.url})):
            config = parse_mcp_config(json.dumps({"mcpServers": {"t": entry}}), {})
            t0 = time.perf_counter()
            async with McpTools(config) as mcp:
                start_ms = (time.perf_counter() - t0) * 1000.0
                rows.append((label, start_ms, await measure(mcp.registry(), "t__echo", args.calls, args.runs)))
    base = rows[0][2]["p50_ms"]
    print(f"{'path':<22}{'start ms':>10}{'p50 ms':>10}{'p95 ms':>10}{'calls/s':>10}{'20 at once ms':>15}"
          f"{'p50 / in-process':>18}")
    for label, start_ms, m in rows:
        print(f"{label:<22}{start_ms:>10.0f}{m['p50_ms']:>10.3f}{m['p95_ms']:>10.3f}{m['calls_per_s']:>10.0f}"
              f"{m['burst20_ms']:>15.1f}{m['p50_ms'] / base:>18.0f}")


if __name__ == "__main__":
    asyncio.run(main())
