#!/bin/bash
# Run from the project root after `ait-build profile SPECS --target T --compile-only`: copies
# each harness program and the digest of its sources into .carry/profile/<T>/<group>/ (git-
# ignored), which a device call carries; gpu_session.sh's profile step puts them back under
# build/<T>/profile/ and measures with --measure-only. Targets default to h200.
set -euo pipefail
grep -qx '/.carry/' .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
for t in "${@:-h200}"; do
  for dir in build/"$t"/profile/*/; do
    [ -f "$dir/harness" ] || continue
    dest=".carry/profile/$t/$(basename "$dir")"
    mkdir -p "$dest"
    cp "$dir/harness" "$dir/harness.digest" "$dest/"
  done
done
du -sh .carry/profile/*
