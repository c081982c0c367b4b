"""`ait-build serve`: built models behind Triton Inference Server through PyTriton (docs/serve.md).
layout.py reads a build's Triton view from its manifest; binding.py binds it to PyTriton."""
