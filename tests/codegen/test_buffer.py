"""The runtime's host buffers (templates/common/include/ait_runtime.h, ait::Buffer) on their own: a
small C++ program reserves a workspace-sized and a small buffer and reports their alignment and,
on Linux, whether the kernel recorded the huge-page advice for the big one (the `hg` flag of its
mapping in /proc/self/smaps). Whether huge pages are then granted depends on the machine."""

from __future__ import annotations

import os
import subprocess

import pytest

from ait_build.codegen.render import templates_dir
from ait_build.pipeline import find_target

PROGRAM = r"""
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include "ait_runtime.h"

// the VmFlags of the mapping that holds address p
static std::string flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo, hi;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) inside = lo <= a && a < hi;
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8);
  }
  return "none";
}

int main() {
  ait::Buffer big, small;
  if (!big.reserve((5 << 20) + 12345) || !small.reserve(4000)) return 1;
  big.ptr[0] = 1;  // touch, so the mapping exists
  std::printf("%d %d\n", static_cast<int>(reinterpret_cast<uintptr_t>(big.ptr) % (1 << 21) == 0),
              static_cast<int>(reinterpret_cast<uintptr_t>(small.ptr) % 64 == 0));
  std::printf("%s\n", flags_of(big.ptr).c_str());
  return 0;
}
"""


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    d = tmp_path_factory.mktemp("buffer")
    (d / "main.cpp").write_text(PROGRAM)
    exe = str(d / "buffer_test")
    subprocess.run([find_target("cpu").cxx, "-O2", "-std=c++17", "-pthread", "-I",
                    os.path.join(templates_dir(), "common", "include"),
                    str(d / "main.cpp"), "-o", exe], check=True)
    return subprocess.run([exe], check=True, capture_output=True, text=True).stdout.splitlines()


def test_alignment(output):
    big_on_2mib, small_on_64 = output[0].split()
    assert big_on_2mib == "1" and small_on_64 == "1"


@pytest.mark.skipif(not os.path.isdir("/sys/kernel/mm/transparent_hugepage"),
                    reason="no transparent huge pages in this kernel (or not Linux)")
def test_big_buffers_ask_for_huge_pages(output):
    assert "hg" in output[1].split(), output[1]
