"""The emulator process: moto in server mode on loopback, with our moto fixes applied.

Run by :mod:`chaos.sandbox.sandbox` as ``python -m chaos.sandbox.emulator --port N``. IAM enforcement
starts once the sandbox has bootstrapped its identities (moto's ``/moto-api/reset-auth``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading

from chaos.sandbox.emulator_env import UNPATCHED_ENV


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()

    # moto reads its settings at import time: enforcement is off until the sandbox turns it on.
    os.environ.setdefault("INITIAL_NO_AUTH_ACTION_COUNT", "inf")
    from moto.server import ThreadedMotoServer

    if os.environ.get(UNPATCHED_ENV) != "1":
        from chaos.sandbox import extensions, moto_fixes

        moto_fixes.apply()
        extensions.install(f"http://{args.host}:{args.port}")

    # werkzeug's line per request costs CPU the sandbox's clients need; errors are still logged.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address=args.host, port=args.port, verbose=False)
    server.start()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    print(f"emulator listening on http://{args.host}:{args.port}", flush=True)
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
