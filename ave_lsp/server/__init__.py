"""The Ave language server (pygls): diagnostics, hover, code actions.

:func:`serve_stdio` and :func:`serve_tcp` run it; :func:`create_server` builds it (tests).
Importing this package is light: pygls and lsprotocol, not the checker, the front end or
z3 (those are imported in the worker thread by the first check).
"""

from __future__ import annotations

import logging
import os
import sys


def create_server():
    """A new :class:`~ave_lsp.server.server.AveLanguageServer` with its features."""
    from ave_lsp.server.server import create_server as _create

    return _create()


def _setup_logging() -> None:
    level = os.environ.get("AVE_LSP_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(level=getattr(logging, level, logging.WARNING), stream=sys.stderr,
                        format="ave-lsp %(levelname)s %(name)s: %(message)s")


def serve_stdio() -> int:
    """Serve LSP over stdin/stdout until the client exits; returns the exit status.

    The protocol gets its own copy of the stdout file descriptor, and descriptor 1 is
    pointed at stderr: a stray ``print`` (from Ave or a library, in Python or C) lands
    in the client's log instead of corrupting the protocol stream.
    """
    try:
        in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is both
        print("ave-lsp: standard input/output are not files; cannot serve LSP on them "
              "(use --tcp HOST:PORT)", file=sys.stderr)
        return 2
    _setup_logging()
    if os.isatty(in_fd):
        print("ave-lsp: serving LSP on stdin/stdout (an editor starts this); "
              "to check files from a shell run 'ave-lsp --check PATHS'",
              file=sys.stderr, flush=True)
    server = create_server()
    sys.stdout.flush()
    lsp_out = os.fdopen(os.dup(out_fd), "wb")
    try:
        os.dup2(sys.stderr.fileno(), out_fd)
    except (AttributeError, ValueError, OSError):
        pass                            # no stderr file: stray prints stay a risk
    server.start_io(os.fdopen(os.dup(in_fd), "rb"), lsp_out)
    status = _exit_status(server)
    _exit_if_busy(server, status, lsp_out)
    return status


def _exit_if_busy(server, status: int, *streams) -> None:
    """The client said ``exit`` (or went away) while a check or hover index is still being
    computed on a thread: end the process now with ``status``. A thread of the server's
    pools cannot be interrupted, and Python joins them at exit: a kernel whose check took
    75 s kept the process alive that long after ``exit``, holding its memory (a review
    helper). Worker processes of the analysis are shut down first."""
    if not server.busy():
        return
    try:
        server.shutdown(kill=True)
    except Exception:  # noqa: BLE001 - exiting anyway
        pass
    try:
        # multiprocessing's finalizers that os._exit skips (those a normal exit runs
        # first; exit priority >= 0): they unlink the worker queues' semaphores
        # ("resource_tracker: There appear to be 5 leaked semaphore objects" on stderr
        # otherwise; a closing-note item). Not every exit hook: multiprocessing's joins
        # its children, a hang here
        from multiprocessing import util as mp_util
        mp_util._run_finalizers(0)
    except Exception:  # noqa: BLE001 - exiting anyway
        pass
    for f in (*streams, sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _exit_status(server) -> int:
    """LSP: after ``exit``, status 0 when a ``shutdown`` request came first, else 1 (pygls
    exits its loop with that status, and ``start_io`` swallows the ``SystemExit``: it was
    always 0; a review helper). The end of the input without ``exit`` ends it cleanly
    (0), as before."""
    if not server.exit_received:
        return 0
    return 0 if getattr(server.protocol, "_shutdown", False) else 1


def serve_tcp(host: str, port: int) -> int:
    """Serve LSP on a TCP socket (for debugging: start it, then connect the editor)."""
    _setup_logging()
    server = create_server()
    print(f"ave-lsp: listening on {host}:{port}", file=sys.stderr, flush=True)
    try:
        server.start_tcp(host, port)
    except OSError as e:
        # (a port in use, a host that does not resolve: a traceback and status 1 -- the
        # status of "findings"; a review helper)
        print(f"ave-lsp: error: cannot listen on {host}:{port}: {e.strerror or e}",
              file=sys.stderr, flush=True)
        return 2
    status = _exit_status(server)
    _exit_if_busy(server, status)
    return status
