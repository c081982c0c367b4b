"""Every `ait-build` command: (name, module, one-line help), in the order `ait-build --help`
lists them. A command's module has DESCRIPTION, EXAMPLES, add_arguments(parser) and run(args);
main.py imports each, and one that cannot be loaded is an internal error that names it."""

COMMANDS = (
    ("check", "ait_build.cli.check", "validate model and target specs"),
    ("graph", "ait_build.cli.graph", "show a model's graph (optimized for a target with --target)"),
    ("reference", "ait_build.cli.reference", "run the NumPy reference executor"),
    ("build", "ait_build.cli.build", "build a spec's library with SCons (build/<target>/<model>/)"),
    ("run", "ait_build.cli.run", "run a built library on random or given inputs"),
    ("serve", "ait_build.cli.serve", "serve built models through Triton Inference Server "
     "(HTTP, gRPC, dynamic batching)"),
    ("package", "ait_build.cli.package", "pack a build folder into a self-contained artifact"),
    ("bench", "ait_build.cli.bench", "time a model beside PyTorch and ONNX Runtime"),
    ("profile", "ait_build.cli.profile", "time every candidate GEMM/conv configuration on the GPU "
     "and write the winners to the project's profile (profiles/<target>.yaml)"),
    ("init", "ait_build.cli.init",
     "write a new project: SConstruct, specs/, targets/, .gitignore, CI workflow"),
    ("targets", "ait_build.cli.targets", "list the targets this project can build for"),
    ("install-cutlass", "ait_build.cli.install_cutlass",
     "install the CUTLASS headers the cuda targets build with"),
    # the import command's options belong with the importers
    ("import", "ait_build.importers.cli",
     "write a spec and its weights from a PyTorch or ONNX model"),
)
