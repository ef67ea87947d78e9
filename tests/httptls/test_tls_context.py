"""httptls: one TLS context per process, verifying as httpx's default does, shared by the clients."""

from __future__ import annotations

import ssl
import subprocess
import sys
from pathlib import Path

import certifi
import pytest

from agent.llm import LLMClient
from httptls import tls_context
from memory.semantic.embeddings import OpenAIEmbedder

REPO = Path(__file__).resolve().parents[2]


def test_every_caller_gets_the_same_context() -> None:
    assert tls_context() is tls_context()


def test_the_context_requires_certificates_and_checks_host_names() -> None:
    context = tls_context()

    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # a CA bundle is loaded


def test_ssl_cert_file_is_honoured_as_httpx_honours_it(tmp_path: Path) -> None:
    """In a fresh process (the context is built once per process): an operator's own CA file
    is the only one trusted, as with a client built without the shared context."""
    bundle = Path(certifi.where()).read_text()
    end = "-----END CERTIFICATE-----"
    own_ca = tmp_path / "one-ca.pem"
    own_ca.write_text(bundle[bundle.index("-----BEGIN CERTIFICATE-----"):bundle.index(end) + len(end)] + "\n")
    script = "from httptls import tls_context; print(tls_context().cert_store_stats()['x509_ca'])"
    done = subprocess.run([sys.executable, "-c", script], env={"SSL_CERT_FILE": str(own_ca), "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"


def test_the_model_and_embeddings_clients_load_no_ca_bundle_of_their_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tls_context()
    built: list[object] = []
    original = ssl.create_default_context

    def counting(purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH, *, cafile: str | None = None,
                 capath: str | None = None, cadata: str | bytes | None = None) -> ssl.SSLContext:
        built.append(cafile or capath or purpose)
        return original(purpose, cafile=cafile, capath=capath, cadata=cadata)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    LLMClient(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")
    OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", model="e")

    assert built == []
