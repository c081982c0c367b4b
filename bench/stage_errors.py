"""Where an imported model's float16 error comes from: the relative L2 error, against PyTorch
float32 (TF32 off), of our library's outputs and of PyTorch float16's at intermediate points of
the graph. A point is a graph node named as a module path of the source (an importer names
nodes so: Swin's `features.1`, `features.5.17`, `norm`), or NODE=MODULE where the module's
output is another node's (T5: `model.encoder.block.3.layer.1.add=model.encoder.block.3.layer.1`;
a module returning a tuple gives its first tensor). A copy of the spec with the nodes as outputs
is written beside the spec (so its weights files resolve), built for the target, and run with
the spec's weights and seeded inputs, while forward hooks take the same modules' outputs from
bench's comparison module (the source rebuilt, with the spec's weights loaded).

    python bench/stage_errors.py build/zoo/swin_s.yaml --points features.1,features.3,norm,head \\
        --target h200 --batch 1,8 --json stage_errors.json
    python bench/stage_errors.py small_swin.yaml --points features.0.2,norm,head --target cpu \\
        --device cpu            # a check of the tool where there is no GPU (tests/bench)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def probe_spec(spec: str, points: list) -> str:
    """A copy of `spec`, named <name>_points, whose outputs are `points`; its path."""
    import yaml
    with open(spec, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    doc["name"] = f"{doc['name']}_points"
    doc["outputs"] = list(points)
    path = os.path.join(os.path.dirname(os.path.abspath(spec)), f"{doc['name']}.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(doc, fh, sort_keys=False)
    return path


def module_outputs(model, modules: dict, x, dtype, device: str = "cuda") -> dict:
    """node -> the output of its module (`modules`: node -> module path) for one call of a
    copy of `model` in `dtype`, as float32 (a copy: converting the model itself to float16 would
    round the float32 reference's weights of the next call)."""
    import copy
    import torch
    model = copy.deepcopy(model).to(device, dtype)
    got = {}

    def keep(node, out):
        first = out[0] if isinstance(out, (tuple, list)) else out
        got[node] = first.float().cpu().numpy()
    hooks = [model.get_submodule(path).register_forward_hook(
        lambda _m, _i, out, node=node: keep(node, out)) for node, path in modules.items()]
    with torch.no_grad():
        model(*[a.to(device, dtype) if a.is_floating_point() else a.to(device) for a in x])
    for hook in hooks:
        hook.remove()
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("spec", help="a spec imported from PyTorch (with its `source:`)")
    ap.add_argument("--points", required=True,
                    help="NODE or NODE=MODULE, comma-separated (NODE alone: named as its module)")
    ap.add_argument("--target", default="h200")
    ap.add_argument("--batch", default="1", help="batches, comma-separated")
    ap.add_argument("--json", help="file to write the rows to")
    ap.add_argument("--device", default="cuda",
                    help="where PyTorch runs (cpu: a check of the tool with a cpu build)")
    args = ap.parse_args(argv)

    import torch
    from ait_build.bench.run import rel_l2
    from ait_build.bench.source_twin import comparison_twin
    from ait_build.build.invoke import build
    from ait_build.runtime import Model
    from ait_build.runtime.inputs import make_inputs
    from ait_build.spec.model import load_model
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    modules = dict(p.split("=", 1) if "=" in p else (p, p) for p in args.points.split(","))
    points = list(modules)
    spec = probe_spec(args.spec, points)
    graph = load_model(spec)
    # bench's comparison module (the spec's weights loaded; an edited spec is refused), whose
    # children keep the source's module paths
    twin = comparison_twin(args.spec, load_model(args.spec), graph.name)
    library = Model(build(spec, args.target))
    rows = []
    for batch in (int(b) for b in args.batch.split(",")):
        inputs = make_inputs(library.manifest, graph, {"batch": batch}, seed=0)
        ours = library.run(inputs, {"batch": batch})
        x = twin.to_args(inputs)
        reference = module_outputs(twin.module, modules, x, torch.float32, args.device)
        half = module_outputs(twin.module, modules, x, torch.float16, args.device)
        for p in points:
            want = {p: reference[p]}
            row = {"batch": batch, "point": p, "shape": list(reference[p].shape),
                   "ours": rel_l2({p: np.asarray(ours[p]).reshape(want[p].shape)}, want),
                   "torch_float16": rel_l2({p: half[p]}, want)}
            rows.append(row)
            print(f"batch {batch} {p:<20} ours {row['ours']:.2e}  PyTorch float16 "
                  f"{row['torch_float16']:.2e}  ours/theirs "
                  f"{row['ours'] / row['torch_float16']:.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
