"""What a build folder carries beside its library: hard links of the installed BLAS where the
filesystem allows, else links of one copy kept per target, else copies."""

from __future__ import annotations

import os

from ait_build.build import runtime_files


def test_place_links_where_it_can(tmp_path):
    source = tmp_path / "lib" / "libx.so"
    source.parent.mkdir()
    source.write_bytes(b"blas")
    runtime_files.carry([(str(source), "libx.so"), (str(source), "licenses/x.txt")],
                        str(tmp_path / "model"))
    assert os.path.samefile(source, tmp_path / "model" / "libx.so")
    assert (tmp_path / "model" / "licenses" / "x.txt").read_bytes() == b"blas"


def test_across_filesystems_models_share_one_copy_in_the_store(tmp_path, monkeypatch):
    source = tmp_path / "site" / "libx.so"
    source.parent.mkdir()
    source.write_bytes(b"blas")
    real_link = os.link

    def link(src, dst):  # the installed file lies on another filesystem
        if os.path.dirname(src) == str(source.parent):
            raise OSError(18, "Invalid cross-device link")
        return real_link(src, dst)

    monkeypatch.setattr(runtime_files.os, "link", link)
    store = tmp_path / "build" / "cpu" / ".runtime"
    for model in ("a", "b"):
        runtime_files.place(str(source), str(tmp_path / "build" / "cpu" / model / "libx.so"),
                            str(store))
    kept = store / "libx.so"
    assert kept.read_bytes() == b"blas" and os.stat(kept).st_nlink == 3  # one copy, two links
    source.write_bytes(b"blas 2")  # a new version of the wheel
    os.utime(source, (1, 1))
    runtime_files.place(str(source), str(tmp_path / "build" / "cpu" / "a" / "libx.so"), str(store))
    assert (tmp_path / "build" / "cpu" / "a" / "libx.so").read_bytes() == b"blas 2"
