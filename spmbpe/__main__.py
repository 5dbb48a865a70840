"""The spmbpe program: its console script (``console_main``) and
``python -m spmbpe`` run spmbpe.cli.main in a process of their own.

An interrupt at any moment ends the program with one line and status 130
(143 for SIGTERM), never a traceback: ``import spmbpe`` imports nothing by
itself, so this module, which imports only ``sys`` at its top, runs before
the command's imports and catches what they raise; once the command is
done, SIGINT gets its default action back, so that the interpreter's
shutdown, which no handler of ours covers, ends at once on Ctrl-C."""

import sys


def console_main() -> int:
    interrupts: "tuple[type[BaseException], ...]" = (KeyboardInterrupt,)
    try:
        import signal

        from ._signals import Interrupted

        # What a signal raises once the command's handlers are in place
        # (spmbpe.cli.main catches it in the command itself).
        interrupts = (KeyboardInterrupt, Interrupted)
        status = _run()
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # (raises a signal that is still pending)
    except interrupts as e:
        status = _interrupted(e)
    return status


def _run() -> int:
    import gc
    import os

    # NumPy's OpenBLAS starts a spinning thread per core when imported,
    # taking cores from the merging threads; the command line does no linear
    # algebra.  A value the user set wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .cli import main

    status = main()
    # The process ends next: frozen, its objects are left out of the
    # collections that Python's shutdown runs over every module's objects.
    gc.freeze()
    return status


def _interrupted(e: BaseException) -> int:
    """One line for an interrupt that came before or after the command
    itself (which reports its own), and the exit status: 128 + signal."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the line short
    try:
        sys.stderr.write("spmbpe: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    return 128 + int(getattr(e, "signum", signal.SIGINT))


if __name__ == "__main__":
    sys.exit(console_main())
