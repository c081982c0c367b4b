"""The environment the server and its clients run in: this checkout's package first."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def env() -> dict:
    return dict(os.environ, PYTHONPATH=REPO, PYTHONUNBUFFERED="1")
