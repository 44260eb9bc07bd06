"""A real language model on loopback: llama.cpp's OpenAI-compatible server (llama-cpp-python) serving
Gemma 3 270M, both installed by the Makefile into ``.venv-llm``; the tests and bench.local_model use it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chaos.loopback import LOOPBACK, free_port, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
LLM_VENV = ROOT / ".venv-llm"
MODEL_FILE = LLM_VENV / "gemma-3-270m-q4_k_m.gguf"
ALIAS = "gemma3"  # the name the server answers to: the supervisor's model is openai:gemma3
STARTUP_SECONDS = 180.0


class NotInstalled(RuntimeError):
    """The server or the model is missing: ``make test`` installs both."""


@contextmanager
def llama_server(log: Path) -> Iterator[str]:
    """The server's base URL (``http://127.0.0.1:<port>/v1``) while it runs; its output goes to ``log``."""
    python = LLM_VENV / "bin" / "python"
    if not python.exists() or not MODEL_FILE.exists():
        raise NotInstalled(f"no llama.cpp server or model in {LLM_VENV}: run `make .venv-llm/.installed`")
    port = free_port()
    command = [
        str(python), "-m", "llama_cpp.server", "--model", str(MODEL_FILE), "--model_alias", ALIAS,
        "--host", LOOPBACK, "--port", str(port), "--n_ctx", "8192", "--n_threads", "2",
        "--chat_format", "chatml-function-calling",
    ]  # fmt: skip
    # Passive OpenMP threads: on a machine busy with other tests, spinning ones would starve each other.
    environment = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with log.open("wb") as output:
        process = subprocess.Popen(  # noqa: S603 - our own server, fixed arguments
            command, stdout=output, stderr=subprocess.STDOUT, env=environment
        )
        try:
            url = f"http://{LOOPBACK}:{port}/v1"
            try:
                wait_healthy(url, STARTUP_SECONDS, alive=lambda: process.poll() is None, path="/models")
            except (RuntimeError, TimeoutError) as error:
                raise RuntimeError(f"{error}; the server said: {log.read_text()[-2000:]}") from error
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
