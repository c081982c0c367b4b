"""`ait-build package`: a build folder as an artifact that carries its BLAS (found through the
library's `$ORIGIN` rpath) and licences, checked before it is made, reproducible as an archive.
The load from a second environment without any BLAS installed is in test_wheel.py; the build
folder's own relocation in test_relocatable.py."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading

import numpy as np
import pytest

from ait_build.cli.main import main
from ait_build.cli.package import default_output
from ait_build.runtime import Model
from buildproj import MODEL


def _run(folder: str) -> np.ndarray:
    with Model(folder) as model:
        x = np.random.default_rng(0).standard_normal((3, 32)).astype(np.float32)
        return model.run({"x": x})["softmax"]


def test_package_to_a_folder_holds_the_build_without_sources(built, tmp_path, capsys):
    dest = tmp_path / "pkg"
    assert main(["package", built.out(), "-o", str(dest)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {dest}/ (")
    names = {os.path.relpath(os.path.join(d, f), dest) for d, _, fs in os.walk(dest) for f in fs}
    core = {f"lib{MODEL}.so", f"lib{MODEL}.so.sha256", f"{MODEL}.h", "manifest.json",
            "weights.safetensors", "SHA256SUMS"}
    assert core <= names and not any(n.startswith(("src/", "obj/")) for n in names), names
    assert any(n.startswith("licenses/") for n in names)
    subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=dest, check=True)
    np.testing.assert_array_equal(_run(str(dest)), _run(built.out()))
    assert main(["package", built.out(), "-o", str(dest)]) == 1  # never into a full folder
    assert "is not an empty folder" in capsys.readouterr().err


def test_an_archive_is_reproducible_and_a_broken_build_is_refused(built, tmp_path, capsys):
    small = tmp_path / MODEL  # the build without its (large) BLAS: archives are hashed twice
    shutil.copytree(built.out(), small, ignore=shutil.ignore_patterns("libmkl*", "libscipy*"))
    first, second = tmp_path / "a.tar.gz", tmp_path / "b.tgz"
    assert main(["package", str(small), "-o", str(first)]) == 0
    assert main(["package", str(small), "-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    listing = subprocess.run(["tar", "tzvf", str(first)], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    assert all(" 0/0 " in line and "1970-01-01" in line for line in listing), listing
    assert any(line.endswith(f"{MODEL}/SHA256SUMS") for line in listing)
    with open(small / "weights.safetensors", "r+b") as fh:
        fh.truncate(100)
    capsys.readouterr()
    assert main(["package", str(small), "-o", str(tmp_path / "c.tar.gz")]) == 1
    assert "weights file" in capsys.readouterr().err and not (tmp_path / "c.tar.gz").exists()
    assert main(["package", str(tmp_path / "none")]) == 1
    assert "not a build folder" in capsys.readouterr().err
    assert default_output(os.path.join("build", "cpu", MODEL)) == f"{MODEL}-cpu.tar.gz"


def test_an_archive_to_a_fifo_is_written_in_place_and_never_over_a_packed_file(built, tmp_path,
                                                                               capsys):
    """`-o /dev/null` as root replaced /dev/null with a regular file (a FIFO shows it safely);
    an output that is one of the packed files (through a link) is refused."""
    small = tmp_path / MODEL
    shutil.copytree(built.out(), small, ignore=shutil.ignore_patterns("libmkl*", "libscipy*"))
    fifo = tmp_path / "out.tar.gz"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(["package", str(small), "-o", str(fifo)]) == 0, capsys.readouterr().err
    reader.join(30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and got[0][:2] == b"\x1f\x8b"
    os.symlink(small / "manifest.json", tmp_path / "link.tar.gz")
    before = (small / "manifest.json").read_bytes()
    capsys.readouterr()
    assert main(["package", str(small), "-o", str(tmp_path / "link.tar.gz")]) == 1
    assert "writing it would destroy it" in capsys.readouterr().err
    assert (small / "manifest.json").read_bytes() == before


def test_a_link_out_of_the_folder_and_an_output_inside_it_are_refused(built, tmp_path, capsys):
    """A package carries what the build made: a link in the folder to a file elsewhere on the
    machine (`notes.txt -> /etc/hostname`) is refused, not packed; so is a package written into
    the folder it packs (every later package would carry it)."""
    small = tmp_path / MODEL
    shutil.copytree(built.out(), small, ignore=shutil.ignore_patterns("libmkl*", "libscipy*"))
    secret = tmp_path / "secret.txt"
    secret.write_text("not the build's")
    os.symlink(secret, small / "notes.txt")
    capsys.readouterr()
    assert main(["package", str(small), "-o", str(tmp_path / "a.tgz")]) == 1
    assert "outside the build folder: not packed" in capsys.readouterr().err
    assert not (tmp_path / "a.tgz").exists()
    os.unlink(small / "notes.txt")
    assert main(["package", str(small), "-o", str(small / "sub")]) == 1
    assert "inside the build folder" in capsys.readouterr().err and not (small / "sub").exists()
    assert main(["package", str(small), "-o", str(tmp_path / "a.tgz")]) == 0


def test_a_truncated_carried_library_is_refused_before_it_is_mapped(built, tmp_path, capsys):
    """A cut-short BLAS beside the model's library (only the model's own is hashed) made `run`,
    `serve` and a package die of SIGBUS inside dlopen; its ELF headers say how long it must be."""
    small = tmp_path / MODEL
    shutil.copytree(built.out(), small, ignore=shutil.ignore_patterns("libmkl*", "libscipy*"))
    whole = (small / f"lib{MODEL}.so").read_bytes()
    (small / "libcarried.so.1").write_bytes(whole[:1000])
    capsys.readouterr()
    assert main(["package", str(small), "-o", str(tmp_path / "a.tgz")]) == 1
    assert "libcarried.so.1 is not a whole shared library (1000 bytes" in capsys.readouterr().err
    from ait_build.runtime.manifest import ModelError
    with pytest.raises(ModelError, match="not a whole shared library"):
        Model(str(small))
    (small / "libcarried.so.1").write_bytes(whole)  # whole again: no longer the error
    assert main(["package", str(small), "-o", str(tmp_path / "a.tgz")]) == 0


@pytest.mark.parametrize("output", ["mlp.zip", "mlp.tar", "mlp.tar.xz"])
def test_an_archive_format_package_does_not_write_is_refused(tmp_path, capsys, output):
    """-o mlp.zip made a folder named mlp.zip; it is refused before the build folder is read."""
    assert main(["package", str(tmp_path / "no_build"), "-o", str(tmp_path / output)]) == 1
    err = capsys.readouterr().err
    assert "a package is a .tar.gz or .tgz archive or a folder, not a ." in err, err
    assert not os.path.exists(tmp_path / output)
