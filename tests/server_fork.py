"""The test servers' processes, forked from one that has imported `mcp` already.

A stdio server in tests/data pays ~1.5 s of CPU importing the MCP SDK before it answers, and grounding opens a
fresh session, so a fresh process, for every replay: that import was most of what the grounding tests cost. Under
pytest each worker starts one fork server (`fork_server`, tests/conftest.py) that has imported it. A test server
script calls `hand_over()` first thing: when the process that started it (the test's, over the SDK's real stdio
pipes) has a fork server, the script hands it its argv, working directory, environment and stdin/stdout/stderr, and
the fork server forks a child that runs the script as `__main__` on those very pipes; the script's own process only
waits and exits with the child's status (killed, it takes the child with it). A server that a subprocess of the test
started (a `mcprl` run, a script) is forked by the test's fork server too. Anywhere else (a Ray worker started the
server, another python, a library preloaded by exec such as libfaketime's moved clock) the script runs as it is.
Standard library only: it runs before anything else the script imports.

A shipped server runs through it as `shipped(NAME)` (tests/data/shipped_server.py, for `python -m
mcprl.servers.NAME`), another environment's console script as `console(BIN, NAME)` (tests/data/console_server.py)
with a fork server of that environment (`start(BIN/python, CONSOLE_PRELOAD)`).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import sys
import zlib

FORKED = False  # set in a fork server's children: the script they run is the server itself


def _socket_path(pid: int) -> str:
    """Where the fork server of process `pid` for this python's environment listens."""
    return f"/tmp/mcprl-test-forks-{pid}-{zlib.crc32(sys.prefix.encode()):08x}.sock"


