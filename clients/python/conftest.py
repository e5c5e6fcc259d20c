# Makes tally_replay importable and its pytest plugin active without
# installing the package (python3 -m pytest clients/python). When the
# package is installed, its pytest11 entry point registers the plugin
# already, and registering it twice is an error.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _entry_point_installed():
    try:
        from importlib.metadata import entry_points
    except ImportError:  # pragma: no cover - Python < 3.8
        return False
    eps = entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    return any(ep.name == "tally_replay" for ep in group)


pytest_plugins = ["pytester"] + ([] if _entry_point_installed() else ["tally_replay.pytest_plugin"])
