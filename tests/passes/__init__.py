"""Tests of the graph passes (a package, so the shared helpers import as `.helpers`)."""
