"""ChromaServer: a REAL Chroma server (`chroma run`) on 127.0.0.1 for tests and benches.

Not a fake of the protocol: it starts the `chroma` command that the installed chromadb
package ships (next to the running Python, e.g. .venv/bin/chroma) on a free loopback port
with its data in a folder, waits until GET /api/v2/heartbeat answers, and stops it
(terminate, then kill) on `stop()`. `kill()` stops it abruptly, as a crash would;
`pause()`/`resume()` freeze and thaw it (a server that hangs).

Use
    with ChromaServer(tmp_path / "chroma") as server:
        open_user_memory(host=server.host, port=server.port, ...)
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

__all__ = ["ChromaServer", "chroma_command", "free_port"]


def chroma_command() -> str:
    """The `chroma` executable installed with chromadb (beside this Python, else on PATH)."""
    beside = Path(sys.executable).parent / "chroma"
    if beside.is_file():
        return str(beside)
    found = shutil.which("chroma")
    if found is None:
        raise RuntimeError("the `chroma` command of the chromadb package is not installed")
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChromaServer:
    """One `chroma run` process on 127.0.0.1:<free port>, data under `path`."""

    host = "127.0.0.1"

    def __init__(self, path: str | os.PathLike[str], *, port: int | None = None,
                 start_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.port = port or free_port()
        self.start_timeout_s = start_timeout_s
        self.log_path = self.path.parent / f"chroma-server-{self.port}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> ChromaServer:
        self.path.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                [chroma_command(), "run", "--path", str(self.path), "--host", self.host, "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self._proc.returncode}: {self._log_tail()}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"chroma run did not answer on {self.url} within {self.start_timeout_s} s: "
                           f"{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Terminate the server and wait for it (kill after 10 s)."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        self._proc = None

    def kill(self) -> None:
        """Stop the server at once with SIGKILL, as a crash would."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=10)

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): it keeps its port but answers nothing."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server run again (SIGCONT)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