def hand_over() -> None:
    """Have the parent process's fork server run this script; return only where there is none (or it runs
    another python)."""
    if FORKED or "LD_PRELOAD" in os.environ:  # (libfaketime's moved clock, say: loaded by exec, never by a fork)
        return
    path = _socket_path(os.getppid())
    if not os.path.exists(path):  # a server that a subprocess of the test started: the test's fork server
        path = _socket_path(_parent_of(os.getppid()))
        if not os.path.exists(path):
            return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return
    state = {"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path, "python": _python()}
    state = json.dumps(state).encode()
    socket.send_fds(conn, [b"."], [0, 1, 2])
    conn.sendall(len(state).to_bytes(8, "big") + state)
    reply = b""
    while chunk := conn.recv(64):
        reply += chunk
    if reply == b"another python":  # (an environment of mcp 1.x, say): start as usual
        conn.close()
        return
    os._exit(int(reply) if reply.strip() else 1)


def _parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _python() -> list[str]:
    return [sys.prefix, sys.version]


def _run_child(state: dict, fds: list[int], closing: list) -> None:
    """In the forked child: become the script's process and run it; never returns."""
    global FORKED
    code = 1
    try:
        FORKED = True
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for s in closing:
            s.close()
        for fd, target in zip(fds, (0, 1, 2)):
            os.dup2(fd, target)
            os.close(fd)
        _new_stdio()
        os.chdir(state["cwd"])
        os.environ.clear()
        os.environ.update(state["env"])
        sys.argv, sys.path[:] = state["argv"], state["path"]
        if "random" in sys.modules:  # a process's own seed, as a fresh interpreter draws
            sys.modules["random"].seed()
        import runpy

        runpy.run_path(state["argv"][0], run_name="__main__")
        code = 0
    except SystemExit as e:  # as the interpreter ends on one
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            import atexit

            atexit._run_exitfuncs()  # as an interpreter's exit does (threads left running are not waited for)
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _new_stdio() -> None:
    """sys.stdin, .stdout and .stderr made anew on the script's fds 0-2, as an interpreter's start makes them (the
    fork server's, made on /dev/null, would take a pipe for a file that seeks)."""
    encoding = sys.stdout.encoding
    sys.stdin = sys.__stdin__ = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stdout = sys.__stdout__ = open(1, "w", encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stderr = sys.__stderr__ = open(  # noqa: SIM115
        2, "w", buffering=1, encoding=encoding, errors="backslashreplace", closefd=False
    )


def serve_forks(path: str, preload: list[str]) -> None:
    """The fork server: import `preload`, then fork a child per script that connects to `path`, until the
    process that started it is gone."""
    import importlib

    for name in preload:
        with contextlib.suppress(ImportError):  # (what this environment's SDK has)
            importlib.import_module(name)
    parent, me = os.getppid(), os.getpid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener.bind(path + ".new")
    listener.listen(64)
    os.rename(path + ".new", path)  # a script sees the socket only once it is listening
    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(wake_r, selectors.EVENT_READ, "child")
    children: dict[int, socket.socket] = {}  # a child's pid: its script's connection
    try:
        while os.getppid() == parent:
            for key, _ in sel.select(timeout=1.0):
                if key.data == "accept":
                    conn, _ = listener.accept()
                    try:
                        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
                        state = json.loads(_read(conn, int.from_bytes(_read(conn, 8), "big")))
                    except (OSError, ValueError):
                        conn.close()
                        continue
                    if state["python"] != _python():
                        for fd in fds:
                            os.close(fd)
                        with contextlib.suppress(OSError):
                            conn.sendall(b"another python")
                        conn.close()
                        continue
                    sys.stdout.flush()
                    sys.stderr.flush()
                    pid = os.fork()
                    if pid == 0:
                        _run_child(state, fds, [sel, listener, wake_r, wake_w, *children.values(), conn])
                    for fd in fds:
                        os.close(fd)
                    children[pid] = conn
                    sel.register(conn, selectors.EVENT_READ, pid)
                elif key.data == "child":
                    with contextlib.suppress(BlockingIOError):
                        while wake_r.recv(4096):
                            pass
                    _reap(children, sel)
                else:  # the script's process is gone (killed): its child goes too
                    pid = key.data
                    with contextlib.suppress(OSError):
                        if not key.fileobj.recv(1):
                            sel.unregister(key.fileobj)
                            with contextlib.suppress(ProcessLookupError):
                                os.kill(pid, signal.SIGKILL)
            _reap(children, sel)
    finally:
        if os.getpid() != me:  # a child not yet past its fork, told to end: never the fork server's cleanup
            os._exit(1)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _read(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise OSError("the script's process closed its connection")
        data += chunk
    return data


def _reap(children: dict[int, socket.socket], sel: selectors.BaseSelector) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(conn)
        with contextlib.suppress(OSError):
            conn.sendall(str(os.waitstatus_to_exitcode(status) % 256).encode())
        conn.close()


CONSOLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "console_server.py")


def console(bin_dir: os.PathLike, name: str) -> str:
    """The command of console script `name` of the environment of `bin_dir` (`BIN/NAME`) that a fork server of
    that environment runs (`start(BIN/python, CONSOLE_PRELOAD)`): a script of the same name beside the
    environment's `bin` that runs tests/data/console_server.py for it, so that the command line a server is
    explored with is as the user's (exploring reads values off it: the program is none of them)."""
    folder = os.path.join(os.path.dirname(os.path.abspath(bin_dir)), "forked-bin")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    python = os.path.join(os.path.abspath(bin_dir), "python")
    lines = [f"#!{python}", "import runpy, sys", f"sys.argv[0:1] = [{CONSOLE!r}, {name!r}]"]
    with open(path, "w") as f:
        f.write("\n".join([*lines, f"runpy.run_path({CONSOLE!r}, run_name='__main__')", ""]))
    os.chmod(path, 0o755)
    return path


SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shipped_server.py")


def shipped(name: str) -> str:
    """The command of shipped server `name` (`python -m mcprl.servers.NAME`) that a fork server runs."""
    return f"python {SHIPPED} {name}"


# what the test servers import before they answer (mcprl.servers.serve: the SDK's server, pydantic)
# and the shipped servers' modules, whose state each process's `build` makes
PRELOAD = ["mcprl.servers.serve", "mcp.server.stdio", "pydantic", "anyio", "argparse", "sqlite3", "csv"]
PRELOAD += [f"mcprl.servers.{name}.server" for name in ("calculator", "inventory", "email", "units")]


# what an environment of the SDK's previous generation (mcp 1.x) and the servers written on it import first
CONSOLE_PRELOAD = ["mcp.server", "mcp.server.stdio", "mcp.server.fastmcp", "mcp.types", "pydantic", "anyio", "click"]


def start(python: os.PathLike, preload: list[str]):
    """A fork server for `python`'s environment, child of this process (`.terminate()` it when done)."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = "import sys; sys.path.insert(0, sys.argv[1]); from tests.server_fork import main; main()"
    return subprocess.Popen(
        [str(python), "-c", code, root, *preload],
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> None:
    """Run as the fork server of the process that started it (`python -c ... main()` PRELOAD...)."""
    serve_forks(_socket_path(os.getppid()), sys.argv[2:])
