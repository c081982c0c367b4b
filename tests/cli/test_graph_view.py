"""`ait-build graph --format dot|svg|png`: the dot source renders through Graphviz, pictures come
out as real SVG/PNG, and without Graphviz the command says what to install."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.path.join(ROOT, "specs", "tiny_bert.yaml")


def graph_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "ait_build", "graph", SPEC, *args],
                          capture_output=True, env=env, timeout=120)


needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz 'dot' not installed (.ci/run installs it)")


@needs_dot
def test_svg_shows_the_optimized_nodes(tmp_path):
    out = tmp_path / "g.svg"
    proc = graph_cli("--target", "cpu", "--format", "svg", "-o", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    text = out.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "multi_head_attention" in text and "encoder.layer.1.output.LayerNorm" in text
    assert "softmax" not in text  # fused away: the picture is of the optimized graph


@needs_dot
def test_png_is_a_png(tmp_path):
    out = tmp_path / "g.png"
    proc = graph_cli("--format", "png", "-o", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_graphviz_the_error_names_the_package(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # no 'dot' on this PATH
    proc = graph_cli("--format", "svg", "-o", str(tmp_path / "g.svg"), env=env)
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "graphviz" in err and "Traceback" not in err


def test_dot_source_names_every_node(tmp_path):
    proc = graph_cli("--format", "dot")
    assert proc.returncode == 0
    text = proc.stdout.decode()
    assert text.startswith('digraph "tiny_bert"')
    assert text.count("->") >= 60 and '"encoder.layer.0.attention.self.query"' in text


def test_a_dot_that_hangs_is_an_error_not_a_stack(tmp_path, monkeypatch, capsys):
    """Graphviz that never answers: the command gives up after DOT_TIMEOUT_S with a line."""
    from ait_build.cli import graph_view
    from ait_build.cli.main import main
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(graph_view, "DOT_TIMEOUT_S", 1)
    assert main(["graph", SPEC, "--format", "svg", "-o", str(tmp_path / "g.svg")]) == 1
    assert "gave no svg in 1 s" in capsys.readouterr().err


class Terminal(io.TextIOWrapper):
    """A stdout that is a terminal, its bytes kept in .buffer."""

    def __init__(self):
        super().__init__(io.BytesIO())

    def isatty(self) -> bool:
        return True


def test_png_is_not_written_to_a_terminal(tmp_path, monkeypatch, capsys):
    """Without -o, PNG bytes on a terminal are refused with one line, before any work (here:
    before it finds no Graphviz)."""
    from ait_build.cli.main import main
    monkeypatch.setenv("PATH", str(tmp_path))  # no 'dot': the work would fail on it
    terminal = Terminal()
    with contextlib.redirect_stdout(terminal):
        assert main(["graph", SPEC, "--format", "png"]) == 1
    assert terminal.buffer.getvalue() == b""
    assert capsys.readouterr().err == ("error: --format png writes binary data, not for a "
                                       "terminal; give -o FILE (or redirect stdout to a file or "
                                       "pipe)\n")


@needs_dot
def test_png_goes_to_a_redirected_stdout_and_svg_to_a_terminal():
    """A pipe takes the PNG (as `dot -Tpng > g.png` does); SVG is text, shown like dot."""
    from ait_build.cli.main import main
    assert graph_cli("--format", "png").stdout[:8] == b"\x89PNG\r\n\x1a\n"
    terminal = Terminal()
    with contextlib.redirect_stdout(terminal):
        assert main(["graph", SPEC, "--format", "svg"]) == 0
    assert b"<svg" in terminal.buffer.getvalue()


def test_dash_is_stdout(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "ait_build", "graph", SPEC, "-o", "-"],
                          capture_output=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith(b"model ") and not os.listdir(tmp_path)


@needs_dot
def test_the_output_file_extension_chooses_the_format(tmp_path):
    """`-o g.png` without --format wrote the text listing into g.png."""
    for name, start in [("g.png", b"\x89PNG\r\n\x1a\n"), ("g.svg", b"<?xml"), ("g.gv", b"digraph"),
                        ("g.json", b"{"), ("g.txt", b"model ")]:
        proc = graph_cli("-o", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr.decode()
        assert (tmp_path / name).read_bytes().startswith(start), name


def test_a_format_other_than_the_extension_names_is_an_error(tmp_path):
    proc = graph_cli("--format", "svg", "-o", str(tmp_path / "g.png"))
    assert proc.returncode == 1 and not os.listdir(tmp_path)
    assert proc.stderr.decode().endswith("names a png file, but --format svg writes svg; give "
                                         "--format png, or a file name for svg\n")
