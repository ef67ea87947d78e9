"""A token check in front of a Chroma server: `python -m chromagate`.

`chroma run`, the server of chromadb 1.x, checks no token: any local process can read and
write every person's memory on it. This gate listens where the bot connects, refuses every
request without "Authorization: Bearer <token>" (what chromadb's TokenAuthClientProvider
sends, CHROMA_AUTH_TOKEN on the bot's side) with chromadb's own 403 body, and forwards the rest
to the Chroma server, which the units keep in a network namespace of its own
(deploy/chroma.service), reachable only through the gate.

Why code of our own: chromadb's Python server, which checks tokens, fails reading items with
their vectors in 1.5.9, and a general proxy (nginx, caddy) would be a system package and a
configuration template for one header comparison. Part of no other package; imports aiohttp.
"""

from chromagate.gate import GateConfig, build_app, serve

__all__ = ["GateConfig", "build_app", "serve"]
