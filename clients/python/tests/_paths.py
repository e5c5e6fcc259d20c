import glob
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
TESTDATA = os.path.join(REPO, "replay", "testdata")
VECTORS = os.path.join(TESTDATA, "vectors")


def vectors(name):
    import json

    with open(os.path.join(VECTORS, name), encoding="utf-8") as f:
        return json.load(f)


def fixture_paths():
    """Every fixture under replay/testdata."""
    paths = []
    for p in sorted(glob.glob(os.path.join(TESTDATA, "**", "*.json"), recursive=True)):
        with open(p, encoding="utf-8") as f:
            if '"format": "tally.replay/v1"' in f.read():
                paths.append(p)
    return paths
