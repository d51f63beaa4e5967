"""Ends a loopback helper when the Swift test that started it goes away (its standard input closes)."""
import os
import sys
import threading


def exit_with_parent():
    """Exits the process as soon as standard input reaches its end, whatever else is running."""
    def wait():
        sys.stdin.buffer.read()
        os._exit(0)

    threading.Thread(target=wait, daemon=True).start()
