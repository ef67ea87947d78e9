"""One TLS context per process, shared by the HTTP clients of agent/, memory/ and bot/.

A client's default TLS context loads the whole CA bundle, tens of milliseconds of CPU each
time; the bot builds several clients at start (the model, the embeddings endpoint, the tools'
HTTP) and the tests build them for every runtime. `tls_context()` builds httpx's default once
(`httpx.create_ssl_context`: certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set) and
hands every caller the same one: an SSLContext may be shared by clients and threads.
Limits of sharing: httpcore sets the context's ALPN protocols on every connection it opens, so
every client given it must speak HTTP/1.1 only (no `http2=True`) and load no client
certificate of its own; SSL_CERT_FILE / SSL_CERT_DIR are read once, at the first call.

Shared: imports only httpx, nothing from agent/, memory/ or bot/ (as envsettings).
"""

from __future__ import annotations

import functools
import ssl

import httpx

__all__ = ["tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's TLS context: certificates required and host names checked."""
    return httpx.create_ssl_context()
