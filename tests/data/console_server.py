"""A console script of an environment's server, `BIN/NAME ARGS...`, run as `BIN/python tests/data/console_server.py
NAME ARGS...`: the same script run as `__main__` with the same arguments and the same `sys.path`, by a fork of a
process of that environment that has imported its MCP SDK under pytest (tests/server_fork.py, `console`).
"""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
sys.path.insert(0, ROOT)
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import runpy  # noqa: E402

if __name__ == "__main__":
    script = str(Path(sys.executable).parent / sys.argv.pop(1))
    sys.argv[0] = script
    here = str(Path(__file__).resolve().parent)
    # the script's folder first, as running it would; neither this repository nor this folder
    sys.path[:] = [str(Path(script).parent), *(p for p in sys.path if p not in (ROOT, here))]
    runpy.run_path(script, run_name="__main__")
