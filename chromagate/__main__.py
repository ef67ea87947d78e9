"""`python -m chromagate --upstream URL [--token-file FILE] [--host H --port P]`: run the gate.

The token is CHROMA_AUTH_TOKEN from the environment (the unit's root-only environment file, the
same one the bot reads), or the file given, holding the token alone (a trailing line break is
ignored). A missing or empty token stops it with one line and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from chromagate.gate import GateConfig, serve

EXIT_CONFIG = 2


async def _run(config: GateConfig, host: str, port: int) -> None:
    runner = await serve(config, host=host, port=port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chromagate",
                                     description="A token check in front of a Chroma server.")
    parser.add_argument("--upstream", required=True, help="the Chroma server, e.g. http://127.0.0.1:8001")
    parser.add_argument("--token-file", type=Path, help="a file holding the token alone "
                                                           "(default: CHROMA_AUTH_TOKEN from the environment)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.token_file is None:
        token = os.environ.pop("CHROMA_AUTH_TOKEN", "").strip()
        where = "CHROMA_AUTH_TOKEN"
    else:
        where = f"the token file {args.token_file}"
        try:
            token = args.token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            print(f"config error: {where} cannot be read: {exc}", file=sys.stderr)
            return EXIT_CONFIG
    if not token:
        print(f"config error: {where} is empty", file=sys.stderr)
        return EXIT_CONFIG
    asyncio.run(_run(GateConfig(args.upstream, token), args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
